from __future__ import annotations

import asyncio
import re
import time

import numpy as np
import pytest
import tensorflow as tf
import traitlets

import mirrorkit as mk
from mirrorkit.measure.replay import AllReduceReplay
from mirrorkit.measure.schedules import schedule
from mirrorwidgets import AllReduceStepper
from mirrorwidgets._all_reduce_stepper_render import cell_number, holders_text

FRAME = re.compile(r'<div class="mws-frame" data-step="(\d+)"')
ROW = re.compile(r'<tr data-replica="(\d+)"([^>]*)>(.*?)</tr>', re.S)
CELL = re.compile(
    r'<td data-tone="(\w+)"([^>]*)><div>(.*?)</div><div class="mws-sum">(.*?)</div>', re.S
)


def _random_values(strategy, length: int):
    return strategy.run(lambda: tf.random.normal([length]))


@pytest.fixture(scope="module")
def ring(strategy):
    """A ring all-reduce of 10 values on 4 replicas: chunks of 3, 3, 2 and 2 values."""
    mk.make_reproducible(0)
    return mk.replay_all_reduce(strategy, _random_values(strategy, 10))


def _frames(html: str) -> dict[int, str]:
    """Each frame's HTML (from its start to the next frame's), by step."""
    starts = [(m.start(), int(m.group(1))) for m in FRAME.finditer(html)]
    ends = [s for s, _ in starts[1:]] + [len(html)]
    return {step: html[start:end] for (start, step), end in zip(starts, ends, strict=True)}


def _grid(frame: str) -> dict[int, dict]:
    """Per replica: its row's attributes and its cells (tone, numbers, sum text, classes)."""
    rows = {}
    for replica, attributes, inner in ROW.findall(frame):
        cells = [
            {"tone": tone, "marks": marks, "numbers": numbers.split("\n"), "sum": total}
            for tone, marks, numbers, total in CELL.findall(inner)
        ]
        rows[int(replica)] = {"attributes": attributes, "cells": cells, "html": inner}
    return rows


def _assert_frame_shows(frame: str, replay, step: int, shown: int = 3) -> None:
    """The frame's numbers are the replay's buffers after `step` steps, and its holders."""
    buffers = replay.buffers(step)
    holders = replay.holders(step)
    n = replay.replicas
    rows = _grid(frame)
    assert sorted(rows) == list(range(n))
    for r in range(n):
        cells = rows[r]["cells"]
        assert len(cells) == replay.schedule.chunks
        for c, (lo, hi) in enumerate(replay.chunk_bounds):
            expected = [cell_number(x) for x in buffers[r][lo : min(lo + shown, hi)].tolist()]
            assert cells[c]["numbers"] == expected, (step, r, c)
            held = holders[r][c]
            assert cells[c]["sum"] == holders_text(held, n), (step, r, c)
            assert f"{len(held)}/{n}" in cells[c]["sum"]
            assert (cells[c]["tone"] == "all") == (len(held) == n)


def _live_frame(stepper) -> str:
    return stepper.children[2].value


def _controls(stepper):
    play, previous, next_ = stepper.children[1].children
    return play, previous, next_


def test_every_step_shows_the_replays_buffers_and_holders(ring):
    stepper = AllReduceStepper(ring)
    last = len(ring.schedule.steps)
    assert last == 6 and stepper.steps == ring.schedule.steps
    for step in range(last + 1):
        stepper.step = step
        frames = _frames(_live_frame(stepper))
        assert list(frames) == [step]
        _assert_frame_shows(frames[step], ring, step)


def test_holders_text_reads_whose_values_a_chunk_sums():
    assert holders_text(frozenset({2}), 4) == "Σ 2 · 1/4"
    assert holders_text(frozenset({0, 3}), 4) == "Σ 0,3 · 2/4"
    assert holders_text(frozenset({0, 1, 2, 5}), 8) == "Σ 0-2,5 · 4/8"
    assert holders_text(frozenset(range(4)), 4) == "Σ all 4 · 4/4"


