"""A live chart's table twin whose shown or hidden state outlives the chart's redraws.

A ``<details>`` inside an HTML widget closes whenever the widget's value is replaced: a
screen-reader user who opened a live chart's tables lost them at its next redraw (every
``plot_interval`` seconds while training runs). Here the state lives in the kernel: a toggle
button, named and in the tab order, shows or hides the tables (drawn open), and a redraw
changes their numbers, never whether they are shown. A static snapshot keeps its plain
``<details>``: nothing redraws it.

Example:
    >>> twin = ChartTwin()
    >>> twin.update('<details class="mw-twin"><summary>s</summary><table></table></details>')
    >>> twin.tables.layout.display, twin.toggle.description
    ('none', 'Show the chart as tables')
    >>> twin.shown = True
    >>> '<details class="mw-twin" open>' in twin.tables.value, twin.tables.layout.display
    (True, None)
"""

from __future__ import annotations

import ipywidgets
import traitlets

from mirrorwidgets import _plot
from mirrorwidgets._a11y import ThemedHTML

OPENED = _plot.TWIN_FOLD.replace(">", " open>")
SHOW, HIDE = "Show the chart as tables", "Hide the chart's tables"


class ChartTwin(ipywidgets.VBox):
    """A toggle button and a chart's table twins, shown while the button is pressed."""

    shown = traitlets.Bool(
        False, help="Whether the chart's numbers are shown as tables (kept across redraws)."
    )

    def __init__(self, **kwargs):
        super().__init__(**kwargs)
        self.toggle = ipywidgets.ToggleButton(
            description=SHOW, tooltip="the chart's numbers, as tables", icon="table"
        )
        self.toggle.layout.width = "max-content"
        self.tables = ThemedHTML()
        self.markup = ""  # the twins as _plot.twin folds them (the snapshot's)
        traitlets.link((self.toggle, "value"), (self, "shown"))
        self.observe(self._draw, names="shown")
        self.children = [self.toggle, self.tables]
        self._draw()

    def update(self, markup: str) -> None:
        """The twins' new markup (``_plot.twin``'s folded tables); "" while there is no chart.

        Example:
            >>> twin = ChartTwin()
            >>> twin.update("")
            >>> twin.layout.display
            'none'
        """
        self.markup = markup
        self._draw()

    def _draw(self, change=None) -> None:
        self.layout.display = None if self.markup else "none"
        self.toggle.description = HIDE if self.shown else SHOW
        self.tables.layout.display = None if self.shown and self.markup else "none"
        if self.shown:  # hidden tables are not sent: a redraw then costs nothing
            value = self.markup.replace(_plot.TWIN_FOLD, OPENED)
            if self.tables.value != value:
                self.tables.value = value
