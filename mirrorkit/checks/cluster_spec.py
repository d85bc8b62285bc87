"""Checks for chapter 9's parameter-server exercises: a TF_CONFIG and a variable partitioner.

Both are read by TensorFlow itself before the verdict, as ``ParameterServerStrategy`` reads them.

Example:
    >>> from mirrorkit.checks.cluster_spec import check_cluster_spec
    >>> check_cluster_spec(..., chief="a:1", worker=["b:1"], ps=["c:1"], task=("ps", 0))
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import contextlib
import json
import os
from collections.abc import Iterator, Sequence
from typing import Any

from mirrorkit._validate import refuse, require_address, require_count, require_int, require_items
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, raised

JOBS = ("chief", "worker", "ps")

# Job names learners write for the three jobs of a parameter-server cluster, and the right one.
_JOB_MIXUPS = {
    "parameter_server": "ps",
    "parameter_servers": "ps",
    "parameterserver": "ps",
    "ps_hosts": "ps",
    "server": "ps",
    "workers": "worker",
    "worker_hosts": "worker",
    "master": "chief",
    "coordinator": "chief",
    "evaluator": "chief",
}


def check_cluster_spec(
    answer: Any, *, chief: str, worker: Sequence[str], ps: Sequence[str], task: tuple[str, int]
) -> CheckResult:
    """Check a TF_CONFIG for one task of a parameter-server cluster.

    The answer is a dict (or its JSON text) with ``cluster`` (one address list per job:
    ``chief``, ``worker``, ``ps``) and ``task`` (this process's job and index). It passes
    when it describes exactly the expected cluster and task, and TensorFlow's
    ``TFConfigClusterResolver`` reads the same task back from it.

    Args:
        answer: The learner's TF_CONFIG (``...`` means "not attempted").
        chief: The chief's (the coordinator's) ``host:port``.
        worker: The workers' ``host:port``, in order.
        ps: The parameter servers' ``host:port``, in order.
        task: ``(job, index)`` of the process the TF_CONFIG is for, e.g. ``("worker", 1)``.

    Returns:
        A :class:`mirrorkit.CheckResult` naming the first mistake found.

    Raises:
        TypeError: If an expected address is not a ``"host:port"`` string, ``worker`` or
            ``ps`` is not a list of them, or ``task`` is not a ``(job, index)`` pair.
        ValueError: If ``worker`` or ``ps`` is empty, or ``task`` names a job or index the
            expected cluster does not have.

    Example:
        >>> from mirrorkit.checks.cluster_spec import check_cluster_spec
        >>> cluster = {"chief": ["a:1"], "worker": ["b:1", "c:1"], "ps": ["d:1"]}
        >>> expected = dict(chief="a:1", worker=["b:1", "c:1"], ps=["d:1"], task=("ps", 0))
        >>> check_cluster_spec({"cluster": cluster, "task": {"type": "ps", "index": 0}},
        ...                    **expected).passed
        True
        >>> cluster["worker"] = ["a:1", "b:1", "c:1"]
        >>> print(check_cluster_spec({"cluster": cluster, "task": {"type": "ps", "index": 0}},
        ...                          **expected).message.split(":")[0])
        the chief's address a
    """
    expected = _expected_cluster(chief, worker, ps)
    job, index = _expected_task(task, expected)
    if answer is ...:
        return NOT_ATTEMPTED
    config = answer
    if isinstance(answer, str | bytes):
        try:
            config = json.loads(answer)
        except ValueError:
            return CheckResult(
                False,
                "the TF_CONFIG text is not JSON (JSON needs double quotes): build a dict and "
                "write it with json.dumps(...).",
            )
    if not isinstance(config, dict):
        return CheckResult(
            False,
            f"the answer is a {type(config).__name__}: a TF_CONFIG is a dict with two keys, "
            '"cluster" and "task".',
        )
    missing = [key for key in ("cluster", "task") if key not in config]
    if missing:
        return CheckResult(
            False,
            f"the TF_CONFIG has no {' and no '.join(repr(k) for k in missing)}: it needs "
            '"cluster" (every job\'s addresses) and "task" (which of them this process is).',
        )
    verdict = _cluster_verdict(config["cluster"], expected)
    if verdict is not None:
        return verdict
    verdict = _task_verdict(config["task"], job, index, expected)
    if verdict is not None:
        return verdict
    try:
        with _tf_config(json.dumps(config)):
            import tensorflow as tf

            resolver = tf.distribute.cluster_resolver.TFConfigClusterResolver()
            read = (resolver.task_type, int(resolver.task_id), resolver.cluster_spec().as_dict())
    except Exception as error:  # noqa: BLE001 - TensorFlow's own refusal is the verdict
        return CheckResult(False, f"TensorFlow cannot read this TF_CONFIG: {raised(error)}")
    if read != (job, index, expected):
        return CheckResult(
            False,
            f"TensorFlow reads task {read[0]} {read[1]} of {read[2]}, not {job} {index}.",
        )
    return CheckResult(
        True,
        f"TFConfigClusterResolver reads task {job} {index} of a cluster with a chief, "
        f"{len(expected['worker'])} workers and {len(expected['ps'])} parameter "
        f"server{'s' if len(expected['ps']) != 1 else ''}.",
    )


def _expected_cluster(chief: Any, worker: Any, ps: Any) -> dict[str, list[str]]:
    """The cluster the answer must describe, from the check's arguments."""
    require_address("chief", chief, write='chief="10.0.0.1:2222"')
    cluster = {"chief": [chief]}
    for name, addresses in (("worker", worker), ("ps", ps)):
        write = f"{name}=['10.0.0.2:2222'] (a parameter-server cluster needs a worker and a "
        write += "parameter server)"
        cluster[name] = require_items(name, addresses, write=write)
        for address in cluster[name]:
            if not isinstance(address, str) or not _is_address(address):
                refuse(name, address, must="a list of 'host:port' strings", write=write)
    return cluster


