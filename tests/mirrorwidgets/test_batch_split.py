from __future__ import annotations

import html as html_lib
import re

import numpy as np
import pytest
import tensorflow as tf
import traitlets

import mirrorkit as mk
from mirrorwidgets import BatchSplitView
from mirrorwidgets._snapshot import displayed
from mirrorwidgets.batch_split import AMBER_BG, RED_BG


def _cell(snapshot: str, step: int, replica: int) -> str:
    match = re.search(
        rf'<td class="mw-cell" data-step="{step}" data-replica="{replica}" '
        r'data-status="([^"]+)" style="([^"]*)">(.*?)</td>',
        snapshot,
    )
    assert match, f"no cell for step {step}, replica {replica}"
    return match.group(0)


def _ids(cell: str) -> list[int]:
    return [int(i) for i in re.findall(r'<span class="mw-id"[^>]*>(\d+)</span>', cell)]


def _status(cell: str) -> str:
    return re.search(r'data-status="([^"]+)"', cell).group(1)


@pytest.fixture(scope="module")
def leftover(strategy):
    """50 examples in global batches of 16 over 4 replicas: the last step has 2 examples."""
    features = np.arange(100, dtype="float32").reshape(50, 2)
    examples = tf.data.Dataset.from_tensor_slices(features).enumerate()
    return mk.preview_input(strategy, examples.batch(16), steps=2)


def test_one_row_per_step_and_the_ids_in_their_replica_column(leftover):
    view = BatchSplitView(leftover)
    assert view.num_replicas == 4
    assert view.steps == (0, 1, 3)  # the first two steps, then the dataset's last
    assert (view.num_partial, view.num_empty) == (2, 2)
    snapshot = view.snapshot_html()
    assert snapshot.count('<tr class="mw-step"') == 3
    assert snapshot.count('class="mw-cell"') == 12
    for step in (0, 1):
        for replica in range(4):
            cell = _cell(snapshot, step, replica)
            first = 16 * step + 4 * replica
            assert _ids(cell) == list(range(first, first + 4))
            assert _status(cell) == "full"
    for replica in range(4):
        assert f'<th data-replica="{replica}"' in snapshot
        assert f"CPU:{replica}" in snapshot
    assert "step 2 not shown" in snapshot  # the gap before the last step


def test_partial_cells_are_amber_and_empty_cells_are_red(leftover):
    snapshot = BatchSplitView(leftover).snapshot_html()
    partial = [_cell(snapshot, 3, 0), _cell(snapshot, 3, 1)]
    empty = [_cell(snapshot, 3, 2), _cell(snapshot, 3, 3)]
    assert [_ids(c) for c in partial] == [[48], [49]]
    for cell in partial:
        assert _status(cell) == "partial"
        assert f"background:{AMBER_BG}" in cell
        assert "1 example (partial)" in cell
    for cell in empty:
        assert _status(cell) == "EMPTY"
        assert f"background:{RED_BG}" in cell and "border:1px solid #cf222e" in cell
        assert _ids(cell) == []
        assert "EMPTY: no examples" in cell
    assert f"background:{RED_BG}" not in _cell(snapshot, 0, 0)
    assert snapshot.count('data-status="EMPTY"') == 2
    assert "2 of 16 examples" in snapshot  # the short last step, in the row header


def test_warnings_are_listed_below_the_grid(leftover):
    view = BatchSplitView(leftover)
    snapshot = view.snapshot_html()
    assert len(leftover.warnings) == 2
    assert snapshot.count('class="mw-warning"') == 2
    for warning in leftover.warnings:
        assert html_lib.escape(warning) in snapshot
    assert snapshot.index("</table>") < snapshot.index('class="mw-warning"')
    header, grid, warnings, _ = view.children
    assert "EMPTY per-replica batches" in warnings.value
    assert 'data-status="EMPTY"' in grid.value
    view.show_warnings = False
    assert "mw-warning" not in view.snapshot_html()
    assert warnings.value == ""  # the widget redrew too


def test_update_shows_another_preview_in_place(strategy, leftover):
    view = BatchSplitView(leftover, title="before")
    children = view.children
    fixed = mk.preview_input(
        strategy, tf.data.Dataset.range(50).batch(16, drop_remainder=True), steps=5
    )
    view.update(fixed)
    assert view.children == children  # same widgets, new HTML
    assert view.preview is fixed
    assert view.steps == (0, 1, 2)
    assert (view.num_partial, view.num_empty) == (0, 0)
    snapshot = view.snapshot_html()
    assert "mw-warning" not in snapshot and "no warnings" in snapshot
    assert 'data-status="EMPTY"' not in snapshot
    assert _ids(_cell(snapshot, 2, 3)) == [44, 45, 46, 47]
    assert "<strong>before</strong>" in children[0].value


