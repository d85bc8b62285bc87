"""AllReduceStepper: an all-reduce played on real values, one step at a time.

Example:
    >>> import numpy as np
    >>> from mirrorkit.measure.replay import AllReduceReplay
    >>> from mirrorkit.measure.schedules import schedule
    >>> from mirrorwidgets import AllReduceStepper
    >>> values = tuple(np.full(3, r, "float32") for r in range(3))
    >>> devices = ("CPU:0", "CPU:1", "CPU:2")
    >>> stepper = AllReduceStepper(AllReduceReplay(schedule("collective", 3), devices, values,
    ...                                            (sum(values),) * 3))
    >>> stepper.step, stepper.steps[-1] is not None
    (0, True)
"""

from __future__ import annotations

import ipywidgets
import traitlets

from mirrorkit._validate import refuse
from mirrorwidgets._a11y import ThemedHTML, announce
from mirrorwidgets._all_reduce_stepper_render import Drawing, new_id
from mirrorwidgets._snapshot import SnapshotMixin
from mirrorwidgets._traits import at_least


class AllReduceStepper(SnapshotMixin, ipywidgets.VBox):
    """Step through an all-reduce: who sends which chunk to whom, and what each replica holds.

    Takes what ``mirrorkit.replay_all_reduce(strategy, values)`` returns: the algorithm's
    schedule played on the replicas' real values. Each step shows a grid, one row per
    replica and one column per chunk (the ring cuts the tensor into one chunk per replica;
    the other algorithms send whole tensors), each cell holding the first
    ``values_shown`` numbers of that chunk on that replica and whose values they sum so
    far, coloured by how complete that sum is (green: every replica's). Below it, the
    step's transfers (cells that received are outlined blue, cells that sent dashed
    orange) and the bytes on the busiest link, this step and so far, against the
    ``2(n-1)/n`` times the tensor a ring carries. The last step adds the replay's verdict
    against the strategy's own all-reduce; a replica whose values never reach the result
    (hierarchical copy on an odd count) is marked in red.

    Previous and next buttons and a play button (the kernel shows one step every
    ``play_interval`` ms) move ``step``; each step is
    announced in a polite live region. The static snapshot (what a built book shows,
    without a kernel) holds every step and steps through them with plain HTML and CSS:
    a radio group, which the arrow keys move through; it has no play button.

    Args:
        replay: What ``mirrorkit.replay_all_reduce(strategy, values)`` returns (an
            ``AllReduceReplay``).
        title: Heading; by default the replay's own (algorithm, size, replicas, steps).
        **kwargs: Any trait below (``step``, ``values_shown``...), or layout options of
            ``ipywidgets.VBox``.

    Raises:
        TypeError: If ``replay`` is not an ``AllReduceReplay``.
        traitlets.TraitError: If ``step`` or ``values_shown`` is out of range.

    Example:
        The usual call, on 4 simulated replicas, is
        ``AllReduceStepper(mk.replay_all_reduce(strategy, strategy.run(step_fn)))``. Here
        the replay is built from its parts, so the example also runs on one device:

        >>> import numpy as np
        >>> from mirrorkit.measure.replay import AllReduceReplay
        >>> from mirrorkit.measure.schedules import schedule
        >>> from mirrorwidgets import AllReduceStepper
        >>> inputs = tuple(np.arange(8, dtype="float32") * (r + 1) for r in range(4))
        >>> devices = tuple(f"/device:CPU:{r}" for r in range(4))
        >>> replay = AllReduceReplay(schedule("collective", 4), devices, inputs, (sum(inputs),) * 4)
        >>> stepper = AllReduceStepper(replay)
        >>> stepper.step, len(stepper.steps), stepper.steps[0].phase
        (0, 6, 'reduce-scatter')
        >>> stepper.next()
        >>> stepper.step
        1
        >>> html = stepper.snapshot_html()
        >>> html.count('class="mws-frame"'), html.count(" checked"), "<script" in html
        (7, 1, False)
    """

    title = traitlets.Unicode(
        "", help="Heading above the grid; empty for the replay's own headline."
    )
    step = traitlets.Int(
        0, help="The step shown: 0 (each replica's own values) to len(steps) (the result)."
    )
    values_shown = traitlets.Int(
        3, help="How many numbers of each chunk a cell shows (its first ones)."
    )
    play_interval = traitlets.Int(
        1200, help="Milliseconds between steps while the play button runs."
    )
    steps = traitlets.Tuple(
        read_only=True,
        help="The replay's steps (phase, transfers, what), in order; `step` goes 0..len(steps).",
    )

    def __init__(self, replay, *, title: str = "", **kwargs):
        replay = _replayed(replay)
        step = kwargs.pop("step", 0)
        super().__init__(**kwargs)
        try:
            self.replay = replay
            self.title = title
            self._drawing = Drawing(replay)
            self.set_trait("steps", tuple(replay.schedule.steps))
            self._header = ThemedHTML()
            self._frame = ThemedHTML()
            self._frame.add_class("mws-view")
            self._previous = ipywidgets.Button(
                description="previous", icon="step-backward", tooltip="the step before"
            )
            self._next = ipywidgets.Button(
                description="next", icon="step-forward", tooltip="the next step"
            )
            self._previous.add_class("mws-previous")
            self._next.add_class("mws-next")
            # The kernel plays the steps: ipywidgets' Play buttons carry no name.
            self._play = ipywidgets.ToggleButton(
                description="play", icon="play", tooltip="show every step in turn"
            )
            self._play.add_class("mws-play")
            self._timer = None
            self._previous.on_click(lambda _: self.previous())
            self._next.on_click(lambda _: self.next())
            self._play.observe(self._playing, names="value")
            # No slider and no number box: their inputs have no name in ipywidgets 7, nor a
            # slider's handle in 8. The frame says "step k of n"; the live region reads it.
            controls = ipywidgets.HBox([self._play, self._previous, self._next])
            self.children = [self._header, controls, self._frame]
            self._ids = (new_id(), new_id())  # header, frame: scoped styles
            self.step = step
            self._redraw_header()
            self._redraw()
        except Exception:
            self.close()  # no half-built widget left behind
            raise
        self.observe(self._redraw, names=["step", "values_shown"])
        self.observe(self._redraw_header, names=["title"])

    @traitlets.validate("step")
    def _within_steps(self, proposal):
        last = len(self.steps)
        value = proposal["value"]
        if not 0 <= value <= last:
            must = (
                f"from 0 (each replica's own values) to {last} (the result) for this "
                f"{self.replay.schedule.algorithm} all-reduce on {self.replay.replicas} replicas"
            )
            write = f"e.g. stepper.step = {last}"
            refuse("step", value, must=must, write=write, error=traitlets.TraitError)
        return value

    _shown = at_least("values_shown", minimum=1, example="values_shown=3")
    _playable = at_least(
        "play_interval", minimum=50, why="milliseconds", example="play_interval=1200"
    )

    def next(self) -> None:
        """Show the next step (at the last step, stay there).

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> from mirrorwidgets import AllReduceStepper
            >>> inputs = (np.ones(4, "float32"), np.full(4, 2, "float32"))
            >>> replay = AllReduceReplay(schedule("one_device", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (inputs[0] + inputs[1],) * 2)
            >>> stepper = AllReduceStepper(replay)
            >>> stepper.next(); stepper.next(); stepper.next()
            >>> stepper.step
            2
        """
        self.step = min(self.step + 1, len(self.steps))

    def previous(self) -> None:
        """Show the step before (at step 0, stay there).

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> from mirrorwidgets import AllReduceStepper
            >>> inputs = (np.ones(4, "float32"), np.full(4, 2, "float32"))
            >>> replay = AllReduceReplay(schedule("one_device", 2), ("CPU:0", "CPU:1"), inputs,
            ...                          (inputs[0] + inputs[1],) * 2)
            >>> stepper = AllReduceStepper(replay, step=2)
            >>> stepper.previous(); stepper.step
            1
        """
        self.step = max(self.step - 1, 0)

    def snapshot_html(self) -> str:
        """Every step as self-contained HTML that steps without a kernel (CSS, no script).

        One frame per step, the current one shown; "previous", "next" and the step numbers
        are labels of hidden radio inputs, so a page without a kernel (a built book,
        nbviewer) still steps through the all-reduce. Ids are new on every call, so two
        snapshots on one page never interfere.

        Returns:
            An HTML fragment.

        Example:
            >>> import numpy as np
            >>> from mirrorkit.measure.replay import AllReduceReplay
            >>> from mirrorkit.measure.schedules import schedule
            >>> from mirrorwidgets import AllReduceStepper
            >>> inputs = tuple(np.full(6, r + 1, "float32") for r in range(3))
            >>> replay = AllReduceReplay(schedule("hierarchical_copy", 3),
            ...                          ("CPU:0", "CPU:1", "CPU:2"), inputs, (inputs[0] * 3,) * 3)
            >>> html = AllReduceStepper(replay).snapshot_html()
            >>> html.startswith('<div class="mw-stepper mw-snapshot"')
            True
            >>> 'data-left-out="yes"' in html  # replica 2 is in neither group
            True
        """
        return self._drawing.snapshot(self.step, self.values_shown, self.title)

    # ------------------------------------------------------------------ drawing

    def _redraw(self, change=None) -> None:
        self._frame.value = self._drawing.view(self.step, self.values_shown, self._ids[1])
        self._previous.disabled = self.step == 0
        self._next.disabled = self.step == len(self.steps)
        announce(self, self._drawing.summary(self.step))

    def _playing(self, change) -> None:
        """The play button: from the start (if at the end), one step per ``play_interval``."""
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
        if not change["new"]:
            return
        if _kernel_loop() is None:  # a script, no kernel: nothing can play
            self._play.value = False
            return
        if self.step == len(self.steps):
            self.step = 0
        self._schedule()

    def _schedule(self) -> None:
        loop = _kernel_loop()
        if loop is None:
            self._play.value = False
        else:
            self._timer = loop.call_later(self.play_interval / 1000, self._tick)

    def _tick(self) -> None:
        self._timer = None
        if not self._play.value:
            return
        self.next()
        if self.step == len(self.steps):
            self._play.value = False
        else:
            self._schedule()

    def _redraw_header(self, change=None) -> None:
        self._header.value = self._drawing.header_view(self._ids[0], self.title)


