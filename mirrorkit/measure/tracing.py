"""Time every step of a real training loop, and profile a sample to split it into phases.

What is measured, exactly, and how the profile places each all-reduce on its replica:
docs/design/measure.md.

Example:
    >>> import tensorflow as tf
    >>> from mirrorkit.measure.tracing import StepTracer
    >>> tracer = StepTracer(tf.distribute.get_strategy(), profile_every=None)
    >>> with tracer.step():
    ...     pass
    >>> len(tracer.result().step_times_s)
    1
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Callable, Iterator

from mirrorkit._validate import describe, refuse, require_int, require_strategy
from mirrorkit.measure import _profiler
from mirrorkit.measure.step_trace import AllReduceSpan, StepPhases, StepTrace


class StepTracer:
    """Time every step of a real training loop; profile a sample to split it into phases.

    In a custom loop, fetch each batch through :meth:`next` and run the step inside
    :meth:`step`; with Keras, pass :meth:`callback` to ``model.fit``. Then call
    :meth:`result`. What is measured, and how: docs/design/measure.md.

    Args:
        strategy: The ``tf.distribute.Strategy`` the steps run on.
        profile_every: Profile one step in this many (``None``: never profile).
        profile_from: The first step to profile (the first steps trace and compile
            ``tf.function`` s, and are not typical).
        on_step: Optional function called with each profiled step's
            :class:`StepPhases` as soon as the step ends, to draw it live (for example
            ``mirrorwidgets.StepTimeline().append``). Its parsing time is counted as
            profiler overhead.

    Raises:
        TypeError: If ``strategy`` is not a ``tf.distribute.Strategy``, ``profile_from`` is
            not an int, or ``on_step`` is not callable.
        ValueError: If ``profile_every`` is not an int of at least 1 (or ``None``), or
            ``profile_from`` is below 0.

    Example:
        >>> import tensorflow as tf
        >>> from mirrorkit.measure.tracing import StepTracer
        >>> strategy = tf.distribute.get_strategy()
        >>> weights = tf.Variable(tf.ones([4]))
        >>> tracer = StepTracer(strategy, profile_every=2, profile_from=1)
        >>> batches = iter(tf.data.Dataset.from_tensors(tf.ones([4])).repeat(4))
        >>> for _ in range(4):
        ...     batch = tracer.next(batches)
        ...     with tracer.step():
        ...         _ = weights.assign_sub(0.1 * batch)
        >>> trace = tracer.result()
        >>> len(trace.step_times_s), trace.profiled_steps
        (4, (1, 3))
        >>> all(abs(s.input_wait_s + s.compute_s + s.all_reduce_s - s.total_s) < 1e-12
        ...     for s in trace.steps)
        True
    """

    def __init__(
        self,
        strategy,
        *,
        profile_every: int | None = 100,
        profile_from: int = 2,
        on_step: Callable[[StepPhases], object] | None = None,
    ):
        require_strategy(strategy, "StepTracer(strategy)")
        every = "e.g. profile_every=10 to profile one step in ten, or None to never profile"
        if profile_every is not None and (
            isinstance(profile_every, bool)
            or not isinstance(profile_every, int)
            or profile_every < 1
        ):
            must = "an int >= 1 or None"
            refuse("profile_every", profile_every, must=must, write=every, error=ValueError)
        must = "an int >= 0 (a step index, counted from 0)"
        write = "e.g. profile_from=2 to skip the first steps, which trace the tf.function"
        require_int("profile_from", profile_from, must=must, write=write, minimum=0)
        if on_step is not None and not callable(on_step):
            append = " (pass its append method: on_step=timeline.append)"
            got = describe(on_step) + (append if hasattr(on_step, "append") else "")
            got += "; e.g. on_step=print"
            must = "a function of StepPhases"
            refuse("on_step", must=must, got=got, write="on_step=None to trace without one")
        self.strategy = strategy
        self.on_step = on_step
        self.profile_every = profile_every
        self.profile_from = profile_from
        self._devices = _replica_devices(strategy)
        self._sync = any("GPU" in d.upper() for d in self._devices)
        self._notes: list[str] = []
        self.reset()

    def reset(self) -> None:
        """Forget the steps traced so far; the next step is step 0 again."""
        if getattr(self, "_open", None) is not None:
            self._end(keep=False)  # stops a profiler session left running
        self._waits: list[float] = []
        self._times: list[float] = []
        self._starts: list[float] = []  # perf_counter, minus _origin
        self._wait_starts: list[float] = []
        self._origin: float | None = None  # the first perf_counter reading
        self._profiles: list[tuple[int, bytes]] = []
        self._pending_wait = 0.0
        self._pending_wait_start: float | None = None
        self._profiler_s = 0.0
        self._open = None  # (start, session, marker) of the step under way
        self._left_out = 0  # fit's epoch-end steps, whose end the callback does not see
        self._notes = [n for n in self._notes if n.startswith("Profiling was off")]

    def next(self, iterator: Iterator):
        """Return ``next(iterator)``, timing the wait as the next step's input wait.

        ``StopIteration`` passes through and records nothing.
        """
        if not hasattr(iterator, "__next__"):
            made = "iter(dataset)" if hasattr(iterator, "__iter__") else "an iterator"
            got = f"{type(iterator).__name__}: make one before the loop, iterator = {made}"
            write = "tracer.next(iterator) in each step"
            refuse("iterator", must="an iterator", got=got, write=write)
        start = time.perf_counter()
        element = next(iterator)
        self._pending_wait += time.perf_counter() - start
        if self._pending_wait_start is None:
            self._pending_wait_start = start
        return element

    @contextlib.contextmanager
    def step(self):
        """Time (and maybe profile) the step run inside this ``with`` block.

        A step that raises is not recorded.

        Raises:
            RuntimeError: If called inside another step's ``with`` block.
        """
        if self._open is not None:
            raise RuntimeError(
                "tracer.step() is already timing a step: steps cannot be nested. End the "
                "`with tracer.step():` block before the next one starts, one per training step."
            )
        self._begin()
        try:
            yield
        except BaseException:
            self._end(keep=False)
            raise
        self._end(keep=True, sync=self._sync)

    def _profiled(self, index: int) -> bool:
        every = self.profile_every
        return (
            every is not None
            and index >= self.profile_from
            and (index - self.profile_from) % every == 0
        )

    def _begin(self) -> None:
        session = None
        if self._profiled(len(self._times)):
            started = time.perf_counter()
            session = _profiler.Session()
            try:
                session.start()
            except _profiler.ProfilerBusyError as error:
                session = None
                self.profile_every = None
                self._notes.append(
                    f"Profiling was off: another profiler session was running ({error}). "
                    "Only step and input wait were measured."
                )
            self._profiler_s += time.perf_counter() - started
        start = time.perf_counter()
        # The step marker lies inside the timed interval, so what the profiler finds
        # inside the marker is inside the step.
        marker = _profiler.marker(len(self._times)) if session is not None else None
        self._open = (start, session, marker)

    def _end(self, keep: bool, sync: bool = False) -> None:
        if self._open is None:
            return
        start, session, marker = self._open
        self._open = None
        if sync:
            import tensorflow as tf

            tf.test.experimental.sync_devices()
        if marker is not None:
            marker.Stop()
        elapsed = time.perf_counter() - start
        data = None
        if session is not None:
            data = session.stop()
            self._profiler_s += time.perf_counter() - start - elapsed
        if keep:
            index = len(self._times)
            self._times.append(elapsed)
            self._waits.append(self._pending_wait)
            wait_start = start if self._pending_wait_start is None else self._pending_wait_start
            if self._origin is None:
                self._origin = wait_start
            self._starts.append(start - self._origin)
            self._wait_starts.append(wait_start - self._origin)
            if data is not None:
                self._profiles.append((index, data))
                if self.on_step is not None:  # live: split this step now, not at result()
                    started = time.perf_counter()
                    phases, _ = self._split(index, data)
                    self._profiler_s += time.perf_counter() - started
                    if phases is not None:
                        self.on_step(phases)
        self._pending_wait = 0.0
        self._pending_wait_start = None

    def _split(self, index: int, data: bytes) -> tuple[StepPhases | None, set[str]]:
        found = _profiler.all_reduce_per_step(data).get(index)
        if found is None:
            return None, set()
        _, reduce_s, counted = found
        return self._phases(index, min(reduce_s, self._times[index])), counted

    def _phases(self, index: int, reduce_s: float) -> StepPhases:
        step_s = self._times[index]
        return StepPhases(
            step=index,
            input_wait_s=self._waits[index],
            step_s=step_s,
            all_reduce_s=reduce_s,
            compute_s=step_s - reduce_s,
        )

    def result(self) -> StepTrace:
        """Parse the profiled steps and split them into phases (every step's time is kept)."""
        steps, kinds, notes, spans, short = [], set(), list(self._notes), [], []
        for index, data in self._profiles:
            profile = _profiler.profiled_steps(data, self._devices).get(index)
            if profile is None:
                notes.append(f"Step {index} was profiled but its marker is not in the profile.")
                continue
            if profile.short_groups:
                short.append(str(index))
            step_s = self._times[index]
            reduce_s = min(profile.all_reduce_ps / 1e12, step_s)
            kinds |= {s.kind for s in profile.spans}
            steps.append(self._phases(index, reduce_s))
            spans += [
                AllReduceSpan(
                    step=index,
                    start_s=min(s.start_ps / 1e12, step_s),
                    end_s=min(s.end_ps / 1e12, step_s),
                    kind=s.kind,
                    replica=s.replica,
                    evidence=s.evidence,
                )
                for s in profile.spans
            ]
        if short:
            notes.append(
                f"In profiled step{'s' if len(short) > 1 else ''} {', '.join(short)} the "
                "profiler lost the event of a replica's all-reduce op that was still closing "
                "as the step ended: its all-reduce may be undercounted there, and a replica's "
                "all-reduce left unattributed."
            )
        if self._left_out:
            notes.append(self._left_out_note())
        if self._profiles and not kinds:
            notes.append(
                "No all-reduce op ran in the profiled steps (one replica, no gradients, or an "
                "all-reduce this tracer does not recognise): all-reduce is 0 there."
            )
        return StepTrace(
            steps=tuple(steps),
            step_times_s=tuple(self._times),
            input_waits_s=tuple(self._waits),
            replicas=self.strategy.num_replicas_in_sync,
            counted=tuple(sorted(kinds)),
            notes=tuple(notes),
            profiler_s=self._profiler_s,
            step_starts_s=tuple(self._starts),
            input_wait_starts_s=tuple(self._wait_starts),
            all_reduce_spans=tuple(spans),
        )

    def _left_out_note(self) -> str:
        epochs = self._left_out
        ran = len(self._times) + epochs
        return (
            f"model.fit ran {ran} steps; {len(self._times)} are timed. The last step of each "
            f"of the {epochs} epoch{'s' if epochs > 1 else ''} is left out: the callback sees "
            "a step end only when the next one begins, and after an epoch's last step comes "
            "Keras' end-of-epoch work (reading metrics, validation), which would count as "
            "the step. A custom loop timed with tracer.step() has every step timed."
        )

    def set_model(self, model) -> None:
        """Refuse to be a Keras callback: :meth:`callback` makes the one ``fit`` takes.

        Keras calls ``set_model`` on each of ``fit``'s callbacks first.

        Raises:
            TypeError: Always.
        """
        raise TypeError(
            "callbacks holds the StepTracer itself, which is not a Keras callback: pass "
            "model.fit(..., callbacks=[tracer.callback()])."
        )

    def callback(self):
        """A ``keras.callbacks.Callback`` that times every step of ``model.fit`` here.

        It only uses ``on_train_batch_begin``, ``on_epoch_end`` and ``on_train_end``, so
        ``fit`` runs exactly as without it: the same compiled train function, and Keras
        still dispatches batch-end callbacks asynchronously (a callback with its own
        ``on_train_batch_end`` would make Keras call them synchronously). A step is the
        time from one ``on_train_batch_begin`` to the next, so the last step of each
        epoch is not recorded: what follows it until ``on_epoch_end`` is mostly Keras'
        end-of-epoch work (ending the dataset iterator, reading metrics, validation),
        not the step; the result's notes say how many steps were left out and why.
        Keras fetches the batch inside its train function, so input wait
        is part of the step: ``input_wait_s`` is 0. Step indices count the recorded
        steps. It needs ``steps_per_execution=1`` (Keras' default).
        """
        return _keras_callback_class()(self)


def _keras_callback_class():
    import keras

    class StepTracerCallback(keras.callbacks.Callback):
        def __init__(self, tracer: StepTracer):
            super().__init__()
            self.tracer = tracer

        def on_train_begin(self, logs=None):
            self.tracer._end(keep=False)  # a fit that raised never reached on_train_end
            steps = getattr(self.model, "steps_per_execution", 1)
            if steps != 1:
                raise ValueError(
                    "StepTracer traces one step at a time: compile the model with "
                    f"steps_per_execution=1 (it has {steps})."
                )

        def on_train_batch_begin(self, batch, logs=None):
            self.tracer._end(keep=True)
            self.tracer._begin()

        def on_epoch_end(self, epoch, logs=None):
            if self.tracer._open is not None:  # the epoch's last step: its end was not seen
                self.tracer._left_out += 1
            self.tracer._end(keep=False)

        def on_train_end(self, logs=None):
            self.tracer._end(keep=False)  # stopped early: fit broke out of its loop

        def result(self) -> StepTrace:
            return self.tracer.result()

    return StepTracerCallback


def _replica_devices(strategy) -> tuple[str, ...]:
    from mirrorkit.devices import replica_devices

    return replica_devices(strategy)
