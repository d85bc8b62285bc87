"""An all-reduce cost model fitted from this machine's own measurements, and what it predicts.

The model is ``t(n, N) = launch + alpha * steps(N) + bytes(N, n) / bandwidth``; how it is
fitted and what the data can tell apart is in ``docs/design/cost-model.md``.

Example:
    >>> from mirrorkit.measure.cost_model import fit_cost_model
    >>> from mirrorkit.measure.synthetic import synthetic_benchmark
    >>> measured = synthetic_benchmark(launch_s=5e-4, alpha_s=1e-4, bandwidth=2e9)
    >>> model = fit_cost_model(measured)
    >>> fit = model.fits["collective"]
    >>> round(fit.launch_s * 1e6), round(fit.alpha_s * 1e6), round(fit.bandwidth / 1e9, 6)
    (500, 100, 2.0)
    >>> round(model.predict("64MiB", 8, link="nvlink4_h100") * 1e3, 3)  # seconds -> ms
    2.161
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import refuse, require_text
from mirrorkit.measure.algorithm_fit import AlgorithmFit, fit_algorithm
from mirrorkit.measure.benchmark import AllReduceBenchmark
from mirrorkit.measure.step_prediction import StepPrediction, predict_step
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_seconds, format_size

_MEASURE = "benchmark_all_reduce({}, sizes=['4KiB', '256KiB', '16MiB'], replicas=[2, 4])"


@dataclass(frozen=True, repr=False)
class CostModel(Reported):
    """What :func:`fit_cost_model` returns: one :class:`AlgorithmFit` per algorithm.

    Attributes:
        fits: ``{algorithm: AlgorithmFit}``.
        skipped: ``{algorithm: why}`` for measured algorithms that were not fitted.
        machine: The benchmark's facts about the machine it ran on.

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
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
        if algorithm is None and len(self.fits) == 1:
            return next(iter(self.fits.values()))
        if algorithm is None:
            raise ValueError(
                f"algorithm is needed: this model fitted {fitted}; pass e.g. "
                f"algorithm={next(iter(self.fits))!r}."
            )
        require_text("algorithm", algorithm, write=f"algorithm={next(iter(self.fits))!r}")
        if algorithm not in ALL_REDUCE_ALGORITHMS:
            known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
            raise ValueError(
                f"algorithm {algorithm!r} is not an all-reduce algorithm; choose from {known}."
            )
        if algorithm not in self.fits:
            refuse(
                "algorithm",
                algorithm,
                must=f"an algorithm this model fitted ({fitted})",
                write=f"{_MEASURE.format([algorithm])} to measure it, and fit that benchmark",
                error=ValueError,
                got=f"{algorithm!r}, which was not fitted",
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
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
            >>> round(model.predict("4MiB", 4) * 1e3, 6)  # ms: 0.5 + 6 x 0.1 + 6 MiB / 2 GB/s
            4.245728
            >>> round(model.predict("4MiB", 4, link="infiniband_ndr", alpha=5e-6) * 1e3, 3)
            0.656
        """
        step = predict_step(
            self._fit(algorithm),
            replicas=replicas,
            compute_s=1.0,
            nbytes=nbytes,
            link=link,
            alpha=alpha,
        )
        return step.all_reduce_s

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
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
            >>> step = model.predict_step(parameters=25_000_000, dtype="float16", replicas=8,
            ...                           compute_s=0.1, link="nvlink4_h100")
            >>> step.nbytes, round(step.all_reduce_s * 1e3, 2), round(step.efficiency_overlap, 2)
            (50000000, 2.09, 1.0)
        """
        return predict_step(
            self._fit(algorithm),
            replicas=replicas,
            compute_s=compute_s,
            parameters=parameters,
            nbytes=nbytes,
            dtype=dtype,
            link=link,
            alpha=alpha,
        )

    def report(self) -> Report:
        """The fit as a report: every record measured against predicted, then the parameters.

        Example:
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
            >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9, sizes=[4096, 1 << 20]))
            >>> print(model)  # doctest: +NORMALIZE_WHITESPACE
            All-reduce cost model: t = launch + alpha x steps + busiest-link bytes / bandwidth
            Fitted to 4 measurements by least squares on relative residuals, parameters >= 0
            On synthetic data: launch 500 us, alpha 100 us, bandwidth 2 GB/s, noise 0
            algorithm   replicas  size   steps  busiest links  measured  predicted  residual
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
        lines = [line for fit in self.fits.values() for line in fit.report_lines()]
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
                ("busiest links", [format_size(p.link_bytes) for _, p in rows]),
                ("measured", [format_seconds(p.measured_s) for _, p in rows]),
                ("predicted", [format_seconds(p.predicted_s) for _, p in rows]),
                ("residual", [_signed_percent(p.residual) for _, p in rows]),
            ),
            lines=tuple(lines),
        )


def _signed_percent(fraction: float) -> str:
    text = f"{fraction * 100:+.1f}%"
    return "+0.0%" if text == "-0.0%" else text


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
        >>> from mirrorkit.measure.cost_model import fit_cost_model
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
        >>> measured = synthetic_benchmark(5e-4, 1e-4, 2e9,
        ...                                algorithms=["collective", "one_device"])
        >>> model = fit_cost_model(measured)
        >>> sorted(model.fits), model.fits["one_device"].merged
        (['collective', 'one_device'], True)
        >>> round(model.fits["one_device"].fixed_s * 1e6)  # launch + 2 x alpha
        700
    """
    if not isinstance(benchmark, AllReduceBenchmark):
        hint = ""
        if isinstance(benchmark, str) and benchmark in ALL_REDUCE_ALGORITHMS:
            hint = f"; {benchmark!r} is an algorithm: pass it as algorithms={benchmark!r}"
        elif isinstance(benchmark, str):
            hint = "; to read a saved one, pass AllReduceBenchmark.from_json(...) of it"
        write = (
            "benchmark = mk.benchmark_all_reduce(sizes=['4KiB', '1MiB', '16MiB'], "
            f"replicas=[2, 4]) and call fit_cost_model(benchmark){hint}"
        )
        refuse("benchmark", benchmark, must="an AllReduceBenchmark", write=write)
    if not benchmark.records:
        why = "; ".join(f"{k}: {v}" for k, v in benchmark.skipped.items())
        got = "a benchmark that has no records"
        got += f" (everything was skipped: {why})" if why else ""
        write = f"measure first, e.g. {_MEASURE.format(['collective'])}"
        refuse(
            "benchmark",
            must="a benchmark with records to fit",
            got=got,
            write=write,
            error=ValueError,
        )
    names, skipped = _algorithms_to_fit(benchmark, algorithms)
    fits = {
        name: fit_algorithm(name, [r for r in benchmark.records if r.algorithm == name])
        for name in names
    }
    return CostModel(fits=fits, skipped=skipped, machine=dict(benchmark.machine))


def _algorithms_to_fit(benchmark: AllReduceBenchmark, algorithms) -> tuple[list, dict]:
    """The algorithms ``algorithms`` asks for (all measured ones for None), and those skipped."""
    measured = list(dict.fromkeys(r.algorithm for r in benchmark.records))
    known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
    if algorithms is None:
        skipped = {
            name: "a custom all-reduce: mirrorkit.measure.schedules has no schedule for it, "
            "so its steps and bytes are unknown"
            for name in measured
            if name not in ALL_REDUCE_ALGORITHMS
        }
        names = [a for a in measured if a in ALL_REDUCE_ALGORITHMS]
        if not names:
            got = f"only algorithms without a schedule ({', '.join(measured)})"
            must = f"a benchmark of one of {known}, which the cost model needs"
            refuse(
                "benchmark", must=must, got=got, write="benchmark one of those", error=ValueError
            )
        return names, skipped
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    if not isinstance(algorithms, Iterable) or isinstance(algorithms, Mapping):
        write = "algorithms=['collective', 'one_device'], or None for all measured ones"
        refuse("algorithms", algorithms, must="a name or a list of names", write=write)
    names = list(dict.fromkeys(algorithms))
    if not names:
        write = "algorithms=['collective'], or None for all measured ones"
        refuse("algorithms", names, must="one name or more", write=write, error=ValueError)
    for name in names:
        if not isinstance(name, str) or name not in ALL_REDUCE_ALGORITHMS:
            raise ValueError(
                f"algorithms holds an unknown all-reduce algorithm {name!r}; choose from {known}."
            )
        if name not in measured:
            refuse(
                "algorithms",
                must=f"algorithms the benchmark measured ({', '.join(measured)})",
                got=f"{name!r}, but the benchmark has no records of it",
                write=f"{_MEASURE.format([name])} to measure it, and fit that",
                error=ValueError,
            )
    return names, {}
