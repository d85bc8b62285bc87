"""Configuration for running a ``train(ctx)`` function on a real cluster.

The local launcher starts every worker on one machine. When that machine is not enough,
the same function runs on many machines with ``python -m mirrorkit.worker
path/to/train.py:train``, started once per node by a scheduler the cluster already has.
This module writes what that scheduler needs, and nothing runs here:

* :func:`tf_config`, :func:`tf_configs` and :func:`tf_config_env`: the ``TF_CONFIG`` of
  each worker, for machines you start by hand (or with any tool that sets variables).
* :func:`slurm_script`: an ``sbatch`` script, one worker per node; each worker reads its
  place in the cluster from Slurm's variables with TensorFlow's ``SlurmClusterResolver``.
  :func:`slurm_tf_config` reads the same variables without TensorFlow.
* :func:`kubernetes_manifest`: a headless Service and an Indexed Job, whose pods
  compute their ``TF_CONFIG`` from their completion index.

What ``MultiWorkerMirroredStrategy`` needs from the network: every worker must reach every
other worker on its port (the all-reduce goes between all of them, not only to the
chief), under the host names written in ``TF_CONFIG``.

Security: TensorFlow's gRPC server has no authentication and no encryption, and it
listens on every network interface of the machine (``0.0.0.0:<port>``). Anyone who can
reach that port can run TensorFlow operations in the worker's process. Keep the workers on
a private network, or behind a firewall that admits only the other workers; never expose
the port to the public internet.
"""

from __future__ import annotations

import ipaddress
import json
import os
import re
import shlex
from collections.abc import Iterable, Mapping, Sequence

#: The port a worker listens on when its host is given without one.
DEFAULT_PORT = 12345

_LABEL = r"[A-Za-z0-9_](?:[A-Za-z0-9_-]*[A-Za-z0-9_])?"
_HOSTNAME = re.compile(rf"{_LABEL}(?:\.{_LABEL})*")
_TASK_TYPE = re.compile(r"[a-z][a-z0-9_]*")  # what TensorFlow accepts as a job name
_K8S_NAME = re.compile(r"[a-z](?:[-a-z0-9]*[a-z0-9])?")  # an RFC 1035 label
_K8S_NAMESPACE = re.compile(r"[a-z0-9](?:[-a-z0-9]*[a-z0-9])?")  # an RFC 1123 label
_SLURM_TIME = re.compile(
    r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE"
)
_SLURM_JOB_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
# sbatch options slurm_script sets from its own arguments.
_MANAGED_SBATCH = {
    "--nodes": "nodes=",
    "-N": "nodes=",
    "--ntasks": "nodes= (one task per node)",
    "-n": "nodes= (one task per node)",
    "--ntasks-per-node": "nodes= (one task per node)",
    "--job-name": "job_name=",
    "-J": "job_name=",
    "--time": "time=",
    "-t": "time=",
}
_SECURITY_LINES = (
    "TensorFlow's gRPC server has no authentication and listens on all interfaces:",
    "keep port {port} on a private network or behind a firewall, never on the internet.",
)


# --- TF_CONFIG ---------------------------------------------------------------------------


def _check_port(port: object, what: str = "port") -> int:
    if isinstance(port, bool) or not isinstance(port, int) or not 1 <= port <= 65535:
        raise ValueError(
            f"{what} must be an int from 1 to 65535, got {port!r}; "
            f"pick a free port such as {DEFAULT_PORT}."
        )
    return port


