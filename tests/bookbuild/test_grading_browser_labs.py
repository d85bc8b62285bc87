"""Grading a browser lab's answers: results cross as data, and the verdict is the key's check.

The first tests need no sandbox: every exercise's right answer and usual mistakes, turned into
the data the student's process writes and read back, get the same verdict as the function
itself. The `grading` ones run submissions through the real sandbox (the reference job).
"""

import copy
import json
import os
from pathlib import Path

import nbformat
import pytest

from bookbuild.grading import _lab_student
from bookbuild.grading.browser_labs import (
    LABS_FOLDER,
    RecordedAnswer,
    answer_cells,
    find_lab,
    grade_lab,
    lab_keys,
)
from mirrorkit.checks.lab_answers import EXERCISES, check_answer, draw_inputs

LABS = sorted(LABS_FOLDER.glob("*.ipynb"))


def _recorded(function, inputs) -> RecordedAnswer:
    """What the verdict gets for ``function``: its results as the student's process writes
    them, through JSON and back."""
    outputs = [json.loads(json.dumps(_lab_student.outcome(function, args))) for args in inputs]
    return RecordedAnswer(inputs, outputs)


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_results_read_back_get_the_verdict_the_function_gets(key):
    exercise = EXERCISES[key]
    inputs = draw_inputs(key, seed=11, count=12)
    assert check_answer(key, _recorded(exercise.right, inputs), inputs).passed

    def boom(*args):
        raise ZeroDivisionError("division by zero")

    for wrong, why in [*exercise.mistakes, (boom, "an answer that raises")]:
        direct = check_answer(key, wrong, inputs)
        read_back = check_answer(key, _recorded(wrong, inputs), inputs)
        assert (read_back.passed, read_back.message) == (direct.passed, direct.message), why


def test_a_recorded_answer_gives_back_values_errors_and_blanks_for_its_own_inputs_only():
    inputs = [(3,), (4,), (5,), (6,)]
    outputs = [
        {"value": [1, 2.5]},
        {"raised": "ZeroDivisionError: division by zero"},
        {"ellipsis": True},
        {"unreadable": "set"},
    ]
    answer = RecordedAnswer(inputs, outputs)
    assert answer(3) == [1, 2.5]
    with pytest.raises(Exception, match="division by zero") as raised:
        answer(4)
    assert type(raised.value).__name__ == "ZeroDivisionError"
    assert answer(5) is Ellipsis
    with pytest.raises(TypeError, match="set"):
        answer(6)
    with pytest.raises(LookupError):
        RecordedAnswer(inputs, outputs)(4)  # out of order: not what was recorded first
    forged = RecordedAnswer([(1,)], [{"raised": "os.system('x'): boom"}])
    with pytest.raises(Exception, match="boom") as raised:
        forged(1)
    assert type(raised.value).__name__ == "Exception"  # a name that is no name is not used


def test_the_student_process_writes_only_plain_data():
    assert _lab_student.outcome(lambda: (1, [2.0, True], "a", None), ()) == {
        "value": [1, [2.0, True], "a", None]
    }
    assert _lab_student.outcome(lambda: float("nan"), ()) == {"value": "nan"}
    assert _lab_student.outcome(lambda: 10**30, ()) == {"value": 1e30}
    assert _lab_student.outcome(lambda: {1, 2}, ()) == {"unreadable": "set"}
    deep: list = []
    for _ in range(20):
        deep = [deep]
    assert _lab_student.outcome(lambda: deep, ()) == {"unreadable": "list"}
    assert "unreadable" in _lab_student.outcome(lambda: "x" * 100_000, ())
    assert _lab_student.outcome(lambda: ..., ()) == {"ellipsis": True}
    assert _lab_student.outcome(lambda: 10**400, ()) == {"unreadable": "int"}
    assert _lab_student.outcome(lambda: list(range(10**6)), ()) == {"unreadable": "list"}


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.stem)
def test_every_lab_can_be_graded_exercise_by_exercise(lab):
    keys = lab_keys(lab)
    assert keys == sorted(k for k in EXERCISES if k.startswith(lab.stem + "/"))
    assert find_lab(f"browser/{lab.stem[:2]}") == lab


def test_answer_cells_are_found_by_exercise_or_by_order_when_a_copy_lost_their_names(tmp_path):
    lab = find_lab("browser/05")
    keys = lab_keys(lab)
    nb = nbformat.read(lab, as_version=4)
    for cell in nb.cells:
        cell.metadata.pop("lab_exercise", None)
    nbformat.write(nb, tmp_path / "lost.ipynb")
    assert list(answer_cells(tmp_path / "lost.ipynb", keys)) == keys
    (tmp_path / "broken.ipynb").write_text("{not json")
    assert answer_cells(tmp_path / "broken.ipynb", keys).startswith("the notebook could not")


