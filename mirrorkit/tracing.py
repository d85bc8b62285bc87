"""Where a training step's time goes: waiting for input, computing, and all-reducing.

:class:`StepTracer` wraps each step of a real training loop (yours, or Keras
``fit`` through :meth:`StepTracer.callback`) and splits it into three phases.
What is measured and what is estimated, exactly:

* **input wait** (measured): the wall time of ``next(iterator)`` just before the
  step, i.e. until the next batch is on the replicas.
* **step** (measured): the wall time of the step itself, from entering to leaving
  :meth:`StepTracer.step`; on GPUs it ends with
  ``tf.test.experimental.sync_devices()`` so queued kernels are counted (on CPUs a
  ``tf.function`` call returns when its work is done).
* **all-reduce** (estimated): the median time of the same all-reduce the step makes
  (``ReplicaContext.all_reduce(SUM, gradients)`` on tensors of the gradients'
  shapes and dtypes, on the same strategy), timed alone when :meth:`StepTracer.result`
  is first called, after training. Inside the real step TensorFlow may overlap it
  with the backward pass, so this is an upper bound on the time it adds; it is
  capped at the step's own time.
* **compute** (derived): step time minus the all-reduce estimate: forward,
  backward, optimizer update and TensorFlow's own overheads.

So ``input_wait_s + compute_s + all_reduce_s == total_s`` for every step. The
tracer adds two ``time.perf_counter`` calls and a list append per phase.
"""

from __future__ import annotations

import contextlib
import html
import statistics
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

from mirrorkit._format import html_table, text_table
from mirrorkit._units import format_percent, format_seconds, format_size

_PHASES = ("input_wait_s", "compute_s", "all_reduce_s")


@dataclass(frozen=True)
class StepPhases:
    """The time of one training step, split into phases (all in seconds).

    Attributes:
        step: The step's index, from 0.
        input_wait_s: Measured wait for the step's batch (``next(iterator)``).
        step_s: Measured wall time of the step itself.
        all_reduce_s: Estimated all-reduce time within the step (capped at ``step_s``).
        compute_s: ``step_s - all_reduce_s``.

    Example:
        >>> from mirrorkit.tracing import StepPhases
        >>> phases = StepPhases(0, input_wait_s=0.001, step_s=0.010, all_reduce_s=0.002,
        ...                     compute_s=0.008)
        >>> phases.total_s
        0.011
    """

    step: int
    input_wait_s: float
    step_s: float
    all_reduce_s: float
    compute_s: float

    @property
    def total_s(self) -> float:
        """Input wait plus step: the sum of the three phases."""
        return self.input_wait_s + self.step_s


@dataclass(frozen=True)
class StepTrace:
    """What :meth:`StepTracer.result` returns: per-step phases and their medians.

    Attributes:
        steps: One :class:`StepPhases` per traced step.
        all_reduce_estimate_s: Median time of the gradients' all-reduce timed alone
            (``None`` if there were no gradients to reduce).
        gradient_bytes: Bytes each replica all-reduces per step.
        replicas: Replicas in sync.
        notes: What is measured and what is estimated.

    Example:
        >>> from mirrorkit.tracing import StepPhases, StepTrace
        >>> trace = StepTrace((StepPhases(0, 0.001, 0.010, 0.002, 0.008),), 0.002, 4096, 2)
        >>> print(trace)  # doctest: +NORMALIZE_WHITESPACE +ELLIPSIS
        1 training step on 2 replicas, 4 KiB of gradients all-reduced per step
        phase       median   share
        input wait  1 ms     9.09%
        compute     8 ms     72.7%
        all-reduce  2 ms     18.2%
        total       11 ms    100%
        Measured: input wait (next(iterator)) and step wall time. Estimated: all-reduce ...
    """

    steps: tuple[StepPhases, ...]
    all_reduce_estimate_s: float | None
    gradient_bytes: int
    replicas: int
    notes: tuple[str, ...] = ()

    def median(self, phase: str) -> float:
        """The median over steps of ``"input_wait_s"``, ``"compute_s"``, ``"all_reduce_s"``,
        ``"step_s"`` or ``"total_s"`` (0.0 with no steps).
        """  # noqa: D205, D415
        values = [getattr(s, phase) for s in self.steps]
        return statistics.median(values) if values else 0.0

    @property
    def fractions(self) -> dict[str, float]:
        """Each phase's share of the summed time of all steps."""
        total = sum(s.total_s for s in self.steps)
        if not total:
            return dict.fromkeys(_PHASES, 0.0)
        return {p: sum(getattr(s, p) for s in self.steps) / total for p in _PHASES}

    def _columns(self) -> list[tuple[str, list[str]]]:
        names = {"input_wait_s": "input wait", "compute_s": "compute", "all_reduce_s": "all-reduce"}
        shares = self.fractions
        return [
            ("phase", [*names.values(), "total"]),
            ("median", [format_seconds(self.median(p)) for p in (*_PHASES, "total_s")]),
            ("share", [format_percent(shares[p]) for p in _PHASES] + ["100%"]),
        ]

    def _headline(self) -> str:
        n = len(self.steps)
        return (
            f"{n} training step{'s' if n != 1 else ''} on {self.replicas} replicas, "
            f"{format_size(self.gradient_bytes)} of gradients all-reduced per step"
        )

    def _notes(self) -> list[str]:
        estimate = (
            "none (no gradients)"
            if self.all_reduce_estimate_s is None
            else format_seconds(self.all_reduce_estimate_s)
        )
        return [
            "Measured: input wait (next(iterator)) and step wall time. Estimated: all-reduce "
            f"(the same all-reduce timed alone after training: {estimate}). "
            "Derived: compute = step - all-reduce.",
            *self.notes,
        ]

    def __str__(self) -> str:
        lines = [self._headline(), *text_table(self._columns()), *self._notes()]
        return "\n".join(line.rstrip() for line in lines)

    __repr__ = __str__

    def _repr_html_(self) -> str:
        notes = "".join(f"<p>{html.escape(n)}</p>" for n in self._notes())
        return (
            '<div class="mirrorkit-table">'
            f"<strong>{html.escape(self._headline())}</strong>"
            f"{html_table(self._columns())}{notes}</div>"
        )


