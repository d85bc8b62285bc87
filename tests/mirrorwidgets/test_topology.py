from __future__ import annotations

import re

import keras
import pytest

import mirrorkit as mk
from mirrorwidgets import TopologyDiagram, TopologyView, hierarchical_groups


def _svg_texts(svg: str) -> list[str]:
    return re.findall(r"<text[^>]*>([^<]*)</text>", svg)


def test_collective_is_a_ring_over_every_replica(strategy):
    diagram = TopologyDiagram(strategy)
    assert diagram.all_reduce == diagram.uses == "collective"
    assert len(diagram.devices) == 4
    assert diagram.edges == ((0, 1, "reduce"), (1, 2, "reduce"), (2, 3, "reduce"), (3, 0, "reduce"))
    texts = _svg_texts(diagram.svg())
    for i in range(4):
        assert f"replica {i}" in texts and f"CPU:{i}" in texts
    assert texts.count("reduce") == 4
    assert "worker /job:localhost/task:0" in texts
    assert "all&#45;reduce: collective" in texts or "all-reduce: collective" in texts


def test_one_device_is_a_star_to_the_first_device(devices):
    diagram = TopologyDiagram(mk.make_strategy("one_device"))
    assert diagram.uses == "one_device" and diagram.hub == 0
    reduce_edges = [(a, b) for a, b, step in diagram.edges if step == "reduce"]
    broadcast = [(a, b) for a, b, step in diagram.edges if step == "broadcast"]
    assert reduce_edges == [(1, 0), (2, 0), (3, 0)]
    assert broadcast == [(0, 1), (0, 2), (0, 3)]
    assert "(reduces here)" in diagram.svg()


def test_hierarchical_copy_reduces_in_two_groups(devices):
    diagram = TopologyDiagram(mk.make_strategy("hierarchical_copy"))
    assert diagram.uses == "hierarchical_copy"
    assert hierarchical_groups(4) == [[0, 1], [2, 3]]
    assert diagram.edges == (
        (1, 0, "reduce"),
        (3, 2, "reduce"),
        (2, 0, "exchange"),  # group 1's sum to group 0's leader
        (0, 2, "broadcast"),  # the total back to group 1's leader
        (0, 1, "broadcast"),
        (2, 3, "broadcast"),
    )
    texts = _svg_texts(diagram.svg())
    assert "group 0" in texts and "group 1" in texts


def test_drawing_another_algorithm_says_which_one_the_strategy_uses(strategy):
    diagram = TopologyDiagram(strategy, all_reduce="one_device")
    assert diagram.all_reduce == "one_device" and diagram.uses == "collective"
    assert "this strategy uses collective" in diagram.source()


def test_variables_are_shown_on_every_device(strategy):
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])
    diagram = TopologyDiagram(strategy, variables=model)
    assert len(diagram.variables) == 2
    assert diagram.source().count("variables: 2 mirrored copies") == 4


def test_repr_html_and_svg(strategy):
    diagram = TopologyDiagram(strategy)
    assert diagram._repr_svg_() == diagram.svg()
    html = diagram._repr_html_()
    assert html.startswith('<div class="mw-topology"')
    assert "<svg" in html and "<?xml" not in html
    assert "ring on CPUs" in html  # the algorithm's description
    # ...which, like TensorFlow, says ring (not NCCL) for logical GPUs sharing a GPU
    assert "when logical GPUs outnumber physical ones" in html


def test_widget_form_switches_algorithm_and_snapshots(strategy):
    view = TopologyDiagram(strategy).widget()
    assert isinstance(view, TopologyView)
    assert view.all_reduce == "collective" and "replica 3" in view.svg
    view._menu.value = "one_device"  # what a learner does with the menu
    assert view.all_reduce == "one_device"
    assert "(reduces here)" in view.snapshot_html()
    assert "(reduces here)" in view._picture.value
    bundle = view._repr_mimebundle_()
    assert "application/vnd.jupyter.widget-view+json" in bundle
    assert bundle["text/html"] == view.snapshot_html()


def test_bad_inputs(strategy):
    with pytest.raises(TypeError, match="needs a tf.distribute.Strategy.*make_strategy"):
        TopologyDiagram("collective")
    with pytest.raises(ValueError, match="unknown all_reduce 'ring'"):
        TopologyDiagram(strategy, all_reduce="ring")


def test_text_repr_describes_the_diagram(strategy):
    text = repr(TopologyDiagram(strategy))
    assert text.startswith("TopologyDiagram: 4 replica(s) on CPU:0, CPU:1, CPU:2, CPU:3;")
    assert "'collective'" in text and "0x" not in text