def _kernel_loop():
    """The running event loop (ipykernel's, or Pyodide's in the browser labs), else None."""
    import asyncio

    try:
        return asyncio.get_running_loop()
    except RuntimeError:
        return None


def _replayed(replay):
    """``replay`` if it is an AllReduceReplay, else a TypeError saying what it is instead."""
    import mirrorkit as mk

    if isinstance(replay, mk.AllReduceReplay):
        return replay
    call = "AllReduceStepper(mk.replay_all_reduce(strategy, strategy.run(step_fn)))"
    kind = type(replay).__name__
    if callable(replay) and getattr(replay, "__name__", "") == "replay_all_reduce":
        kind = "the function replay_all_reduce itself (call it and pass its result)"
    elif kind == "PerReplica" or (isinstance(replay, list | tuple | dict) and replay):
        kind += " (values, not yet replayed: pass them to mk.replay_all_reduce first)"
    elif kind == "Schedule":
        kind += " (the steps alone, without values: replay them on real values)"
    elif kind == "AllReduceBenchmark":
        kind += " (timings: draw them with AllReduceChart)"
    elif "Strategy" in kind:
        kind += " (the strategy itself: run a step with it and replay what it returned)"
    must = "what mirrorkit.replay_all_reduce returns (an AllReduceReplay)"
    refuse("replay", replay, must=must, got=kind, write=call)
