"""The classroom labs: student editions, the answer key, and grading that rejects wrong answers.

The fast tests look at what `dev.py labs` writes. The `grading` tests (the reference job
only: each executes every chapter with exercises) grade with otter-grader: the grading
command gives the answer key full marks; then, in one kernel per chapter running the student
edition, every untouched exercise scores zero, and every exercise gets its plausible wrong
answers, each rejected with feedback naming the mistake, and different correct answers, each
accepted (tests/book/variants/<chapter>.py), graded by otter's own grader.check. The
verdicts are written to test-artifacts/labs/<chapter>.json.
"""

import importlib.util
import json
from pathlib import Path

import nbformat
import pytest

from bookbuild import ROOT
from bookbuild.execute import notebook_client
from bookbuild.grading import grade
from bookbuild.labs import CHECK_TAG, build_lab, exercises
from bookbuild.manifest import load_manifest

pytestmark = pytest.mark.book

CHAPTERS = [c for c in load_manifest()["chapters"] if c["exercises"]]
IDS = [c["path"].stem for c in CHAPTERS]
ARTIFACTS = ROOT / "test-artifacts" / "labs"


def variants(chapter) -> tuple[dict, dict]:
    path = Path(__file__).parent / "variants" / f"{chapter['path'].stem}.py"
    spec = importlib.util.spec_from_file_location(f"variants_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG, module.RIGHT


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    into = tmp_path_factory.mktemp("labs")
    return {c["path"].stem: build_lab(c, into) for c in CHAPTERS}


def test_every_chapter_with_exercises_has_variants():
    assert len(CHAPTERS) >= 4
    for chapter in CHAPTERS:
        wrong, right = variants(chapter)
        numbers = [e.number for e in exercises(nbformat.read(chapter["path"], as_version=4))]
        assert sorted(wrong) == sorted(right) == numbers, chapter["path"].name
        for number in numbers:
            assert len(wrong[number]) >= 3, (chapter["path"].name, number)
            assert len(right[number]) >= 2, (chapter["path"].name, number)
            assert len(set(right[number])) == len(right[number])


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_student_edition_has_no_solutions_and_keeps_the_checks(chapter, labs):
    lab = labs[chapter["path"].stem]
    book = nbformat.read(chapter["path"], as_version=4)
    student = nbformat.read(lab.student, as_version=4)
    key = nbformat.read(lab.answer_key, as_version=4)
    text = "\n".join(c.source for c in student.cells)
    found = exercises(book)
    assert "<summary>Solutions</summary>" not in text
    assert "open-in-colab" not in json.dumps([c.metadata for c in student.cells])
    prose = "\n".join(c.source for c in book.cells if "<summary>Solutions" not in c.source)
    for exercise in found:
        # No line of the solution reached the student edition unless the chapter shows it too.
        leaked = [
            line
            for line in exercise.solution.splitlines()
            if line.strip() and line in text.splitlines() and line not in prose.splitlines()
        ]
        assert leaked == [], (exercise.name, leaked)
        assert book.cells[exercise.answer].source in text  # the blank prompt
        assert book.cells[exercise.check].source in text  # the learner's own check
        assert f'grader.check("{exercise.name}")' in text
        assert exercise.solution in "\n".join(c.source for c in key.cells)
    checks = [c for c in student.cells if CHECK_TAG in c.metadata.get("tags", [])]
    assert len(checks) == len(found)
    assert lab.autograder.suffix == ".zip" and lab.autograder.stat().st_size > 0
    assert student.cells[0].source.startswith("# Initialize Otter")
    assert 'except ImportError:  # e.g. on Colab\n    %pip install --quiet "otter-grader==' in (
        student.cells[0].source
    )


@pytest.mark.grading
@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_the_grading_command_gives_the_answer_key_full_marks(chapter, labs):
    lab = labs[chapter["path"].stem]
    key = grade(lab, lab.answer_key)  # `otter run`, as `dev.py grade` runs it
    assert key.total[0] == key.total[1] == len(key.scores) >= 1, key.scores
    _save(chapter, "answer key", key.scores)


CHECK = (
    "import json as _json\n"
    "_result = grader.check({name!r})\n"
    "print(_json.dumps([_result.passed_all, _result.score, _result.possible, repr(_result)]))"
)


@pytest.mark.grading
@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_wrong_answers_are_rejected_and_right_ones_accepted(chapter, labs):
    lab = labs[chapter["path"].stem]
    wrong, right = variants(chapter)
    nb = nbformat.read(lab.student, as_version=4)
    cases = [
        (n, "wrong", label, code, word) for n, items in wrong.items() for label, code, word in items
    ]
    cases += [
        (n, "right", f"correct answer {i + 1}", code, None)
        for n, codes in right.items()
        for i, code in enumerate(codes)
    ]
    verdicts, problems = [], []
    with (
        notebook_client(nb, timeout=chapter["cell_timeout"], cwd=lab.student.parent) as client,
        client.setup_kernel(),
    ):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)  # the blank edition, run as a learner would
        for number in wrong:  # untouched, every exercise scores zero
            passed, score, _, report = _graded(client, number)
            blank = _assertion(report)
            verdicts.append(
                {"exercise": number, "kind": "blank", "score": score, "feedback": blank}
            )
            if passed or score or not blank.startswith("not attempted yet"):
                problems.append(f"ex{number} blank: score {score}, feedback {blank!r}")
        for number, kind, label, code, word in cases:
            client.execute_cell(nbformat.v4.new_code_cell(code), 0)
            passed, score, possible, report = _graded(client, number)
            feedback = _assertion(report)
            verdicts.append(
                {
                    "exercise": number,
                    "kind": kind,
                    "label": label,
                    "score": score,
                    "possible": possible,
                    "feedback": feedback,
                }
            )
            if kind == "right" and not passed:
                problems.append(f"ex{number} {label}: rejected: {feedback}")
            if kind == "wrong" and (passed or word not in feedback.lower()):
                problems.append(
                    f"ex{number} wrong ({label}): passed={passed}, "
                    f"feedback {feedback!r} lacks {word!r}"
                )
    _save(chapter, "variants", verdicts)
    assert problems == [], "\n".join(problems)


def _graded(client, number: int) -> list:
    """[passed, score, possible, report] of otter's grader.check("exK") in the kernel."""
    probe = nbformat.v4.new_code_cell(CHECK.format(name=f"ex{number}"))
    client.execute_cell(probe, 0)
    text = "".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout")
    return json.loads(text.strip().splitlines()[-1])


def _assertion(report: str) -> str:
    lines = [line.strip() for line in report.splitlines() if "AssertionError: " in line]
    if lines:
        return lines[-1].split("AssertionError: ", 1)[1]
    errors = [line.strip() for line in report.splitlines() if "Error" in line]
    return errors[-1] if errors else ""


def _save(chapter, part: str, value) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{chapter['path'].stem}.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[part] = value
    path.write_text(json.dumps(saved, indent=1))
