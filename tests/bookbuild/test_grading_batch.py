"""bookbuild.grading.batch, built_labs, command: a class graded side by side, row by row.

Most tests grade with `run_program`: each "submission" is a small Python program run as a real
child process with a real timeout, so timeouts and failures cost seconds. The last test grades
real notebooks of the small lab of tests/bookbuild/grading_lab.py through the sandboxed runner
(marked `grading`: the reference job); the sandbox's own tests are test_grading_sandbox.py and
test_grading_cheats.py.
"""

import csv
import importlib.util
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookbuild.grading import ExerciseScore, Grade
from bookbuild.grading.batch import collect_submissions, exercise_names, grade_all
from bookbuild.grading.built_labs import STAMP, lab_for, swap
from bookbuild.grading.command import fixed_choices, grade_command
from bookbuild.labs import Lab


def run_program(lab, path: Path, *, timeout: float, choices: dict | None) -> Grade:
    """Grade a submission that is a Python program printing its points for ex1 (0 or 1)."""
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [sys.executable, str(path)], capture_output=True, text=True, timeout=timeout, check=True
        )
    except subprocess.TimeoutExpired:
        scores = {"ex1": ExerciseScore(0.0, 1.0, "not graded")}
        return Grade(path.stem, path, "timeout", scores, f"ran over {timeout:g} s", timeout)
    points = float(done.stdout.split()[-1])  # a submission that prints no number: ValueError
    score = ExerciseScore(points, 1.0, "" if points else "wrong")
    return Grade(
        path.stem, path, "graded", {"ex1": score}, seconds=time.perf_counter() - start,
        choices=dict(choices or {}),
    )  # fmt: skip


def write(folder: Path, name: str, code: str) -> Path:
    path = folder / name
    path.write_text(code)
    return path


def test_a_timeout_and_an_error_are_rows_and_the_batch_goes_on_in_order(tmp_path):
    submissions = [
        write(tmp_path, "ada.py", "print(1)"),
        write(tmp_path, "bob.py", "import time\ntime.sleep(120)\nprint(1)"),
        write(tmp_path, "cy.py", "print('no score here')"),
        write(tmp_path, "dee.py", "print(0)"),
    ]
    lines: list[str] = []
    grades = grade_all(
        None,
        submissions,
        timeout=3,
        jobs=2,
        choices={"seed": 7},
        grade_one=run_program,
        say=lines.append,
    )
    assert [g.student for g in grades] == ["ada", "bob", "cy", "dee"]
    assert [g.status for g in grades] == ["graded", "timeout", "error", "graded"]
    assert [g.total for g in grades] == [(1, 1), (0, 1), (0, 1), (0, 1)]
    assert grades[1].detail == "ran over 3 s"
    assert "ValueError" in grades[2].detail and grades[2].scores["ex1"].points == 0
    assert grades[0].choices == {"seed": 7}
    assert sorted(line.split()[2] for line in lines) == ["ada:", "bob:", "cy:", "dee:"]
    assert any("bob: timeout 0/1 in " in line and "(ran over 3 s)" in line for line in lines)


def test_submissions_are_graded_side_by_side(tmp_path):
    # Each waits for the other to have started: one at a time, the first would time out.
    wait = (
        "import pathlib, sys, time\n"
        "pathlib.Path(r'{folder}', '{me}.started').touch()\n"
        "while not pathlib.Path(r'{folder}', '{other}.started').exists(): time.sleep(0.05)\n"
        "print(1)"
    )
    submissions = [
        write(tmp_path, f"{me}.py", wait.format(folder=tmp_path, me=me, other=other))
        for me, other in (("ada", "bob"), ("bob", "ada"))
    ]
    grades = grade_all(None, submissions, timeout=60, jobs=2, grade_one=run_program, say=print)
    assert [(g.student, g.status, g.total) for g in grades] == [
        ("ada", "graded", (1, 1)),
        ("bob", "graded", (1, 1)),
    ]


def test_a_folder_gives_its_notebooks_sorted_without_checkpoints(tmp_path):
    for name in ("zoe.ipynb", "ada.ipynb", "notes.txt", ".ipynb_checkpoints/ada-checkpoint.ipynb"):
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text("{}")
    assert [p.name for p in collect_submissions([tmp_path])] == ["ada.ipynb", "zoe.ipynb"]
    other = tmp_path / "other"
    other.mkdir()
    (other / "ada.ipynb").write_text("{}")
    with pytest.raises(SystemExit, match="two submissions are called ada"):
        collect_submissions([tmp_path, other / "ada.ipynb"])
    with pytest.raises(SystemExit, match="no notebooks"):
        collect_submissions([tmp_path / ".ipynb_checkpoints"])  # only a hidden checkpoint


def fake_chapter(tmp_path: Path) -> dict:
    path = tmp_path / "book" / "03_custom_training_loops.ipynb"
    path.parent.mkdir(exist_ok=True)
    path.write_text('{"cells": []}')
    return {"file": path.name, "path": path, "replicas": 4, "seed": 0}


class Builds:
    """A lab build that writes the files a lab has, and counts how often it ran."""

    def __init__(self):
        self.count = 0

    def __call__(self, chapter: dict, into: Path) -> Lab:
        self.count += 1
        out = Path(into) / Path(chapter["path"]).stem
        for part in ("student", "autograder"):
            (out / part).mkdir(parents=True)
            (out / part / chapter["file"]).write_text(f"build {self.count}")
        (out / "autograder" / "lab.zip").write_text("zip")
        program = out / "autograder" / "program.json"
        steps = '"steps": [{"kind": "answer", "exercise": 1}]'
        program.write_text(
            f'{{"replicas": 4, "grade_replicas": [2, 3], "exercises": [1], {steps}}}'
        )
        key = out / "autograder" / chapter["file"]
        return Lab(out / "student" / chapter["file"], key, out / "autograder" / "lab.zip", program)