def test_first_step_of_the_ring_moves_one_chunk_per_replica(ring):
    stepper = AllReduceStepper(ring, step=1)
    frame = _live_frame(stepper)
    assert "reduce-scatter" in frame and ring.schedule.steps[0].what in frame
    moves = re.findall(r"<li>(.*?)</li>", frame)
    # Ring step 1: replica r sends chunk r to r + 1, which adds it; chunks hold 3, 3, 2, 2.
    assert moves == [
        "replica 0 → 1: chunk 0, 3 values, 12 B, added",
        "replica 1 → 2: chunk 1, 3 values, 12 B, added",
        "replica 2 → 3: chunk 2, 2 values, 8 B, added",
        "replica 3 → 0: chunk 3, 2 values, 8 B, added",
    ]
    rows = _grid(frame)
    for source in range(4):
        target = (source + 1) % 4
        assert "mws-from" in rows[source]["cells"][source]["marks"]
        assert "mws-to" in rows[target]["cells"][source]["marks"]
        assert f"← {source}+" in rows[target]["html"]
    # Bytes on the busiest link: this step and so far, against the ring's 2(n-1)/n x size.
    so_far = 0
    for step, moved in enumerate(ring.step_bytes(), start=1):
        so_far += moved
        stepper.step = step
        frame = _live_frame(stepper)
        assert f'data-step-bytes="{moved}" data-so-far="{so_far}"' in frame
    assert "2(n-1)/n &#215; size = 1.5 &#215; 40 B = 60 B" in frame


def test_values_shown_sets_how_many_numbers_a_cell_shows(strategy):
    replay = mk.replay_all_reduce(strategy, _random_values(strategy, 40))
    stepper = AllReduceStepper(replay, values_shown=5, step=2)
    _assert_frame_shows(_live_frame(stepper), replay, 2, shown=5)
    stepper.values_shown = 1
    _assert_frame_shows(_live_frame(stepper), replay, 2, shown=1)
    assert "the first 1 numbers" in _live_frame(stepper)


def test_buttons_move_the_step_redraw_and_announce_it(ring):
    stepper = AllReduceStepper(ring)
    play, previous, next_ = _controls(stepper)
    assert [b.description for b in (play, previous, next_)] == ["play", "previous", "next"]
    assert previous.disabled and not next_.disabled
    status = stepper.children[-1]
    assert 'role="status" aria-live="polite"' in status.value
    assert status.text == "step 0 of 6: inputs: nothing sent yet"
    next_.click()
    next_.click()
    assert stepper.step == 2
    assert status.text.startswith("step 2 of 6: reduce-scatter: ")
    _assert_frame_shows(_frames(_live_frame(stepper))[2], ring, 2)
    previous.click()
    assert stepper.step == 1
    assert list(_frames(_live_frame(stepper))) == [1]
    stepper.step = 6
    assert next_.disabled and not previous.disabled
    assert status.text.startswith("step 6 of 6 (the result): all-gather: ")
    next_.click()  # at the end: stays there
    assert stepper.step == 6


def test_the_play_button_steps_on_the_kernels_loop_to_the_end(ring):
    stepper = AllReduceStepper(ring, step=6, play_interval=50)
    play = _controls(stepper)[0]
    seen = []
    stepper.observe(lambda change: seen.append(change["new"]), names="step")

    async def press_play():
        play.value = True  # at the end: it starts again from step 0
        for _ in range(400):  # at most 20 s; six steps take 0.3 s
            if not play.value:
                break
            await asyncio.sleep(0.05)

    asyncio.run(press_play())
    assert seen == [0, 1, 2, 3, 4, 5, 6] and not play.value
    play.value = True  # no running loop (a script): nothing plays, the button springs back
    assert not play.value and stepper.step == 6


