"""Static snapshots: every widget also answers with HTML, for viewers without a kernel.

Works with ipywidgets 8 (which displays a widget through ``_repr_mimebundle_``) and with
ipywidgets 7.7.1, the one Colab preinstalls (which displays it through ``_ipython_display_``
and has no ``_repr_mimebundle_``): both show the live view and the same snapshot.

Example:
    >>> import ipywidgets
    >>> class Note(SnapshotMixin, ipywidgets.HTML):
    ...     def snapshot_html(self):
    ...         return "<p>a note</p>"
    >>> bundle = Note()._repr_mimebundle_()
    >>> bundle["text/html"].endswith("<p>a note</p>"), VIEW in bundle
    (True, True)

The ``text/html`` is the snapshot in the page's theme (``style.themed``), after the
widgets' stylesheet (its dark colours and focus ring).
"""

from __future__ import annotations

import ipywidgets

from mirrorkit.report import style
from mirrorwidgets._a11y import STYLE

VIEW = "application/vnd.jupyter.widget-view+json"


def displayed(snapshot: str) -> str:
    """A snapshot as a notebook shows it: the widgets' stylesheet, then its themed HTML.

    Example:
        >>> displayed('<b style="color:#cf222e">x</b>').endswith('var(--mw-bad,#cf222e)">x</b>')
        True
    """
    return STYLE + style.themed(snapshot)


# ipywidgets 7 draws through _ipython_display_, which IPython prefers over _repr_mimebundle_.
DISPLAYS_ITSELF = int(ipywidgets.__version__.split(".")[0]) < 8


class SnapshotMixin:
    """Adds ``text/html`` (the widget's current state) next to the live widget view.

    Front ends with a widget manager (JupyterLab, Notebook, VS Code, Colab) prefer the
    widget view; nbconvert, GitHub and a built book fall back to the HTML.
    """

    def snapshot_html(self) -> str:  # pragma: no cover - every widget overrides it
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs):
        parent = getattr(super(), "_repr_mimebundle_", None)
        data = parent(**kwargs) if parent is not None else self._view_bundle()
        data = data or {}
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        data["text/html"] = displayed(self.snapshot_html())
        return data

    def _view_bundle(self) -> dict:
        """What ipywidgets 7 displays for a widget: its repr and its view's model id."""
        plain = repr(self)
        data = {"text/plain": plain[:110] + "…" if len(plain) > 110 else plain}
        if self._view_name is not None:
            data[VIEW] = {"version_major": 2, "version_minor": 0, "model_id": self._model_id}
        return data

    if DISPLAYS_ITSELF:

        def _ipython_display_(self, **kwargs):
            from IPython.display import display

            display(self._repr_mimebundle_(), raw=True)
            if self._view_name is not None:
                self._handle_displayed(**kwargs)