def _is_address(text: str) -> bool:
    host, _, port = text.rpartition(":")
    return bool(host) and port.isdigit()


def _expected_task(task: Any, expected: dict[str, list[str]]) -> tuple[str, int]:
    """The ``(job, index)`` the answer must name, from the check's ``task`` argument."""
    write = "task=('worker', 1)"
    if not isinstance(task, tuple | list) or len(task) != 2 or not isinstance(task[0], str):
        refuse("task", task, must="a (job, index) pair", write=write)
    job, index = task[0], require_count("task[1]", task[1], minimum=0, write=write)
    if job not in expected or index >= len(expected[job]):
        jobs = ", ".join(f"{j} 0..{len(a) - 1}" for j, a in expected.items())
        must = f"a task of the expected cluster, whose jobs are {jobs}"
        refuse("task", task, must=must, write=write, error=ValueError)
    return job, index


def _cluster_verdict(cluster: Any, expected: dict[str, list[str]]) -> CheckResult | None:
    if not isinstance(cluster, dict):
        return CheckResult(
            False,
            f'"cluster" is a {type(cluster).__name__}: make it a dict from each job name '
            '("chief", "worker", "ps") to its list of addresses.',
        )
    for name in cluster:
        if name in JOBS:
            continue
        right = _JOB_MIXUPS.get(str(name).lower())
        hint = f"TensorFlow calls that job {right!r}" if right else "there is no such job"
        return CheckResult(
            False,
            f"the cluster has a job named {name!r}: {hint}. The jobs of a parameter-server "
            'cluster are "chief", "worker" and "ps".',
        )
    for name, addresses in cluster.items():
        if isinstance(addresses, str) or not isinstance(addresses, list | tuple):
            return CheckResult(
                False,
                f'the {name!r} job is a {type(addresses).__name__}, not a list: write "{name}": '
                f"[{', '.join(repr(a) for a in expected[name])}], even for one address.",
            )
        if any(not isinstance(a, str) or not _is_address(a) for a in addresses):
            return CheckResult(
                False,
                f"the {name!r} job lists {list(addresses)!r}: each address needs its port, "
                "'host:port', the port its server listens on.",
            )
    if "chief" not in cluster:
        return CheckResult(
            False,
            'the cluster has no "chief": in a parameter-server cluster the coordinator is a '
            f'job of its own, "chief": [{expected["chief"][0]!r}].',
        )
    chief = expected["chief"][0]
    if chief in cluster.get("worker", []):
        return CheckResult(
            False,
            f"the chief's address {chief} is also in the worker list: in a parameter-server "
            "cluster the chief only schedules steps; the workers run them, and the chief is "
            "not one of them.",
        )
    if "ps" not in cluster:
        return CheckResult(
            False,
            'the cluster has no "ps" job: the parameter servers, which hold the variables, '
            f'need their addresses too, "ps": {expected["ps"]!r}.',
        )
    for name in JOBS:
        got = list(cluster.get(name, []))
        if got != expected[name]:
            order = " (in another order)" if sorted(got) == sorted(expected[name]) else ""
            return CheckResult(
                False,
                f"the {name!r} job lists {got}{order}, expected {expected[name]}: the index of "
                "each task is its position in its job's list, so the order matters too.",
            )
    return None


