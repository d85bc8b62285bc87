from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf
import traitlets
from tensorflow.python.distribute import values as tf_values

from mirrorwidgets import ReplicaGrid
from mirrorwidgets._snapshot import displayed


def _replica_id():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def _per_replica_and_sum(strategy):
    def step():
        value = tf.cast(_replica_id(), tf.float32) * 10.0 + tf.constant([1.0, 2.0])
        return value, tf.distribute.get_replica_context().all_reduce("sum", value)

    return strategy.run(step)


def test_per_replica_value_gets_one_cell_per_replica(strategy):
    grid = ReplicaGrid(strategy.run(lambda: tf.cast(_replica_id(), tf.float32) + 0.5))
    assert grid.num_replicas == 4
    assert grid.in_sync is None  # per-replica values are not meant to agree
    html = grid.snapshot_html()
    assert html.count('class="mw-cell"') == 4
    for i in range(4):
        assert f'data-replica="{i}"' in html
        assert f"CPU:{i}" in html
        assert f">{i + 0.5:g}<" in html  # the scalar itself
    assert "mw-sync" not in html


def test_widget_children_mirror_the_snapshot(strategy):
    grid = ReplicaGrid(strategy.run(lambda: tf.cast(_replica_id(), tf.int32)))
    header, row, _ = grid.children
    assert len(row.children) == 4
    assert "replica 3" in row.children[3].value
    assert "CPU:3" in row.children[3].value
    assert "PerReplica: 4 replicas" in header.value


def test_before_after_pair_shows_the_all_reduce(strategy):
    before, after = _per_replica_and_sum(strategy)
    grid = ReplicaGrid(before, after)
    assert grid.in_sync is True
    html = grid.snapshot_html()
    assert html.count('data-stage="before"') == 4
    assert html.count('data-stage="after"') == 4
    assert "[1, 2]" in html and "[31, 32]" in html  # replicas 0 and 3 before
    assert html.count("[64, 68]") == 4  # the sum, on every replica
    assert html.count('class="mw-sync" data-sync="yes"') == 4
    assert 'class="mw-verdict" data-sync="yes"' in html
    assert "before all-reduce" in html and "after all-reduce" in html


def test_after_that_did_not_reduce_is_marked_diverged(strategy):
    before, _ = _per_replica_and_sum(strategy)
    grid = ReplicaGrid(before, before)  # "after" still differs per replica
    assert grid.in_sync is False
    assert grid.snapshot_html().count('class="mw-sync" data-sync="no"') == 4


def test_update_replaces_the_value_in_place(strategy):
    grid = ReplicaGrid(strategy.run(lambda: tf.constant(1.0)))
    first = grid.children
    grid.update(strategy.run(lambda: tf.constant(7.0)))
    assert grid.children == first  # same layout: the same widgets, new HTML
    assert ">7<" in first[1].children[0].value
    html = grid.snapshot_html()
    assert ">7<" in html and ">1<" not in html
    before, after = _per_replica_and_sum(strategy)
    grid.update(before, after)
    assert grid.in_sync is True
    assert len(grid.children) == 6  # header, label, row, label, row, live region
    assert first[1].comm is None  # the replaced widgets were closed


def test_mirrored_variable_is_in_sync_and_divergence_is_flagged(strategy):
    with strategy.scope():
        variable = tf.Variable([1.0, 2.0, 3.0])
    grid = ReplicaGrid(variable)
    assert grid.in_sync is True
    assert grid.snapshot_html().count('class="mw-sync" data-sync="yes"') == 4
    variable.values[2].assign([9.0, 9.0, 9.0])  # break the mirror on one replica
    grid.update(variable)
    assert grid.in_sync is False
    assert "diverged" in grid.snapshot_html()


def test_model_weights_and_gradients(strategy, seeded):
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    grid = ReplicaGrid(model, max_entries=3)
    assert grid.num_replicas == 4
    assert grid.in_sync is True
    html = grid.snapshot_html()
    assert "4 weights" in html
    assert html.count("+ 1 more") == 4  # 4 weights, 3 shown per cell

    def grads(x):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(model(x) ** 2)
        return tape.gradient(loss, model.trainable_variables)

    dataset = tf.data.Dataset.from_tensor_slices(np.arange(24, dtype="float32").reshape(8, 3))
    batch = next(iter(strategy.experimental_distribute_dataset(dataset.batch(8))))
    per_replica = strategy.run(grads, args=(batch,))
    grid = ReplicaGrid(per_replica)
    assert grid.num_replicas == 4
    html = grid.snapshot_html()
    # Only the first kernel (3x4 = 12 values) is larger than `small`: one strip per replica.
    assert html.count('<svg class="mw-heat"') == 4
    assert html.count("+ 1 more") == 0  # 4 gradients <= max_entries 6
    assert html.count('data-name="[0]"') == 4


