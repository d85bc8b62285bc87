"""An all-reduce cost model fitted from this machine's own measurements, and what it predicts.

:func:`fit_cost_model` reads an :class:`~mirrorkit.measure.allreduce.AllReduceBenchmark`
and fits, for each algorithm, the alpha-beta model

    t(n, N) = launch + alpha * steps(N) + bytes(N, n) / bandwidth

to the median time of every record, where ``n`` is the bytes each replica all-reduces and
``N`` the replica count. ``steps(N)`` and ``bytes(N, n)`` (what the busiest replica's link
carries in one direction, summed over the steps) come from
:mod:`mirrorkit.measure.schedules`, the one place that says which transfers each
algorithm makes. ``launch`` is the fixed cost of the ``tf.function`` call that
:func:`~mirrorkit.measure.allreduce.benchmark_all_reduce` times around every all-reduce.

What the data can tell apart:

* ``launch`` and ``alpha`` separate only if the records cover at least two step counts.
  ``one_device`` always has 2 steps, and one measured replica count has one step count,
  so there the fit keeps one merged *fixed cost* (``launch + alpha * steps``) and says so.
* Even with two step counts the split is often poorly determined: on simulated CPU
  replicas, repeated benchmarks moved the launch/alpha split by a factor of several (launch
  from 50 us to 1 ms) while the fixed cost at each replica count moved by a fifth or so.
  Each parameter therefore carries a standard error, the report warns when launch or alpha
  is uncertain by more than half its value, and then also prints the fixed cost at each
  measured replica count, which the data do determine.
* ``bandwidth`` needs at least two sizes.

The fit is least squares on *relative* residuals (sizes span a thousandfold, so absolute
residuals would let the largest sizes decide everything), with every parameter at least 0
(a small exact NNLS: the least-squares solution on each subset of parameters, the best
one without a negative value).

:data:`~mirrorkit.measure.links.LINKS` holds published per-direction bandwidths of real
interconnects, each with its source; :meth:`CostModel.predict` and
:meth:`CostModel.predict_step` can swap a link's bandwidth in for the fitted one. A link's
latency is not cited anywhere here, so ``launch`` and ``alpha`` still come from this
machine's fit (its software overhead per call and per step) unless you pass ``alpha=``.

Example:
    >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
    >>> measured = synthetic_benchmark(launch_s=5e-4, alpha_s=1e-4, bandwidth=2e9)
    >>> model = fit_cost_model(measured)
    >>> fit = model.fits["collective"]
    >>> round(fit.launch_s * 1e6), round(fit.alpha_s * 1e6), round(fit.bandwidth / 1e9, 6)
    (500, 100, 2.0)
    >>> round(model.predict("64MiB", 8, link="nvlink4_h100") * 1e3, 3)  # seconds -> ms
    2.161
"""

from __future__ import annotations

import itertools
import math
import statistics
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache

import numpy as np

from mirrorkit._validate import require_seconds
from mirrorkit.measure.allreduce import AllReduceBenchmark, AllReduceRecord, record_from_times
from mirrorkit.measure.links import Link, resolve_link
from mirrorkit.measure.schedules import Schedule, schedule
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import (
    format_percent,
    format_rate,
    format_seconds,
    format_size,
    parse_size,
)
from mirrorkit.strategy import ALL_REDUCE_ALGORITHMS

_FLOAT32 = 4  # the benchmark's tensors are float32
_UNCERTAIN = 0.5  # a standard error above this fraction of its value: "poorly determined"
_ITEMSIZES = {
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "float32": 4,
    "float": 4,
    "float64": 8,
    "double": 8,
}

# What TensorFlow 2.21 does with a Keras 3 training step's gradients, read in its source
# (keras/src/backend/tensorflow/optimizer.py `_all_reduce_sum_gradients`: one
# `ReplicaContext.all_reduce(SUM, grads)` call with the list of all gradients, no options;
# tensorflow/python/distribute/cross_device_ops.py and cross_device_utils.py for what
# each algorithm does with that list).
_PACKING = {
    "collective": (
        "CollectiveAllReduce (MirroredStrategy's default) packs every gradient into one "
        "tensor (CommunicationOptions bytes_per_pack=0, the default), so its all-reduce "
        "starts only once the last gradient exists"
    ),
    "nccl": (
        "NcclAllReduce concatenates every gradient into one pack (num_packs=1), so its "
        "all-reduce starts only once the last gradient exists"
    ),
    "hierarchical_copy": (
        "HierarchicalCopyAllReduce concatenates every gradient into one pack (num_packs=1), "
        "so its all-reduce starts only once the last gradient exists"
    ),
    "one_device": (
        "ReductionToOneDevice reduces each gradient on its own, so TensorFlow's dataflow "
        "allows a gradient's reduction to start as soon as it exists; whether it does, and "
        "how much that hides, was not measured here"
    ),
}


# -- the fit --------------------------------------------------------------------------------


@dataclass(frozen=True)
class FitPoint:
    """One record of the benchmark next to what the fitted model predicts for it.

    Attributes:
        replicas: Replica count of the record.
        nbytes: Bytes each replica all-reduced.
        steps: Steps of the algorithm's schedule on ``replicas`` replicas.
        link_bytes: Bytes the busiest link carries in one direction, over all steps.
        measured_s: The record's median time.
        predicted_s: The model's time for it.

    Example:
        >>> from mirrorkit.measure.cost_model import FitPoint
        >>> point = FitPoint(2, 4096, 2, 4096, 1e-3, 9e-4)
        >>> round(point.residual, 12)  # (measured - predicted) / measured
        0.1
    """

    replicas: int
    nbytes: int
    steps: int
    link_bytes: int
    measured_s: float
    predicted_s: float

    @property
    def residual(self) -> float:
        """``(measured - predicted) / measured``: positive when the model is too fast."""
        return (self.measured_s - self.predicted_s) / self.measured_s


