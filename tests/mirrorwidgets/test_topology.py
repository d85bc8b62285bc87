from __future__ import annotations

import re

import keras
import pytest
import tensorflow as tf
import traitlets

import mirrorkit as mk
from mirrorwidgets import TopologyDiagram, TopologyView, hierarchical_groups
from mirrorwidgets._snapshot import displayed


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
    view = diagram.widget()
    view.all_reduce = "one_device"  # a new diagram, the same variables
    assert view.diagram.variables == diagram.variables
    assert TopologyDiagram(strategy, variables=model.weights).variables == diagram.variables


def test_repr_html_and_svg(strategy):
    diagram = TopologyDiagram(strategy)
    assert diagram._repr_svg_() == diagram.svg()
    html = diagram._repr_html_()
    # The widgets' stylesheet first (its dark values), then the diagram in the page's theme.
    assert html.startswith("<style") and '<div class="mw-topology"' in html
    assert "--mw-surface" in html and 'fill="white"' not in html
    assert re.findall(r"<text (?![^>]*fill=)", html) == []  # no text left black
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
    assert bundle["text/html"] == displayed(view.snapshot_html())


def _model(strategy):
    with strategy.scope():
        return keras.Sequential([keras.Input((2,)), keras.layers.Dense(3)])


KNOWN = r"choose one of 'collective', 'one_device', 'hierarchical_copy', 'nccl'"

WRONG_DIAGRAM = [
    pytest.param(
        lambda s: TopologyDiagram("collective"),
        TypeError,
        "strategy",
        r"got str: write strategy=mirrorkit\.make_strategy\('collective'\)",
        id="an algorithm's name as the strategy",
    ),
    pytest.param(
        lambda s: TopologyDiagram(mk.make_strategy),
        TypeError,
        "strategy",
        r"got the function make_strategy: call it: strategy=mirrorkit\.make_strategy\(\)",
        id="make_strategy, not called",
    ),
    pytest.param(
        lambda s: TopologyDiagram(_model(s)),
        TypeError,
        "strategy",
        r"got Sequential: make one with strategy = mirrorkit\.make_strategy\(\)",
        id="the model",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, all_reduce="ring"),
        ValueError,
        "all_reduce",
        rf"unknown all_reduce 'ring'; {KNOWN}",
        id="an unknown algorithm",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, all_reduce="NCCL"),
        ValueError,
        "all_reduce",
        r"names are lower case: 'nccl'",
        id="an algorithm in capitals",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, all_reduce=tf.distribute.HierarchicalCopyAllReduce()),
        TypeError,
        "all_reduce",
        r"got a HierarchicalCopyAllReduce object: write all_reduce='hierarchical_copy'",
        id="a CrossDeviceOps object",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, variables=_model(s).weights[0]),
        TypeError,
        "variables",
        r"got a single Variable .*wrap it in a list, variables=\[v\]",
        id="one variable",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, variables="dense/kernel"),
        TypeError,
        "variables",
        r"got str: write variables=model or variables=model\.weights",
        id="a variable's name",
    ),
    pytest.param(
        lambda s: TopologyDiagram(s, variables=["dense/kernel", "dense/bias"]),
        TypeError,
        "variables[0]",
        r"not a variable: pass the variables themselves \(e\.g\. variables=model\.weights\)",
        id="a list of names",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.TopologyDiagram")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_DIAGRAM)
def test_wrong_diagram_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


WRONG_VIEW = [
    pytest.param(
        lambda s: TopologyView("mirrored"),
        TypeError,
        "strategy",
        r"got str: make one with strategy = mirrorkit\.make_strategy\(\)",
        id="a word as the strategy",
    ),
    pytest.param(
        lambda s: TopologyView(s, all_reduce="ring"),
        ValueError,
        "all_reduce",
        KNOWN,
        id="an unknown algorithm",
    ),
    pytest.param(
        lambda s: setattr(TopologyView(s), "all_reduce", "ring"),
        traitlets.TraitError,
        "'all_reduce'",
        r"expected any of \['collective', 'one_device', 'hierarchical_copy', 'nccl'\]",
        id="an unknown algorithm set afterwards",
    ),
    pytest.param(
        lambda s: TopologyView(s, all_reduce=tf.distribute.ReductionToOneDevice()),
        TypeError,
        "all_reduce",
        r"write all_reduce='one_device'",
        id="a CrossDeviceOps object",
    ),
    pytest.param(
        lambda s: TopologyView(s, variables=3),
        TypeError,
        "variables",
        r"got int: write variables=model or variables=model\.weights",
        id="a count of variables",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.TopologyView")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_VIEW)
def test_wrong_view_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


WRONG_COUNTS = [
    pytest.param(
        lambda s: hierarchical_groups(0),
        ValueError,
        "n must be",
        r">= 1, got 0: write e\.g\. hierarchical_groups\(strategy\.num_replicas_in_sync\)",
        id="no replicas",
    ),
    pytest.param(
        lambda s: hierarchical_groups(-2),
        ValueError,
        "n must be",
        r">= 1, got -2",
        id="a negative count",
    ),
    pytest.param(
        lambda s: hierarchical_groups("4"),
        TypeError,
        "n must be",
        r"got str '4': write n=4 without quotes",
        id="a string",
    ),
    pytest.param(
        lambda s: hierarchical_groups(4.0),
        TypeError,
        "n must be",
        r"got float 4\.0: write n=4",
        id="a float",
    ),
    pytest.param(
        lambda s: hierarchical_groups(s),
        TypeError,
        "n must be",
        r"got MirroredStrategy: pass its replica count, n=strategy\.num_replicas_in_sync",
        id="the strategy",
    ),
    pytest.param(
        lambda s: hierarchical_groups(list(mk.replica_devices(s))),
        TypeError,
        "n must be",
        r"got list: pass how many there are, n=len\(\.\.\.\) \(here 4\)",
        id="the devices",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.hierarchical_groups")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_COUNTS)
def test_wrong_replica_counts_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_text_repr_describes_the_diagram(strategy):
    text = repr(TopologyDiagram(strategy))
    assert text.startswith("TopologyDiagram: 4 replica(s) on CPU:0, CPU:1, CPU:2, CPU:3;")
    assert "'collective'" in text and "0x" not in text