def test_a_step_out_of_range_is_refused_and_the_shown_step_kept(ring, refuses):
    stepper = AllReduceStepper(ring, step=2)
    shown = _live_frame(stepper)
    refuses(
        lambda: setattr(stepper, "step", 7),
        traitlets.TraitError,
        "step",
        r"from 0 \(each replica's own values\) to 6 \(the result\) for this collective "
        r"all-reduce on 4 replicas, got 7: write e\.g\. stepper\.step = 6",
    )
    with pytest.raises(traitlets.TraitError, match="got -1"):
        stepper.step = -1
    assert stepper.step == 2 and _live_frame(stepper) == shown


def test_the_last_frame_shows_the_replays_own_verdict(ring):
    verdicts = [line for line in ring.report().lines if line.label]
    assert verdicts, "the replay's report has a verdict line"
    stepper = AllReduceStepper(ring)
    frames = _frames(stepper.snapshot_html())
    for step, frame in frames.items():
        for line in verdicts:
            assert (line.html() in frame) == (step == 6), step
    assert 'data-last="yes"' in frames[6] and "(the result)" in frames[6]


def test_snapshot_holds_every_frame_and_checks_the_current_one(ring):
    stepper = AllReduceStepper(ring)
    html = stepper.snapshot_html()
    frames = _frames(html)
    assert sorted(frames) == list(range(7))
    for step, frame in frames.items():
        _assert_frame_shows(frame, ring, step)
    radios = re.findall(r'<input type="radio"[^>]*>', html)
    assert len(radios) == 7
    checked = [radio for radio in radios if " checked" in radio]
    assert len(checked) == 1
    assert checked[0].endswith('-0" aria-label="step 0 of 6: inputs: nothing sent yet" checked>')
    assert "<script" not in html.lower()
    assert not re.search(r"https?://", html)
    markup = re.sub(r">[^<]*<", "><", html)  # tags only: no event handler attribute
    assert "javascript:" not in html.lower() and not re.search(r"\son\w+=", markup)
    stepper.step = 4
    checked = re.findall(r'<input type="radio"[^>]*checked>', stepper.snapshot_html())
    assert len(checked) == 1 and 'aria-label="step 4 of 6: all-gather: ' in checked[0]


def test_snapshot_labels_step_to_the_neighbours(ring):
    html = AllReduceStepper(ring).snapshot_html()
    uid = re.match(r'<div class="mw-stepper mw-snapshot" id="([^"]+)"', html).group(1)
    frames = _frames(html)
    for step, frame in frames.items():
        previous = re.search(r'<(label|span) (?:for="([^"]+)" )?class="mws-prev', frame)
        following = re.search(r'<(label|span) (?:for="([^"]+)" )?class="mws-next', frame)
        if step == 0:
            assert previous.group(1) == "span"  # nothing before the inputs
        else:
            assert previous.group(2) == f"{uid}-{step - 1}"
        if step == 6:
            assert following.group(1) == "span"
        else:
            assert following.group(2) == f"{uid}-{step + 1}"
        assert f'<span class="mws-at">{step}</span>' in frame


def test_two_snapshots_share_no_id_and_scope_their_styles(ring):
    stepper = AllReduceStepper(ring)
    first, second = stepper.snapshot_html(), AllReduceStepper(ring).snapshot_html()
    ids = [set(re.findall(r'\bid="([^"]+)"', html)) for html in (first, second)]
    assert ids[0] and ids[1] and not ids[0] & ids[1]
    assert not set(re.findall(r'\bid="([^"]+)"', stepper.snapshot_html())) & ids[0]
    for html, own in zip((first, second), ids, strict=True):
        root = re.match(r'<div class="mw-stepper mw-snapshot" id="([^"]+)"', html).group(1)
        assert all(i == root or i.startswith(f"{root}-") for i in own)
        assert set(re.findall(r'\bfor="([^"]+)"', html)) <= own  # labels point inside
        assert set(re.findall(r'\bname="([^"]+)"', html)) == {root}  # one radio group each
        (css,) = re.findall(r"<style>(.*?)</style>", html, re.S)
        selectors = [rule.split("{")[0] for rule in css.split("}") if rule]
        for selector in selectors:
            for part in selector.split(","):
                assert part.startswith(f"#{root}"), part


