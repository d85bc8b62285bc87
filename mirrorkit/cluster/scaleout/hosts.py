"""``TF_CONFIG`` for a fixed list of hosts: machines started by hand or by any tool.

Named ``hosts`` rather than after its function ``tf_config``: a module and a function of one
name in a lazily loaded package shadow each other once the module is imported.

Example:
    >>> from mirrorkit.cluster.scaleout.hosts import tf_config
    >>> tf_config(["node1", "node2"], 0)["cluster"]
    {'worker': ['node1:12345', 'node2:12345']}
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from mirrorkit._validate import refuse
from mirrorkit.cluster.scaleout._arguments import worker_addresses, worker_config

_TASK_TYPE = re.compile(r"[a-z][a-z0-9_]*")  # what TensorFlow accepts as a job name


def tf_config(
    hosts: Sequence[str], index: int, *, port: int | None = None, task_type: str = "worker"
) -> dict:
    """The ``TF_CONFIG`` of one worker of a cluster, as a dict.

    Every worker gets the same ``cluster`` (all the hosts, in the same order) and its own
    ``task`` index. Worker 0 is the chief: it writes checkpoints and summaries.

    Security: each worker's gRPC server listens on its port on every interface, without
    authentication. Use hosts of a private network, never addresses open to the internet.

    Args:
        hosts: One ``"host"`` or ``"host:port"`` per worker, the same list on every
            machine. IPv6 addresses go in brackets: ``"[fd00::1]:12345"``.
        index: This worker's position in ``hosts``.
        port: The port of hosts given without one; ``None`` means :data:`DEFAULT_PORT`.
        task_type: The job name in the cluster; ``"worker"`` for
            ``MultiWorkerMirroredStrategy``.

    Returns:
        ``{"cluster": {task_type: ["host:port", ...]}, "task": {"type": ..., "index": ...}}``.

    Raises:
        ValueError: If ``hosts`` is empty, a host is malformed, two hosts share a
            ``host:port``, a port is not in 1..65535, or ``index`` is out of range.

    Example:
        >>> from mirrorkit.cluster.scaleout import tf_config
        >>> tf_config(["node1", "node2:2222"], 1)
        {'cluster': {'worker': ['node1:12345', 'node2:2222']}, 'task': {'type': 'worker', 'index': 1}}
    """  # noqa: E501 - a doctest's output is one line
    if not isinstance(task_type, str) or not _TASK_TYPE.fullmatch(task_type):
        must = "a TensorFlow job name such as 'worker' (lowercase letters, digits, '_')"
        refuse("task_type", task_type, must=must, write="task_type='worker'", error=ValueError)
    addresses = worker_addresses(hosts, port)
    if task_type == "chief" and len(addresses) > 1:
        must = f"'worker' for {len(addresses)} hosts (a cluster has one chief)"
        write = "task_type='worker' (worker 0 then acts as the chief)"
        refuse("task_type", task_type, must=must, write=write, error=ValueError)
    return worker_config(addresses, index, task_type)


def tf_configs(hosts: Sequence[str], *, port: int | None = None) -> list[dict]:
    """The ``TF_CONFIG`` of every worker of a cluster: element ``i`` is for ``hosts[i]``.

    Security: the workers' gRPC servers are unauthenticated and listen on all
    interfaces; keep ``hosts`` on a private network.

    Args:
        hosts: One ``"host"`` or ``"host:port"`` per worker.
        port: The port of hosts given without one; ``None`` means :data:`DEFAULT_PORT`.

    Returns:
        One dict per worker, as :func:`tf_config` returns it.

    Raises:
        ValueError: As :func:`tf_config`.

    Example:
        >>> from mirrorkit.cluster.scaleout import tf_configs
        >>> configs = tf_configs(["10.0.0.1", "10.0.0.2"], port=2222)
        >>> configs[0]["cluster"]
        {'worker': ['10.0.0.1:2222', '10.0.0.2:2222']}
        >>> [c["task"]["index"] for c in configs]
        [0, 1]
    """
    addresses = worker_addresses(hosts, port)
    return [worker_config(addresses, i, "worker") for i in range(len(addresses))]


def tf_config_env(
    hosts: Sequence[str], index: int, *, port: int | None = None, task_type: str = "worker"
) -> str:
    """The ``TF_CONFIG`` of one worker as the JSON string to put in its environment.

    Set it before the worker starts (``export TF_CONFIG='...'`` in a shell, or
    ``env=`` of a subprocess); a strategy reads it once, when it is created.

    Args:
        hosts: One ``"host"`` or ``"host:port"`` per worker.
        index: This worker's position in ``hosts``.
        port: The port of hosts given without one; ``None`` means :data:`DEFAULT_PORT`.
        task_type: The job name in the cluster (``"worker"``).

    Returns:
        Compact JSON, without spaces, safe inside single quotes in a shell.

    Raises:
        ValueError: As :func:`tf_config`.

    Example:
        >>> from mirrorkit.cluster.scaleout import tf_config_env
        >>> print(tf_config_env(["node1", "node2"], 0))
        {"cluster":{"worker":["node1:12345","node2:12345"]},"task":{"type":"worker","index":0}}
    """
    config = tf_config(hosts, index, port=port, task_type=task_type)
    return json.dumps(config, separators=(",", ":"))