class StepTracer:
    """Time the steps of a real training loop and split them into input, compute, all-reduce.

    In a custom loop, fetch each batch through :meth:`next` and run the step inside
    :meth:`step`; with Keras, pass :meth:`callback` to ``model.fit``. Then call
    :meth:`result`. See the module docstring for what is measured and estimated.

    Args:
        strategy: The ``tf.distribute.Strategy`` the steps run on.
        variables: What the step all-reduces gradients for, usually
            ``model.trainable_variables`` (or ``(shape, dtype)`` pairs). ``None`` with
            the Keras callback means the model's trainable variables.
        calibration_repeats: Timed runs of the all-reduce alone (after 2 warm-ups).

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.tracing import StepTracer
        >>> strategy = tf.distribute.get_strategy()
        >>> weights = tf.Variable(tf.ones([4]))
        >>> tracer = StepTracer(strategy, [weights], calibration_repeats=2)
        >>> batches = iter(tf.data.Dataset.from_tensors(tf.ones([4])).repeat(3))
        >>> for _ in range(3):
        ...     batch = tracer.next(batches)
        ...     with tracer.step():
        ...         _ = weights.assign_sub(0.1 * batch)
        >>> trace = tracer.result()
        >>> len(trace.steps), trace.gradient_bytes
        (3, 16)
        >>> all(abs(s.input_wait_s + s.compute_s + s.all_reduce_s - s.total_s) < 1e-12
        ...     for s in trace.steps)
        True
    """

    def __init__(self, strategy, variables=None, *, calibration_repeats: int = 10):
        if calibration_repeats < 1:
            raise ValueError(f"calibration_repeats must be at least 1, got {calibration_repeats}.")
        self.strategy = strategy
        self.calibration_repeats = calibration_repeats
        self._specs = None if variables is None else _specs(variables)
        self._estimate: float | None = None
        self._calibrated = False
        self._waits: list[float] = []
        self._steps: list[float] = []
        self._pending_wait = 0.0
        self._sync = _needs_sync(strategy)

    def next(self, iterator: Iterator):
        """Return ``next(iterator)``, timing the wait as the next step's input wait.

        ``StopIteration`` passes through and records nothing.
        """
        start = time.perf_counter()
        element = next(iterator)
        self._pending_wait += time.perf_counter() - start
        return element

    @contextlib.contextmanager
    def step(self):
        """Time the step run inside this ``with`` block (a step that raises is not recorded)."""
        start = time.perf_counter()
        yield
        if self._sync:
            import tensorflow as tf

            tf.test.experimental.sync_devices()
        self._steps.append(time.perf_counter() - start)
        self._waits.append(self._pending_wait)
        self._pending_wait = 0.0

    def reset(self) -> None:
        """Forget the steps traced so far (the all-reduce estimate is kept)."""
        self._waits.clear()
        self._steps.clear()
        self._pending_wait = 0.0

    def calibrate(self) -> float | None:
        """Time the gradients' all-reduce alone on the strategy (median seconds), once.

        Returns:
            The estimate, or ``None`` if there are no variables to reduce.
        """
        if not self._calibrated:
            if self._specs:
                self._estimate = _time_all_reduce(
                    self.strategy, self._specs, self.calibration_repeats
                )
            self._calibrated = True
        return self._estimate

    def result(self) -> StepTrace:
        """Split every traced step into phases (times the all-reduce first, if not yet done)."""
        estimate = self.calibrate()
        steps = []
        capped = 0
        for i, (wait, step) in enumerate(zip(self._waits, self._steps, strict=True)):
            reduce = min(estimate or 0.0, step)
            capped += estimate is not None and estimate > step
            steps.append(StepPhases(i, wait, step, reduce, step - reduce))
        notes = []
        if capped:
            notes.append(
                f"In {capped} step(s) the all-reduce alone took longer than the whole step; "
                "its share there is capped at the step time (the machine is noisy, or "
                "TensorFlow overlapped the all-reduce with compute)."
            )
        nbytes = sum(_nbytes(shape, dtype) for shape, dtype in self._specs or ())
        return StepTrace(
            tuple(steps), estimate, nbytes, self.strategy.num_replicas_in_sync, tuple(notes)
        )

    def callback(self):
        """A ``keras.callbacks.Callback`` that traces every step of ``model.fit`` here.

        While ``fit`` runs, it replaces ``model.train_function`` with a wrapper that
        fetches each batch itself (timed as input wait) and hands it to Keras' compiled
        one-step function (timed as the step); ``on_train_end`` puts the original back.
        It needs ``steps_per_execution=1`` (Keras' default) and uses the model's
        trainable variables when the tracer was made without ``variables``.
        """
        return _keras_callback_class()(self)

    def _use_model(self, model) -> None:
        if self._specs is None:
            self._specs = _specs(model.trainable_variables)


