"""Checks for chapter 9's exercises: steps scheduled on a real cluster, and shards per server.

``check_run_steps`` runs the learner's ``run_steps`` on the chief of a real
``mk.LocalCluster(2, num_ps=1)``; ``check_partitioner_for`` asks the learner's
``partitioner_for`` for a partitioner and calls it as ``ParameterServerStrategy`` does. Both
draw their numbers when they run (the number of steps, the cluster, the shard size), so no
answer written for one set of numbers passes.

Example:
    >>> from mirrorkit.checks.parameter_server import check_partitioner_for
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

from mirrorkit._validate import require_int, require_seconds
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, raised


def _draw(seed: int | None) -> random.Random:
    """The check's own numbers: from ``seed`` when a test gives one, else unpredictable."""
    if seed is None:
        return random.SystemRandom()
    require_int("seed", seed, must="an int >= 0, or None", write="seed=7", minimum=0)
    return random.Random(seed)


# ---------------------------------------------------------------- exercise 1: scheduling steps


def check_run_steps(run_steps: Any, *, seed: int | None = None, timeout: float = 60.0):
    """Check ``run_steps(coordinator, dataset_fn, step, steps)`` on a real parameter-server cluster.

    The check starts ``mk.LocalCluster(2, num_ps=1)`` and, on its chief, makes a
    ``ClusterCoordinator``, a ``dataset_fn`` and a ``tf.function`` ``step(iterator, i)`` of its
    own, and calls ``run_steps`` with a number of steps it draws. ``run_steps`` passes when it
    made the per-worker dataset with ``create_per_worker_dataset``, scheduled ``step`` once per
    index ``0, 1, ...`` on the workers and returned the fetched values, in that order. The
    values depend on a number drawn here and read by the workers from their dataset, and the
    step counts its runs on the parameter server, so only scheduled steps give them.

    Args:
        run_steps: The learner's function (``...`` means "not attempted").
        seed: Draws the check's numbers; ``None`` (the default) draws them unpredictably.
        timeout: Seconds the cluster run may take.

    Returns:
        A :class:`mirrorkit.CheckResult` naming the first mistake found.

    Raises:
        TypeError: If ``seed`` is not an int or None, or ``timeout`` not a number.
        ValueError: If ``seed`` is negative or ``timeout`` not above 0.

    Example:
        >>> from mirrorkit.checks.parameter_server import check_run_steps
        >>> def run_steps(coordinator, dataset_fn, step, steps):
        ...     batches = iter(coordinator.create_per_worker_dataset(dataset_fn))
        ...     results = [coordinator.schedule(step, args=(batches, i)) for i in range(steps)]
        ...     return [result.fetch() for result in results]
        >>> check_run_steps(run_steps, seed=1).passed
        True
        >>> check_run_steps(lambda coordinator, dataset_fn, step, steps: []).message[:19]
        'the step never ran:'
    """
    draw = _draw(seed)
    require_seconds("timeout", timeout, write="timeout=60")
    if run_steps is ...:
        return NOT_ATTEMPTED
    if not callable(run_steps):
        return CheckResult(
            False,
            f"run_steps is a {type(run_steps).__name__}: write a function, def run_steps("
            "coordinator, dataset_fn, step, steps): ..., that returns a list of numbers.",
        )
    steps, secret = draw.randint(5, 9), draw.randint(3, 97)
    import mirrorkit as mk

    try:
        run = _run_on_chief(mk, (run_steps, steps, secret), timeout)
    except TypeError as error:
        return CheckResult(
            False,
            f"run_steps cannot be sent to the cluster's chief: {raised(error)} Make every "
            "TensorFlow object inside it, from its arguments.",
        )
    except mk.ClusterTimeoutError:
        return CheckResult(
            False,
            f"run_steps did not return within {timeout:g} s: schedule each step once and "
            "return; coordinator.join() and fetch() wait only for steps that were scheduled.",
        )
    except mk.ClusterError as error:
        return CheckResult(False, f"the cluster run failed: {raised(error)}")
    return _steps_verdict(run.result, steps, secret)


