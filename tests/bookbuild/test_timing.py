"""bookbuild.timing: the stage table, the slowest tests and the time budget."""

import json

from bookbuild.timing import (
    ALLOWANCES,
    KINDS,
    RESERVED,
    WALL_ALLOWANCE,
    budget_report,
    slowest_tests,
    stage_table,
    write_times,
)


def test_parts_of_a_kind_add_up_and_shares_are_of_all_stage_time():
    rows = [
        {"job": "reference", "kind": "unit tests", "seconds": 100.0},
        {"job": "reference", "kind": "unit tests", "seconds": 200.0},
        {"job": "hosted", "kind": "set-up", "seconds": 100.0},
        {"job": "reference", "kind": "set-up", "seconds": 0.0},
    ]
    lines = stage_table(rows, wall=250.0).splitlines()
    assert lines[1].split() == ["reference", "set-up", "0", "0%"]
    assert lines[2].split() == ["reference", "unit", "tests", "300", "75%"]
    assert lines[3].split() == ["hosted", "set-up", "100", "25%"]
    assert lines[-1] == "(stages side by side: 400 s of stages in 250 s, 4.2 min)"


def test_the_slowest_tests_come_from_every_report_and_missing_ones_are_passed_over(tmp_path):
    for name, times in (("a", (1.0, 9.0)), ("b", (5.0,))):
        cases = "".join(
            f'<testcase classname="tests.{name}" name="t{i}" time="{t}"/>'
            for i, t in enumerate(times)
        )
        (tmp_path / f"{name}.xml").write_text(
            f"<testsuites><testsuite>{cases}</testsuite></testsuites>"
        )
    reports = [
        ("job/a", tmp_path / "a.xml"),
        ("job/b", tmp_path / "b.xml"),
        ("job/c", tmp_path / "c.xml"),
    ]
    found = slowest_tests(reports, count=2)
    assert [(c["stage"], c["test"], c["seconds"]) for c in found] == [
        ("job/a", "tests.a::t1", 9.0),
        ("job/b", "tests.b::t0", 5.0),
    ]


def test_the_budget_names_each_stage_over_its_allowance_and_one_without(tmp_path):
    times = {
        "wall": 1000.0,
        "stages": [
            {"job": "reference", "kind": "lint", "seconds": 10.0},
            {"job": "reference", "kind": "unit tests", "seconds": 2000.0},
            {"job": "python3.99", "kind": "doctests", "seconds": 1.0},
        ],
    }
    written = write_times(
        tmp_path / "t.json", rows=times["stages"], wall=1000.0, lanes=3, slowest=[]
    )
    text, within = budget_report(json.loads(written.read_text()))
    assert not within
    lines = {tuple(line.split()[:2]): line for line in text.splitlines()}
    assert not lines["reference", "lint"].endswith("OVER")
    assert lines["reference", "unit"].endswith("OVER")
    assert "none" in lines["python3.99", "doctests"] and lines["python3.99", "doctests"].endswith(
        "OVER"
    )
    assert not lines["wall", "time"].endswith("OVER")


def test_the_allowances_leave_the_reserved_room_inside_35_minutes():
    assert {kind for _, kind in ALLOWANCES} <= set(KINDS)
    assert WALL_ALLOWANCE + 60 * sum(RESERVED.values()) <= 35 * 60