def test_one_device_sends_whole_tensors(strategy):
    replay = mk.replay_all_reduce(strategy, _random_values(strategy, 6), algorithm="one_device")
    html = AllReduceStepper(replay).snapshot_html()
    frames = _frames(html)
    assert sorted(frames) == [0, 1, 2]
    for step, frame in frames.items():
        _assert_frame_shows(frame, replay, step)
        assert all(len(row["cells"]) == 1 for row in _grid(frame).values())
    assert "replica 3 → 0: its whole tensor, 6 values, 24 B, added" in frames[1]
    assert "replica 0 → 2: its whole tensor, 6 values, 24 B, copied over its own" in frames[2]
    assert "one_device's steps' busiest links (different links) add up to 144 B" in frames[0]
    assert "whole tensor" in frames[0] and "chunk 0" not in frames[0]


def test_hierarchical_copy_on_three_replicas_marks_the_left_out_one(devices):
    strategy = tf.distribute.MirroredStrategy(  # mk.make_strategy refuses this combination
        devices[:3], cross_device_ops=tf.distribute.HierarchicalCopyAllReduce()
    )
    replay = mk.replay_all_reduce(strategy, _random_values(strategy, 5))
    assert replay.schedule.left_out() == (2,)
    stepper = AllReduceStepper(replay)
    html = stepper.snapshot_html()
    assert "replica 2 is left out" in html  # in the heading
    frames = _frames(html)
    last = len(replay.schedule.steps)
    for step, frame in frames.items():
        _assert_frame_shows(frame, replay, step)
        rows = _grid(frame)
        assert [r for r in rows if 'data-left-out="yes"' in rows[r]["attributes"]] == [2]
        assert "left out: never sent" in rows[2]["html"]
    # The end: every replica holds 0 + 1 only, so no cell is complete, all are marked short.
    end = _grid(frames[last])
    assert all(cell["tone"] == "short" for row in end.values() for cell in row["cells"])
    assert all(cell["sum"] == "Σ 0,1 · 2/3" for row in end.values() for cell in row["cells"])
    assert "WRONG SUM" in frames[last] and "replica 2&#x27;s values were never sent" in frames[last]
    stepper.step = last
    live = _live_frame(stepper)
    assert 'data-left-out="yes"' in live and "WRONG SUM" in live
    assert "replica 2 is left out" in stepper.children[0].value


def test_mimebundle_has_the_widget_view_and_the_stepping_snapshot(ring):
    stepper = AllReduceStepper(ring)
    bundle = stepper._repr_mimebundle_()
    assert bundle["application/vnd.jupyter.widget-view+json"]["model_id"] == stepper.model_id
    assert sorted(_frames(bundle["text/html"])) == list(range(7))
    assert 'class="mw-stepper mw-snapshot"' in bundle["text/html"]
    assert "mw-snapshot" not in _live_frame(stepper)  # the live view is not the snapshot


def _big_replay(n: int = 8, mib: float = 1.0) -> AllReduceReplay:
    """A replay of `mib` MiB of float32 per replica on `n` replicas, built from its parts.

    The values are what simulated replicas would hold; the strategy's result is NumPy's sum,
    so this needs neither n devices nor TensorFlow.
    """
    rng = np.random.default_rng(0)
    length = int(mib * (1 << 20)) // 4
    inputs = tuple(rng.standard_normal(length, dtype=np.float32) for _ in range(n))
    total = np.sum(np.stack(inputs), axis=0, dtype=np.float32)
    devices = tuple(f"/device:CPU:{r}" for r in range(n))
    return AllReduceReplay(schedule("collective", n), devices, inputs, (total,) * n)