def _task_verdict(
    task: Any, job: str, index: int, expected: dict[str, list[str]]
) -> CheckResult | None:
    if not isinstance(task, dict) or "type" not in task or "index" not in task:
        return CheckResult(
            False,
            f'"task" must be a dict with "type" and "index", e.g. {{"type": "{job}", '
            f'"index": {index}}}; got {task!r}.',
        )
    got_job, got_index = task["type"], task["index"]
    if got_job != job:
        return CheckResult(
            False,
            f'the task type is {got_job!r}, but this TF_CONFIG is for a {job} task: "type" '
            f"is the job of the process that reads it ({job!r}).",
        )
    if isinstance(got_index, bool) or not isinstance(got_index, int):
        return CheckResult(
            False, f'the task index is {got_index!r}: write a number, "index": {index}.'
        )
    if got_index == index + 1:
        return CheckResult(
            False,
            f"the task index is {got_index}, counted from 1: indices count from 0, so the "
            f"{_ordinal(index)} {job} in the list is index {index}.",
        )
    if got_index != index:
        address = expected[job][index]
        return CheckResult(
            False,
            f"the task index is {got_index}, but the {job} at {address} is at position "
            f"{index} of the {job} list.",
        )
    return None


def _ordinal(index: int) -> str:
    return {0: "first", 1: "second", 2: "third"}.get(index, f"#{index + 1}")


@contextlib.contextmanager
def _tf_config(text: str) -> Iterator[None]:
    """Set TF_CONFIG for the duration (TensorFlow's resolver reads only the environment)."""
    before = os.environ.get("TF_CONFIG")
    os.environ["TF_CONFIG"] = text
    try:
        yield
    finally:
        if before is None:
            os.environ.pop("TF_CONFIG", None)
        else:
            os.environ["TF_CONFIG"] = before


# Shapes and dtypes a partitioner is tried on: (shape, dtype name), chosen so that each of the
# usual mistakes gives at least one wrong answer (for the default limit of 256 KiB).
_PARTITIONER_CASES = (
    ((64,), "float32"),  # a bias: small
    ((1000, 64), "float32"),  # 256,000 bytes: under 256 KiB
    ((1024, 64), "float32"),  # exactly 256 KiB: not more, stays whole
    ((1025, 64), "float32"),  # just over
    ((2048, 128), "float32"),  # 1 MiB: still at most max_shards
    ((2048, 128), "float16"),  # 512 KiB in half precision, as many elements as 1 MiB of float32
    ((256, 128), "float64"),  # 256 KiB in double precision: stays whole
    ((512, 128), "float64"),  # 512 KiB in double precision, few elements
    ((1, 100000), "float32"),  # 400,000 bytes, but one row
)


