"""Slurm: an ``sbatch`` script with one worker per node, and the variables each worker reads.

Example:
    >>> from mirrorkit.cluster.scaleout.slurm import slurm_script
    >>> slurm_script("train.py:train", nodes=2).splitlines()[2]
    '#SBATCH --nodes=2'
"""

from __future__ import annotations

import os
import re
import shlex
from collections.abc import Iterable, Mapping

from mirrorkit._validate import refuse, require_seconds
from mirrorkit.cluster.scaleout._arguments import (
    DEFAULT_PORT,
    SECURITY_LINES,
    check_count,
    check_line,
    check_port,
    check_target,
    worker_addresses,
    worker_config,
)

_SLURM_TIME = re.compile(
    r"\d+|\d+:\d{1,2}|\d+:\d{1,2}:\d{1,2}|\d+-\d+|\d+-\d+:\d{1,2}|\d+-\d+:\d{1,2}:\d{1,2}"
    r"|UNLIMITED|INFINITE"
)


_SLURM_JOB_NAME = re.compile(r"[A-Za-z0-9_.+-]+")
_SBATCH_EXAMPLE = "extra_sbatch=['--partition=gpu', '--gres=gpu:4']"
# How a refusal of one of the job step's variables ends: srun sets them all, together.
_SRUN_SETS = {
    "write": "srun's own variables: run this inside one srun job step",
    "error": ValueError,
}


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


