"""Chapter 9's second exercise: a partitioner for a given cluster, judged over data.

``check_partitioner_for`` asks the learner's ``partitioner_for`` for a partitioner and calls
it as ``ParameterServerStrategy`` does, on two clusters and shard sizes it draws. It is split
in two for graders: :func:`partitioner_queries` (what is asked: no answer in it) and
:func:`judge_partitioner_for` (the verdict over the answers, as data).

Example:
    >>> from mirrorkit.checks.partitioner import check_partitioner_for
    >>> check_partitioner_for(...)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import copy
import math
import numbers
import random
from collections.abc import Callable
from typing import Any

from mirrorkit.checks._draws import draw as _draw
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, raised, recorded_error


def shards_for(dims: tuple[int, ...], item_bytes: int, max_shard_bytes: int, max_shards) -> int:
    """Shards along the first axis: the fewest of whole rows with none over ``max_shard_bytes``.

    A shard holds whole rows, so a row bigger than ``max_shard_bytes`` is a shard of its own;
    ``max_shards`` (``None`` for no limit) caps the count. This is the rule of TensorFlow's
    ``MaxSizePartitioner``, in integers.

    Example:
        >>> from mirrorkit.checks.partitioner import shards_for
        >>> shards_for((3, 1025), 4, 4096, 4), shards_for((3, 1025), 4, 4096, 2)
        (3, 2)
    """
    row_bytes = item_bytes * math.prod(dims[1:])
    rows_per_shard = max(1, max_shard_bytes // max(row_bytes, 1))
    shards = -(-dims[0] // rows_per_shard)
    return max(1, min(shards, max_shards) if max_shards else shards)


_ITEM_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "float64": 8, "int32": 4, "int64": 8}


def _cases(draw: random.Random, limit: int) -> list[tuple[tuple[int, ...], str]]:
    """Shapes and dtypes, sized from ``limit``, in the order that names each mistake first."""
    kib = limit // 1024
    small = draw.choice(("float16", "float32", "float64", "int32"))
    return [
        ((kib * 512 // {"float16": 2, "float64": 8}.get(small, 4),), small),  # half the limit
        ((kib * 16, 16), "float32"),  # exactly the limit: stays whole
        ((kib * 12, 16), "float64"),  # 1.5 times the limit in float64, 0.75 of it in float32
        ((kib * 24, 16), "float16"),  # 0.75 times the limit in float16
        ((kib * 160, 16), "float32"),  # ten times the limit: one shard per parameter server
        ((3, kib * 128 + 1), "float32"),  # three rows just over half the limit: three shards
        ((2, kib * 384), "float32"),  # two rows of 1.5 times the limit: two shards, not three
        ((draw.randint(2, 9) * kib, 2, 8), draw.choice(("bfloat16", "int64"))),
        ((draw.randint(50, 400), draw.randint(20, 200)), draw.choice(("float32", "float64"))),
    ]


def _hypotheses(ps: int, workers: int, limit: int) -> list[tuple[str, Callable]]:
    """The usual mistakes, each as the rule it follows and what the feedback says of it."""

    def rows_rule(item_bytes=None, cap=ps, size=limit):
        return lambda dims, item: shards_for(dims, item_bytes or item, size, cap)

    def by_bytes(dims, item):
        return max(1, min(ps, dims[0], math.ceil(math.prod(dims) * item / limit)))

    return [
        (
            "every variable split into one shard per parameter server, even those under the "
            "limit: a variable of no more than max_shard_bytes stays whole",
            lambda dims, item: min(ps, dims[0]),
        ),
        (
            "it uses the chapter's 256 KiB, not max_shard_bytes: the size is an argument",
            rows_rule(size=256 * 1024),
        ),
        (
            "it counts elements, not bytes: a variable's size is its number of elements times "
            "dtype.size (2 for float16, 8 for float64)",
            rows_rule(item_bytes=1),
        ),
        (
            "it counts 4 bytes an element whatever the dtype: use dtype.size (2 for float16, "
            "8 for float64)",
            rows_rule(item_bytes=4),
        ),
        (
            f"it makes one shard per worker ({workers}): shards go to the parameter servers, "
            f"and this cluster has {ps}, len(cluster['ps'])",
            rows_rule(cap=workers),
        ),
        (
            f"it splits into more shards than the cluster has parameter servers ({ps}): cap the "
            f"count at len(cluster['ps']), max_shards={ps}",
            rows_rule(cap=None),
        ),
        (
            "it takes ceil(bytes / max_shard_bytes) shards, as MinSizePartitioner does, but a "
            "shard holds whole rows, so some shards would hold more than max_shard_bytes: count "
            "the rows that fit in max_shard_bytes (at least one) and make as many shards as that "
            "needs",
            by_bytes,
        ),
    ] + [
        (
            f"it makes at most {cap} shards, but this cluster has {ps} parameter servers: read "
            "their number from the cluster, len(cluster['ps'])",
            rows_rule(cap=cap),
        )
        for cap in range(1, 9)
        if cap not in (ps, workers)
    ]


def check_partitioner_for(partitioner_for: Any, *, seed: int | None = None) -> CheckResult:
    """Check ``partitioner_for(cluster, max_shard_bytes)``, a partitioner for a given cluster.

    The check draws two clusters (dicts like chapter 9's ``cluster``, with two of 3, 4 or 5
    parameter servers and another number of workers), each with its ``max_shard_bytes``, and
    calls each partitioner ``partitioner_for`` returns as ``ParameterServerStrategy`` calls
    it, ``partitioner(shape=TensorShape, dtype=DType)``, on shapes and dtypes sized from that
    limit. The right count along the first axis is the fewest shards of whole rows with none
    over ``max_shard_bytes`` (:func:`shards_for`), at most one per parameter server; every
    other axis is 1. A wrong answer is named by the mistake that explains all its answers.

    Args:
        partitioner_for: The learner's function (``...`` means "not attempted").
        seed: Draws the cluster and the limit; ``None`` (the default) draws them unpredictably.

    Returns:
        A :class:`mirrorkit.CheckResult` naming the mistake, with a shape it got wrong.

    Raises:
        TypeError: If ``seed`` is not an int or None.
        ValueError: If ``seed`` is negative.

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.checks.partitioner import check_partitioner_for
        >>> partitioners = tf.distribute.experimental.partitioners
        >>> def partitioner_for(cluster, max_shard_bytes):
        ...     return partitioners.MaxSizePartitioner(max_shard_bytes, len(cluster["ps"]))
        >>> check_partitioner_for(partitioner_for, seed=3).passed
        True
        >>> def by_workers(cluster, max_shard_bytes):
        ...     return partitioners.MaxSizePartitioner(max_shard_bytes, len(cluster["worker"]))
        >>> check_partitioner_for(by_workers, seed=3).message.split(":")[1][:30]
        ' it makes one shard per worker'
    """
    queries = partitioner_queries(seed)
    if partitioner_for is ...:
        return NOT_ATTEMPTED
    if not callable(partitioner_for):
        return CheckResult(
            False,
            f"partitioner_for is a {type(partitioner_for).__name__}: write a function, def "
            "partitioner_for(cluster, max_shard_bytes): ..., that returns a partitioner.",
        )
    return judge_partitioner_for(queries, [_ask(partitioner_for, query) for query in queries])


def partitioner_queries(seed: int | None = None) -> list[dict]:
    """What the check asks ``partitioner_for``: two drawn clusters, each with its limit and cases.

    Plain data, with no answer in it: a grader sends it to the learner's process, which
    answers each query as the check's own ``_ask`` does, and judges the answers with
    :func:`judge_partitioner_for`.

    Example:
        >>> from mirrorkit.checks.partitioner import partitioner_queries
        >>> [sorted(query) for query in partitioner_queries(seed=1)]
        [['cases', 'cluster', 'limit'], ['cases', 'cluster', 'limit']]
    """
    draw = _draw(seed)
    servers = draw.sample((3, 4, 5), 2)
    limits = [kib * 1024 for kib in draw.sample(range(8, 41), 2)]
    queries = []
    for ps, limit in zip(servers, limits, strict=True):
        workers = draw.choice((6, 7, 8))  # more than the parameter servers, as is usual
        ports = draw.sample(range(20000, 30000), 1 + workers + ps)
        addresses = [f"127.0.0.1:{port}" for port in ports]
        cluster = {"chief": addresses[:1], "worker": addresses[1 : 1 + workers]}
        cluster["ps"] = addresses[1 + workers :]
        cases = [[list(dims), dtype] for dims, dtype in _cases(draw, limit)]
        queries.append({"cluster": cluster, "limit": limit, "cases": cases})
    return queries


def _ask(partitioner_for: Callable, query: dict) -> dict:
    """The learner's answers to one query, as data (what the learner's process sends back)."""
    import tensorflow as tf

    try:
        partitioner = partitioner_for(copy.deepcopy(query["cluster"]), query["limit"])
    except Exception as error:  # noqa: BLE001 - the learner's code; its error is the answer
        return {"raised": f"{type(error).__name__}: {error}"}
    if not callable(partitioner):
        return {"returned": type(partitioner).__name__}
    calls = []
    for dims, dtype in query["cases"]:
        try:
            got = partitioner(shape=tf.TensorShape(dims), dtype=tf.dtypes.as_dtype(dtype))
        except Exception as error:  # noqa: BLE001 - the learner's code
            calls.append({"raised": f"{type(error).__name__}: {error}"})
            continue
        calls.append({"value": _plain(got)})
    return {"calls": calls}


def _plain(got: Any):
    """A partitioner's answer as data: a list of ints stays one; anything else is its repr."""
    if isinstance(got, list | tuple) and all(
        isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in got
    ):
        return [int(n) for n in got]
    return {"repr": repr(got)[:200]}


