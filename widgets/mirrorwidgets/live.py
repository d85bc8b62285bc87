"""Live training view: per-replica loss, gradient norms and step time while training runs.

Example:
    >>> import tensorflow as tf
    >>> from mirrorwidgets import LiveTrainingHook
    >>> hook = LiveTrainingHook(min_interval=0.0, budget=1.0)
    >>> hook.step(tf.constant(0.5)), hook.view.step
    (True, 1)
"""

from __future__ import annotations

import time

import ipywidgets
import keras
import numpy as np
import traitlets

from mirrorkit._validate import refuse
from mirrorwidgets import _plot, _values
from mirrorwidgets._a11y import ThemedHTML, announce, lines_twin
from mirrorwidgets._chart_twin import ChartTwin
from mirrorwidgets._lines_chart import Series, lines_svg
from mirrorwidgets._probe import distributed_probe, probe_examples, probe_function
from mirrorwidgets._render import FONT, GREY, container, esc
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._throttle import Throttle, check_settings
from mirrorwidgets._traits import at_least
from mirrorwidgets.replica_grid import ReplicaGrid

_HINT = (
    "Return each replica's value from the function given to strategy.run, and pass the "
    "PerReplica that strategy.run returns (or a tensor)."
)


class LiveTrainingView(SnapshotMixin, ipywidgets.VBox):
    """A grid of per-replica loss and gradient norm, a step-time line and a loss plot.

    Feed it with :class:`LiveTrainingCallback` (``model.fit``) or :class:`LiveTrainingHook`
    (custom loops); both throttle. :meth:`record` itself always redraws (the plot at most
    every ``plot_interval`` seconds).

    Args:
        title: Heading above the view.
        **kwargs: Any trait below, or ``ipywidgets.VBox`` layout options.

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import LiveTrainingView
        >>> strategy = mk.make_strategy()
        >>> view = LiveTrainingView()
        >>> view.record(1, strategy.run(lambda: tf.constant(0.5)), step_time=0.01)
        >>> view.step, set(view.history["loss"][-1].tolist())  # 0.5 on every replica
        (1, {0.5})
    """

    title = traitlets.Unicode("Live training", help="Heading above the view.")
    step = traitlets.Int(0, read_only=True, help="The last recorded training step.")
    num_replicas = traitlets.Int(0, read_only=True, help="Replicas in the last record.")
    plot_interval = traitlets.Float(2.0, help="Seconds between redraws of the loss chart.")
    max_points = traitlets.Int(
        500, help="Most steps kept for the plot (older ones are thinned out)."
    )

    def __init__(self, *, title: str = "Live training", **kwargs):
        super().__init__(**kwargs)
        self.title = title
        self.history: dict[str, list] = {"step": [], "loss": [], "grad_norm": [], "step_time": []}
        self._header = ThemedHTML(self._header_html(None, None))
        self._grid: ReplicaGrid | None = None
        self._grid_box = ipywidgets.VBox()
        self._plot = ThemedHTML()
        self._twin = ChartTwin()  # the chart's tables, shown or not across redraws
        self._plot_svg = ""
        self._plotted_at = -float("inf")
        self.children = [self._header, self._grid_box, self._plot, self._twin]

    _interval = at_least("plot_interval", minimum=0, unit="seconds")
    _points = at_least("max_points", minimum=2, why="a line needs two points")

    def record(self, step: int, loss, grad_norm=None, *, step_time=None, fit_loss=None) -> None:
        """Show one step: per-replica values (``PerReplica`` from ``strategy.run``) and timing.

        Args:
            step: The training step number.
            loss: Each replica's loss, e.g. the ``PerReplica`` that ``strategy.run`` returns.
            grad_norm: Optional: each replica's gradient norm (before the all-reduce).
            step_time: Optional: seconds the last step took.
            fit_loss: Optional: the loss Keras reports (averaged over replicas and steps).

        Raises:
            TypeError: If ``step`` is not a whole number, or ``loss`` or ``grad_norm`` is not
                a TensorFlow value.
            ValueError: If ``loss`` or ``grad_norm`` holds more than one number per replica.

        Example:
            >>> import tensorflow as tf
            >>> from mirrorwidgets import LiveTrainingView
            >>> view = LiveTrainingView()
            >>> view.record(3, tf.constant(2.0), tf.constant(0.1))
            >>> "0.1" in view.snapshot_html()
            True
        """
        step = _step_number(step, "view.record(step, loss) with the step as an int")
        values = {"loss": loss} if grad_norm is None else {"loss": loss, "grad_norm": grad_norm}
        for name, value in values.items():
            if not _values.is_tensorflow_value(value):
                raise TypeError(_values.not_a_value(value, name, "view.record", hint=_HINT))
        reading = _values.read(values, what="LiveTrainingView.record", argument="loss")
        for index, name in enumerate(values):
            for cell in reading.cells:
                shape = cell.entries[index].shape
                if int(np.prod(shape)) != 1:
                    got = f"shape {shape} on replica {cell.replica}"
                    must = "one number per replica"
                    write = (
                        "return tf.reduce_mean(per_example_loss) in the function strategy.run runs"
                    )
                    refuse(name, values[name], must=must, write=write, error=ValueError, got=got)
        if self._grid is None:
            self._grid = ReplicaGrid(values, title="per replica")
            self._grid_box.children = [self._grid]
        else:
            self._grid._show(reading)
        cells = reading.cells
        losses = np.array([float(c.entries[0].array) for c in cells])
        norms = (
            np.array([float(c.entries[1].array) for c in cells]) if grad_norm is not None else None
        )
        self.history["step"].append(step)
        self.history["loss"].append(losses)
        self.history["grad_norm"].append(norms)
        self.history["step_time"].append(step_time)
        self._keep_history_short()
        self.set_trait("step", step)
        self.set_trait("num_replicas", len(cells))
        self._header.value = self._header_html(step_time, fit_loss)
        announce(self, f"step {step}: mean loss {float(losses.mean()):.4g}")
        now = time.perf_counter()
        if self._plotted_at == -float("inf"):
            self._plotted_at = now  # first plot after plot_interval: keep the first update cheap
        elif now - self._plotted_at >= self.plot_interval:
            self.refresh_plot()

    def _keep_history_short(self) -> None:
        count = len(self.history["step"])
        if count > self.max_points:  # keeps about every other step, and the last
            kept = _plot.thin(range(count), self.max_points)
            for key in self.history:
                self.history[key] = [self.history[key][i] for i in kept]

    def _header_html(self, step_time, fit_loss) -> str:
        bits = [f"<strong>{esc(self.title)}</strong>", f"step {self.step}"]
        if step_time is not None:
            bits.append(f"step time {step_time * 1000:.1f} ms")
        if fit_loss is not None:
            bits.append(f"fit loss {float(fit_loss):.4g}")
        return f'<div class="mw-live" style="{FONT}">{" &middot; ".join(bits)}</div>'

    def refresh_plot(self) -> None:
        """Redraw the loss chart and its tables now (``record`` does it every ``plot_interval`` s).

        Example:
            >>> import tensorflow as tf
            >>> from mirrorwidgets import LiveTrainingView
            >>> view = LiveTrainingView()
            >>> view.record(1, tf.constant(0.5))
            >>> view.refresh_plot()
            >>> '<svg class="mw-live-loss"' in view.snapshot_html()
            True
        """
        self._plotted_at = time.perf_counter()
        if not self.history["step"]:
            return
        steps = self.history["step"]
        series = [
            Series(f"replica {i}", list(zip(steps, column.tolist(), strict=True)), look=i)
            for i, column in enumerate(np.vstack(self.history["loss"]).T)
        ]
        self._plot_svg = lines_svg(series, css_class="mw-live-loss", label="loss per replica")
        self._plot.value = self._plot_svg
        self._twin.update(lines_twin(series))  # the same points, as tables

    def snapshot_html(self) -> str:
        """The view's current state: header, per-replica grid and the last plot, as HTML.

        Returns:
            An HTML fragment (the loss chart as inline SVG, and its points as tables).

        Example:
            >>> from mirrorwidgets import LiveTrainingView
            >>> "no steps yet" in LiveTrainingView().snapshot_html()
            True
        """
        if self._grid is None:
            return container(
                f"{self._header.value}<div style='color:{GREY}'>no steps yet</div>", "mw-live"
            )
        chart = f"<div>{self._plot_svg}</div>{self._twin.markup}" if self._plot_svg else ""
        return container(self._header.value + self._grid.snapshot_html() + chart, "mw-live")