def test_from_dataset_uneven_split_and_dataset_function(strategy):
    view = BatchSplitView.from_dataset(strategy, tf.data.Dataset.range(40).batch(10), steps=1)
    assert view.preview.method == "experimental_distribute_dataset"
    snapshot = view.snapshot_html()
    sizes = [len(_ids(_cell(snapshot, 0, i))) for i in range(4)]
    assert sizes == [3, 3, 3, 1]  # 10 examples do not divide by 4 replicas
    assert _status(_cell(snapshot, 0, 3)) == "partial"
    assert "does not divide by 4 replicas" in snapshot

    def per_replica(context):
        ids = tf.data.Dataset.range(32).shard(
            context.num_input_pipelines, context.input_pipeline_id
        )
        return ids.batch(context.get_per_replica_batch_size(8))

    view = BatchSplitView.from_dataset(strategy, per_replica, steps=1, title="from a function")
    assert view.preview.method == "distribute_datasets_from_function"
    assert view.num_replicas == 4 and view.num_empty == 0
    snapshot = view.snapshot_html()
    assert "from a function" in snapshot
    assert sum(len(_ids(_cell(snapshot, 0, i))) for i in range(4)) == 8


def test_long_batches_are_abbreviated(strategy):
    view = BatchSplitView.from_dataset(strategy, tf.data.Dataset.range(160).batch(80), steps=1)
    cell = _cell(view.snapshot_html(), 0, 1)
    assert _ids(cell) == [*range(20, 31), 39]  # max_ids 12: eleven, "...", the last
    assert 'class="mw-more"' in cell and "20 examples" in cell
    view.max_ids = 40
    cell = _cell(view.snapshot_html(), 0, 1)
    assert _ids(cell) == list(range(20, 40)) and "mw-more" not in cell
    assert "mw-more" not in view.children[1].value  # the widget redrew too
    with pytest.raises(traitlets.TraitError, match="max_ids must be >= 2"):
        view.max_ids = 1
    assert view.max_ids == 40  # a refused value changes nothing


def test_mimebundle_has_widget_view_and_static_snapshot(leftover):
    view = BatchSplitView(leftover)
    bundle = view._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == view.model_id
    assert bundle["text/html"] == displayed(view.snapshot_html())
    assert "<script" not in bundle["text/html"]


def _preview(strategy):
    return mk.preview_input(strategy, tf.data.Dataset.range(8).batch(4))


WRONG_PREVIEWS = [
    pytest.param(
        lambda s: BatchSplitView(tf.data.Dataset.range(8).batch(4)),
        TypeError,
        "preview",
        r"got \w*Dataset: pass mk\.preview_input\(strategy, dataset\).*from_dataset",
        id="the dataset itself",
    ),
    pytest.param(
        lambda s: BatchSplitView(s),
        TypeError,
        "preview",
        r"got MirroredStrategy: pass mk\.preview_input\(strategy, dataset\)",
        id="the strategy",
    ),
    pytest.param(
        lambda s: BatchSplitView(mk.preview_input),
        TypeError,
        "preview",
        r"the function preview_input itself \(call it and pass its result\)",
        id="preview_input, not called",
    ),
    pytest.param(
        lambda s: BatchSplitView(_preview(s).ids_by_step()),
        TypeError,
        "preview",
        r"got dict: pass mk\.preview_input\(strategy, dataset\)",
        id="the ids by step",
    ),
    pytest.param(
        lambda s: BatchSplitView(list(_preview(s).batches)),
        TypeError,
        "preview",
        r"got list: pass mk\.preview_input\(strategy, dataset\)",
        id="a list of batches",
    ),
    pytest.param(
        lambda s: BatchSplitView(mk.preview_input(s, tf.data.Dataset.range(0).batch(16))),
        ValueError,
        "preview",
        r"holds no batches.*Check that it is not empty",
        id="an empty dataset",
    ),
    pytest.param(
        lambda s: BatchSplitView(_preview(s), max_ids=1),
        traitlets.TraitError,
        "max_ids",
        r">= 2 .*write e\.g\. max_ids=12",
        id="max_ids below 2",
    ),
    pytest.param(
        lambda s: BatchSplitView(_preview(s), max_ids="all"),
        traitlets.TraitError,
        "'max_ids'",
        r"expected an int",
        id="max_ids as a string",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.BatchSplitView")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_PREVIEWS)
def test_wrong_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_a_refused_update_keeps_what_is_shown(strategy):
    view = BatchSplitView(_preview(strategy))
    with pytest.raises(TypeError, match="got dict"):
        view.update({0: [(0, 1)]})
    assert view.steps == (0, 1)  # unchanged


def test_an_empty_preview_has_no_batches(strategy):
    assert mk.preview_input(strategy, tf.data.Dataset.range(0).batch(16)).batches == ()
