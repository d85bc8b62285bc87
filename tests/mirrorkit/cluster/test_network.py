"""The private network the workers get: only loopback, usable, and invisible from outside."""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap

import pytest

from mirrorkit.cluster import _procs
from tests.conftest import ROOT

PROBE = textwrap.dedent(
    """
    import json, socket, sys
    sys.path.insert(0, {root!r})
    from mirrorkit.cluster import _netns
    from mirrorkit.cluster import _procs
    how = _netns.enter_private_network(user_namespace={user!r})
    server = socket.socket()
    server.bind(("0.0.0.0", 0))  # every interface, as TensorFlow's gRPC server does
    server.listen()
    port = server.getsockname()[1]
    socket.create_connection(("127.0.0.1", port), timeout=5).close()
    print(json.dumps({{"how": how, "interfaces": _procs.interfaces(), "port": port,
                       "listening": _procs.listening_sockets()}}), flush=True)
    sys.stdin.read()  # hold the socket open until the test has looked
    """
)


@pytest.mark.parametrize("user", [False, True], ids=["network-ns", "user-and-network-ns"])
def test_private_network_has_only_loopback_and_hides_its_sockets(user):
    probe = subprocess.Popen(
        [sys.executable, "-c", PROBE.format(root=str(ROOT), user=user)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        line = probe.stdout.readline()
        if not line:
            pytest.fail(f"the probe failed: {probe.stderr.read()}")
        seen = json.loads(line)
        host_ports = {int(s.rsplit(":", 1)[1]) for s in _procs.listening_sockets()}
    finally:
        probe.communicate("", timeout=30)
    assert seen["how"] == ("user and network namespace" if user else "network namespace")
    assert seen["interfaces"] == ["lo"]
    assert f"0.0.0.0:{seen['port']}" in seen["listening"]
    assert seen["port"] not in host_ports  # not visible in the machine's own network


def test_listening_sockets_decodes_proc_net_tcp():
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert f"127.0.0.1:{port}" in _procs.listening_sockets()
    assert _procs.describe_exit(-9) == "killed by SIGKILL"
    assert _procs.describe_exit(3) == "exit status 3"
    assert len(set(_procs.free_ports(3))) == 3


FALLBACK = textwrap.dedent(
    """
    import os, sys, warnings
    sys.path.insert(0, {root!r})
    from mirrorkit.cluster import _netns

    # A user namespace of our own, in which no further namespace may be made: what a
    # machine that refuses namespaces looks like to the launcher.
    uid, gid = os.getuid(), os.getgid()
    _netns._unshare(_netns.CLONE_NEWUSER)
    _netns._write("/proc/self/setgroups", "deny")
    _netns._write("/proc/self/uid_map", f"{{uid}} {{uid}} 1")
    _netns._write("/proc/self/gid_map", f"{{gid}} {{gid}} 1")
    for limit in ("max_net_namespaces", "max_user_namespaces"):
        _netns._write(f"/proc/sys/user/{{limit}}", "0")

    import mirrorkit as mk

    def task(context):
        return context.task_id

    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = mk.LocalCluster(2, echo=False).run(task)
    print(run.network, run.results, [w.category.__name__ for w in caught], flush=True)
    print(run.network_note, flush=True)
    """
)


def test_refused_namespaces_fall_back_to_the_shared_network_with_a_warning():
    child = subprocess.run(
        [sys.executable, "-c", FALLBACK.format(root=str(ROOT))],
        capture_output=True,
        text=True,
        timeout=180,
    )
    assert child.returncode == 0, child.stderr
    first, note = child.stdout.strip().splitlines()[-2:]
    assert first == "shared [0, 1] ['ClusterSecurityWarning']"
    assert "cannot create a network namespace" in note
