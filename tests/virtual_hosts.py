"""Several machines on this one, for tests of what crosses a network: hosts in namespaces.

Each host has its own network stack (one ``eth0`` on a private bridge, ``lo``) and its own
host name; all of them share this machine's files, with an ``/etc/hosts`` that names them.
Nothing outside can reach them: the bridge lives in a network namespace of its own. Every
process of every host lives in one PID namespace, whose first process the kernel kills when
the test's process ends (``unshare --kill-child`` with a parent-death signal), so nothing
outlives the test, at any depth, even after ``kill -9`` of pytest.

Needs root (or CAP_SYS_ADMIN), util-linux's ``unshare`` and ``nsenter``, and iproute2's
``ip``. Design notes: docs/design/cluster.md ("Real schedulers in the tests").

Example:
    >>> import subprocess, tempfile
    >>> with VirtualHosts(["node1", "node2"], tempfile.mkdtemp()) as hosts:  # doctest: +SKIP
    ...     done = hosts.run("node2", ["getent", "hosts", "node1"], stdout=subprocess.PIPE)
    ...     done.communicate()[0].split()
    [b'10.77.0.11', b'node1']
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Sequence
from pathlib import Path

from mirrorkit.cluster import _procs

SUBNET = "10.77.0"  # a private /24; host k gets .(11 + k), the bridge .1
TOOLS = ("unshare", "nsenter", "ip", "mount", "hostname")
START_BOUND = 30.0  # seconds for the hosts' namespaces and network to be ready


def missing_tools() -> str | None:
    """Why virtual hosts cannot be made here, or ``None`` if they can."""
    if os.name != "posix" or os.geteuid() != 0:
        return "virtual hosts need root (network, UTS and PID namespaces)"
    absent = [tool for tool in TOOLS if shutil.which(tool) is None]
    return f"virtual hosts need {', '.join(absent)} on PATH" if absent else None


class VirtualHosts:
    """Hosts named ``names``, each with its own network stack and host name, until closed.

    Args:
        names: The host names, in order: the k-th gets the address ``10.77.0.(11 + k)``.
        folder: A folder for the hosts file and the start-up record.
    """

    def __init__(self, names: Sequence[str], folder: str | os.PathLike) -> None:
        self.names = list(names)
        self.folder = Path(folder)
        self.addresses = {name: f"{SUBNET}.{11 + k}" for k, name in enumerate(self.names)}
        self._init: subprocess.Popen | None = None
        self._pids: dict[str, int] = {}

    def __enter__(self) -> VirtualHosts:
        self.start()
        return self

    def __exit__(self, *_exc) -> None:
        self.close()

    def start(self) -> None:
        """Make the hosts; raises ``RuntimeError`` naming the step that failed."""
        problem = missing_tools()
        if problem:
            raise RuntimeError(problem)
        self.folder.mkdir(parents=True, exist_ok=True)
        lines = ["127.0.0.1 localhost", *(f"{a} {n}" for n, a in self.addresses.items())]
        (self.folder / "hosts").write_text("\n".join(lines) + "\n")
        record = self.folder / "hosts.json"
        record.unlink(missing_ok=True)
        spec = json.dumps({"names": self.names, "folder": str(self.folder)})
        argv = ["unshare", "--pid", "--fork", "--kill-child=SIGKILL", "--mount-proc", "--net"]
        self._init = subprocess.Popen(
            [*argv, sys.executable, "-P", __file__, spec],  # -P: not tests/ (its mirrorkit/)
            # The kernel kills unshare when this process ends, and unshare its child, PID 1.
            preexec_fn=_procs.dies_with_this_process(),  # noqa: PLW1509
            stdout=subprocess.DEVNULL,
            stderr=open(self.folder / "init.log", "w"),  # noqa: SIM115 - the child keeps it
        )
        deadline = time.monotonic() + START_BOUND
        while not record.exists():
            if self._init.poll() is not None or time.monotonic() > deadline:
                log = (self.folder / "init.log").read_text()
                self.close()
                raise RuntimeError(f"the virtual hosts did not start: {log.strip()[-2000:]}")
            time.sleep(0.05)
        inner = json.loads(record.read_text())
        outer = self._outer_pids()
        gone = [name for name, pid in inner.items() if pid not in outer]
        if gone:
            raise RuntimeError(f"the virtual hosts' processes of {', '.join(gone)} are gone")
        self._pids = {name: outer[pid] for name, pid in inner.items()}

    def _outer_pids(self) -> dict[int, int]:
        """Each process of the hosts' PID namespace: its PID there -> this machine's PID."""
        assert self._init is not None
        namespace = os.readlink(f"/proc/{self._init.pid}/ns/pid_for_children")
        found = {}
        for pid in _procs.pids():
            try:
                if os.readlink(f"/proc/{pid}/ns/pid") != namespace:
                    continue
                status = Path(f"/proc/{pid}/status").read_text()
            except OSError:  # ended while read
                continue
            nspid = next(line.split()[1:] for line in status.splitlines() if line[:6] == "NSpid:")
            found[int(nspid[-1])] = pid
        return found

    def run(self, name: str, argv: Sequence[str], **popen) -> subprocess.Popen:
        """Start ``argv`` on host ``name`` (its network, host name, files and PID namespace).

        ``hide=[folder, ...]`` (a keyword of this method) mounts an empty folder over each,
        for this command only: a folder the host does not share.
        """
        hide = popen.pop("hide", ())
        folder = popen.pop("cwd", None) or os.getcwd()  # entering the files' namespace resets it
        enter = ["nsenter", "-t", str(self._pids[name]), "-n", "-u", "-m", "-p", f"--wd={folder}"]
        if hide:
            mounts = " && ".join(f"mount -t tmpfs none {json.dumps(str(h))}" for h in hide)
            argv = ["unshare", "--mount", "sh", "-c", f'{mounts} && exec "$@"', "sh", *argv]
        return subprocess.Popen([*enter, "--", *argv], **popen)

    def close(self) -> None:
        """End every process of every host (the kernel does, with the namespace's first)."""
        if self._init is not None and self._init.poll() is None:
            self._init.kill()  # unshare --kill-child: its child, PID 1 of the hosts, dies
            self._init.wait()


def _sh(*argv: str) -> None:
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)


