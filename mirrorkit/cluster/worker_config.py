"""A worker's cluster, read from TF_CONFIG or Slurm's variables, refused if it describes none.

Example:
    >>> from mirrorkit.cluster.worker_config import check_tf_config
    >>> check_tf_config('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}')
    {'cluster': {'worker': ['a:1']}, 'task': {'type': 'worker', 'index': 0}}
"""

from __future__ import annotations

import errno
import json
import os
import socket
import time

from mirrorkit._validate import refuse


def resolve_tf_config(resolver: str, port: int | None) -> dict:
    """The cluster this process belongs to: TF_CONFIG, or built from Slurm's variables."""
    if resolver == "slurm":
        # mirrorkit.cluster.scaleout reads Slurm's variables itself: TensorFlow's resolver sorts
        # node names as strings (node10 before node9) and runs nvidia-smi on CPU nodes.
        from mirrorkit.cluster.scaleout import slurm_tf_config

        return slurm_tf_config(port=port)
    return check_tf_config(os.environ["TF_CONFIG"])


def own_address_problem(config: dict, resolver: str = "tf_config") -> str | None:
    """Why this worker's own address in ``config`` cannot work, before TensorFlow starts.

    Its host must resolve (TensorFlow would wait for its own server forever) and its port
    must be free on this machine (TensorFlow would fail after seconds, naming no port).
    ``resolver`` says where the address came from. None if neither is wrong.

    Example:
        >>> config = {"cluster": {"worker": ["no-such-host.invalid:2"]},
        ...           "task": {"type": "worker", "index": 0}}
        >>> print(own_address_problem(config))  # doctest: +ELLIPSIS
        mirrorkit.worker: this worker's address no-such-host.invalid:2 ... does not resolve ...
    """
    job, index = config["task"]["type"], config["task"]["index"]
    if job == "evaluator":
        return None
    address = config["cluster"][job][int(index)]
    host, sep, number = address.rpartition(":")
    if not sep or not host or not number.isdigit():
        return None
    host = host.strip("[]")
    if resolver == "tf_config":
        where, change = f"{job} {index} in TF_CONFIG", "the same change in every worker's TF_CONFIG"
    else:
        where, change = f"{job} {index}, from Slurm's nodes and --port", "the same on every task"
    if not _resolves(host):
        return (
            f"mirrorkit.worker: this worker's address {address} ({where}) names a host, "
            f"{host!r}, that does not resolve on this machine, so the cluster cannot form: "
            "write this machine's name as the others reach it (hostname -f shows it) or its "
            f"IP address, or 127.0.0.1 for a cluster on this machine alone; {change}."
        )
    taken = _port_taken(int(number))
    if taken:
        return (
            f"mirrorkit.worker: this worker's address {address} ({where}) cannot be used: "
            f"port {number} on this machine {taken}, so TensorFlow's server cannot listen "
            f"there: end the program that holds it (a worker of an earlier run still "
            f"running? ss -ltnp 'sport = :{number}' shows it), or give this worker a free "
            f"port ({'--port' if resolver == 'slurm' else 'in its address'}), {change}."
        )
    return None


def _resolves(host: str, tries: int = 3) -> bool:
    """Whether ``host`` resolves here (asked a few times: a new node's name may lag)."""
    for attempt in range(tries):
        try:
            socket.getaddrinfo(host, None)
            return True
        except (socket.gaierror, UnicodeError):
            if attempt + 1 < tries:
                time.sleep(0.5)
    return False


def _port_taken(port: int) -> str | None:
    """Why this machine's ``port`` cannot be listened on, in words, or None if it is free."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        # As TensorFlow's server does: a port that only lingers from a closed connection
        # is free to listen on.
        probe.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        try:
            probe.bind(("", port))
        except OSError as error:
            if error.errno == errno.EADDRINUSE:
                return "is already taken by another program"
            return f"cannot be listened on ({error.strerror or error})"
    return None


_TF_CONFIG_FIX = (
    'it with json.dumps, e.g. TF_CONFIG=\'{"cluster": {"worker": ["host1:12345", '
    '"host2:12345"]}, "task": {"type": "worker", "index": 0}}\' '
    "(mirrorkit.cluster.scaleout.tf_config writes it for you)"
)


def check_tf_config(text: str) -> dict:
    """TF_CONFIG's text as a dict, or a ValueError naming what is wrong with it.

    TensorFlow's own reading of a TF_CONFIG without a ``cluster`` gives a one-process
    strategy with no error; here it is refused, before any server starts.

    Example:
        >>> from mirrorkit.cluster.worker_config import check_tf_config
        >>> check_tf_config('{"cluster": {"worker": ["a:1", "b:1"]}, '
        ...                 '"task": {"type": "worker", "index": 1}}')["task"]
        {'type': 'worker', 'index': 1}
    """
    try:
        config = json.loads(text)
    except ValueError:
        config = _NOT_JSON
    if config is _NOT_JSON:
        quoted = "; it uses Python's quotes ('), JSON needs \"" if "'" in text else ""
        got = f"{_short(text)}, which is not JSON{quoted}"
        refuse("TF_CONFIG", must="JSON", got=got, write=_TF_CONFIG_FIX, error=ValueError)
    cluster = config.get("cluster") if isinstance(config, dict) else None
    if not isinstance(cluster, dict) or not any(
        isinstance(cluster.get(job), list) and cluster[job] for job in ("chief", "worker")
    ):
        got = f"{_short(text)}, which has no cluster with a list of worker addresses"
        must = "JSON with a cluster of workers"
        refuse("TF_CONFIG", must=must, got=got, write=_TF_CONFIG_FIX, error=ValueError)
    task = config.get("task")
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        refuse(
            "TF_CONFIG",
            must="JSON with a task saying which worker this process is",
            got=_short(text),
            write='TF_CONFIG with its task: add "task": {"type": "worker", "index": N}, N being '
            "this machine's position in the cluster's worker list, different on every worker",
            error=ValueError,
        )
    job, index = task["type"], task["index"]
    if job == "evaluator":  # a side-car evaluator is not part of the cluster it watches
        return config
    if job not in cluster or not isinstance(cluster[job], list):
        raise ValueError(
            f"TF_CONFIG's task type {job!r} is not in its cluster (which has "
            f'{", ".join(map(repr, cluster))}): write "type": "worker".'
        )
    if isinstance(index, str) and index.strip().isdigit():
        index = int(index)
    if isinstance(index, bool) or not isinstance(index, int) or not 0 <= index < len(cluster[job]):
        raise ValueError(
            f"TF_CONFIG's task index {index!r} is not a position in its {job} list of "
            f"{len(cluster[job])} addresses: use 0 to {len(cluster[job]) - 1}, this machine's "
            "position in the list."
        )
    return config


_NOT_JSON = object()


def _short(text: str) -> str:
    return repr(text) if len(text) <= 120 else repr(text[:117] + "...")