def _parse_host(spec: object, port: int) -> str:
    """One ``"host"`` or ``"host:port"`` -> ``"host:port"``, or a ValueError saying why not."""
    if not isinstance(spec, str):
        raise ValueError(f"each host must be a string such as 'node1:12345', got {spec!r}.")
    text = spec.strip()
    if "://" in text:
        raise ValueError(
            f"malformed host {spec!r}: give a host name or address without a scheme, "
            f"such as 'node1' or 'node1:{port}'."
        )
    if text.startswith("["):  # [IPv6]:port
        match = re.fullmatch(r"\[([^\]]+)\](?::(\d+))?", text)
        try:
            ipaddress.IPv6Address(match.group(1) if match else "")
        except ValueError:
            raise ValueError(
                f"malformed host {spec!r}: write an IPv6 address as '[addr]' or '[addr]:port', "
                "e.g. '[fd00::1]:12345'."
            ) from None
        address, port_text = f"[{match.group(1)}]", match.group(2)
    elif text.count(":") > 1:
        raise ValueError(
            f"host {spec!r} looks like an IPv6 address: put it in brackets, "
            f"e.g. '[{text}]' or '[{text}]:{port}'."
        )
    else:
        address, _, port_text = text.partition(":")
        if ":" in text and not port_text:
            raise ValueError(f"host {spec!r} ends with ':' but no port: write 'host:{port}'.")
        if not _HOSTNAME.fullmatch(address):
            raise ValueError(
                f"malformed host {spec!r}: expected a host name or IPv4 address, optionally "
                "with ':port', such as 'node1', 'node1.cluster.local:12345' or '10.0.0.5'."
            )
    if port_text is None or port_text == "":
        return f"{address}:{port}"
    if not re.fullmatch(r"[0-9]+", port_text):
        raise ValueError(f"host {spec!r} has a port that is not a number: write 'host:{port}'.")
    return f"{address}:{_check_port(int(port_text), f'the port of host {spec!r}')}"


def _addresses(hosts: Sequence[str], port: int | None) -> list[str]:
    """Validate ``hosts`` and return one ``host:port`` per worker, in order."""
    if isinstance(hosts, str):
        raise ValueError(
            f"hosts must be a list of strings, one per worker, not the string {hosts!r}; "
            "for a comma-separated string, pass hosts.split(',')."
        )
    default_port = DEFAULT_PORT if port is None else _check_port(port)
    hosts = list(hosts)
    if not hosts:
        raise ValueError(
            "hosts is empty: give one 'host' or 'host:port' per worker, e.g. ['node1', 'node2']."
        )
    addresses = [_parse_host(spec, default_port) for spec in hosts]
    first_seen: dict[str, int] = {}
    for i, address in enumerate(addresses):
        j = first_seen.setdefault(address.lower(), i)
        if j != i:
            host, _, taken = address.rpartition(":")
            other = int(taken) + 1 if int(taken) < 65535 else int(taken) - 1
            raise ValueError(
                f"hosts {j} and {i} are both {address!r}: two workers cannot share a port. "
                f"Give workers on the same machine different ports, e.g. "
                f"'{host}:{taken}' and '{host}:{other}'."
            )
    return addresses