@dataclass(frozen=True)
class AlgorithmFit:
    """The fitted parameters of one algorithm, their uncertainty, and each record's residual.

    Attributes:
        algorithm: The algorithm's name.
        launch_s: Seconds of the fixed per-call cost, or ``None`` when merged with alpha.
        alpha_s: Seconds per step, or ``None`` when merged with launch.
        fixed_s: When merged: ``launch + alpha * fixed_steps``, the one fixed cost the data
            determine; ``None`` otherwise.
        fixed_steps: When merged: the step count every record had; ``None`` otherwise.
        bandwidth: Bytes per second through the busiest link (``inf`` if time did not
            grow with size).
        merged_because: Why launch and alpha were merged (empty when they were not).
        errors: Standard error of each parameter (``"launch"``, ``"alpha"``, ``"fixed"``,
            ``"bandwidth"``) in its own unit; ``None`` when at its bound of 0 or when no
            residual is left to judge (as many records as parameters).
        covariance: Covariance of (launch, alpha) in s², when both were fitted above 0.
        at_bound: Parameters the fit held at 0 (the data prefer a negative value).
        points: Every record with the model's prediction for it.

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
        >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9, replicas=[4])).fits
        >>> one = fit["collective"]
        >>> one.merged, round(one.fixed_s * 1e6), one.fixed_steps
        (True, 1100, 6)
    """

    algorithm: str
    launch_s: float | None
    alpha_s: float | None
    fixed_s: float | None
    fixed_steps: int | None
    bandwidth: float
    merged_because: str
    errors: dict
    covariance: tuple | None
    at_bound: tuple[str, ...]
    points: tuple[FitPoint, ...]

    @property
    def merged(self) -> bool:
        """True when the data could not split launch from alpha (one step count)."""
        return self.fixed_s is not None

    @property
    def median_abs_residual(self) -> float:
        """The median of ``|measured - predicted| / measured`` over the records."""
        return statistics.median(abs(p.residual) for p in self.points)

    @property
    def uncertain(self) -> tuple[str, ...]:
        """Fitted parameters whose standard error exceeds half their value."""
        out = []
        for name, value in (
            ("launch", self.launch_s),
            ("alpha", self.alpha_s),
            ("fixed", self.fixed_s),
            ("bandwidth", self.bandwidth),
        ):
            error = self.errors.get(name)
            if value is not None and error is not None and error > _UNCERTAIN * value:
                out.append(name)
        return tuple(out)

    def fixed_cost(self, steps: int) -> tuple[float, float | None]:
        """Seconds of the size-independent cost at ``steps`` steps, and its standard error.

        Args:
            steps: A step count; when launch and alpha are merged, only ``fixed_steps``.

        Returns:
            ``(seconds, standard error or None)``.

        Raises:
            ValueError: If launch and alpha are merged and ``steps`` is another step count.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
            >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9)).fits["collective"]
            >>> round(fit.fixed_cost(6)[0] * 1e6)  # 500 us + 6 x 100 us
            1100
        """
        if self.merged:
            if steps != self.fixed_steps:
                raise ValueError(
                    f"steps is {steps}, but the fit of {self.algorithm} merged launch and alpha "
                    f"({self.merged_because}), so it knows the fixed cost at "
                    f"{self.fixed_steps} steps only; measure more replica counts and fit again."
                )
            return self.fixed_s, self.errors.get("fixed")
        value = self.launch_s + self.alpha_s * steps
        if self.covariance is None:
            return value, None
        (var_l, cov), (_, var_a) = self.covariance
        return value, math.sqrt(max(0.0, var_l + steps * steps * var_a + 2 * steps * cov))

    def _seconds(
        self,
        nbytes: int,
        replicas: int,
        *,
        itemsize: int = _FLOAT32,
        bandwidth: float | None = None,
        alpha: float | None = None,
    ) -> float:
        plan = _schedule(self.algorithm, replicas)
        steps = len(plan.steps)
        if self.merged:
            if alpha is not None:
                raise ValueError(
                    f"alpha cannot replace the per-step cost of {self.algorithm}: its fit merged "
                    f"launch and alpha ({self.merged_because}), so launch alone is unknown; "
                    "leave alpha=None to use this machine's fixed cost, or measure "
                    f"{self.algorithm} on more replica counts."
                )
            if steps != self.fixed_steps:
                raise ValueError(
                    f"replicas={replicas} gives {self.algorithm} {steps} steps, but its fit merged "
                    f"launch and alpha ({self.merged_because}) and knows the fixed cost at "
                    f"{self.fixed_steps} steps only; measure {self.algorithm} on more replica "
                    "counts (e.g. replicas=[2, 4]) and fit again, or predict a replica count "
                    f"with {self.fixed_steps} steps."
                )
            fixed = self.fixed_s
        else:
            fixed = self.launch_s + (self.alpha_s if alpha is None else alpha) * steps
        rate = self.bandwidth if bandwidth is None else bandwidth
        return fixed + _link_bytes(self.algorithm, replicas, nbytes, itemsize) / rate


@lru_cache(maxsize=512)
def _schedule(algorithm: str, replicas: int) -> Schedule:
    return schedule(algorithm, replicas)