class LiveTrainingHook:
    """Feed a :class:`LiveTrainingView` from a custom training loop, throttled.

    Call :meth:`step` once per training step with what ``strategy.run`` returned. Values
    are read (copied off the devices) only when an update is due, so skipped steps cost
    next to nothing.

    Args:
        view: The view to update; a new one if ``None``.
        min_interval: Fewest seconds between updates (0.05 allows up to 20 a second: over a
            whole ``fit``, epoch starts included, more than 10 a second land).
        budget: Largest fraction of wall time the updates may take in total.

    Raises:
        TypeError: If ``view`` is not a :class:`LiveTrainingView`, or ``min_interval`` or
            ``budget`` is not a number.
        ValueError: If ``min_interval`` is negative or ``budget`` is not in (0, 1].

    Example:
        >>> import tensorflow as tf
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import LiveTrainingHook
        >>> strategy = mk.make_strategy()
        >>> hook = LiveTrainingHook(min_interval=0.0, budget=1.0)
        >>> hook.step(strategy.run(lambda: tf.constant(1.0)))
        True
        >>> hook.view.step
        1
    """

    def __init__(self, view: LiveTrainingView | None = None, *, min_interval=0.05, budget=0.05):
        self.view = _view_or_new(view, "LiveTrainingHook")
        check_settings(min_interval, budget)
        self.throttle = Throttle(min_interval, budget)
        self.steps = 0
        self._last_step_end: float | None = None

    def step(self, loss, grad_norm=None, *, step: int | None = None) -> bool:
        """Count a step and update the view if an update is due.

        Args:
            loss: Each replica's loss (the ``PerReplica`` that ``strategy.run`` returned).
            grad_norm: Optional: each replica's gradient norm.
            step: The step number; by default the hook counts calls.

        Returns:
            Whether the view was updated.

        Raises:
            TypeError, ValueError: As :meth:`LiveTrainingView.record` raises them (``loss``
                and ``grad_norm`` are read only when an update is due).

        Example:
            >>> import tensorflow as tf
            >>> from mirrorwidgets import LiveTrainingHook
            >>> hook = LiveTrainingHook(min_interval=3600)
            >>> hook.step(tf.constant(1.0)), hook.step(tf.constant(2.0))
            (True, False)
        """
        now = time.perf_counter()
        step_time = None if self._last_step_end is None else now - self._last_step_end
        self._last_step_end = now
        if step_time is not None:
            self.throttle.step_ended(step_time)
        if step is not None:
            step = _step_number(step, "hook.step(loss, step=int(...)), or leave step out")
        self.steps = self.steps + 1 if step is None else step
        updated = self.throttle.update_if_due(
            lambda: self.view.record(self.steps, loss, grad_norm, step_time=step_time)
        )
        if updated:
            self._last_step_end = time.perf_counter()  # the next step starts after the update
        return updated

    @property
    def updates(self) -> int:
        """How many times the view was updated."""
        return self.throttle.updates

    def finish(self) -> None:
        """Call after the loop: draws the final plot (its time counts in the budget).

        Example:
            >>> import tensorflow as tf
            >>> from mirrorwidgets import LiveTrainingHook
            >>> hook = LiveTrainingHook()
            >>> _ = hook.step(tf.constant(1.0))
            >>> hook.finish()
            >>> '<svg class="mw-live-loss"' in hook.view.snapshot_html()
            True
        """
        with self.throttle.charged():
            self.view.refresh_plot()


