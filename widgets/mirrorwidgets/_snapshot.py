"""Static snapshots: every widget also answers with HTML, for viewers without a kernel."""

from __future__ import annotations


class SnapshotMixin:
    """Adds ``text/html`` (the widget's current state) next to the live widget view.

    Front ends with a widget manager (JupyterLab, Notebook 7, VS Code, Colab) prefer the
    widget view; nbconvert, GitHub and a built book fall back to the HTML.
    """

    def snapshot_html(self) -> str:  # pragma: no cover - every widget overrides it
        raise NotImplementedError

    def _repr_mimebundle_(self, **kwargs):
        data = super()._repr_mimebundle_(**kwargs) or {}
        if isinstance(data, tuple):  # (data, metadata)
            data = data[0]
        data["text/html"] = self.snapshot_html()
        return data