def check_partitioner(
    partitioner: Any, *, limit_bytes: int = 256 * 1024, max_shards: int = 2
) -> CheckResult:
    """Check a ``variable_partitioner`` for ``ParameterServerStrategy``.

    The partitioner must split a variable along its first axis into ``max_shards`` shards
    when the variable holds more than ``limit_bytes`` bytes and has at least ``max_shards``
    rows, and leave it whole (``[1, 1, ...]``) otherwise. It is called as
    ``ParameterServerStrategy`` calls it, ``partitioner(shape=TensorShape, dtype=DType)``,
    on shapes and dtypes chosen to show the usual mistakes.

    Args:
        partitioner: The learner's partitioner (``...`` means "not attempted").
        limit_bytes: The largest variable left whole, in bytes.
        max_shards: How many shards a larger variable gets (the parameter servers).

    Returns:
        A :class:`mirrorkit.CheckResult` naming the first shape it got wrong, and why.

    Raises:
        TypeError: If ``limit_bytes`` or ``max_shards`` is not an int.
        ValueError: If ``limit_bytes`` is below 1 or ``max_shards`` below 2.

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.checks.cluster_spec import check_partitioner
        >>> split = tf.distribute.experimental.partitioners.MinSizePartitioner(
        ...     min_shard_bytes=256 * 1024, max_shards=2)
        >>> check_partitioner(split).passed
        True
        >>> check_partitioner(lambda shape, dtype: [2] + [1] * (len(shape) - 1)).message[:44]
        'it splits a variable of shape (64,) float32 '
    """
    for name, value, low in (("limit_bytes", limit_bytes, 1), ("max_shards", max_shards, 2)):
        write = f"{name}={256 * 1024 if name == 'limit_bytes' else 2}"
        require_int(name, value, must=f"an int >= {low}", minimum=low, write=write)
    if partitioner is ...:
        return NOT_ATTEMPTED
    if not callable(partitioner):
        return CheckResult(
            False,
            f"partitioner is a {type(partitioner).__name__}: it must be a function of "
            "(shape, dtype) returning a list, or a tf.distribute.experimental.partitioners "
            "object.",
        )
    import tensorflow as tf

    for dims, dtype_name in _PARTITIONER_CASES:
        shape, dtype = tf.TensorShape(dims), tf.dtypes.as_dtype(dtype_name)
        size = dtype.size
        for dim in dims:
            size *= dim
        wanted = _wanted(dims, size, limit_bytes, max_shards)
        where = f"a variable of shape {dims} {dtype_name} ({size:,} bytes)"
        try:
            got = partitioner(shape=shape, dtype=dtype)
        except Exception as error:  # noqa: BLE001 - the learner's code; its error is the verdict
            return CheckResult(False, f"called for {where} it raised {raised(error)}")
        verdict = _partition_verdict(got, wanted, dims, where, limit_bytes, max_shards)
        if verdict is not None:
            return verdict
    return CheckResult(
        True,
        f"variables of more than {limit_bytes:,} bytes with {max_shards}+ rows become "
        f"{max_shards} shards along their first axis; the others stay whole, whatever "
        "their dtype.",
    )


def _wanted(dims: tuple[int, ...], size: int, limit_bytes: int, max_shards: int) -> list[int]:
    shards = max_shards if size > limit_bytes and dims[0] >= max_shards else 1
    return [shards] + [1] * (len(dims) - 1)


def _partition_verdict(
    got: Any,
    wanted: list[int],
    dims: tuple[int, ...],
    where: str,
    limit_bytes: int,
    max_shards: int,
) -> CheckResult | None:
    if (
        isinstance(got, bool)
        or not isinstance(got, list | tuple)
        or not all(isinstance(n, int) and not isinstance(n, bool) for n in got)
    ):
        return CheckResult(
            False,
            f"for {where} it returned {got!r}: a partitioner returns a list of ints, one "
            f"per axis, the number of shards along each (here {wanted}).",
        )
    got = list(got)
    if len(got) != len(dims):
        return CheckResult(
            False,
            f"for {where} it returned {got}: one number per axis, {len(dims)} here ({wanted}).",
        )
    if any(n != 1 for n in got[1:]):
        return CheckResult(
            False,
            f"for {where} it returned {got}: ParameterServerStrategy splits only along the "
            f"first axis; every other number must be 1 ({wanted}).",
        )
    if got == wanted:
        return None
    shards = got[0]
    if wanted[0] == 1 and dims[0] < max_shards and shards > 1:
        return CheckResult(
            False,
            f"it splits {where} into {shards}, but its first axis has {dims[0]} row: a "
            "shard cannot be smaller than one row; leave it whole.",
        )
    if wanted[0] == 1 and shards > 1:
        return CheckResult(
            False,
            f"it splits {where} into {shards}, though it holds no more than "
            f"{limit_bytes:,} bytes: it stays whole (split only above the limit, >, not >=). "
            "Count bytes: the number of elements times dtype.size.",
        )
    if shards > max_shards:
        return CheckResult(
            False,
            f"it splits {where} into {shards} shards: at most {max_shards}, one per "
            "parameter server.",
        )
    return CheckResult(
        False,
        f"it leaves {where} whole, but that is more than {limit_bytes:,} bytes: split it "
        f"into {max_shards}, counting bytes as the number of elements times dtype.size.",
    )


__all__ = ["check_cluster_spec", "check_partitioner"]
