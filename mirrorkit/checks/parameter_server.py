"""Chapter 9's first exercise: steps scheduled on a real parameter-server cluster.

``check_run_steps`` runs the learner's ``run_steps`` on the chief of a real
``mk.LocalCluster(2, num_ps=1)``. It draws its numbers when it runs (the number of steps, the
value the workers read), so no answer written for one set of numbers passes. The second
exercise's check is :mod:`mirrorkit.checks.partitioner`.

Example:
    >>> from mirrorkit.checks.parameter_server import check_run_steps
    >>> check_run_steps(...)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from mirrorkit._validate import require_seconds
from mirrorkit.checks._draws import draw as _draw
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult, raised


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


__all__ = ["check_run_steps"]