def _keras_callback_class():
    import keras

    class StepTracerCallback(keras.callbacks.Callback):
        def __init__(self, tracer: StepTracer):
            super().__init__()
            self.tracer = tracer
            self._original = None

        def on_train_begin(self, logs=None):
            model = self.model
            if getattr(model, "steps_per_execution", 1) != 1:
                raise ValueError(
                    "StepTracer traces one step at a time: compile the model with "
                    f"steps_per_execution=1 (it has {model.steps_per_execution})."
                )
            self.tracer._use_model(model)
            original = self._original = model.train_function
            tracer = self.tracer

            def traced_train_function(iterator):
                data = tracer.next(iterator)
                with tracer.step():
                    # Keras runs its compiled one-step function on each element of a
                    # plain iterable: here, the one batch just fetched.
                    return original([data])

            model.train_function = traced_train_function

        def on_train_end(self, logs=None):
            if self._original is not None:
                self.model.train_function = self._original
                self._original = None

        def result(self) -> StepTrace:
            return self.tracer.result()

    return StepTracerCallback


def _specs(variables) -> tuple[tuple[tuple[int, ...], str], ...]:
    specs = []
    for item in variables:
        if isinstance(item, tuple) and len(item) == 2 and not hasattr(item, "shape"):
            shape, dtype = item
        else:
            shape, dtype = item.shape, item.dtype
        dtype = getattr(dtype, "name", dtype)
        specs.append((tuple(int(d) for d in shape), str(dtype)))
    return tuple(specs)


def _nbytes(shape: Sequence[int], dtype: str) -> int:
    import numpy as np

    return int(np.prod(shape, dtype=np.int64)) * np.dtype(dtype).itemsize


def _needs_sync(strategy) -> bool:
    from mirrorkit.devices import replica_devices

    devices = replica_devices(strategy)
    return any("GPU" in d.upper() for d in devices)


def _time_all_reduce(strategy, specs, repeats: int, warmup: int = 2) -> float:
    import tensorflow as tf

    values = strategy.experimental_distribute_values_from_function(
        lambda context: [tf.zeros(shape, dtype) for shape, dtype in specs]
    )

    def reduce_all(values):
        context = tf.distribute.get_replica_context()
        totals = context.all_reduce(tf.distribute.ReduceOp.SUM, list(values))
        # One element of each sum: depends on every reduction, cheap to fetch.
        return [tf.reshape(t, [-1])[:1] for t in totals]

    @tf.function
    def all_reduce(values):
        return strategy.run(reduce_all, args=(values,))

    def call() -> None:
        for part in tf.nest.flatten(strategy.experimental_local_results(all_reduce(values))):
            part.numpy()

    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return statistics.median(times)