def _config(addresses: list[str], index: object, task_type: str) -> dict:
    if isinstance(index, bool) or not isinstance(index, int):
        raise ValueError(f"index must be an int (this worker's position in hosts), got {index!r}.")
    if not 0 <= index < len(addresses):
        raise ValueError(
            f"index {index} is out of range for {len(addresses)} hosts: "
            f"use 0 to {len(addresses) - 1}, the position of this machine in hosts."
        )
    return {
        "cluster": {task_type: list(addresses)},
        "task": {"type": task_type, "index": index},
    }


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
        >>> from mirrorkit.scaleout import tf_config
        >>> tf_config(["node1", "node2:2222"], 1)
        {'cluster': {'worker': ['node1:12345', 'node2:2222']}, 'task': {'type': 'worker', 'index': 1}}
    """  # noqa: E501 - a doctest's output is one line
    if not isinstance(task_type, str) or not _TASK_TYPE.fullmatch(task_type):
        raise ValueError(
            f"task_type must be a TensorFlow job name such as 'worker' (lowercase letters, "
            f"digits, '_'), got {task_type!r}."
        )
    addresses = _addresses(hosts, port)
    if task_type == "chief" and len(addresses) > 1:
        raise ValueError(
            f"a cluster has one chief, but {len(addresses)} hosts were given: use "
            "task_type='worker' (worker 0 then acts as the chief)."
        )
    return _config(addresses, index, task_type)


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
        >>> from mirrorkit.scaleout import tf_configs
        >>> configs = tf_configs(["10.0.0.1", "10.0.0.2"], port=2222)
        >>> configs[0]["cluster"]
        {'worker': ['10.0.0.1:2222', '10.0.0.2:2222']}
        >>> [c["task"]["index"] for c in configs]
        [0, 1]
    """
    addresses = _addresses(hosts, port)
    return [_config(addresses, i, "worker") for i in range(len(addresses))]


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
        >>> from mirrorkit.scaleout import tf_config_env
        >>> print(tf_config_env(["node1", "node2"], 0))
        {"cluster":{"worker":["node1:12345","node2:12345"]},"task":{"type":"worker","index":0}}
    """
    config = tf_config(hosts, index, port=port, task_type=task_type)
    return json.dumps(config, separators=(",", ":"))


# --- Slurm -------------------------------------------------------------------------------


def _check_target(script_target: object) -> str:
    """``FILE:FUNCTION`` or ``FILE``, the two forms ``python -m mirrorkit.worker`` takes."""
    usage = (
        "script_target must be 'path/to/train.py:function' (the file, a colon, then the name "
        "of the training function, e.g. 'train.py:train'), or a script path alone"
    )
    if not isinstance(script_target, str) or any(c in script_target for c in "\n\r\0"):
        raise ValueError(f"{usage}; got {script_target!r}.")
    path, colon, function = script_target.rpartition(":")
    if not colon:
        path, function = script_target, None
    if not path.strip() or (function is not None and not function.isidentifier()):
        raise ValueError(f"{usage}; got {script_target!r}.")
    return script_target


def _check_count(value: object, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise ValueError(f"{what} must be an int >= 1 (one worker each), got {value!r}.")
    return value


def _check_line(value: object, what: str) -> str:
    if not isinstance(value, str) or not value.strip() or any(c in value for c in "\n\r\0"):
        raise ValueError(f"{what} must be a non-empty string on one line, got {value!r}.")
    return value.strip()


def _sbatch_lines(extra_sbatch: str | Iterable[str]) -> list[str]:
    if isinstance(extra_sbatch, str):
        extra_sbatch = (extra_sbatch,)
    lines = []
    for item in extra_sbatch:
        text = _check_line(item, "each extra_sbatch item")
        option = text.removeprefix("#SBATCH").strip()
        if not option.startswith("-"):
            raise ValueError(
                f"extra_sbatch items are sbatch options such as '--partition=gpu' or "
                f"'--gres=gpu:4', got {item!r}."
            )
        name = re.split(r"[=\s]", option, maxsplit=1)[0]
        if name in _MANAGED_SBATCH or (len(name) > 2 and name[:2] in ("-N", "-n", "-J", "-t")):
            key = _MANAGED_SBATCH.get(name) or _MANAGED_SBATCH[name[:2]]
            raise ValueError(
                f"extra_sbatch sets {name!r}, which slurm_script writes itself: "
                f"use its argument {key} instead."
            )
        lines.append(f"#SBATCH {option}")
    return lines


def slurm_script(
    script_target: str,
    *,
    nodes: int,
    job_name: str = "mirrorbook",
    time: str = "01:00:00",
    port: int = DEFAULT_PORT,
    python: str = "python",
    extra_sbatch: str | Iterable[str] = (),
) -> str:
    """An ``sbatch`` script that runs ``train(ctx)`` on ``nodes`` machines, one worker each.

    ``srun`` starts ``python -m mirrorkit.worker <script_target> --resolver slurm --port
    <port>`` once per node. Each worker learns the cluster from the variables Slurm sets
    for the job step (``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_NODELIST``,
    ``SLURM_STEP_TASKS_PER_NODE``) through TensorFlow's ``SlurmClusterResolver``; worker
    0 is the chief. Save the text to a file and submit it with ``sbatch``.

    TensorFlow's resolver orders the nodes by name, as strings: with node names of
    different lengths (``node9``, ``node10``) that order differs from Slurm's, and a worker
    may be given another node's address. See :func:`slurm_tf_config`.

    Security: every worker's gRPC server listens on ``port`` on all interfaces, without
    authentication. Run on the cluster's private network; never open the port to the
    internet.

    Args:
        script_target: ``"path/to/train.py:function"`` (or a script path alone, run as
            ``__main__``), as the compute nodes see the path.
        nodes: How many nodes, hence workers.
        job_name: Slurm's name for the job.
        time: Slurm's time limit (``"HH:MM:SS"``, ``"D-HH:MM"``, minutes...).
        port: The port every worker listens on; it must be free on every node.
        python: The Python command on the compute nodes, written into the script as
            given (a virtual environment's ``bin/python``, or a container launcher).
        extra_sbatch: More sbatch options, one per item, such as ``"--partition=gpu"``
            or ``"--gres=gpu:4"`` (``#SBATCH`` is added when missing).

    Returns:
        The script's text.

    Raises:
        ValueError: If an argument is malformed, or ``extra_sbatch`` sets an option this
            function writes from its own arguments (nodes, tasks, job name, time).

    Example:
        >>> from mirrorkit.scaleout import slurm_script
        >>> script = slurm_script("train.py:train", nodes=2, extra_sbatch=["--partition=gpu"])
        >>> print(script)  # doctest: +ELLIPSIS
        #!/bin/bash
        #SBATCH --job-name=mirrorbook
        #SBATCH --nodes=2
        #SBATCH --ntasks-per-node=1
        #SBATCH --time=01:00:00
        #SBATCH --partition=gpu
        ...
        srun --nodes=2 --ntasks-per-node=1 python -m mirrorkit.worker train.py:train --resolver slurm --port 12345
        <BLANKLINE>
    """  # noqa: E501 - a doctest's output is one line
    target = _check_target(script_target)
    nodes = _check_count(nodes, "nodes")
    job_name = _check_line(job_name, "job_name")
    if not _SLURM_JOB_NAME.fullmatch(job_name):
        raise ValueError(
            f"job_name may hold letters, digits and '_.+-' only, got {job_name!r}; "
            "e.g. 'mirrorbook'."
        )
    time = _check_line(time, "time")
    if not _SLURM_TIME.fullmatch(time):
        raise ValueError(
            f"time must be a Slurm time limit such as '01:00:00', '90' (minutes) or "
            f"'2-00:00:00' (days-hours:minutes:seconds), got {time!r}."
        )
    port = _check_port(port)
    python = _check_line(python, "python")
    extra = _sbatch_lines(extra_sbatch)
    security = [line.format(port=port) for line in _SECURITY_LINES]
    command = (
        f"srun --nodes={nodes} --ntasks-per-node=1 {python} -m mirrorkit.worker "
        f"{shlex.quote(target)} --resolver slurm --port {port}"
    )
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --time={time}",
        *extra,
        "",
        "# Written by mirrorkit.scaleout.slurm_script: one TensorFlow worker per node.",
        "# Each worker finds the cluster in Slurm's variables; worker 0 is the chief.",
        f"# Every node must reach every other node on port {port}.",
        *(f"# {line}" for line in security),
        "set -euo pipefail",
        command,
    ]
    return "\n".join(lines) + "\n"


def _expand_nodelist(nodelist: str) -> list[str]:
    """Slurm's compact node list (``"n[1-2],m5"``) -> host names, in Slurm's order."""
    parts = re.findall(r"(?:[^,\[]|\[[^\]]*\])+", nodelist)
    if ",".join(parts) != nodelist or not parts:
        raise ValueError(f"malformed Slurm node list {nodelist!r}.")
    hosts = []
    for part in parts:
        match = re.fullmatch(r"([^\[\]]*)(?:\[([^\]]+)\])?([^\[\]]*)", part)
        if match is None:
            raise ValueError(
                f"malformed or unsupported Slurm node list {nodelist!r} at {part!r}: expected "
                "names such as 'node[1-4,7],gpu05'."
            )
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            hosts.append(prefix + suffix)
            continue
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            if not re.fullmatch(r"[0-9]+", low) or not re.fullmatch(r"[0-9]+", high or low):
                raise ValueError(f"malformed Slurm node list {nodelist!r} at {item!r}.")
            width = len(low)
            hosts.extend(
                f"{prefix}{n:0{width}d}{suffix}" for n in range(int(low), int(high or low) + 1)
            )
    return hosts


def _expand_tasks_per_node(text: str) -> list[int]:
    """Slurm's ``"2(x3),1"`` -> ``[2, 2, 2, 1]``."""
    counts = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            raise ValueError(f"malformed SLURM_STEP_TASKS_PER_NODE {text!r}.")
        counts.extend([int(match.group(1))] * int(match.group(2) or 1))
    return counts


def slurm_tf_config(environ: Mapping[str, str] | None = None, *, port: int | None = None) -> dict:
    """This Slurm task's ``TF_CONFIG``, read from the job step's variables in Slurm's order.

    The pure-Python counterpart of TensorFlow's ``SlurmClusterResolver``, for two cases it
    gets wrong: it orders nodes by name as strings, so with ``node9`` and ``node10`` the
    task Slurm runs on ``node9`` is given ``node10``'s address; and with no GPU visible it
    fails (it runs ``nvidia-smi``). Here worker ``i`` is Slurm's task ``i``
    (``SLURM_PROCID``) on the node Slurm put it on (block distribution, ``srun``'s default),
    and GPUs are not looked at. Tasks sharing a node get consecutive ports, as in
    TensorFlow's resolver. Set the result as ``TF_CONFIG`` (see :func:`tf_config_env`).

    Security: the ports are unauthenticated gRPC servers on all interfaces; keep them on
    the cluster's private network.

    Args:
        environ: The variables to read; ``None`` means ``os.environ``. Uses
            ``SLURM_PROCID``, ``SLURM_STEP_NODELIST``, ``SLURM_STEP_TASKS_PER_NODE`` and
            ``SLURM_STEP_NUM_TASKS``, which ``srun`` sets in every task.
        port: The first task's port on each node; ``None`` means :data:`DEFAULT_PORT`.

    Returns:
        ``{"cluster": {"worker": [...]}, "task": {"type": "worker", "index": SLURM_PROCID}}``.

    Raises:
        RuntimeError: If a variable is missing (not inside an ``srun`` job step).
        ValueError: If a variable is malformed or the variables disagree.

    Example:
        >>> from mirrorkit.scaleout import slurm_tf_config
        >>> step = {"SLURM_PROCID": "1", "SLURM_STEP_NODELIST": "node[9-10]",
        ...         "SLURM_STEP_TASKS_PER_NODE": "1(x2)", "SLURM_STEP_NUM_TASKS": "2"}
        >>> slurm_tf_config(step)
        {'cluster': {'worker': ['node9:12345', 'node10:12345']}, 'task': {'type': 'worker', 'index': 1}}
    """  # noqa: E501 - a doctest's output is one line
    env = os.environ if environ is None else environ
    names = ("PROCID", "STEP_NODELIST", "STEP_TASKS_PER_NODE", "STEP_NUM_TASKS")
    missing = [f"SLURM_{name}" for name in names if f"SLURM_{name}" not in env]
    if missing:
        raise RuntimeError(
            f"{', '.join(missing)} not set: run this inside a Slurm job step, "
            "i.e. in a command started by srun."
        )
    base = DEFAULT_PORT if port is None else _check_port(port)
    for name in ("STEP_NUM_TASKS", "PROCID"):
        if not re.fullmatch(r"[0-9]+", env[f"SLURM_{name}"].strip()):
            raise ValueError(f"SLURM_{name} must be a number, got {env[f'SLURM_{name}']!r}.")
    hosts = _expand_nodelist(env["SLURM_STEP_NODELIST"])
    counts = _expand_tasks_per_node(env["SLURM_STEP_TASKS_PER_NODE"])
    if len(counts) != len(hosts):
        raise ValueError(
            f"SLURM_STEP_TASKS_PER_NODE gives {len(counts)} nodes but SLURM_STEP_NODELIST "
            f"names {len(hosts)}; are they from the same job step?"
        )
    if max(counts) + base - 1 > 65535:
        raise ValueError(f"port {base} leaves no room for {max(counts)} tasks on one node.")
    addresses = [f"{h}:{base + k}" for h, n in zip(hosts, counts, strict=True) for k in range(n)]
    if int(env["SLURM_STEP_NUM_TASKS"]) != len(addresses):
        raise ValueError(
            f"SLURM_STEP_NUM_TASKS is {env['SLURM_STEP_NUM_TASKS']}, but the node list holds "
            f"{len(addresses)} tasks; are they from the same job step?"
        )
    rank = int(env["SLURM_PROCID"])
    if rank >= len(addresses):
        raise ValueError(
            f"SLURM_PROCID is {rank}, but the job step has {len(addresses)} tasks "
            f"(0 to {len(addresses) - 1}); are they from the same job step?"
        )
    # A node named twice gets the same check as a hand-written host list.
    return _config(_addresses(addresses, base), rank, "worker")


# --- Kubernetes --------------------------------------------------------------------------


def _q(value: str) -> str:
    """A YAML double-quoted scalar (JSON's string syntax is valid YAML)."""
    return json.dumps(value)


def _k8s_name(name: object, workers: int) -> str:
    longest = len(f"-{workers - 1}")
    if not isinstance(name, str) or not _K8S_NAME.fullmatch(name) or len(name) + longest > 63:
        raise ValueError(
            f"name must be a DNS label of at most {63 - longest} characters (lowercase letters, "
            f"digits and '-', starting with a letter, so that the pod host names "
            f"'<name>-<index>' stay valid), got {name!r}; e.g. 'mirrorbook'."
        )
    return name


def _container_script(cluster_json: str, workers: int, target: str) -> str:
    """The shell program each pod runs: TF_CONFIG from its completion index, then the worker."""
    head, tail = cluster_json.split('"index":0')
    return "\n".join(
        [
            "set -eu",
            'index="${JOB_COMPLETION_INDEX:-}"',
            'case "$index" in',
            "  ''|*[!0-9]*)",
            "    echo \"JOB_COMPLETION_INDEX is '$index', not a number: run this pod in an"
            ' Indexed Job." >&2',
            "    exit 64 ;;",
            "esac",
            f'if [ "$index" -ge {workers} ]; then',
            f'  echo "JOB_COMPLETION_INDEX $index is not below the {workers} workers." >&2',
            "  exit 64",
            "fi",
            f"export TF_CONFIG='{head}\"index\":'\"$index\"'{tail}'",
            'echo "TF_CONFIG=$TF_CONFIG"',
            f"exec python -m mirrorkit.worker {shlex.quote(target)}",
        ]
    )


def kubernetes_manifest(
    image: str,
    script_target: str,
    *,
    workers: int,
    name: str = "mirrorbook",
    port: int = DEFAULT_PORT,
    namespace: str | None = None,
) -> str:
    """A headless Service and an Indexed Job that run ``train(ctx)`` in ``workers`` pods.

    Kubernetes names the Job's pods ``<name>-0``, ``<name>-1``, ... and, because their
    ``subdomain`` is the headless Service, resolves ``<name>-<i>.<name>`` to pod ``i``.
    Each pod builds its ``TF_CONFIG`` from ``JOB_COMPLETION_INDEX`` with those host names,
    then runs ``python -m mirrorkit.worker <script_target>``. The Service publishes pods
    before they are ready, so early workers can find late ones while the cluster forms.
    ``backoffLimit: 0``: if one worker fails, the Job fails instead of waiting forever.

    Security: the workers' gRPC servers listen on ``port`` without authentication. Keep
    them inside the cluster (the Service has no external IP; do not add one) and, where
    you can, restrict the port to the Job's pods with a NetworkPolicy.

    Args:
        image: The container image; it must hold Python, TensorFlow, mirrorkit and the
            training script.
        script_target: ``"path/to/train.py:function"`` (or a script path alone), the path
            as the container sees it.
        workers: How many pods, hence workers.
        name: The name of the Service and of the Job (pod host names ``<name>-<i>``).
        port: The port every worker listens on.
        namespace: The namespace of both objects; ``None`` leaves it to ``kubectl``.

    Returns:
        Two YAML documents, for ``kubectl apply -f``.

    Raises:
        ValueError: If an argument is malformed.

    Example:
        >>> from mirrorkit.scaleout import kubernetes_manifest
        >>> text = kubernetes_manifest("registry.example/train:1", "train.py:train", workers=2)
        >>> keys = ("kind:", "completionMode:", "completions:", "parallelism:", "subdomain:")
        >>> [line.strip() for line in text.splitlines() if line.strip().startswith(keys)]
        ['kind: Service', 'kind: Job', 'completionMode: Indexed', 'completions: 2', 'parallelism: 2', 'subdomain: mirrorbook']
        >>> print(next(line.strip() for line in text.splitlines() if "TF_CONFIG='" in line))
        export TF_CONFIG='{"cluster":{"worker":["mirrorbook-0.mirrorbook:12345","mirrorbook-1.mirrorbook:12345"]},"task":{"type":"worker","index":'"$index"'}}'
    """  # noqa: E501 - a doctest's output is one line
    image = _check_line(image, "image")
    if any(c.isspace() for c in image):
        raise ValueError(f"image must be an image reference without spaces, got {image!r}.")
    target = _check_target(script_target)
    workers = _check_count(workers, "workers")
    name = _k8s_name(name, workers)
    port = _check_port(port)
    if namespace is not None and (
        not isinstance(namespace, str)
        or not _K8S_NAMESPACE.fullmatch(namespace)
        or len(namespace) > 63
    ):
        raise ValueError(
            f"namespace must be a DNS label (lowercase letters, digits, '-'), got {namespace!r}."
        )
    hosts = [f"{name}-{i}.{name}" for i in range(workers)]
    cluster_json = tf_config_env(hosts, 0, port=port)
    script = _container_script(cluster_json, workers, target)
    metadata = [f"  name: {name}"] + ([f"  namespace: {namespace}"] if namespace else [])
    security = [line.format(port=port) for line in _SECURITY_LINES]
    lines = [
        "# Written by mirrorkit.scaleout.kubernetes_manifest: apply with `kubectl apply -f`.",
        *(f"# {line}" for line in security),
        "apiVersion: v1",
        "kind: Service",
        "metadata:",
        *metadata,
        "spec:",
        "  clusterIP: None  # headless: DNS names for the pods, no load balancing",
        "  publishNotReadyAddresses: true",
        "  selector:",
        f"    job-name: {name}",
        "  ports:",
        "    - name: grpc",
        f"      port: {port}",
        f"      targetPort: {port}",
        "---",
        "apiVersion: batch/v1",
        "kind: Job",
        "metadata:",
        *metadata,
        "spec:",
        "  completionMode: Indexed",
        f"  completions: {workers}",
        f"  parallelism: {workers}",
        "  backoffLimit: 0",
        "  template:",
        "    spec:",
        f"      subdomain: {name}",
        "      restartPolicy: Never",
        "      containers:",
        "        - name: worker",
        f"          image: {_q(image)}",
        "          env:",
        "            - name: PYTHONUNBUFFERED",
        '              value: "1"',
        "          ports:",
        "            - name: grpc",
        f"              containerPort: {port}",
        "          command:",
        "            - sh",
        '            - "-c"',
        "            - |",
        *(f"              {line}" for line in script.splitlines()),
    ]
    return "\n".join(lines) + "\n"
