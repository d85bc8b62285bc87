"""The static snapshot is what a built book shows: check MyST-NB would pick it."""

from __future__ import annotations

import pytest
import tensorflow as tf

from mirrorwidgets import ReplicaGrid
from mirrorwidgets._snapshot import displayed

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# The override that widgets/README.md asks the book's _config.yml to set.
OFFLINE_OVERRIDES = [("*", WIDGET_VIEW, None)]


def _chosen(bundle: dict, priority: list[str]) -> str:
    return next(mime for mime in priority if mime in bundle)


def test_myst_nb_renders_the_snapshot_with_the_offline_override(strategy):
    render = pytest.importorskip("myst_nb.core.render")
    bundle = ReplicaGrid(strategy.run(lambda: tf.constant(1.0)))._repr_mimebundle_()
    # By default MyST-NB prefers the widget view, which needs widget JavaScript from a CDN.
    assert _chosen(bundle, render.get_mime_priority("html", [])) == WIDGET_VIEW
    for builder in ("html", "dirhtml", "singlehtml"):
        priority = render.get_mime_priority(builder, OFFLINE_OVERRIDES)
        assert _chosen(bundle, priority) == "text/html"
    assert bundle["text/html"].count('class="mw-cell"') == 4


def test_myst_nb_default_widget_javascript_comes_from_cdns():
    config = pytest.importorskip("myst_nb.core.config")
    urls = list(config.ipywidgets_js_factory())
    assert urls and all(url.startswith("https://") for url in urls)  # why nb_ipywidgets_js: {}


def test_display_publishes_the_view_and_the_snapshot_on_this_ipywidgets(strategy):
    # ipywidgets 8 displays through _repr_mimebundle_, Colab's 7.7.1 through _ipython_display_
    # (which IPython prefers): either way a kernel publishes both, as a notebook stores them.
    import ipywidgets
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import display
    from IPython.utils.capture import capture_output

    InteractiveShell.instance()
    grid = ReplicaGrid(strategy.run(lambda: tf.constant(1.0)))
    with capture_output() as captured:
        display(grid)
    (published,) = [output.data for output in captured.outputs]
    assert published[WIDGET_VIEW]["model_id"] == grid.model_id, ipywidgets.__version__
    assert published["text/html"] == displayed(grid.snapshot_html())
    assert published["text/plain"].startswith("ReplicaGrid(")