def _sbatch_lines(extra_sbatch: str | Iterable[str]) -> list[str]:
    if isinstance(extra_sbatch, str):
        extra_sbatch = (extra_sbatch,)
    lines = []
    for item in extra_sbatch:
        text = check_line(item, "each extra_sbatch item")
        option = text.removeprefix("#SBATCH").strip()
        if not option.startswith("-"):
            must = "sbatch options such as '--partition=gpu' or '--gres=gpu:4'"
            refuse("extra_sbatch", item, must=must, write=_SBATCH_EXAMPLE, error=ValueError)
        name = re.split(r"[=\s]", option, maxsplit=1)[0]
        if name in _MANAGED_SBATCH or (len(name) > 2 and name[:2] in ("-N", "-n", "-J", "-t")):
            key = _MANAGED_SBATCH.get(name) or _MANAGED_SBATCH[name[:2]]
            refuse(
                "extra_sbatch",
                must="sbatch options that slurm_script does not write itself",
                got=f"{name!r}, which slurm_script writes itself: use its argument {key} instead",
                write=_SBATCH_EXAMPLE,
                error=ValueError,
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
    join_timeout: float | None = None,
) -> str:
    """An ``sbatch`` script that runs ``train(ctx)`` on ``nodes`` machines, one worker each.

    ``srun`` starts ``python -m mirrorkit.worker <script_target> --resolver slurm --port
    <port>`` once per node. Each worker learns the cluster from the variables Slurm sets
    for the job step (``SLURM_PROCID``, ``SLURM_STEP_NUM_TASKS``, ``SLURM_STEP_NODELIST``,
    ``SLURM_STEP_TASKS_PER_NODE``) with :func:`slurm_tf_config`, in Slurm's order of the
    nodes (TensorFlow's ``SlurmClusterResolver`` gives the same cluster when the node names
    have one length, and sorts ``node10`` before ``node9`` otherwise); worker 0 is the
    chief. Save the text to a file and submit it with ``sbatch``. The tests submit it to a
    real Slurm (Debian's slurm-wlm 22.05) of two nodes on this machine.

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
        join_timeout: Seconds every worker waits for the others to join before it exits
            naming the ones missing (the worker's ``--join-timeout``); ``None`` keeps the
            worker's default, 120 s. Raise it where nodes start slowly.

    Returns:
        The script's text.

    Raises:
        ValueError: If an argument is malformed, or ``extra_sbatch`` sets an option this
            function writes from its own arguments (nodes, tasks, job name, time).

    Example:
        >>> from mirrorkit.cluster.scaleout import slurm_script
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
    target = check_target(script_target)
    nodes = check_count(nodes, "nodes")
    job_name = check_line(job_name, "job_name")
    if not _SLURM_JOB_NAME.fullmatch(job_name):
        must = "a Slurm job name (job_name may hold letters, digits and '_.+-' only)"
        refuse("job_name", job_name, must=must, write="job_name='mirrorbook'", error=ValueError)
    time = check_line(time, "time")
    if not _SLURM_TIME.fullmatch(time):
        must = (
            "a Slurm time limit such as '01:00:00', '90' (minutes) or '2-00:00:00' "
            "(days-hours:minutes:seconds)"
        )
        refuse("time", time, must=must, write="time='01:00:00'", error=ValueError)
    port = check_port(port)
    python = check_line(python, "python")
    extra = _sbatch_lines(extra_sbatch)
    join = ""
    if join_timeout is not None:
        seconds = require_seconds("join_timeout", join_timeout, write="join_timeout=300")
        join = f" --join-timeout {seconds:g}"
    security = [line.format(port=port) for line in SECURITY_LINES]
    command = (
        f"srun --nodes={nodes} --ntasks-per-node=1 {python} -m mirrorkit.worker "
        f"{shlex.quote(target)} --resolver slurm --port {port}{join}"
    )
    lines = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job_name}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --time={time}",
        *extra,
        "",
        "# Written by mirrorkit.cluster.scaleout.slurm_script: one TensorFlow worker per node.",
        "# Each worker finds the cluster in Slurm's variables; worker 0 is the chief.",
        f"# Every node must reach every other node on port {port}.",
        *(f"# {line}" for line in security),
        "set -euo pipefail",
        command,
    ]
    return "\n".join(lines) + "\n"


def _expand_nodelist(nodelist: str) -> list[str] | None:
    """Slurm's compact node list (``"n[1-2],m5"``) -> host names, in Slurm's order.

    ``None`` if the list is malformed (or of a form not supported here).
    """
    parts = re.findall(r"(?:[^,\[]|\[[^\]]*\])+", nodelist)
    if ",".join(parts) != nodelist or not parts:
        return None
    hosts = []
    for part in parts:
        match = re.fullmatch(r"([^\[\]]*)(?:\[([^\]]+)\])?([^\[\]]*)", part)
        if match is None:
            return None
        prefix, ranges, suffix = match.groups()
        if ranges is None:
            hosts.append(prefix + suffix)
            continue
        for item in ranges.split(","):
            low, _, high = item.partition("-")
            if not re.fullmatch(r"[0-9]+", low) or not re.fullmatch(r"[0-9]+", high or low):
                return None
            width = len(low)
            hosts.extend(
                f"{prefix}{n:0{width}d}{suffix}" for n in range(int(low), int(high or low) + 1)
            )
    return hosts


def _expand_tasks_per_node(text: str) -> list[int] | None:
    """Slurm's ``"2(x3),1"`` -> ``[2, 2, 2, 1]``; ``None`` if malformed."""
    counts = []
    for part in text.split(","):
        match = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if match is None:
            return None
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
        >>> from mirrorkit.cluster.scaleout import slurm_tf_config
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
    base = DEFAULT_PORT if port is None else check_port(port)
    for name in ("STEP_NUM_TASKS", "PROCID"):
        if not re.fullmatch(r"[0-9]+", env[f"SLURM_{name}"].strip()):
            refuse(f"SLURM_{name}", env[f"SLURM_{name}"], **_SRUN_SETS, must="a number")
    hosts = _expand_nodelist(env["SLURM_STEP_NODELIST"])
    if hosts is None:
        must = "a Slurm node list such as 'node[1-4,7],gpu05'"
        refuse("SLURM_STEP_NODELIST", env["SLURM_STEP_NODELIST"], **_SRUN_SETS, must=must)
    counts = _expand_tasks_per_node(env["SLURM_STEP_TASKS_PER_NODE"])
    if counts is None or len(counts) != len(hosts):
        text = env["SLURM_STEP_TASKS_PER_NODE"]
        refuse(
            "SLURM_STEP_TASKS_PER_NODE",
            must=f"one task count per node of SLURM_STEP_NODELIST, which names {len(hosts)}",
            got=f"the malformed SLURM_STEP_TASKS_PER_NODE {text!r}"
            if counts is None
            else f"{text!r}, which gives {len(counts)} nodes",
            **_SRUN_SETS,
        )
    if max(counts) + base - 1 > 65535:
        got = f"{base}, which leaves no room for {max(counts)} tasks on one node"
        must = f"at most {65536 - max(counts)}"
        refuse("port", must=must, got=got, write="port=12345", error=ValueError)
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
    return worker_config(worker_addresses(addresses, base), rank, "worker")