def test_the_built_lab_is_reused_until_its_chapter_changes(tmp_path):
    chapter, build, labs = fake_chapter(tmp_path), Builds(), tmp_path / "labs"
    lab = lab_for(chapter, labs, build)
    assert lab.student == labs / "03_custom_training_loops" / "student" / chapter["file"]
    assert lab.student.read_text() == "build 1" and build.count == 1
    assert exercise_names(lab) == ["ex1"]
    (lab.autograder.parent.parent / "grades.csv").write_text("student\nada\n")
    assert lab_for(chapter, labs, build) == lab and build.count == 1
    chapter["path"].write_text('{"cells": [1]}')
    again = lab_for(chapter, labs, build)
    assert again == lab and build.count == 2 and again.student.read_text() == "build 2"
    folder = labs / "03_custom_training_loops"
    assert (folder / "grades.csv").read_text() == "student\nada\n"  # carried over
    assert (folder / STAMP).is_file()
    assert sorted(p.name for p in labs.iterdir()) == [".03_custom_training_loops.lock", folder.name]


def test_swap_puts_the_new_folder_in_place_in_one_step(tmp_path):
    (tmp_path / "lab" / "old").mkdir(parents=True)
    (tmp_path / "new" / "fresh").mkdir(parents=True)
    swap(tmp_path / "new", tmp_path / "lab")
    assert [p.name for p in (tmp_path / "lab").iterdir()] == ["fresh"]
    assert [p.name for p in (tmp_path / "new").iterdir()] == ["old"]


def test_grade_command_prints_writes_and_fails_when_a_row_was_not_graded(tmp_path, capsys):
    chapter_folder = tmp_path / "class"
    chapter_folder.mkdir()
    write(chapter_folder, "ada.ipynb", "print(1)")
    write(chapter_folder, "bob.ipynb", "import time\ntime.sleep(120)")
    out = tmp_path / "out"
    args = ["3", str(chapter_folder), "--timeout", "3", "--jobs", "2", "--out", str(out)]
    status = grade_command(args, grade_one=run_program, labs=tmp_path / "labs", build=Builds())
    printed = capsys.readouterr().out
    assert status == 1 and "1 of 2 submission(s) were not graded: bob (timeout)" in printed
    assert "bob      total     0/1     TIMEOUT: ran over 3 s" in printed
    with (out / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["student"], r["total"], r["status"]) for r in rows] == [
        ("ada", "1", "graded"),
        ("bob", "0", "timeout"),
    ]
    assert sorted(p.name for p in (out / "feedback").iterdir()) == ["ada.md", "bob.md"]
    drawn = (out / "feedback" / "ada.md").read_text()  # the second count drawn from the seed
    assert "- replica counts: 4, 2; seed: " in drawn or "- replica counts: 4, 3; seed: " in drawn
    # Grading ada alone again keeps bob's row.
    write(chapter_folder, "ada.ipynb", "print(0)")
    args = ["3", str(chapter_folder / "ada.ipynb"), "--out", str(out), "--seed", "5"]
    assert grade_command(args, grade_one=run_program, labs=tmp_path / "labs", build=Builds()) == 0
    with (out / "grades.csv").open(newline="") as handle:
        rows = list(csv.DictReader(handle))
    assert [(r["student"], r["total"]) for r in rows] == [("ada", "0"), ("bob", "0")]
    assert fixed_choices({"replicas": 4, "grade_replicas": [2, 3]}, 5, None)["seed"] == 5
    again = fixed_choices({"replicas": 4, "grade_replicas": [2, 3]}, 5, None)["replicas"]
    text = (out / "feedback" / "ada.md").read_text()
    assert f"- replica counts: {again[0]}, {again[1]}; seed: 5" in text


def test_grading_refuses_without_a_sandbox_unless_told_unisolated(tmp_path, capsys):
    folder = tmp_path / "class"
    folder.mkdir()
    write(folder, "ada.ipynb", "print(1)")
    args = ["3", str(folder), "--out", str(tmp_path / "out")]
    kit = {"grade_one": run_program, "labs": tmp_path / "labs", "build": Builds()}
    with pytest.raises(SystemExit, match="--unisolated"):
        grade_command(args, **kit, can_isolate=lambda: False)
    assert grade_command([*args, "--unisolated"], **kit, can_isolate=lambda: False) == 0


@pytest.mark.grading
def test_real_submissions_of_a_small_lab_are_graded_side_by_side_in_order(tmp_path):
    # The sandboxed runner grades each (tests/bookbuild/grading_lab.py: two exercises).
    spec = importlib.util.spec_from_file_location(
        "grading_lab", Path(__file__).with_name("grading_lab.py")
    )
    kit = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(kit)
    lab = kit.make_lab(tmp_path)
    submissions = [
        kit.submission(tmp_path, "key", kit.KEY[1], kit.KEY[2]),
        write(tmp_path, "torn.ipynb", '{"cells": ['),
        kit.submission(tmp_path, "half", kit.KEY[1]),
    ]
    lines: list[str] = []
    choices = {"replicas": [2], "seed": 0}
    grades = grade_all(lab, submissions, timeout=300, jobs=2, choices=choices, say=lines.append)
    assert [(g.student, g.status, g.total) for g in grades] == [
        ("key", "graded", (2, 2)),
        ("torn", "error", (0, 2)),
        ("half", "graded", (1, 2)),
    ]
    assert "not attempted" in grades[2].scores["ex2"].feedback
    assert all(g.choices == choices for g in grades) and len(lines) == 3
    assert "torn: error 0/2" in " ".join(lines) and "cannot be read" in grades[1].detail