class LiveTrainingCallback(keras.callbacks.Callback):
    """Stream per-replica loss, gradient norms and step time into a view while ``fit`` runs.

    Keras's ``fit`` reports only the loss averaged over replicas (the per-replica values
    live inside its compiled step). So at each due update this callback runs the model on
    ``probe``, a fixed batch split across the replicas exactly as ``fit`` splits its
    batches, with the current weights, and shows each replica's loss and gradient norm
    (before the all-reduce). Step time and Keras's own loss come from ``fit`` itself.

    Args:
        probe: ``(x, y)``: one global batch, e.g. the first ``batch_size`` training examples.
        view: The view to update; a new one if ``None``.
        min_interval: Fewest seconds between updates (0.05 allows up to 20 a second: over a
            whole ``fit``, epoch starts included, more than 10 a second land).
        budget: Largest fraction of wall time the updates may take: the probe, the view,
            setting up (the first ``fit`` of a model traces the probe), the final chart and
            how much longer the step after an update took than a typical step.

    Raises:
        TypeError: If ``probe`` is not an ``(x, y)`` pair, ``view`` is not a
            :class:`LiveTrainingView`, or ``min_interval`` or ``budget`` is not a number.
        ValueError: If ``min_interval`` is negative or ``budget`` is not in (0, 1]; when
            ``fit`` begins, if ``probe`` has fewer examples than there are replicas.

    Example:
        >>> import numpy as np
        >>> import keras
        >>> import mirrorkit as mk
        >>> from mirrorwidgets import LiveTrainingCallback
        >>> strategy = mk.make_strategy()
        >>> with strategy.scope():
        ...     model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        ...     model.compile("sgd", "mse")
        >>> x, y = np.ones((8, 2), "float32"), np.ones((8, 1), "float32")
        >>> live = LiveTrainingCallback((x, y), min_interval=0.0, budget=1.0)
        >>> _ = model.fit(x, y, batch_size=8, epochs=2, verbose=0, callbacks=[live])
        >>> live.view.step, live.updates
        (2, 2)
    """

    def __init__(
        self, probe, view: LiveTrainingView | None = None, *, min_interval=0.05, budget=0.05
    ):
        super().__init__()
        self._probe_data = _probe_pair(probe)
        self.view = _view_or_new(view, "LiveTrainingCallback")
        check_settings(min_interval, budget)
        self.throttle = Throttle(min_interval, budget)
        self._batch = None
        self._fn = None
        self._began = 0.0
        self._global_step = 0

    @property
    def updates(self) -> int:
        """How many times the view was updated."""
        return self.throttle.updates

    def on_train_begin(self, logs=None):
        """Split the probe batch across the replicas and get the compiled probe ready.

        Its time counts in the budget (the first ``fit`` of a model traces the probe).
        """
        self.throttle.start_clock()
        with self.throttle.charged():
            self._prepare()

    def _prepare(self) -> None:
        strategy = self.model.distribute_strategy
        x, y = self._probe_data
        replicas = strategy.num_replicas_in_sync
        examples = probe_examples(x, y)  # x and y may be tuples, dicts or nested
        if examples < replicas:
            raise ValueError(
                f"probe holds {examples} example(s) but there are {replicas} replicas; "
                f"give it at least one example per replica, e.g. probe=(x[:{replicas}], "
                f"y[:{replicas}])."
            )
        self._batch = distributed_probe(strategy, x, y)
        self._fn = probe_function(self.model, strategy)
        self._fn.get_concrete_function(*self._batch)  # traced here, once per model and probe

    def on_train_batch_begin(self, batch, logs=None):
        """Start timing the step."""
        self._began = time.perf_counter()

    def on_train_batch_end(self, batch, logs=None):
        """Time the step; if an update is due, probe each replica and update the view."""
        step_time = time.perf_counter() - self._began
        self._global_step += 1
        self.throttle.step_ended(step_time)
        fit_loss = None if not logs or "loss" not in logs else logs["loss"]
        self.throttle.update_if_due(lambda: self._probe_and_record(step_time, fit_loss))

    def _probe_and_record(self, step_time: float, fit_loss) -> None:
        loss, grad_norm = self._fn(*self._batch)
        self.view.record(self._global_step, loss, grad_norm, step_time=step_time, fit_loss=fit_loss)

    def on_train_end(self, logs=None):
        """Draw the final plot, so the view (and its snapshot) ends on the last state."""
        with self.throttle.charged():
            self.view.refresh_plot()


