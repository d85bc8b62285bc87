"""bookbuild.lanes: stages side by side, in order, each into its own log."""

import sys
import threading
import time

import pytest

from bookbuild import lanes
from bookbuild.lanes import Stage, run_stages
from bookbuild.shell import run, say

# About 0.3 CPU seconds of work, however loaded the machine is.
BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"


def test_at_most_lanes_stages_run_at_once_and_each_waits_for_its_predecessors(tmp_path):
    lock, now, most, order = threading.Lock(), [0], [0], []

    def work(name):
        def action():
            with lock:
                now[0] += 1
                most[0] = max(most[0], now[0])
                order.append(name)
            time.sleep(0.05)
            with lock:
                now[0] -= 1

        return action

    stages = [Stage("j", "set-up", work("set-up"))]
    stages += [Stage("j", f"part {i}/4", work(f"part {i}"), after=("set-up",)) for i in range(4)]
    stages.append(Stage("j", "last", work("last"), after=("part 0/4", "part 3/4")))
    run_stages(stages, lanes=2, logs=tmp_path, echo=False)
    assert most[0] == 2
    assert order[0] == "set-up"
    assert order.index("last") > max(order.index("part 0"), order.index("part 3"))
    assert all(s.result == "passed" and s.seconds > 0 for s in stages)
    assert {s.kind for s in stages} == {"set-up", "part", "last"}


def test_the_longest_chain_starts_first(tmp_path):
    order = []
    stages = [
        Stage("a", "lint", lambda: order.append("a lint"), weight=30),
        Stage("b", "build", lambda: order.append("b build"), weight=10),
        Stage("b", "tests", lambda: order.append("b tests"), after=("build",), weight=600),
    ]
    run_stages(stages, lanes=1, logs=tmp_path, echo=False)
    assert order == ["b build", "b tests", "a lint"]


def _timed_work():
    """``(spans, work)``: ``work(key, seconds)`` makes a stage's action that sleeps and puts
    its (start, end) in ``spans[key]``."""
    lock, spans = threading.Lock(), {}

    def work(key, seconds):
        def action():
            start = time.monotonic()
            time.sleep(seconds)
            with lock:
                spans[key] = (start, time.monotonic())

        return action

    return spans, work


def test_installs_run_one_at_a_time_beside_the_lanes(tmp_path):
    spans, work = _timed_work()
    stages = [Stage(job, "set-up", work(f"{job} set-up", 0.2)) for job in ("a", "b", "c")]
    stages.append(Stage("d", "lint", work("d lint", 0.5)))
    run_stages(stages, lanes=1, logs=tmp_path, echo=False)
    installs = sorted(spans[f"{job} set-up"] for job in ("a", "b", "c"))
    assert all(
        end <= start for (_, end), (start, _) in zip(installs[:-1], installs[1:], strict=True)
    )  # in turn
    assert spans["d lint"][0] < installs[0][1]  # the lane's stage ran beside the first install


def test_two_installs_run_side_by_side_while_nothing_else_can(tmp_path):
    spans, work = _timed_work()
    stages = [Stage(job, "set-up", work(job, 0.3 if job == "a" else 0.1)) for job in "abc"]
    stages += [Stage(job, "tests", work(f"{job} tests", 0.5), after=("set-up",)) for job in "ab"]
    run_stages(stages, lanes=2, logs=tmp_path, echo=False)
    assert spans["b"][0] < spans["a"][1]  # at the start, nothing else could run
    # b's tests run from b's end on, so c's install waits for a's.
    assert spans["c"][0] >= spans["a"][1] and spans["b tests"][0] < spans["c"][0]


def test_a_failure_stops_what_waits_for_it_and_nothing_else(tmp_path):
    def fails():
        raise SystemExit("[dev] failed (1): pytest")

    def crashes():
        raise KeyError("bug")

    stages = [
        Stage("j", "set-up", fails),
        Stage("j", "tests", lambda: None, after=("set-up",)),
        Stage("j", "nbval", lambda: None, after=("tests",)),
        Stage("k", "set-up", crashes),
        Stage("l", "set-up", lambda: None),
    ]
    run_stages(stages, lanes=3, logs=tmp_path, echo=False)
    assert [(s.key, s.result, s.detail) for s in stages] == [
        ("j/set-up", "FAILED", "[dev] failed (1): pytest"),
        ("j/tests", "not run", "set-up did not pass"),
        ("j/nbval", "not run", "tests did not pass"),
        ("k/set-up", "FAILED", "KeyError: 'bug'"),
        ("l/set-up", "passed", ""),
    ]