def judge_partitioner_for(queries: list[dict], answers: list) -> CheckResult:
    """The verdict on the learner's answers to :func:`partitioner_queries` (data only).

    Args:
        queries: What was asked.
        answers: One per query, as :func:`_ask` writes them: ``{"calls": [...]}``, or
            ``{"raised": "Type: why"}`` or ``{"returned": "type"}`` for ``partitioner_for``.

    Returns:
        A :class:`mirrorkit.CheckResult`.
    """
    if not isinstance(answers, list) or len(answers) != len(queries):
        return CheckResult(False, "the answers did not come back whole.")
    for query, answer in zip(queries, answers, strict=True):
        verdict = _one_cluster(query, answer if isinstance(answer, dict) else {})
        if not verdict.passed:
            return verdict
    (ps1, ps2), (limit1, limit2) = zip(
        *((len(q["cluster"]["ps"]), q["limit"]) for q in queries), strict=True
    )
    return CheckResult(
        True,
        f"for clusters with {ps1} and {ps2} parameter servers and "
        f"max_shard_bytes {limit1:,} and {limit2:,}: the fewest shards of whole rows, "
        "at most one per parameter server, for every shape and dtype tried.",
    )


def _one_cluster(query: dict, answer: dict) -> CheckResult:
    """The verdict for one drawn cluster and limit (the check tries two of each)."""
    ps, limit = len(query["cluster"]["ps"]), query["limit"]
    asked = f"partitioner_for(cluster, {limit}) for a cluster with {ps} parameter servers"
    if "raised" in answer:
        why = raised(recorded_error(answer["raised"]))
        return CheckResult(False, f"{asked} raised {why}")
    if "returned" in answer or not isinstance(answer.get("calls"), list):
        return CheckResult(
            False,
            f"{asked} returned a {answer.get('returned', 'value')}: return a partitioner, a "
            "function of (shape, dtype) that returns a list, or a "
            "tf.distribute.experimental.partitioners object.",
        )
    workers = len(query["cluster"]["worker"])
    return _partitions_verdict(query["cases"], answer["calls"], asked, ps, workers, limit)