def _serve(spec: dict) -> None:
    """PID 1 of the hosts: the bridge, one holder process per host, then reap orphans."""
    folder = Path(spec["folder"])
    _sh("mount", "--bind", str(folder / "hosts"), "/etc/hosts")
    _sh("ip", "link", "set", "lo", "up")
    _sh("ip", "link", "add", "br0", "type", "bridge")
    _sh("ip", "addr", "add", f"{SUBNET}.1/24", "dev", "br0")
    _sh("ip", "link", "set", "br0", "up")
    holders = {}
    for k, name in enumerate(spec["names"]):
        holder = subprocess.Popen(["unshare", "--net", "--uts", "sleep", "infinity"])
        while os.readlink(f"/proc/{holder.pid}/ns/net") == os.readlink("/proc/self/ns/net"):
            time.sleep(0.01)  # unshare has not yet made the namespace
        _sh("ip", "link", "add", f"v{k}", "type", "veth", "peer", "eth0", "netns", str(holder.pid))
        _sh("ip", "link", "set", f"v{k}", "master", "br0", "up")
        inside = (
            f"ip link set lo up && ip link set eth0 up && "
            f"ip addr add {SUBNET}.{11 + k}/24 dev eth0 && hostname {name}"
        )
        _sh("nsenter", "-t", str(holder.pid), "-n", "-u", "sh", "-c", inside)
        holders[name] = holder.pid
    (folder / "hosts.json.tmp").write_text(json.dumps(holders))
    os.rename(folder / "hosts.json.tmp", folder / "hosts.json")
    while True:  # PID 1 adopts every orphan: reap them until the kernel ends us all
        try:
            os.wait()
        except ChildProcessError:
            time.sleep(1)


if __name__ == "__main__":
    _serve(json.loads(sys.argv[1]))
