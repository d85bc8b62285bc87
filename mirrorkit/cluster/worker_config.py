"""A worker's cluster, read from TF_CONFIG or Slurm's variables, refused if it describes none.

Example:
    >>> from mirrorkit.cluster.worker_config import check_tf_config
    >>> check_tf_config('{"cluster": {"worker": ["a:1"]}, "task": {"type": "worker", "index": 0}}')
    {'cluster': {'worker': ['a:1']}, 'task': {'type': 'worker', 'index': 0}}
"""

from __future__ import annotations

import json
import os

from mirrorkit._validate import refuse


def resolve_tf_config(resolver: str, port: int | None) -> dict:
    """The cluster this process belongs to: TF_CONFIG, or built from Slurm's variables."""
    if resolver == "slurm":
        # mirrorkit.cluster.scaleout reads Slurm's variables itself: TensorFlow's resolver sorts
        # node names as strings (node10 before node9) and runs nvidia-smi on CPU nodes.
        from mirrorkit.cluster.scaleout import slurm_tf_config

        return slurm_tf_config(port=port)
    return check_tf_config(os.environ["TF_CONFIG"])


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