def _step_number(step, write: str) -> int:
    """``step`` as an int; a TypeError saying what to ``write`` if it is not a whole number."""
    try:
        number = int(step)
        whole = not isinstance(step, bool | str | bytes) and float(step) == number
    except (TypeError, ValueError):
        whole = False
    if not whole:
        must = "a whole number (the training step)"
        refuse("step", step, must=must, write=write)
    return number


def _view_or_new(view, owner: str) -> LiveTrainingView:
    """``view``, or a new LiveTrainingView if it is None; a TypeError if it is not a view."""
    if view is None:
        return LiveTrainingView()
    if isinstance(view, LiveTrainingView):
        return view
    if view is LiveTrainingView:
        got, todo = "the class LiveTrainingView", f"make one, {owner}(view=LiveTrainingView())"
    elif hasattr(view, "num_replicas_in_sync"):
        got = type(view).__name__
        todo = (
            "the strategy is not needed here (the values you pass carry their replicas): "
            f"write {owner}(...) without it"
        )
    else:
        got = type(view).__name__
        todo = f"write {owner}(view=LiveTrainingView()), or leave view out for a new one"
    raise TypeError(f"view must be a LiveTrainingView or None, got {got}: {todo}.")


def _probe_pair(probe) -> tuple:
    """``probe`` as an ``(x, y)`` tuple, or a TypeError saying what it is instead."""
    if isinstance(probe, tuple | list) and len(probe) == 2:
        return tuple(probe)
    if isinstance(probe, keras.Model):
        got = "a Keras model (the callback finds the model itself when fit calls it)"
    elif isinstance(probe, tuple | list):
        got = f"a {type(probe).__name__} of {len(probe)}"
    elif "DatasetV2" in {cls.__name__ for cls in type(probe).__mro__}:
        got = "a tf.data.Dataset (take one batch of it: probe=next(iter(dataset)))"
    elif isinstance(probe, np.ndarray) or hasattr(probe, "shape"):
        got = f"one array of shape {tuple(probe.shape)} (the inputs alone)"
    else:
        got = type(probe).__name__
    must = "an (x, y) pair of arrays, one global batch"
    refuse("probe", probe, must=must, got=got, write="e.g. probe=(x_train[:64], y_train[:64])")