def _partitions_verdict(cases, calls, asked: str, ps: int, workers: int, limit: int):
    if len(calls) != len(cases):
        return CheckResult(False, f"{asked}: its answers did not come back whole.")
    answers = []  # (dims, item bytes, its answer's first number, the right one, where)
    for (dims, dtype_name), call in zip(cases, calls, strict=True):
        dims, item = tuple(dims), _ITEM_BYTES[dtype_name]
        size = item * math.prod(dims)
        where = f"a variable of shape {dims} {dtype_name} ({size:,} bytes)"
        wanted = [shards_for(dims, item, limit, ps)] + [1] * (len(dims) - 1)
        if not isinstance(call, dict) or "raised" in call:
            report = call.get("raised", "") if isinstance(call, dict) else None
            why = "nothing" if report is None else raised(recorded_error(report))
            return CheckResult(False, f"{asked}, called for {where}, raised {why}")
        got = call.get("value")
        verdict = _layout_verdict(got, wanted, where)
        if verdict is not None:
            return verdict
        answers.append((dims, item, int(got[0]), wanted[0], where))
    wrong = [answer for answer in answers if answer[2] != answer[3]]
    if not wrong:
        return CheckResult(True, f"{asked}: right for every shape and dtype tried.")
    dims, _, got, wanted, where = wrong[0]
    example = f"for {where} it makes {got} shards, not {wanted}"
    for why, rule in _hypotheses(ps, workers, limit):
        if all(rule(d, item) == shards for d, item, shards, _, _ in answers):
            return CheckResult(False, f"{asked}: {why} ({example}).")
    too_many = [answer for answer in wrong if answer[2] > answer[0][0]]
    if too_many:
        dims, _, got, wanted, where = too_many[0]
        return CheckResult(
            False,
            f"{asked}: for {where} it makes {got} shards, not {wanted}: more than its "
            f"{dims[0]} rows, and a shard holds at least one whole row.",
        )
    return CheckResult(
        False,
        f"{asked}: {example}. The rule: the fewest shards along the first axis such that none "
        f"holds more than {limit:,} bytes, each made of whole rows (one row at least), and no "
        f"more than {ps} shards, one per parameter server; bytes are elements times dtype.size.",
    )


def _layout_verdict(got: Any, wanted: list[int], where: str) -> CheckResult | None:
    """The answer's form: a list of ints, one per axis, 1 on every axis but the first."""
    if (
        isinstance(got, bool)
        or not isinstance(got, list | tuple)
        or not all(isinstance(n, numbers.Integral) and not isinstance(n, bool) for n in got)
    ):
        shown = got["repr"] if isinstance(got, dict) and "repr" in got else repr(got)
        return CheckResult(
            False,
            f"for {where} the partitioner returned {shown}: a partitioner returns a list of "
            f"ints, one per axis, the number of shards along each (here {wanted}).",
        )
    if len(got) != len(wanted):
        return CheckResult(
            False,
            f"for {where} the partitioner returned {list(got)}: one number per axis, "
            f"{len(wanted)} here ({wanted}).",
        )
    if any(n != 1 for n in got[1:]) or got[0] < 1:
        return CheckResult(
            False,
            f"for {where} the partitioner returned {list(got)}: ParameterServerStrategy "
            f"splits only along the first axis, into 1 or more shards; every other number "
            f"is 1 ({wanted}).",
        )
    return None


__all__ = ["check_partitioner_for", "judge_partitioner_for", "partitioner_queries", "shards_for"]
