"""The steps chapter 5's browser lab draws: stored from the trace the chapter wrote.

book/browser/05_step_phases.json holds the profiled steps of chapter 5's traced training run
(the run drawn by its StepTimeline), read from the trace file the chapter writes,
book/step_trace.json. The lab draws them with the same widget, without TensorFlow. Here they
must be the trace's steps exactly, and the reading of a trace must give back the steps of a
StepTrace it was written from.

The trace file is not kept in git (.gitignore): executing chapter 5 in place (``dev.py book``)
writes it, with the chapter's new outputs. Then run this module's tests with
MIRRORBOOK_WRITE_STEP_PHASES=1 to write the lab's file again. Without the trace (a clean
clone, CI) the comparison here is skipped; tests/book/test_browser_labs.py still holds the
lab's bars equal to the chapter's stored ones, which a stale lab file fails.
"""

from __future__ import annotations

import json
import os

import pytest

from mirrorkit.measure.step_trace import AllReduceSpan, StepPhases, StepTrace
from tests.conftest import ROOT

TRACE = ROOT / "book" / "step_trace.json"
PHASES = ROOT / "book" / "browser" / "05_step_phases.json"
FIRST_REPLICA = 1  # its track (tid): the phases of a step are the same on every track


def profiled_steps(trace: dict) -> list[dict]:
    """The profiled steps of a Trace Event Format trace that StepTrace wrote, as dicts."""
    waits, steps = {}, {}
    for event in trace["traceEvents"]:
        if event["ph"] != "X" or event["tid"] != FIRST_REPLICA:
            continue
        args, step = event["args"], event["args"]["step"]
        if event["name"] == "input wait":
            waits[step] = args["seconds"]
        elif event["name"] == "step" and args["profiled"]:  # where its all-reduce fell: unknown
            steps[step] = (args["seconds"], args["all_reduce_s"], args["compute_s"])
        elif event["name"] == "compute":
            step_s, all_reduce_s = args["step_s"], args["step_all_reduce_s"]
            steps[step] = (step_s, all_reduce_s, step_s - all_reduce_s)
    return [
        {"step": step, "input_wait_s": waits.get(step, 0.0), "step_s": step_s,
         "all_reduce_s": all_reduce_s, "compute_s": compute_s}
        for step, (step_s, all_reduce_s, compute_s) in sorted(steps.items())
    ]  # fmt: skip


def test_reading_a_trace_gives_back_the_steps_it_was_written_from():
    one = StepPhases(step=1, input_wait_s=0.003, step_s=0.010, all_reduce_s=0.002, compute_s=0.008)
    two = StepPhases(step=3, input_wait_s=0.0, step_s=0.011, all_reduce_s=0.004, compute_s=0.007)
    span = AllReduceSpan(step=1, start_s=0.008, end_s=0.010, kind="CollectiveReduceV2", replica=0)
    trace = StepTrace(
        steps=(one, two),  # step 1's all-reduce has its span, step 3's has none
        step_times_s=(0.02, 0.010, 0.009, 0.011),
        input_waits_s=(0.0, 0.003, 0.001, 0.0),
        replicas=2,
        step_starts_s=(0.0, 0.023, 0.034, 0.043),
        all_reduce_spans=(span,),
    )
    read = profiled_steps(json.loads(json.dumps(trace.to_trace_events())))
    assert read == [vars(step) for step in trace.steps]


def test_the_lab_draws_the_steps_of_the_chapters_trace():
    if not TRACE.exists():
        pytest.skip(f"no {TRACE.name}: chapter 5 was not executed in place in this clone")
    trace = json.loads(TRACE.read_text(encoding="utf-8"))
    fresh = {"headline": trace["otherData"]["headline"], "steps": profiled_steps(trace)}
    if os.environ.get("MIRRORBOOK_WRITE_STEP_PHASES"):
        PHASES.write_text(json.dumps(fresh, indent=1) + "\n", encoding="utf-8")
    stored = json.loads(PHASES.read_text(encoding="utf-8"))
    assert stored == fresh, (
        f"{PHASES.name} is not {TRACE.name}'s: run this module with MIRRORBOOK_WRITE_STEP_PHASES=1"
    )
    assert len(stored["steps"]) >= 5, stored  # a timeline, not a bar or two