def test_each_stage_writes_its_own_log_and_it_is_printed_whole(tmp_path, capsys):
    def talk(word):
        return lambda: (say(f"{word} 1"), run("sh", "-c", f"echo {word} 2; echo {word} 3 >&2"))

    stages = [Stage("j", "a", talk("alpha")), Stage("j", "b/c", talk("beta"))]
    run_stages(stages, lanes=2, logs=tmp_path, echo=True)
    out = capsys.readouterr().out
    for stage, word in zip(stages, ("alpha", "beta"), strict=True):
        assert stage.log.read_text() == f"[dev] {word} 1\n{word} 2\n{word} 3\n"
        assert f"[dev] j: {stage.name} passed in" in out
        assert out.index(f"{word} 1") < out.index(f"{word} 2") < out.index(f"{word} 3")
    assert stages[1].log.name == "j--b-of-c.log"


def test_wrong_plans_are_refused_before_anything_runs(tmp_path):
    ran = []
    with pytest.raises(ValueError, match=r"Received: lanes=0; write lanes=2"):
        run_stages([Stage("j", "a", lambda: ran.append(1))], lanes=0, logs=tmp_path)
    with pytest.raises(ValueError, match=r"j/a waits for \['set-up'\], which no stage is"):
        run_stages(
            [Stage("j", "a", lambda: ran.append(1), after=("set-up",))], lanes=1, logs=tmp_path
        )
    assert ran == []
    cycle = [Stage("j", "a", print, after=("b",)), Stage("j", "b", print, after=("a",))]
    run_stages(cycle, lanes=1, logs=tmp_path, echo=False)
    assert [s.detail for s in cycle] == ["waits in a cycle: b", "waits in a cycle: a"]


@pytest.mark.parametrize(("idle", "most"), [(2.0, 2), (0.5, 1), (None, 1)])
def test_a_spare_lane_opens_only_while_cores_stand_idle(tmp_path, monkeypatch, idle, most):
    monkeypatch.setattr(lanes, "SPARE_WINDOW", 0.0)
    monkeypatch.setattr(lanes, "POLL", 0.01)
    lock, now, seen = threading.Lock(), [0], [0]

    def work():
        with lock:
            now[0] += 1
            seen[0] = max(seen[0], now[0])
        time.sleep(0.2)
        with lock:
            now[0] -= 1

    stages = [Stage("j", f"part {i}/3", work) for i in range(3)]
    run_stages(stages, lanes=1, spare=1, idle=lambda: idle, logs=tmp_path, echo=False)
    assert seen[0] == most
    assert all(s.result == "passed" for s in stages)


def test_a_stage_can_wait_for_another_jobs_stage(tmp_path):
    order = []
    stages = [
        Stage("b", "chapters", lambda: order.append("b"), needs=("a/build",)),
        Stage("a", "build", lambda: (time.sleep(0.1), order.append("a"))),
        Stage("c", "chapters", print, needs=("a/fails",)),
        Stage("a", "fails", lambda: sys.exit("[dev] broken")),
    ]
    run_stages(stages, lanes=3, logs=tmp_path, echo=False)
    assert order == ["a", "b"]
    assert (stages[2].result, stages[2].detail) == ("not run", "a/fails did not pass")
    with pytest.raises(ValueError, match=r"b/x waits for \['z/y'\], which no stage is"):
        run_stages([Stage("b", "x", print, needs=("z/y",))], lanes=1, logs=tmp_path)


def test_each_stage_records_the_cpu_seconds_of_its_own_commands(tmp_path):
    def fails():
        run(sys.executable, "-c", f"{BUSY}\nraise SystemExit(1)")

    stages = [
        Stage("j", "busy", lambda: run(sys.executable, "-c", BUSY)),
        Stage("j", "asleep", lambda: run("sleep", "0.3")),
        Stage("j", "fails", fails),
        Stage("j", "in process", lambda: sum(range(3_000_000))),  # no command: not counted
    ]
    run_stages(stages, lanes=4, logs=tmp_path, echo=False)
    busy, asleep, failed, in_process = stages
    assert busy.cpu >= 0.2 and failed.cpu >= 0.2 and failed.result == "FAILED"
    assert asleep.cpu < 0.1 and asleep.seconds >= 0.3  # beside the busy ones, in its own lane
    assert in_process.cpu == 0.0