def _run_on_chief(mk, args: tuple, timeout: float):
    """The cluster run of :func:`_on_chief`, once more if a process crashed in native code.

    A SIGSEGV or SIGBUS of a task is a crash in native code, not a verdict on the answer (a
    full test run saw this cluster's chief crash once, under load, with an answer that runs
    here 4 times of 4): the run is tried again, and a second crash is the verdict.
    """
    for attempt in (1, 2):
        cluster = mk.LocalCluster(2, num_ps=1, echo=False)
        try:
            return cluster.run(_on_chief, args=args, timeout=timeout)
        except mk.WorkerFailedError as error:
            exits = getattr(error.run, "exits", {}) or {}
            crashed = any(("SIGSEGV" in str(why) or "SIGBUS" in str(why)) for why in exits.values())
            if attempt == 2 or not crashed:
                raise
    raise AssertionError("unreachable")


def _on_chief(context, run_steps: Callable, steps: int, secret: int) -> dict:
    """On the chief: the check's dataset and step, the learner's ``run_steps``, what came back."""
    import tensorflow as tf

    strategy = context.strategy
    coordinator = tf.distribute.coordinator.ClusterCoordinator(strategy)
    with strategy.scope():
        runs = tf.Variable(0, dtype=tf.int64)  # on the parameter server
    on_chief: list[str] = []

    def worker_index(what: str):
        try:
            index = tf.distribute.coordinator.experimental_get_current_worker_index()
        except RuntimeError:
            on_chief.append(what)
            raise
        return tf.cast(index, tf.int64)

    def dataset_fn():
        value = tf.constant(secret, tf.int64) + 0 * worker_index("dataset_fn")
        return tf.data.Dataset.from_tensors(value).repeat()

    @tf.function
    def step(batches, i):
        runs.assign_add(1)
        return next(batches) * (tf.cast(i, tf.int64) + 1) + 0 * worker_index("step")

    try:
        got = run_steps(coordinator, dataset_fn, step, steps)
        coordinator.join()
    except Exception as error:  # noqa: BLE001 - the learner's code; its error is the verdict
        return {"raised": raised(error), "on_chief": on_chief}
    return {"answer": _described(got), "runs": int(runs.numpy()), "on_chief": on_chief}


def _described(got: Any) -> Any:
    """``run_steps``'s return value as plain data the check's process can read."""
    import numpy as np

    def one(item: Any) -> Any:
        if hasattr(item, "fetch"):
            return ("RemoteValue",)
        try:
            value = np.asarray(item)
        except Exception:  # noqa: BLE001 - anything that is not a number is described
            return (type(item).__name__,)
        if value.size != 1 or value.dtype.kind not in "iuf":
            return (type(item).__name__,)
        return value.item()

    if isinstance(got, np.ndarray) and got.ndim == 1:
        got = list(got)
    if isinstance(got, list | tuple):
        return [one(item) for item in got]
    return ("one", type(got).__name__, one(got))


def _steps_verdict(result: dict, steps: int, secret: int) -> CheckResult:
    wanted = [secret * (i + 1) for i in range(steps)]
    if "raised" in result:
        return _raised_verdict(result)
    got, runs = result["answer"], result["runs"]
    if isinstance(got, tuple):  # not a list
        _, kind, item = got
        if item == ("RemoteValue",):
            return CheckResult(
                False,
                "run_steps returned one RemoteValue: schedule returns one per step. Keep each "
                "step's RemoteValue in a list and return their values, [r.fetch() for r in "
                "results].",
            )
        return CheckResult(
            False,
            f"run_steps returned one {kind}, not a list: return the list of the {steps} values "
            "the steps returned, one per step, in the order they were scheduled.",
        )
    if any(item == ("RemoteValue",) for item in got):
        return CheckResult(
            False,
            "run_steps returned RemoteValues: schedule returns at once with a RemoteValue, a "
            "promise of the step's result. Call .fetch() on each (or coordinator.fetch(results)) "
            "to wait for the value it holds, and return those.",
        )
    if runs == 0:
        return CheckResult(
            False,
            "the step never ran: run_steps must schedule it on the workers, whose values "
            "come from numbers the check draws as it runs, so no list written in advance "
            "can match them.",
        )
    if runs != steps:
        return CheckResult(
            False,
            f"the step ran {runs} times, but run_steps was asked for {steps} steps: schedule "
            f"it once per index, for i in range({steps}) (or range(steps)).",
        )
    if len(got) != steps:
        return CheckResult(
            False,
            f"run_steps returned {len(got)} values for {steps} steps: return each scheduled "
            "step's fetched value, not only some of them.",
        )
    if any(isinstance(item, tuple) for item in got):
        kinds = sorted({item[0] for item in got if isinstance(item, tuple)})
        return CheckResult(
            False, f"run_steps returned {', '.join(kinds)} items: return numbers, one per step."
        )
    return _values_verdict(got, wanted, steps)