def _submission(folder: Path, name: str, *answers: str) -> Path:
    nb = copy.deepcopy(nbformat.read(find_lab("browser/05"), as_version=4))
    cells = [c for c in nb.cells if "lab-answer" in c.metadata.get("tags", [])]
    for cell, answer in zip(cells, answers, strict=True):
        cell.source = answer
    path = folder / f"{name}.ipynb"
    nbformat.write(nb, path)
    return path


FAST = {"exercise_limit": 10}  # the endless answer's limit: the right ones take < 0.1 s
RIGHT_1 = "def ring_steps(n):\n    return 2 * (n - 1)"
RIGHT_2 = "def ring_bytes_sent(size, n):\n    return 2 * (n - 1) * size // n"
PROBE = """
import os
def ring_steps(n):
    seen = []
    for path in {paths!r}:
        try:
            seen.append(path + ": " + ",".join(sorted(os.listdir(path))))
        except OSError:
            pass
    return seen or 2 * (n - 1)
"""


@pytest.mark.grading
def test_a_class_of_lab_answers_through_the_sandbox(tmp_path):
    root = Path(__file__).resolve().parents[2]
    hidden = [str(root / "mirrorkit"), str(root / "book"), str(root / "bookbuild"), str(tmp_path)]
    reads = PROBE.format(paths=hidden)
    students = {
        "right": (RIGHT_1, RIGHT_2),
        "blank": ("def ring_steps(n):\n    return ...", "def ring_bytes_sent(size, n):\n    ..."),
        "half": ("def ring_steps(n):\n    return n - 1", RIGHT_2),
        "endless": ("def ring_steps(n):\n    while True:\n        pass", RIGHT_2),
        "exits": ("import os\ndef ring_steps(n):\n    os._exit(3)", RIGHT_2),
        "imports_the_key": (
            "from mirrorkit.checks.lab_answers import EXERCISES\n"
            "def ring_steps(n):\n    return EXERCISES['05_ring_all_reduce/ex1'].right(n)",
            RIGHT_2,
        ),
        "reads_files": (reads, RIGHT_2),
    }
    lab = find_lab("browser/05")
    grades = {
        name: grade_lab(lab, _submission(tmp_path, name, *answers), timeout=120, seed=5, **FAST)
        for name, answers in students.items()
    }
    scores = {name: [s.points for s in g.scores.values()] for name, g in grades.items()}
    assert all(g.status == "graded" for g in grades.values())
    assert scores == {
        "right": [1, 1],
        "blank": [0, 0],
        "half": [0, 1],
        "endless": [0, 1],
        "exits": [0, 1],
        "imports_the_key": [0, 1],
        "reads_files": [1, 1],  # it listed nothing, so it returned the right count
    }, {name: [s.feedback for s in g.scores.values()] for name, g in grades.items()}
    feedback = {name: g.scores["ex1"].feedback for name, g in grades.items()}
    assert "only the reduce-scatter half" in feedback["half"]
    assert "took longer than" in feedback["endless"]
    assert "status 3" in feedback["exits"]
    assert "No module named 'mirrorkit'" in feedback["imports_the_key"]
    assert grades["right"].choices == {"seed": 5, "inputs per exercise": 12}
    if os.geteuid() == 0:
        assert grades["right"].isolation.startswith("user nobody")


@pytest.mark.grading
def test_dev_py_grade_grades_a_browser_lab_and_writes_its_table(tmp_path, capsys):
    from bookbuild.grading.command import grade_command

    folder = tmp_path / "handed_in"
    folder.mkdir()
    _submission(folder, "ada", RIGHT_1, RIGHT_2)
    _submission(folder, "alan", "def ring_steps(n):\n    return n - 1", RIGHT_2)
    out = tmp_path / "out"
    status = grade_command(["browser/05", str(folder), "--out", str(out), "--seed", "3"])
    assert status == 0
    rows = (out / "grades.csv").read_text().splitlines()
    assert len(rows) == 3 and rows[0].startswith("student")
    assert "reduce-scatter half" in (out / "feedback" / "alan.md").read_text()
    assert "seed: 3" in (out / "feedback" / "ada.md").read_text()
    with pytest.raises(SystemExit, match="no replicas"):
        grade_command(["browser/05", str(folder), "--replicas", "4,2"])
    with pytest.raises(SystemExit, match="browser/05_ring_all_reduce"):
        grade_command(["browser/99", str(folder)])