@lru_cache(maxsize=4096)
def _link_bytes(algorithm: str, replicas: int, nbytes: int, itemsize: int) -> int:
    """Bytes through the busiest link, the tensor cut in whole elements when it can be."""
    if nbytes % itemsize:
        itemsize = 1
    return _schedule(algorithm, replicas).busiest_link_bytes(nbytes // itemsize, itemsize)


def _nnls(a: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ||a x - y|| with x >= 0, exactly, for a few columns: try every subset of them.

    The solution is the unconstrained least-squares solution on its own support, so the
    best subset whose solution has no negative value is the answer. Columns are scaled
    to unit norm first (the byte column is 1e9 times the others). Returns (x, support).
    """
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    b = a / norms
    k = b.shape[1]
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for size in range(k, 0, -1):
        for subset in itertools.combinations(range(k), size):
            cols = list(subset)
            z, *_ = np.linalg.lstsq(b[:, cols], y, rcond=None)
            if (z < 0).any():
                continue
            x = np.zeros(k)
            x[cols] = z
            cost = float(np.sum((b @ x - y) ** 2))
            if best is None or cost < best[0] * (1 - 1e-12):
                support = np.zeros(k, bool)
                support[cols] = True
                best = (cost, x, support)
    assert best is not None  # one positive column alone always fits y > 0 with x > 0
    return best[1] / norms, best[2]


def _fit_algorithm(algorithm: str, records: Sequence[AllReduceRecord]) -> AlgorithmFit:
    measure_more = (
        f"benchmark_all_reduce([{algorithm!r}], sizes=['4KiB', '256KiB', '16MiB'], replicas=[2, 4])"
    )
    for record in records:
        if not (record.median_s > 0 and math.isfinite(record.median_s)):
            raise ValueError(
                f"benchmark holds a record of {algorithm} ({record.replicas} replicas, "
                f"{format_size(record.bytes)}) whose median time is {record.median_s!r}; "
                "times must be positive: measure it again."
            )
        if record.replicas < 2 or record.bytes <= 0:
            raise ValueError(
                f"benchmark holds a record of {algorithm} with {record.replicas} replicas and "
                f"{record.bytes} bytes; an all-reduce needs 2 or more replicas and a positive "
                "size: measure it again with benchmark_all_reduce."
            )
    steps = np.array([len(_schedule(algorithm, r.replicas).steps) for r in records], float)
    link = np.array([_link_bytes(algorithm, r.replicas, r.bytes, _FLOAT32) for r in records], float)
    seconds = np.array([r.median_s for r in records], float)
    if len({r.bytes for r in records}) < 2:
        raise ValueError(
            f"benchmark measured {algorithm} at one size only ({format_size(records[0].bytes)}),"
            " so the bandwidth cannot be told from the fixed cost; measure at least two sizes, "
            f"e.g. {measure_more}."
        )
    counts = sorted(set(steps.astype(int).tolist()))
    merged = len(counts) == 1
    if merged:
        replica_counts = sorted({r.replicas for r in records})
        why = (
            f"its schedule has {counts[0]} steps on every replica count"
            if algorithm == "one_device"
            else f"only {'/'.join(map(str, replica_counts))} replicas were measured, "
            f"all {counts[0]}-step schedules"
        )
        names = ("fixed", "bandwidth")
        columns = [np.ones_like(steps), link]
    else:
        why = ""
        names = ("launch", "alpha", "bandwidth")
        columns = [np.ones_like(steps), steps, link]
    if len(records) < len(names):
        raise ValueError(
            f"benchmark holds {len(records)} record{'s' if len(records) != 1 else ''} of "
            f"{algorithm}, fewer than the {len(names)} parameters to fit "
            f"({', '.join(names)}); measure more sizes, e.g. {measure_more}."
        )
    a = np.column_stack(columns) / seconds[:, None]  # relative residuals: divide by t
    y = np.ones_like(seconds)
    if np.linalg.matrix_rank(a) < len(names):
        raise ValueError(
            f"benchmark cannot separate the parameters of {algorithm}: its records repeat one "
            "another or lie on a line (one size on each replica count?); measure two or more "
            f"sizes on each replica count, e.g. {measure_more}."
        )
    x, support = _nnls(a, y)
    errors: dict[str, float | None] = dict.fromkeys(names)
    covariance = None
    dof = len(records) - int(support.sum())
    if dof > 0:
        residuals = a @ x - y
        sub = a[:, support]
        cov = float(residuals @ residuals) / dof * np.linalg.pinv(sub.T @ sub)
        full = np.zeros((len(names), len(names)))
        index = np.flatnonzero(support)
        full[np.ix_(index, index)] = cov
        for i, name in enumerate(names):
            errors[name] = math.sqrt(max(0.0, float(full[i, i]))) if support[i] else None
        if not merged and support[0] and support[1]:
            covariance = tuple(tuple(float(v) for v in row) for row in full[:2, :2])
    beta = float(x[-1])
    bandwidth = 1.0 / beta if beta > 0 else math.inf
    if errors["bandwidth"] is not None:
        errors["bandwidth"] = errors["bandwidth"] / beta**2  # delta method: d(1/b) = db / b²
    at_bound = tuple(name for name, kept in zip(names, support, strict=True) if not kept)
    predicted = np.column_stack(columns) @ x
    points = tuple(
        FitPoint(r.replicas, r.bytes, int(s), int(b), float(r.median_s), float(p))
        for r, s, b, p in zip(records, steps, link, predicted, strict=True)
    )
    return AlgorithmFit(
        algorithm=algorithm,
        launch_s=None if merged else float(x[0]),
        alpha_s=None if merged else float(x[1]),
        fixed_s=float(x[0]) if merged else None,
        fixed_steps=counts[0] if merged else None,
        bandwidth=bandwidth,
        merged_because=why,
        errors=errors,
        covariance=covariance,
        at_bound=at_bound,
        points=points,
    )


def fit_cost_model(benchmark: AllReduceBenchmark, algorithms=None) -> CostModel:
    """Fit ``t = launch + alpha * steps + bytes / bandwidth`` to each algorithm's records.

    Every record's median time counts once, as a relative residual
    ``(measured - predicted) / measured``; parameters stay at or above 0. ``steps`` and
    ``bytes`` (through the busiest link, one direction) come from
    :func:`mirrorkit.measure.schedules.schedule`. When all of an algorithm's records share
    one step count (``one_device`` always; any algorithm measured on one replica count),
    launch and alpha are merged into one fixed cost: the data cannot tell them apart.

    Args:
        benchmark: What :func:`~mirrorkit.measure.allreduce.benchmark_all_reduce` returned
            (or :meth:`AllReduceBenchmark.from_json` loaded).
        algorithms: Which algorithms to fit: a name, a list of names, or ``None`` for every
            algorithm in the benchmark that has a schedule.

    Returns:
        A :class:`CostModel`.

    Raises:
        TypeError: If ``benchmark`` is not an ``AllReduceBenchmark`` or ``algorithms`` not
            names.
        ValueError: If the benchmark has no records, ``algorithms`` names an unknown or
            unmeasured algorithm, or an algorithm has too few records, one size only, or
            records that cannot separate its parameters.

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
        >>> measured = synthetic_benchmark(5e-4, 1e-4, 2e9,
        ...                                algorithms=["collective", "one_device"])
        >>> model = fit_cost_model(measured)
        >>> sorted(model.fits), model.fits["one_device"].merged
        (['collective', 'one_device'], True)
        >>> round(model.fits["one_device"].fixed_s * 1e6)  # launch + 2 x alpha
        700
    """
    if not isinstance(benchmark, AllReduceBenchmark):
        if isinstance(benchmark, str):
            hint = (
                "; to read a saved one, pass AllReduceBenchmark.from_json(...) of it"
                if benchmark not in ALL_REDUCE_ALGORITHMS
                else f"; {benchmark!r} is an algorithm: pass it as algorithms={benchmark!r}"
            )
        else:
            hint = ""
        raise TypeError(
            f"benchmark must be an AllReduceBenchmark, got {type(benchmark).__name__}: measure "
            "one with benchmark = mk.benchmark_all_reduce(sizes=['4KiB', '1MiB', '16MiB'], "
            f"replicas=[2, 4]) and call fit_cost_model(benchmark){hint}."
        )
    if not benchmark.records:
        why = "; ".join(f"{k}: {v}" for k, v in benchmark.skipped.items())
        raise ValueError(
            "benchmark has no records, so there is nothing to fit"
            + (f" (everything was skipped: {why})" if why else "")
            + "; measure first, e.g. benchmark_all_reduce(['collective'], sizes=['4KiB', "
            "'256KiB', '16MiB'], replicas=[2, 4])."
        )
    measured = list(dict.fromkeys(r.algorithm for r in benchmark.records))
    known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
    skipped: dict[str, str] = {}
    if algorithms is None:
        names = [a for a in measured if a in ALL_REDUCE_ALGORITHMS]
        for name in measured:
            if name not in ALL_REDUCE_ALGORITHMS:
                skipped[name] = (
                    "a custom all-reduce: mirrorkit.measure.schedules has no schedule for it, "
                    "so its steps and bytes are unknown"
                )
        if not names:
            raise ValueError(
                f"benchmark holds only algorithms without a schedule ({', '.join(measured)}); "
                f"the cost model needs one of {known}: benchmark one of those."
            )
    else:
        if isinstance(algorithms, str):
            algorithms = [algorithms]
        if not isinstance(algorithms, Iterable) or isinstance(algorithms, Mapping):
            raise TypeError(
                f"algorithms must be a name or a list of names, got "
                f"{type(algorithms).__name__} {algorithms!r}: write e.g. "
                "algorithms=['collective', 'one_device'], or None for all measured ones."
            )
        names = list(dict.fromkeys(algorithms))
        if not names:
            raise ValueError("algorithms is empty; pass names, or None for all measured ones.")
        for name in names:
            if not isinstance(name, str) or name not in ALL_REDUCE_ALGORITHMS:
                raise ValueError(
                    f"algorithms holds an unknown all-reduce algorithm {name!r}; choose from "
                    f"{known}."
                )
            if name not in measured:
                raise ValueError(
                    f"algorithms asks for {name!r}, but the benchmark has no records of it (it "
                    f"measured {', '.join(measured)}); measure it with "
                    f"benchmark_all_reduce([{name!r}], sizes=['4KiB', '256KiB', '16MiB'], "
                    "replicas=[2, 4]) and fit that."
                )
    fits = {
        name: _fit_algorithm(name, [r for r in benchmark.records if r.algorithm == name])
        for name in names
    }
    return CostModel(fits=fits, skipped=skipped, machine=dict(benchmark.machine))


# -- predictions ----------------------------------------------------------------------------


@dataclass(frozen=True, repr=False)
class StepPrediction(Reported):
    """A training step's predicted time with its all-reduce, without and with overlap.

    Scaling efficiency is ``compute / step time``: with every replica doing the same compute
    per step as one device alone (a fixed batch per replica), ``N`` replicas run
    ``N * efficiency`` times as fast as one device. *No overlap*: the all-reduce follows
    the compute (``compute + all-reduce``). *Perfect overlap*: the all-reduce is hidden
    behind compute entirely (``max(compute, all-reduce)``), a bound rather than something
    TensorFlow does by default (see :attr:`overlap_facts`).

    Attributes:
        algorithm: The all-reduce algorithm.
        replicas: Replica count.
        nbytes: Bytes of gradients each replica all-reduces per step.
        parameters: The model's parameter count, when the size was given that way.
        dtype: The gradients' dtype name.
        link: The :class:`Link` whose bandwidth was used, or ``None`` for the fitted one.
        bandwidth: Bytes per second used for the busiest link.
        launch_s: Fitted launch cost (``None`` when merged with alpha).
        alpha_s: Per-step cost used (``None`` when merged with launch).
        alpha_given: True when ``alpha_s`` was passed in, not fitted.
        fixed_s: Launch plus alpha times the steps: the size-independent part.
        steps: Steps of the schedule.
        link_bytes: Bytes through the busiest link, one direction.
        compute_s: Forward and backward seconds per step, given.
        all_reduce_s: Predicted all-reduce seconds.
        caveats: Reasons to trust the prediction less (an extrapolated fixed cost...).

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
        >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
        >>> step = model.predict_step(parameters=10_000_000, replicas=4, compute_s=0.05)
        >>> round(step.all_reduce_s, 4), round(step.efficiency_no_overlap, 3)
        (0.0311, 0.617)
        >>> step.efficiency_overlap  # the all-reduce is shorter than the compute
        1.0
    """

    algorithm: str
    replicas: int
    nbytes: int
    parameters: int | None
    dtype: str
    link: Link | None
    bandwidth: float
    launch_s: float | None
    alpha_s: float | None
    alpha_given: bool
    fixed_s: float
    steps: int
    link_bytes: int
    compute_s: float
    all_reduce_s: float
    caveats: tuple[str, ...] = ()

    @property
    def no_overlap_s(self) -> float:
        """Step time when the all-reduce follows the compute: ``compute + all-reduce``."""
        return self.compute_s + self.all_reduce_s

    @property
    def overlap_s(self) -> float:
        """Step time when the all-reduce hides behind compute: ``max(compute, all-reduce)``."""
        return max(self.compute_s, self.all_reduce_s)

    @property
    def efficiency_no_overlap(self) -> float:
        """``compute / (compute + all-reduce)``."""
        return self.compute_s / self.no_overlap_s

    @property
    def efficiency_overlap(self) -> float:
        """``compute / max(compute, all-reduce)``."""
        return self.compute_s / self.overlap_s

    @property
    def overlap_facts(self) -> str:
        """What TensorFlow 2.21 with Keras 3 does about overlap, read in its source."""
        packing = _PACKING.get(self.algorithm, "")
        return (
            "Keras 3's optimizer all-reduces the gradients in one all_reduce call once the "
            "backward pass has returned them all"
            + (f"; {packing}" if packing else "")
            + ". Reducing in several packs while the backward pass still runs needs "
            "CommunicationOptions(bytes_per_pack=...) in your own all_reduce call; even then "
            "the last pack cannot overlap."
        )

    def report(self) -> Report:
        """The prediction as a report: times and efficiencies, then where each number comes from.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
            >>> step = model.predict_step(nbytes="40MB", replicas=4, compute_s=0.05,
            ...                           link="pcie4_x16")
            >>> print(step.report().text().splitlines()[0])
            Predicted step: 38.15 MiB of gradients per replica on 4 replicas, collective all-reduce over PCIe 4.0 x16
        """  # noqa: E501
        size = format_size(self.nbytes)
        if self.parameters is not None:
            what = f"{self.parameters:,} {self.dtype} parameters ({size} of gradients)"
        else:
            what = f"{size} of gradients per replica"
        over = f" over {self.link.name}" if self.link else ""
        fixed = (
            f"launch {format_seconds(self.launch_s)} + {self.steps} steps x alpha "
            f"{format_seconds(self.alpha_s)}"
            if self.launch_s is not None
            else f"fixed cost {format_seconds(self.fixed_s)} (launch and alpha merged)"
        )
        lines = [
            Line(
                f"All-reduce = {fixed} + {format_size(self.link_bytes)} through the busiest link "
                f"/ {format_rate(self.bandwidth)} = {format_seconds(self.all_reduce_s)}."
            )
        ]
        if self.link is not None:
            lines.append(
                Line(
                    f"Bandwidth: {self.link.name}, {format_rate(self.link.bandwidth)} "
                    f"({self.link.counts}); source {self.link.source}."
                )
            )
            if self.alpha_given:
                lines.append(
                    Line(
                        f"alpha {format_seconds(self.alpha_s)} per step is the value you gave; "
                        "launch is this machine's, from the fit."
                    )
                )
            else:
                lines.append(
                    Line(
                        "Launch and alpha come from the fit on this machine (its software "
                        "overhead per call and per step), not from the link, whose latency is "
                        "not cited here: pass alpha= for another per-step latency.",
                        tone="warn",
                    )
                )
        else:
            lines.append(Line("Bandwidth, launch and alpha: all from the fit on this machine."))
        lines += [Line(text, tone="warn") for text in self.caveats]
        lines += [
            Line(
                "Scaling efficiency = compute / step time: with the same compute per replica "
                f"as on one device, {self.replicas} replicas run {self.replicas} x efficiency "
                "times as fast as one."
            ),
            Line(
                "No overlap: the all-reduce waits for the whole backward pass. Perfect overlap: "
                "it hides behind compute entirely, a bound rather than a measurement. "
                + self.overlap_facts
            ),
        ]
        return Report(
            headline=(
                f"Predicted step: {what} on {self.replicas} replicas, {self.algorithm} "
                f"all-reduce{over}",
            ),
            columns=(
                (
                    "",
                    [
                        "compute (given)",
                        "all-reduce (predicted)",
                        "step, no overlap",
                        "step, perfect overlap",
                    ],
                ),
                (
                    "time",
                    [
                        format_seconds(self.compute_s),
                        format_seconds(self.all_reduce_s),
                        format_seconds(self.no_overlap_s),
                        format_seconds(self.overlap_s),
                    ],
                ),
                (
                    "scaling efficiency",
                    [
                        "",
                        "",
                        format_percent(self.efficiency_no_overlap),
                        format_percent(self.efficiency_overlap),
                    ],
                ),
            ),
            lines=tuple(lines),
        )


@dataclass(frozen=True, repr=False)
class CostModel(Reported):
    """What :func:`fit_cost_model` returns: one :class:`AlgorithmFit` per algorithm.

    Attributes:
        fits: ``{algorithm: AlgorithmFit}``.
        skipped: ``{algorithm: why}`` for measured algorithms that were not fitted.
        machine: The benchmark's facts about the machine it ran on.

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
        >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9, replicas=[2]))
        >>> print(model.report().lines[0].text)  # doctest: +NORMALIZE_WHITESPACE
        collective: fixed cost 700 us per all-reduce (launch and alpha merged: only 2
        replicas were measured, all 2-step schedules), bandwidth 2 GB/s; median |residual| 0.0%
    """

    fits: dict[str, AlgorithmFit]
    skipped: dict[str, str] = field(default_factory=dict)
    machine: dict = field(default_factory=dict)

    def _fit(self, algorithm) -> AlgorithmFit:
        fitted = ", ".join(repr(k) for k in self.fits)
        if algorithm is None:
            if len(self.fits) == 1:
                return next(iter(self.fits.values()))
            raise ValueError(
                f"algorithm is needed: this model fitted {fitted}; pass e.g. "
                f"algorithm={next(iter(self.fits))!r}."
            )
        if not isinstance(algorithm, str):
            raise TypeError(
                f"algorithm must be a name, got {type(algorithm).__name__} {algorithm!r}: "
                f"write e.g. algorithm={next(iter(self.fits))!r}."
            )
        if algorithm not in ALL_REDUCE_ALGORITHMS:
            known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
            raise ValueError(
                f"algorithm {algorithm!r} is not an all-reduce algorithm; choose from {known}."
            )
        if algorithm not in self.fits:
            raise ValueError(
                f"algorithm {algorithm!r} was not fitted (this model has {fitted}): measure it "
                f"with benchmark_all_reduce([{algorithm!r}], ...) and fit that benchmark."
            )
        return self.fits[algorithm]

    def predict(self, nbytes, replicas, algorithm=None, link=None, alpha=None) -> float:
        """Seconds one all-reduce of ``nbytes`` per replica takes on ``replicas`` replicas.

        ``launch + alpha * steps + busiest-link bytes / bandwidth``, with the steps and bytes
        of the algorithm's schedule and the fitted parameters; ``link`` swaps in a published
        bandwidth, ``alpha`` another per-step latency. Launch always comes from the fit.

        Args:
            nbytes: Bytes each replica contributes: an int or text such as ``"4MiB"``.
            replicas: Replica count, at least 2.
            algorithm: Which fitted algorithm; ``None`` when the model has only one.
            link: A name in :data:`LINKS`, a :class:`Link`, or ``None`` for the fitted
                bandwidth.
            alpha: Seconds per step instead of the fitted alpha, or ``None``.

        Returns:
            Seconds.

        Raises:
            TypeError: For arguments of the wrong type.
            ValueError: For a size that is not positive, fewer than 2 replicas, an unknown
                algorithm or link, a negative alpha, or a replica count (or alpha) that a
                merged fit cannot predict.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
            >>> round(model.predict("4MiB", 4) * 1e3, 6)  # ms: 0.5 + 6 x 0.1 + 6 MiB / 2 GB/s
            4.245728
            >>> round(model.predict("4MiB", 4, link="infiniband_ndr", alpha=5e-6) * 1e3, 3)
            0.656
        """
        call = "predict(nbytes, replicas), e.g. predict('4MiB', 4)"
        fit = self._fit(algorithm)
        nbytes = _positive_size("nbytes", nbytes, call)
        replicas = _replica_count(replicas, call)
        chosen = resolve_link(link)
        alpha = _optional_alpha(alpha)
        return fit._seconds(
            nbytes, replicas, bandwidth=chosen.bandwidth if chosen else None, alpha=alpha
        )

    def predict_step(
        self,
        *,
        replicas,
        compute_s,
        parameters=None,
        nbytes=None,
        dtype="float32",
        algorithm=None,
        link=None,
        alpha=None,
    ) -> StepPrediction:
        """Predict a training step: its all-reduce and the step time without and with overlap.

        Give the gradients' size either as ``parameters`` (times the size of ``dtype``) or
        as ``nbytes``.

        Args:
            replicas: Replica count, at least 2.
            compute_s: Seconds of forward and backward pass per step on one replica.
            parameters: The model's trainable parameter count.
            nbytes: Or the gradients' bytes per replica: an int or text such as ``"100MiB"``.
            dtype: The gradients' dtype (``"float32"``, ``"float16"``, ``"bfloat16"``,
                ``"float64"``, or a NumPy/TensorFlow dtype); used with ``parameters``.
            algorithm: Which fitted algorithm; ``None`` when the model has only one.
            link: A name in :data:`LINKS`, a :class:`Link`, or ``None`` for the fitted
                bandwidth.
            alpha: Seconds per step instead of the fitted alpha, or ``None``.

        Returns:
            A :class:`StepPrediction`.

        Raises:
            TypeError: For arguments of the wrong type.
            ValueError: For both or neither of ``parameters`` and ``nbytes``, sizes or times
                that are not positive, and the errors of :meth:`predict`.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
            >>> step = model.predict_step(parameters=25_000_000, dtype="float16", replicas=8,
            ...                           compute_s=0.1, link="nvlink4_h100")
            >>> step.nbytes, round(step.all_reduce_s * 1e3, 2), round(step.efficiency_overlap, 2)
            (50000000, 2.09, 1.0)
        """
        call = (
            "predict_step(parameters=..., replicas=..., compute_s=...), e.g. "
            "predict_step(parameters=25_000_000, replicas=4, compute_s=0.05)"
        )
        fit = self._fit(algorithm)
        replicas = _replica_count(replicas, call)
        compute_s = require_seconds(
            "compute_s", compute_s, write="compute_s=0.05 (50 ms of forward and backward pass)"
        )
        itemsize, dtype_name = _dtype(dtype)
        if (parameters is None) == (nbytes is None):
            raise ValueError(
                "give the gradients' size once: parameters (a count, times the dtype's size) "
                f"or nbytes (bytes), not {'both' if parameters is not None else 'neither'}; "
                "e.g. predict_step(parameters=25_000_000, replicas=4, compute_s=0.05)."
            )
        if parameters is not None:
            count = _whole_positive("parameters", parameters, call)
            size = count * itemsize
        else:
            count = None
            size = _positive_size("nbytes", nbytes, call)
        chosen = resolve_link(link)
        alpha = _optional_alpha(alpha)
        bandwidth = chosen.bandwidth if chosen else fit.bandwidth
        seconds = fit._seconds(size, replicas, itemsize=itemsize, bandwidth=bandwidth, alpha=alpha)
        steps = len(_schedule(fit.algorithm, replicas).steps)
        link_bytes = _link_bytes(fit.algorithm, replicas, size, itemsize)
        caveats = []
        unsure = [n for n in fit.uncertain if n in ("launch", "alpha")]
        measured = sorted({p.steps for p in fit.points})
        if unsure and alpha is None and not measured[0] <= steps <= measured[-1]:
            caveats.append(
                f"{steps} steps lie outside the measured {measured[0]} to {measured[-1]}, and "
                f"the fit splits the fixed cost into launch and alpha poorly "
                f"({_uncertain_text(unsure)}): the fixed cost here is an extrapolation."
            )
        return StepPrediction(
            algorithm=fit.algorithm,
            replicas=replicas,
            nbytes=size,
            parameters=count,
            dtype=dtype_name,
            link=chosen,
            bandwidth=bandwidth,
            launch_s=fit.launch_s,
            alpha_s=None if fit.merged else (fit.alpha_s if alpha is None else alpha),
            alpha_given=alpha is not None,
            fixed_s=seconds - link_bytes / bandwidth,
            steps=steps,
            link_bytes=link_bytes,
            compute_s=compute_s,
            all_reduce_s=seconds,
            caveats=tuple(caveats),
        )

    def report(self) -> Report:
        """The fit as a report: every record measured against predicted, then the parameters.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model, synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9, sizes=[4096, 1 << 20]))
            >>> print(model)  # doctest: +NORMALIZE_WHITESPACE
            All-reduce cost model: t = launch + alpha x steps + busiest-link bytes / bandwidth
            Fitted to 4 measurements by least squares on relative residuals, parameters >= 0
            On synthetic data: launch 500 us, alpha 100 us, bandwidth 2 GB/s, noise 0
            algorithm   replicas  size   steps  busiest link  measured  predicted  residual
            collective  2         4 KiB  2      4 KiB         702 us    702 us     +0.0%
            collective  2         1 MiB  2      1 MiB         1.22 ms   1.22 ms    +0.0%
            collective  4         4 KiB  6      6 KiB         1.1 ms    1.1 ms     +0.0%
            collective  4         1 MiB  6      1.5 MiB       1.89 ms   1.89 ms    +0.0%
            collective: launch 500 us, alpha 100 us per step, bandwidth 2 GB/s; median
            |residual| 0.0%
        """
        rows = [(name, p) for name, fit in self.fits.items() for p in fit.points]
        count = len(rows)
        headline = [
            "All-reduce cost model: t = launch + alpha x steps + busiest-link bytes / bandwidth",
            f"Fitted to {count} measurement{'s' if count != 1 else ''} by least squares on "
            "relative residuals, parameters >= 0",
        ]
        where = self.machine.get("summary")
        if where:
            headline.append(f"On {where}")
        lines: list[Line] = []
        for fit in self.fits.values():
            lines += _fit_lines(fit)
        if self.machine.get("simulated_replicas"):
            lines.append(
                Line(
                    "The replicas were simulated on one CPU: the fitted bandwidth is how fast "
                    "TensorFlow copies and adds within one memory, not the speed of any link."
                )
            )
        lines += [Line(f"{k}: {v}", tone="warn", label="Skipped") for k, v in self.skipped.items()]
        return Report(
            headline=tuple(headline),
            columns=(
                ("algorithm", [name for name, _ in rows]),
                ("replicas", [str(p.replicas) for _, p in rows]),
                ("size", [format_size(p.nbytes) for _, p in rows]),
                ("steps", [str(p.steps) for _, p in rows]),
                ("busiest link", [format_size(p.link_bytes) for _, p in rows]),
                ("measured", [format_seconds(p.measured_s) for _, p in rows]),
                ("predicted", [format_seconds(p.predicted_s) for _, p in rows]),
                ("residual", [_signed_percent(p.residual) for _, p in rows]),
            ),
            lines=tuple(lines),
        )


def _uncertain_text(names: Sequence[str]) -> str:
    if len(names) == 1:
        return f"{names[0]}'s standard error is more than half its value"
    return f"{' and '.join(names)} each have a standard error above half their value"


def _percent(fraction: float) -> str:
    return f"{fraction * 100:.1f}%"


def _signed_percent(fraction: float) -> str:
    text = f"{fraction * 100:+.1f}%"
    return "+0.0%" if text == "-0.0%" else text


def _with_error(value: float, error: float | None, show) -> str:
    if error is None or error <= 1e-9 * abs(value):  # none, or round-off of an exact fit
        return show(value)
    return f"{show(value)} ± {show(error)}"


def _fit_lines(fit: AlgorithmFit) -> list[Line]:
    errors = fit.errors
    if math.isinf(fit.bandwidth):
        rate = "bandwidth unbounded (the time did not grow with size: measure larger sizes)"
    elif errors.get("bandwidth") is not None and errors["bandwidth"] > 1e-9 * fit.bandwidth:
        rate = (
            f"bandwidth {format_rate(fit.bandwidth)} ± "
            f"{format_percent(errors['bandwidth'] / fit.bandwidth)}"
        )
    else:
        rate = f"bandwidth {format_rate(fit.bandwidth)}"
    if fit.merged:
        fixed = (
            f"fixed cost {_with_error(fit.fixed_s, errors.get('fixed'), format_seconds)} per "
            f"all-reduce (launch and alpha merged: {fit.merged_because})"
        )
    else:
        fixed = (
            f"launch {_with_error(fit.launch_s, errors.get('launch'), format_seconds)}, "
            f"alpha {_with_error(fit.alpha_s, errors.get('alpha'), format_seconds)} per step"
        )
    text = (
        f"{fit.algorithm}: {fixed}, {rate}; median |residual| {_percent(fit.median_abs_residual)}"
    )
    if all(e is None for e in errors.values()) and not fit.at_bound:
        text += (
            " (no residual is left to judge the uncertainty: as many parameters as distinct "
            "measurements?)"
        )
    lines = [Line(text)]
    if fit.at_bound:
        lines.append(
            Line(
                f"{fit.algorithm}: {' and '.join(fit.at_bound)} held at 0, its bound: the "
                "measurements would rather have it negative, which no cost can be.",
                tone="warn",
            )
        )
    unsure = [n for n in fit.uncertain if n in ("launch", "alpha")]
    if unsure:
        counts = sorted({p.steps for p in fit.points})
        by_steps = {}
        for p in fit.points:
            by_steps.setdefault(p.steps, set()).add(p.replicas)
        fixed_costs = ", ".join(
            f"{'/'.join(map(str, sorted(by_steps[s])))} replicas ({s} steps) "
            + _with_error(*fit.fixed_cost(s), format_seconds)
            for s in counts
        )
        lines.append(
            Line(
                f"{fit.algorithm}: these measurements do not pin down how the fixed cost splits "
                f"into launch and alpha ({len(counts)} step counts measured; "
                f"{_uncertain_text(unsure)}). Read the two together, as the fixed cost at each "
                f"replica count: {fixed_costs}.",
                tone="warn",
            )
        )
    return lines


# -- arguments ------------------------------------------------------------------------------


def _positive_size(name: str, value, call: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int | float | str):
        raise TypeError(
            f"{name} must be a number of bytes or text like '4MiB', got "
            f"{type(value).__name__} {value!r}: call {call}."
        )
    try:
        nbytes = parse_size(value)
    except (TypeError, ValueError) as error:
        raise type(error)(f"{name} is {value!r}: {error} Call {call}.") from None
    if nbytes <= 0:
        raise ValueError(
            f"{name} must be positive, got {value!r}: pass the bytes each replica all-reduces, "
            f"e.g. {name}='4MiB'."
        )
    return nbytes


def _whole_positive(name: str, value, call: str) -> int:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be a whole number, got {type(value).__name__} {value!r}: call {call}."
        )
    if value <= 0:
        raise ValueError(
            f"{name} must be positive, got {value}: pass the model's trainable parameter count, "
            f"e.g. {name}=25_000_000 (model.count_params())."
        )
    return value


def _replica_count(value, call: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"replicas must be an int, got {type(value).__name__} {value!r}: call {call}."
        )
    if value < 2:
        raise ValueError(
            f"replicas must be at least 2, got {value}: an all-reduce over fewer than 2 replicas "
            "sends nothing; ask for 2 or more."
        )
    return value


def _optional_alpha(value) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"alpha must be seconds per step or None, got {type(value).__name__} {value!r}: "
            "write e.g. alpha=5e-6 (5 us), or leave it None for the fitted value."
        )
    if not (value >= 0 and math.isfinite(value)):
        raise ValueError(
            f"alpha must be 0 or more seconds per step, got {value!r}: write e.g. alpha=5e-6 "
            "(5 us), or leave it None for the fitted value."
        )
    return float(value)


def _dtype(value) -> tuple[int, str]:
    name = value if isinstance(value, str) else getattr(value, "name", None)
    if not isinstance(name, str) and isinstance(value, type) and issubclass(value, np.generic):
        name = np.dtype(value).name
    choices = "'float32', 'float16', 'bfloat16' or 'float64'"
    if not isinstance(name, str):
        raise TypeError(
            f"dtype must be a dtype name such as 'float32', got {type(value).__name__} "
            f"{value!r}: write e.g. dtype='float16'; one of {choices}."
        )
    if name.lower() not in _ITEMSIZES:
        raise ValueError(f"dtype {name!r} is not a gradient dtype here; choose {choices}.")
    return _ITEMSIZES[name.lower()], name.lower()


# -- synthetic measurements -------------------------------------------------------------------


def synthetic_benchmark(
    launch_s: float,
    alpha_s: float,
    bandwidth: float,
    *,
    algorithms: Sequence[str] = ("collective",),
    replicas: Sequence[int] = (2, 4),
    sizes: Sequence[int | str] = (4 << 10, 1 << 20, 16 << 20),
    noise: float = 0.0,
    repeats: int = 3,
    seed: int = 0,
) -> AllReduceBenchmark:
    """A benchmark computed from known parameters: to try the fit, or to see a model's data.

    Each record's times are ``launch + alpha * steps + busiest-link bytes / bandwidth``
    (steps and bytes from :mod:`mirrorkit.measure.schedules`, float32 elements), each
    repeat multiplied by ``exp(noise * z)`` with ``z`` drawn from a standard normal.

    Args:
        launch_s: Seconds of fixed cost per call.
        alpha_s: Seconds per step.
        bandwidth: Bytes per second through the busiest link.
        algorithms: Names from ``ALL_REDUCE_ALGORITHMS``.
        replicas: Replica counts, each at least 2.
        sizes: Bytes per replica (ints or text like ``"4KiB"``), multiples of 4.
        noise: Relative spread of each repeat (0 for exact times).
        repeats: Repeats per record (their median is the record's time).
        seed: Seed of the noise.

    Returns:
        An :class:`~mirrorkit.measure.allreduce.AllReduceBenchmark` whose ``machine``
        says it is synthetic.

    Example:
        >>> from mirrorkit.measure.cost_model import synthetic_benchmark
        >>> result = synthetic_benchmark(1e-4, 1e-5, 1e9, replicas=[2], sizes=["1MiB"])
        >>> round(result.records[0].median_s, 12)  # 100 us + 2 x 10 us + 1 MiB / 1 GB/s
        0.001168576
    """
    rng = np.random.default_rng(seed)
    records = []
    for algorithm in algorithms:
        for n in replicas:
            for size in sizes:
                nbytes = parse_size(size)
                steps = len(_schedule(algorithm, n).steps)
                t = launch_s + alpha_s * steps + _link_bytes(algorithm, n, nbytes, 4) / bandwidth
                times = [t * math.exp(noise * rng.standard_normal()) for _ in range(repeats)]
                records.append(record_from_times(algorithm, n, nbytes, times, 0.0))
    return AllReduceBenchmark(
        records=tuple(records),
        machine={
            "summary": (
                f"synthetic data: launch {format_seconds(launch_s)}, alpha "
                f"{format_seconds(alpha_s)}, bandwidth {format_rate(bandwidth)}, noise {noise:g}"
            ),
            "synthetic": True,
        },
        settings={"repeats": repeats, "noise": noise, "seed": seed},
    )
