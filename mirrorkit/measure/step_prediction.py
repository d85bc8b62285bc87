"""A training step's time predicted from the cost model: its all-reduce, with and without overlap.

Example:
    >>> from mirrorkit.measure.cost_model import fit_cost_model
    >>> from mirrorkit.measure.synthetic import synthetic_benchmark
    >>> model = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9))
    >>> step = model.predict_step(parameters=10_000_000, replicas=4, compute_s=0.05)
    >>> round(step.efficiency_no_overlap, 3)
    0.617
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from mirrorkit._validate import refuse, require_count, require_int, require_seconds, require_size
from mirrorkit.measure._schedule_terms import link_bytes, schedule_steps
from mirrorkit.measure.algorithm_fit import AlgorithmFit, uncertain_text
from mirrorkit.measure.links import Link, resolve_link
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_percent, format_rate, format_seconds, format_size

_ITEMSIZES = {
    "float16": 2,
    "half": 2,
    "bfloat16": 2,
    "float32": 4,
    "float": 4,
    "float64": 8,
    "double": 8,
}
_DTYPES = "'float32', 'float16', 'bfloat16' or 'float64'"

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
        link_bytes: Bytes through each step's busiest link (one direction), added up.
        compute_s: Forward and backward seconds per step, given.
        all_reduce_s: Predicted all-reduce seconds.
        caveats: Reasons to trust the prediction less (an extrapolated fixed cost...).

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
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
            >>> from mirrorkit.measure.cost_model import fit_cost_model
            >>> from mirrorkit.measure.synthetic import synthetic_benchmark
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
        rows = {
            "compute (given)": (self.compute_s, None),
            "all-reduce (predicted)": (self.all_reduce_s, None),
            "step, no overlap": (self.no_overlap_s, self.efficiency_no_overlap),
            "step, perfect overlap": (self.overlap_s, self.efficiency_overlap),
        }
        return Report(
            headline=(
                f"Predicted step: {what} on {self.replicas} replicas, {self.algorithm} "
                f"all-reduce{over}",
            ),
            columns=(
                ("", list(rows)),
                ("time", [format_seconds(seconds) for seconds, _ in rows.values()]),
                (
                    "scaling efficiency",
                    [format_percent(e) if e is not None else "" for _, e in rows.values()],
                ),
            ),
            lines=tuple(self._source_lines()),
        )

    def _source_lines(self) -> list[Line]:
        """Where each number comes from: the all-reduce's terms, the link, the caveats."""
        fixed = (
            f"launch {format_seconds(self.launch_s)} + {self.steps} steps x alpha "
            f"{format_seconds(self.alpha_s)}"
            if self.launch_s is not None
            else f"fixed cost {format_seconds(self.fixed_s)} (launch and alpha merged)"
        )
        lines = [
            Line(
                f"All-reduce = {fixed} + {format_size(self.link_bytes)} through each step's "
                f"busiest link / {format_rate(self.bandwidth)} = "
                f"{format_seconds(self.all_reduce_s)}."
            )
        ]
        if self.link is None:
            lines.append(Line("Bandwidth, launch and alpha: all from the fit on this machine."))
        else:
            lines.append(
                Line(
                    f"Bandwidth: {self.link.name}, {format_rate(self.link.bandwidth)} "
                    f"({self.link.counts}); source {self.link.source}."
                )
            )
            lines.append(self._alpha_line())
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
        return lines

    def _alpha_line(self) -> Line:
        if self.alpha_given:
            return Line(
                f"alpha {format_seconds(self.alpha_s)} per step is the value you gave; "
                "launch is this machine's, from the fit."
            )
        return Line(
            "Launch and alpha come from the fit on this machine (its software "
            "overhead per call and per step), not from the link, whose latency is "
            "not cited here: pass alpha= for another per-step latency.",
            tone="warn",
        )