def test_eight_replicas_of_one_mib_stay_small_and_quick():
    replay = _big_replay()
    stepper = AllReduceStepper(replay)
    html = stepper.snapshot_html()
    assert len(html.encode()) < 300_000  # only the shown numbers go in
    assert sorted(_frames(html)) == list(range(15))
    _assert_frame_shows(_frames(html)[14], replay, 14)
    fresh = AllReduceStepper(replay)
    times = []
    for step in range(1, 15):
        start = time.perf_counter()
        fresh.step = step
        times.append(time.perf_counter() - start)
    # bench/stepper_render.py measures it properly; this only catches a gross regression.
    assert sorted(times)[len(times) // 2] < 0.1, times


def test_nan_and_infinity_are_written_as_such():
    assert [cell_number(x) for x in (float("nan"), float("inf"), -float("inf"), 2.0, 0.5)] == [
        "nan",
        "inf",
        "-inf",
        "2",
        "0.5",
    ]


REPLAY_CALL = (
    r"write AllReduceStepper\(mk\.replay_all_reduce\(strategy, strategy\.run\(step_fn\)\)\)"
)


def _replay(s):
    return mk.replay_all_reduce(s, s.run(lambda: tf.ones(4)))


WRONG_REPLAYS = [
    pytest.param(
        lambda s: AllReduceStepper(s.run(lambda: tf.ones(4))),
        TypeError,
        "replay",
        rf"got PerReplica \(values, not yet replayed: pass them to mk\.replay_all_reduce first\)"
        rf": {REPLAY_CALL}",
        id="the per-replica values themselves",
    ),
    pytest.param(
        lambda s: AllReduceStepper(s),
        TypeError,
        "replay",
        rf"got MirroredStrategy \(the strategy itself: .*\): {REPLAY_CALL}",
        id="the strategy",
    ),
    pytest.param(
        lambda s: AllReduceStepper(mk.replay_all_reduce),
        TypeError,
        "replay",
        rf"the function replay_all_reduce itself \(call it and pass its result\): {REPLAY_CALL}",
        id="the function, not called",
    ),
    pytest.param(
        lambda s: AllReduceStepper(schedule("collective", 4)),
        TypeError,
        "replay",
        rf"got Schedule \(the steps alone, without values: .*\): {REPLAY_CALL}",
        id="a schedule without values",
    ),
    pytest.param(
        lambda s: AllReduceStepper([np.ones(4)] * 4),
        TypeError,
        "replay",
        rf"got list \(values, not yet replayed: .*\): {REPLAY_CALL}",
        id="a list of arrays",
    ),
    pytest.param(
        lambda s: AllReduceStepper(None),
        TypeError,
        "replay",
        rf"an AllReduceReplay\), got NoneType: {REPLAY_CALL}",
        id="None",
    ),
    pytest.param(
        lambda s: AllReduceStepper(_replay(s), step=7),
        traitlets.TraitError,
        "step",
        r"from 0 .* to 6 \(the result\) .* got 7: write e\.g\. stepper\.step = 6",
        id="a step past the end",
    ),
    pytest.param(
        lambda s: AllReduceStepper(_replay(s), step=-1),
        traitlets.TraitError,
        "step",
        r"got -1: write e\.g\.",
        id="a negative step",
    ),
    pytest.param(
        lambda s: AllReduceStepper(_replay(s), step="3"),
        traitlets.TraitError,
        "'step'",
        r"expected an int",
        id="a step as text",
    ),
    pytest.param(
        lambda s: AllReduceStepper(_replay(s), values_shown=0),
        traitlets.TraitError,
        "values_shown",
        r">= 1, got 0: write e\.g\. values_shown=3",
        id="values_shown 0",
    ),
    pytest.param(
        lambda s: setattr(AllReduceStepper(_replay(s)), "play_interval", 0),
        traitlets.TraitError,
        "play_interval",
        r">= 50 \(milliseconds\), got 0: write e\.g\. play_interval=1200",
        id="play_interval 0",
    ),
]


@pytest.mark.wrong_inputs("mirrorwidgets.AllReduceStepper")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_REPLAYS)
def test_wrong_inputs_get_a_clear_message(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)