def _raised_verdict(result: dict) -> CheckResult:
    error, on_chief = result["raised"], result["on_chief"]
    if "dataset_fn" in on_chief:
        return CheckResult(
            False,
            "dataset_fn was called on the chief: the dataset must be made on each worker. Pass "
            "the function itself to coordinator.create_per_worker_dataset(dataset_fn), which "
            "calls it on every worker, and iterate over what it returns.",
        )
    if "step" in on_chief or "IteratorSpec" in error:
        return CheckResult(
            False,
            "step was called on the chief: calling it runs it here, not on a worker. Hand it "
            "to coordinator.schedule(step, args=(batches, i)), which runs it on a worker that "
            "is free and returns a RemoteValue.",
        )
    return CheckResult(False, f"run_steps raised {error}")


def _values_verdict(got: list, wanted: list, steps: int) -> CheckResult:
    if got == wanted:
        return CheckResult(
            True,
            f"{steps} steps scheduled on the workers, each reading its worker's own dataset, "
            f"and their fetched values returned in order: {got}.",
        )
    secret = wanted[0]
    if got == [secret * (i + 2) for i in range(steps)]:
        return CheckResult(
            False,
            "each step got its index counted from 1: the indices are 0, 1, ..., steps - 1, "
            "range(steps).",
        )
    if sorted(got) == sorted(wanted):
        return CheckResult(
            False,
            "the values are the right ones in another order: return them in the order the "
            "steps were scheduled, step 0 first.",
        )
    return CheckResult(
        False,
        f"run_steps returned {got}, not the values the scheduled steps returned ({wanted} "
        "this time): the check's step computes them on the workers, with numbers drawn now; "
        "return what fetch() gives for each scheduled step.",
    )


# ---------------------------------------------------------- exercise 2: a partitioner per cluster


def shards_for(dims: tuple[int, ...], item_bytes: int, max_shard_bytes: int, max_shards) -> int:
    """Shards along the first axis: the fewest of whole rows with none over ``max_shard_bytes``.

    A shard holds whole rows, so a row bigger than ``max_shard_bytes`` is a shard of its own;
    ``max_shards`` (``None`` for no limit) caps the count. This is the rule of TensorFlow's
    ``MaxSizePartitioner``, in integers.

    Example:
        >>> from mirrorkit.checks.parameter_server import shards_for
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
        >>> from mirrorkit.checks.parameter_server import check_partitioner_for
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
        >>> from mirrorkit.checks.parameter_server import partitioner_queries
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
        return CheckResult(False, f"{asked} raised {_raised(answer['raised'])}")
    if "returned" in answer or not isinstance(answer.get("calls"), list):
        return CheckResult(
            False,
            f"{asked} returned a {answer.get('returned', 'value')}: return a partitioner, a "
            "function of (shape, dtype) that returns a list, or a "
            "tf.distribute.experimental.partitioners object.",
        )
    workers = len(query["cluster"]["worker"])
    return _partitions_verdict(query["cases"], answer["calls"], asked, ps, workers, limit)


def _raised(text: str) -> str:
    """An error the learner's process reported as ``"Type: why"``, said as :func:`raised` does."""
    name, _, why = str(text).partition(": ")
    kind = name if name.isidentifier() and len(name) <= 60 else "Exception"
    return raised(type(kind, (Exception,), {"__module__": "builtins"})(why))


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
            why = _raised(call.get("raised", "")) if isinstance(call, dict) else "nothing"
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


__all__ = [
    "check_partitioner_for",
    "check_run_steps",
    "judge_partitioner_for",
    "partitioner_queries",
    "shards_for",
]