def test_large_tensors_are_drawn_as_heat_strip_or_histogram(strategy, seeded):
    value = strategy.run(lambda: tf.random.normal([50, 20]))
    grid = ReplicaGrid(value)
    html = grid.snapshot_html()
    assert html.count('<svg class="mw-heat"') == 4
    assert "mean" in html  # stats under the picture
    grid.large_view = "histogram"
    html = grid.snapshot_html()
    assert html.count('<svg class="mw-hist"') == 4 and "mw-heat" not in html
    assert "mw-hist" in grid.children[1].children[0].value  # the widget redrew too


def test_mimebundle_has_widget_view_and_static_snapshot(strategy):
    grid = ReplicaGrid(strategy.run(lambda: tf.constant(2.5)))
    bundle = grid._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == grid.model_id
    assert bundle["text/html"] == displayed(grid.snapshot_html())
    assert "2.5" in bundle["text/html"]
    assert "<script" not in bundle["text/html"]


TF_VALUES = r"Pass what tf\.distribute hands you: the PerReplica result of strategy\.run"


def _vector(strategy):
    return strategy.run(lambda: tf.constant([1.0, 2.0]))


WRONG_VALUES = [
    pytest.param(
        lambda s: ReplicaGrid([1.0, 2.0]),
        TypeError,
        "value",
        rf"got list holding float at \[0\]: wrap plain numbers with tf\.constant.*{TF_VALUES}",
        id="a list of numbers",
    ),
    pytest.param(
        lambda s: ReplicaGrid(np.ones(3)),
        TypeError,
        "value",
        r"got ndarray: wrap plain numbers with tf\.constant",
        id="a NumPy array",
    ),
    pytest.param(
        lambda s: ReplicaGrid(s),
        TypeError,
        "value",
        r"got MirroredStrategy: that is the strategy itself: .*ReplicaGrid\(strategy\.run\(fn\)\)",
        id="the strategy",
    ),
    pytest.param(
        lambda s: ReplicaGrid(lambda: tf.constant(1.0)),
        TypeError,
        "value",
        r"got function: a function must run first: .*ReplicaGrid\(strategy\.run\(fn\)\)",
        id="the step function, not run",
    ),
    pytest.param(
        lambda s: ReplicaGrid(tf.data.Dataset.range(8).batch(4)),
        TypeError,
        "value",
        r"a dataset holds no replica values yet: .*experimental_distribute_dataset",
        id="a dataset",
    ),
    pytest.param(
        lambda s: ReplicaGrid(s.run(lambda: None)),
        TypeError,
        "value",
        r"got NoneType: did the function given to strategy\.run return its value\?",
        id="a step function that returns nothing",
    ),
    pytest.param(
        lambda s: ReplicaGrid(tf_values.PerReplica(())),
        ValueError,
        "value",
        r"holds no replica values.*Make it with strategy\.run",
        id="an empty PerReplica",
    ),
    pytest.param(
        lambda s: ReplicaGrid([]),
        ValueError,
        "value",
        r"empty list; pass at least one distributed value",
        id="an empty list",
    ),
    pytest.param(
        lambda s: ReplicaGrid(keras.Sequential([keras.layers.Dense(1)])),
        ValueError,
        "value",
        r"has no weights yet: build it first \(give it a keras\.Input",
        id="a model not built",
    ),
    pytest.param(
        lambda s: ReplicaGrid(_vector(s), s.run(lambda: tf.zeros([3]))),
        ValueError,
        "after",
        r"shape \(3,\) on replica 0 but before has \(2,\); .*pass the reduced result",
        id="after of another shape",
    ),
    pytest.param(
        lambda s: ReplicaGrid(_vector(s), [4.0, 8.0]),
        TypeError,
        "after",
        r"got list holding float at \[0\]: wrap plain numbers",
        id="after as a list of numbers",
    ),
    pytest.param(
        lambda s: ReplicaGrid(_vector(s), large_view="bars"),
        traitlets.TraitError,
        "'large_view'",
        r"expected any of \['heat', 'histogram'\]",
        id="an unknown large_view",
    ),
    pytest.param(
        lambda s: setattr(ReplicaGrid(_vector(s)), "small", 0),
        traitlets.TraitError,
        "small",
        r">= 1, got 0: write e\.g\. small=8",
        id="small 0",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.ReplicaGrid")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_VALUES)
def test_wrong_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_replicas_of_different_shapes_cannot_be_a_pair(strategy):
    ragged = strategy.run(lambda: tf.zeros(tf.stack([_replica_id() + 1])))
    with pytest.raises(ValueError, match="different shapes.*same shape"):
        ReplicaGrid(ragged, ragged)


def test_bad_trait_values_change_nothing(strategy):
    grid = ReplicaGrid(strategy.run(lambda: tf.constant(1.0)))
    with pytest.raises(traitlets.TraitError):
        grid.small = 0
    with pytest.raises(traitlets.TraitError):
        grid.large_view = "pie"
    assert grid.small == 8 and grid.large_view == "heat"
