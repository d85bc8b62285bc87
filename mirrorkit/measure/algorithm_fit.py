"""One algorithm's fit of the all-reduce cost model: its parameters, their errors, its records.

Example:
    >>> from mirrorkit.measure.algorithm_fit import fit_algorithm
    >>> from mirrorkit.measure.synthetic import synthetic_benchmark
    >>> records = synthetic_benchmark(5e-4, 1e-4, 2e9).records
    >>> fit = fit_algorithm("collective", records)
    >>> round(fit.launch_s * 1e6), round(fit.alpha_s * 1e6), round(fit.bandwidth / 1e9, 6)
    (500, 100, 2.0)
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse
from mirrorkit.measure._schedule_terms import FLOAT32, link_bytes, schedule_steps
from mirrorkit.measure._solver import covariance, nonnegative_least_squares
from mirrorkit.report.render import Line
from mirrorkit.report.units import format_percent, format_rate, format_seconds, format_size

_UNCERTAIN = 0.5  # a standard error above this fraction of its value: "poorly determined"


@dataclass(frozen=True)
class FitPoint:
    """One record of the benchmark next to what the fitted model predicts for it.

    Attributes:
        replicas: Replica count of the record.
        nbytes: Bytes each replica all-reduced.
        steps: Steps of the algorithm's schedule on ``replicas`` replicas.
        link_bytes: Bytes through each step's busiest link (one direction), added up.
        measured_s: The record's median time.
        predicted_s: The model's time for it.

    Example:
        >>> from mirrorkit.measure.algorithm_fit import FitPoint
        >>> point = FitPoint(replicas=2, nbytes=4096, steps=2, link_bytes=4096,
        ...                  measured_s=1e-3, predicted_s=9e-4)
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
        >>> from mirrorkit.measure.cost_model import fit_cost_model
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
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
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9)).fits["collective"]
            >>> round(fit.fixed_cost(6)[0] * 1e6)  # 500 us + 6 x 100 us
            1100
        """
        if self.merged:
            if steps != self.fixed_steps:
                refuse(
                    "steps",
                    steps,
                    must=f"{self.fixed_steps}, the one step count the fit of {self.algorithm} "
                    f"knows the fixed cost at (it merged launch and alpha: {self.merged_because})",
                    write=f"steps={self.fixed_steps}, or measure more replica counts and fit again",
                    error=ValueError,
                )
            return self.fixed_s, self.errors.get("fixed")
        value = self.launch_s + self.alpha_s * steps
        if self.covariance is None:
            return value, None
        (var_l, cov), (_, var_a) = self.covariance
        return value, math.sqrt(max(0.0, var_l + steps * steps * var_a + 2 * steps * cov))

    def seconds(
        self,
        nbytes: int,
        replicas: int,
        *,
        itemsize: int = FLOAT32,
        bandwidth: float | None = None,
        alpha: float | None = None,
    ) -> float:
        """The model's seconds for an all-reduce of ``nbytes`` per replica on ``replicas``.

        Args:
            nbytes: Bytes each replica contributes, at least 1.
            replicas: Replica count, at least 2.
            itemsize: Bytes of one element of the tensor.
            bandwidth: Bytes per second in place of the fitted bandwidth, or ``None``.
            alpha: Seconds per step in place of the fitted alpha, or ``None``.

        Raises:
            ValueError: For a replica count (or an alpha) a merged fit cannot predict.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9)).fits["collective"]
            >>> round(fit.seconds(1 << 20, 2, bandwidth=1e12) * 1e6, 2)  # 500 + 2 x 100 us
            701.05
        """
        steps = schedule_steps(self.algorithm, replicas)
        if self.merged and alpha is not None:
            refuse(
                "alpha",
                alpha,
                must=f"None for {self.algorithm}, whose fit merged launch and alpha "
                f"({self.merged_because}), so launch alone is unknown",
                write=f"alpha=None to use this machine's fixed cost, or measure {self.algorithm} "
                "on more replica counts",
                error=ValueError,
            )
        if self.merged and steps != self.fixed_steps:
            refuse(
                "replicas",
                must=f"a replica count with {self.fixed_steps} steps: the fit of "
                f"{self.algorithm} merged launch and alpha ({self.merged_because})",
                got=f"replicas={replicas}, which gives {self.algorithm} {steps} steps",
                write=f"replicas=[2, 4] in benchmark_all_reduce to measure {self.algorithm} "
                "on more replica counts, and fit again",
                error=ValueError,
            )
        if self.merged:
            fixed = self.fixed_s
        else:
            fixed = self.launch_s + (self.alpha_s if alpha is None else alpha) * steps
        rate = self.bandwidth if bandwidth is None else bandwidth
        return fixed + link_bytes(self.algorithm, replicas, nbytes, itemsize) / rate

    def report_lines(self) -> list[Line]:
        """The fit in words: its parameters, then what the data do not pin down.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9)).fits["collective"]
            >>> print(fit.report_lines()[0].text)  # doctest: +NORMALIZE_WHITESPACE
            collective: launch 500 us, alpha 100 us per step, bandwidth 2 GB/s; median
            |residual| 0.0%
        """
        text = (
            f"{self.algorithm}: {self._fixed_text()}, {self._rate_text()}; median |residual| "
            f"{self.median_abs_residual * 100:.1f}%"
        )
        if all(e is None for e in self.errors.values()) and not self.at_bound:
            text += (
                " (no residual is left to judge the uncertainty: as many parameters as distinct "
                "measurements?)"
            )
        lines = [Line(text)]
        if self.at_bound:
            lines.append(
                Line(
                    f"{self.algorithm}: {' and '.join(self.at_bound)} held at 0, its bound: the "
                    "measurements would rather have it negative, which no cost can be.",
                    tone="warn",
                )
            )
        unsure = [n for n in self.uncertain if n in ("launch", "alpha")]
        if unsure:
            lines.append(Line(self._split_text(unsure), tone="warn"))
        return lines

    def _rate_text(self) -> str:
        error = self.errors.get("bandwidth")
        if math.isinf(self.bandwidth):
            return "bandwidth unbounded (the time did not grow with size: measure larger sizes)"
        if error is not None and error > 1e-9 * self.bandwidth:
            spread = format_percent(error / self.bandwidth)
            return f"bandwidth {format_rate(self.bandwidth)} ± {spread}"
        return f"bandwidth {format_rate(self.bandwidth)}"

    def _fixed_text(self) -> str:
        errors = self.errors
        if self.merged:
            return (
                f"fixed cost {_with_error(self.fixed_s, errors.get('fixed'))} per "
                f"all-reduce (launch and alpha merged: {self.merged_because})"
            )
        return (
            f"launch {_with_error(self.launch_s, errors.get('launch'))}, "
            f"alpha {_with_error(self.alpha_s, errors.get('alpha'))} per step"
        )

    def _split_text(self, unsure: Sequence[str]) -> str:
        counts = sorted({p.steps for p in self.points})
        by_steps = {}
        for p in self.points:
            by_steps.setdefault(p.steps, set()).add(p.replicas)
        fixed_costs = ", ".join(
            f"{'/'.join(map(str, sorted(by_steps[s])))} replicas ({s} steps) "
            + _with_error(*self.fixed_cost(s))
            for s in counts
        )
        return (
            f"{self.algorithm}: these measurements do not pin down how the fixed cost splits "
            f"into launch and alpha ({len(counts)} step counts measured; "
            f"{uncertain_text(unsure)}). Read the two together, as the fixed cost at each "
            f"replica count: {fixed_costs}."
        )


def uncertain_text(names: Sequence[str]) -> str:
    """Which of launch and alpha are poorly determined, in words.

    Example:
        >>> uncertain_text(["alpha"])
        "alpha's standard error is more than half its value"
    """
    if len(names) == 1:
        return f"{names[0]}'s standard error is more than half its value"
    return f"{' and '.join(names)} each have a standard error above half their value"


def _with_error(value: float, error: float | None) -> str:
    if error is None or error <= 1e-9 * abs(value):  # none, or round-off of an exact fit
        return format_seconds(value)
    return f"{format_seconds(value)} ± {format_seconds(error)}"


def fit_algorithm(algorithm: str, records: Sequence) -> AlgorithmFit:
    """Fit ``t = launch + alpha * steps + bytes / bandwidth`` to one algorithm's records.

    Least squares on relative residuals, every parameter at least 0; launch and alpha are
    merged into one fixed cost when every record has the same step count.

    Args:
        algorithm: A name from ``ALL_REDUCE_ALGORITHMS``.
        records: That algorithm's :class:`~mirrorkit.measure.benchmark.AllReduceRecord`
            objects (anything with ``replicas``, ``bytes`` and ``median_s``).

    Returns:
        An :class:`AlgorithmFit`.

    Raises:
        ValueError: For records that are not times of an all-reduce, too few of them, one
            size only, or records that cannot separate the parameters.

    Example:
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
        >>> records = synthetic_benchmark(5e-4, 1e-4, 2e9, replicas=[2]).records
        >>> fit_algorithm("collective", records).merged
        True
    """
    more = (
        f"benchmark_all_reduce([{algorithm!r}], sizes=['4KiB', '256KiB', '16MiB'], replicas=[2, 4])"
    )
    for record in records:
        size = format_size(record.bytes) if record.bytes > 0 else f"{record.bytes} bytes"
        got = f"a record of {algorithm} ({record.replicas} replicas, {size})"
        if not (record.median_s > 0 and math.isfinite(record.median_s)):
            got += f" whose median time is {record.median_s!r}"
            refuse(
                "benchmark",
                must="a benchmark whose records have positive times",
                got=got,
                write=more,
                error=ValueError,
            )
        if record.replicas < 2 or record.bytes <= 0:
            must = "a benchmark whose records have 2 or more replicas and a positive size"
            refuse("benchmark", must=must, got=got, write=more, error=ValueError)
    if len({r.bytes for r in records}) < 2:
        got = f"{algorithm} measured at one size only ({format_size(records[0].bytes)})"
        write = f"{more} to measure at least two sizes"
        must = "measured at two sizes or more, to tell the bandwidth from the fixed cost"
        refuse("benchmark", must=must, got=got, write=write, error=ValueError)
    steps = np.array([schedule_steps(algorithm, r.replicas) for r in records], float)
    link = np.array([link_bytes(algorithm, r.replicas, r.bytes) for r in records], float)
    seconds = np.array([r.median_s for r in records], float)
    counts = sorted(set(steps.astype(int).tolist()))
    merged = len(counts) == 1
    names = ("fixed", "bandwidth") if merged else ("launch", "alpha", "bandwidth")
    columns = [np.ones_like(steps), link] if merged else [np.ones_like(steps), steps, link]
    a = np.column_stack(columns) / seconds[:, None]  # relative residuals: divide by t
    y = np.ones_like(seconds)
    if len(records) < len(names):
        plural = "s" if len(records) != 1 else ""
        got = (
            f"{len(records)} record{plural} of {algorithm}, fewer than the {len(names)} "
            f"parameters to fit ({', '.join(names)}); measure more sizes"
        )
        must = f"a benchmark with at least {len(names)} records of {algorithm}"
        refuse("benchmark", must=must, got=got, write=more, error=ValueError)
    if np.linalg.matrix_rank(a) < len(names):
        got = (
            f"records that cannot separate the parameters of {algorithm}: they repeat one "
            "another or lie on a line (one size on each replica count?)"
        )
        write = f"{more} to measure two or more sizes on each replica count"
        must = "a benchmark with two or more sizes on each replica count"
        refuse("benchmark", must=must, got=got, write=write, error=ValueError)
    x, support = nonnegative_least_squares(a, y)
    predicted = np.column_stack(columns) @ x
    points = tuple(
        FitPoint(
            replicas=r.replicas,
            nbytes=r.bytes,
            steps=int(s),
            link_bytes=int(b),
            measured_s=float(r.median_s),
            predicted_s=float(p),
        )
        for r, s, b, p in zip(records, steps, link, predicted, strict=True)
    )
    return _algorithm_fit(algorithm, names, x, support, covariance(a, y, x, support), points)


def _merged_because(algorithm: str, points: Sequence[FitPoint]) -> str:
    steps = points[0].steps
    if algorithm == "one_device":
        return f"its schedule has {steps} steps on every replica count"
    replica_counts = "/".join(map(str, sorted({p.replicas for p in points})))
    return f"only {replica_counts} replicas were measured, all {steps}-step schedules"


def _algorithm_fit(algorithm, names, x, support, full, points) -> AlgorithmFit:
    """The result of the fit: parameters, their standard errors (delta method for 1/beta)."""
    merged = names[0] == "fixed"
    errors: dict[str, float | None] = dict.fromkeys(names)
    pair = None
    if full is not None:
        for i, name in enumerate(names):
            errors[name] = math.sqrt(max(0.0, float(full[i, i]))) if support[i] else None
        if not merged and support[0] and support[1]:
            pair = tuple(tuple(float(v) for v in row) for row in full[:2, :2])
    beta = float(x[-1])
    if errors["bandwidth"] is not None:
        errors["bandwidth"] = errors["bandwidth"] / beta**2  # delta method: d(1/b) = db / b²
    return AlgorithmFit(
        algorithm=algorithm,
        launch_s=None if merged else float(x[0]),
        alpha_s=None if merged else float(x[1]),
        fixed_s=float(x[0]) if merged else None,
        fixed_steps=points[0].steps if merged else None,
        bandwidth=1.0 / beta if beta > 0 else math.inf,
        merged_because=_merged_because(algorithm, points) if merged else "",
        errors=errors,
        covariance=pair,
        at_bound=tuple(name for name, kept in zip(names, support, strict=True) if not kept),
        points=points,
    )