def predict_step(
    fit: AlgorithmFit,
    *,
    replicas,
    compute_s,
    parameters=None,
    nbytes=None,
    dtype="float32",
    link=None,
    alpha=None,
) -> StepPrediction:
    """Predict a training step from one algorithm's fit (what :meth:`CostModel.predict_step` does).

    Every argument but ``fit`` is checked here, the way the learner wrote it.

    Args:
        fit: The algorithm's :class:`~mirrorkit.measure.algorithm_fit.AlgorithmFit`.
        replicas: Replica count, at least 2.
        compute_s: Seconds of forward and backward pass per step on one replica.
        parameters: The model's trainable parameter count.
        nbytes: Or the gradients' bytes per replica: an int or text such as ``"100MiB"``.
        dtype: The gradients' dtype name or a NumPy/TensorFlow dtype; used with ``parameters``.
        link: A name in :data:`~mirrorkit.measure.links.LINKS`, a :class:`Link`, or ``None``
            for the fitted bandwidth.
        alpha: Seconds per step instead of the fitted alpha, or ``None``.

    Returns:
        A :class:`StepPrediction`.

    Example:
        >>> from mirrorkit.measure.cost_model import fit_cost_model
        >>> from mirrorkit.measure.synthetic import synthetic_benchmark
        >>> fit = fit_cost_model(synthetic_benchmark(5e-4, 1e-4, 2e9)).fits["collective"]
        >>> step = predict_step(fit, replicas=4, compute_s=0.05, nbytes="40MiB")
        >>> step.steps, step.parameters
        (6, None)
    """
    call = "predict_step(parameters=25_000_000, replicas=4, compute_s=0.05)"
    write = "replicas=4 (fewer than 2 replicas have nothing to all-reduce, so ask for 2 or more)"
    replicas = require_count("replicas", replicas, write=write, minimum=2)
    compute_s = require_seconds(
        "compute_s", compute_s, write="compute_s=0.05 (50 ms of forward and backward pass)"
    )
    itemsize, dtype_name = _itemsize(dtype)
    if (parameters is None) == (nbytes is None):
        raise ValueError(
            "give the gradients' size once: parameters (a count, times the dtype's size) "
            f"or nbytes (bytes), not {'both' if parameters is not None else 'neither'}; "
            f"e.g. {call}."
        )
    if parameters is not None:
        if isinstance(parameters, float) and parameters.is_integer():
            parameters = int(parameters)
        require_int("parameters", parameters, must="a whole number", write=call)
        if parameters <= 0:
            write = "parameters=25_000_000 (model.count_params())"
            refuse("parameters", parameters, must="positive", write=write, error=ValueError)
    elif _is_number(nbytes) and nbytes <= 0:
        raise ValueError(
            f"nbytes must be positive, got {nbytes!r}: pass the bytes each replica all-reduces, "
            "e.g. nbytes='4MiB'."
        )
    else:
        nbytes = require_size("nbytes", nbytes, write="nbytes='4MiB' (bytes per replica)")
    if alpha is not None and not (_is_number(alpha) and alpha >= 0 and math.isfinite(alpha)):
        write = "alpha=5e-6 (5 us), or alpha=None for the fitted value"
        error = ValueError if _is_number(alpha) else TypeError
        refuse("alpha", alpha, must="0 or more seconds per step, or None", write=write, error=error)
    size = nbytes if parameters is None else parameters * itemsize
    chosen = resolve_link(link)
    bandwidth = chosen.bandwidth if chosen else fit.bandwidth
    alpha = None if alpha is None else float(alpha)
    seconds = fit.seconds(size, replicas, itemsize=itemsize, bandwidth=bandwidth, alpha=alpha)
    steps = schedule_steps(fit.algorithm, replicas)
    through = link_bytes(fit.algorithm, replicas, size, itemsize)
    return StepPrediction(
        algorithm=fit.algorithm,
        replicas=replicas,
        nbytes=size,
        parameters=parameters,
        dtype=dtype_name,
        link=chosen,
        bandwidth=bandwidth,
        launch_s=fit.launch_s,
        alpha_s=None if fit.merged else (fit.alpha_s if alpha is None else alpha),
        alpha_given=alpha is not None,
        fixed_s=seconds - through / bandwidth,
        steps=steps,
        link_bytes=through,
        compute_s=compute_s,
        all_reduce_s=seconds,
        caveats=_caveats(fit, steps, alpha),
    )


def _is_number(value) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _caveats(fit: AlgorithmFit, steps: int, alpha: float | None) -> tuple[str, ...]:
    """An extrapolated fixed cost: steps outside those measured, launch and alpha unsure."""
    unsure = [n for n in fit.uncertain if n in ("launch", "alpha")]
    measured = sorted({p.steps for p in fit.points})
    if not unsure or alpha is not None or measured[0] <= steps <= measured[-1]:
        return ()
    return (
        f"{steps} steps lie outside the measured {measured[0]} to {measured[-1]}, and "
        f"the fit splits the fixed cost into launch and alpha poorly "
        f"({uncertain_text(unsure)}): the fixed cost here is an extrapolation.",
    )


def _itemsize(dtype) -> tuple[int, str]:
    """Bytes of one element of ``dtype`` (a name, a NumPy or TensorFlow dtype), and its name."""
    name = dtype if isinstance(dtype, str) else getattr(dtype, "name", None)
    if not isinstance(name, str) and isinstance(dtype, type) and issubclass(dtype, np.generic):
        name = np.dtype(dtype).name
    if not isinstance(name, str):
        write = f"dtype='float16', or another of {_DTYPES}"
        refuse("dtype", dtype, must="a dtype name such as 'float32'", write=write)
    if name.lower() not in _ITEMSIZES:
        raise ValueError(f"dtype {name!r} is not a gradient dtype here; choose {_DTYPES}.")
    return _ITEMSIZES[name.lower()], name.lower()
