"""The classroom labs: student editions, the answer key, and grading that rejects wrong answers.

The fast tests look at what `dev.py labs` writes. The `grading` tests (the reference job
only) grade every chapter with exercises through bookbuild.grading's sandboxed runner, in one
grade_variants call per chapter at the manifest's replicas and the first of its
grade_replicas, seed 7 (chapter 8 at a seed its earlier asserts failed at, see SEEDS; the
chapter's own cells run at that seed too): the blank prompt scores zero ("not attempted
yet"), the answer key passes, every plausible wrong answer of
tests/book/variants/<chapter>.py fails with feedback naming the mistake and every differently
written right answer passes. The verdicts are written to test-artifacts/labs/<chapter>.json.
One more test runs chapter 1's student edition in a kernel: otter's grader.check, the
learner's self-check, still scores it.
"""

import importlib.util
import json
import time
from pathlib import Path

import nbformat
import pytest

from bookbuild import ROOT, built
from bookbuild.execute import notebook_client
from bookbuild.exercises import CHECK_TAG, exercises
from bookbuild.grading import grade_variants
from bookbuild.grading.built_labs import lab_for
from bookbuild.labs import WIDGET_VIEW
from bookbuild.manifest import load_manifest
from tests.book.answer_leaks import leaks

# All of it in the reference job's grading stage: dev.py builds the labs with the book's own
# environment, and the labs fixture builds them once there.
pytestmark = [pytest.mark.book, pytest.mark.grading]

CHAPTERS = [c for c in load_manifest()["chapters"] if c["exercises"]]
IDS = [c["path"].stem for c in CHAPTERS]
ARTIFACTS = ROOT / "test-artifacts" / "labs"
# The grader draws a seed per submission and runs the chapter's own cells at it, so they may
# assert only what holds at every seed. Chapter 8's asserts once held at seed 42 and 7 only
# (bench/scaling_seeds.py measures them at 36 seeds): it is graded here at one that broke them.
SEEDS = {"08_scaling_the_batch": 1633161189}


def variants(chapter) -> tuple[dict, dict]:
    path = Path(__file__).parent / "variants" / f"{chapter['path'].stem}.py"
    spec = importlib.util.spec_from_file_location(f"variants_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.WRONG, module.RIGHT


@pytest.fixture(scope="module")
def labs(tmp_path_factory):
    """Every chapter's lab: this test run's shared build (bookbuild.built), else built here."""
    into = built.shared("labs") or tmp_path_factory.mktemp("labs")
    return {c["path"].stem: lab_for(c, into) for c in CHAPTERS}


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


@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_student_edition_shows_the_chapter_outputs_and_no_answer(chapter, labs):
    lab = labs[chapter["path"].stem]
    book = nbformat.read(chapter["path"], as_version=4)
    student = nbformat.read(lab.student, as_version=4)
    found = exercises(book)
    inside = {i for e in found for i in range(e.prompt, e.check + 1)}
    chapter_cells = [
        c
        for i, c in enumerate(book.cells)
        if c.cell_type == "code" and i not in inside and "open-in-colab" not in _tags(c)
    ]
    code = [c for c in student.cells if c.cell_type == "code"]
    # Every chapter cell outside the exercises shows what it showed in the book, less the
    # live widget views (a kernel's); no other cell shows anything.
    shown = {c.source: c.outputs for c in code if c.outputs}
    for cell in chapter_cells:
        expected = [_without_view(o) for o in cell.outputs]
        assert shown.pop(cell.source, []) == [o for o in expected if o.get("data", True)]
    assert shown == {}, "cells that are not the chapter's show outputs"
    assert "widgets" not in student.metadata
    answers = {i for i, c in enumerate(student.cells) if "otter_answer_cell" in _tags(c)}
    assert len(answers) == len(found)
    found_leaks = leaks(book, student.cells, answers)
    # Its size, and what it shows: test-artifacts/labs/<chapter>.student.json.
    size, chapter_size = lab.student.stat().st_size, chapter["path"].stat().st_size
    report = {"bytes": size, "chapter_bytes": chapter_size, "leaks": found_leaks}
    report["cells_with_outputs"] = sum(1 for c in code if c.outputs)
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    (ARTIFACTS / f"{chapter['path'].stem}.student.json").write_text(json.dumps(report, indent=1))
    assert found_leaks == [], "an answer shows before the student writes it"
    assert size <= 1.2 * chapter_size, report


def test_an_answer_shown_before_its_exercise_is_found():
    from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook, new_output

    solutions = "# Exercise 1\nsplit = tf.distribute.experimental.partitioners.MinSizePartitioner"
    solutions += "(min_shard_bytes=1024, max_shards=2)\n\n# Exercise 2\n"
    solutions += "config = {'task': {'type': 'worker', 'index': 1}}\n\n# Exercise 3\n"
    solutions += "def scaled(x):\n    return tf.reduce_sum(x) / strategy.num_replicas_in_sync\n"
    exercise_cells = [
        new_markdown_cell("**Exercise 1.** x"),
        new_code_cell("split = ...", metadata={"tags": ["exercise-answer"]}),
        new_code_cell("mk.check_a(split)", metadata={"tags": ["exercise-check"]}),
        new_markdown_cell("**Exercise 2.** y"),
        new_code_cell("config = ...", metadata={"tags": ["exercise-answer"]}),
        new_code_cell("mk.check_b(config)", metadata={"tags": ["exercise-check"]}),
        new_markdown_cell("**Exercise 3.** z"),
        new_code_cell("scaled = ...", metadata={"tags": ["exercise-answer"]}),
        new_code_cell("mk.check_c(scaled)", metadata={"tags": ["exercise-check"]}),
        new_markdown_cell(f"<summary>Solutions</summary>\n```python\n{solutions}```"),
    ]

    def printed(text, kind="stream"):
        if kind == "stream":
            return new_code_cell("show()", outputs=[new_output("stream", text=text)])
        return new_code_cell("show()", outputs=[new_output(kind, data={"text/html": text})])

    def found(*cells):
        book = new_notebook(cells=[*cells, *exercise_cells])
        answers = {i for i, c in enumerate(book.cells) if "exercise-answer" in _tags(c)}
        return leaks(book, book.cells[:-1], answers)

    clean = [
        new_code_cell("parts = partitioners.MinSizePartitioner(min_shard_bytes=4096)"),
        new_code_cell("def mean(x):\n    return tf.reduce_mean(x)"),
        printed("{'task': {'type': 'worker', 'index': 0}}"),
        printed("NOT YET: not attempted", "display_data"),
    ]
    assert found(*clean) == []
    # The chapter writes an answer (by another path to the same class, another name).
    assert found(
        new_code_cell("p = partitioners.MinSizePartitioner(min_shard_bytes=1024, max_shards=2)")
    )[0].startswith("ex1 in cell 0's code")
    # A function with the answer's body.
    assert found(
        new_code_cell("def f(x):\n    return tf.reduce_sum(x) / strategy.num_replicas_in_sync")
    )[0].startswith("ex3 in cell 0's code")
    # An output prints an answer's value, or its code, or a check's verdict.
    assert found(printed("{'task': {'type': 'worker', 'index': 1}}"))[0].startswith(
        "ex2 in cell 0's output"
    )
    assert found(
        printed("def scaled(x):\n    return tf.reduce_sum(x) / strategy.num_replicas_in_sync\n")
    )[0].startswith("ex3 in cell 0's")
    verdict = '<div class="mirrorkit-report"><strong>PASS</strong>: right</div>'
    assert found(printed(verdict, "display_data")) == [
        f"ex{k} in cell 0's output: a check's PASS verdict" for k in (1, 2, 3)
    ]


def _tags(cell) -> list[str]:
    return cell.metadata.get("tags", [])


def _without_view(output):
    data = {k: v for k, v in output.get("data", {}).items() if k != WIDGET_VIEW}
    return nbformat.from_dict({**output, "data": data}) if "data" in output else output


@pytest.mark.grading
@pytest.mark.parametrize("chapter", CHAPTERS, ids=IDS)
def test_grading_scores_the_blank_the_key_and_every_variant(chapter, labs):
    lab = labs[chapter["path"].stem]
    wrong, right = variants(chapter)
    book = nbformat.read(chapter["path"], as_version=4)
    cases = []
    for exercise in exercises(book):
        number = exercise.number
        cases += [
            (number, "blank", book.cells[exercise.answer].source),
            (number, "answer key", exercise.solution),
        ]
        cases += [(number, f"wrong: {label}", code) for label, code, _ in wrong[number]]
        cases += [(number, f"right {i + 1}", code) for i, code in enumerate(right[number])]
    words = {(n, f"wrong: {label}"): word for n, items in wrong.items() for label, _, word in items}
    seed = SEEDS.get(chapter["path"].stem, 7)
    choices = {"replicas": [chapter["replicas"], *chapter["grade_replicas"][:1]], "seed": seed}
    started = time.monotonic()
    verdicts = grade_variants(lab, cases, choices=choices)  # the sandboxed runner, every case
    problems = []
    for verdict in verdicts:
        number, label, feedback = verdict["exercise"], verdict["label"], verdict["feedback"]
        if label == "blank" and (verdict["passed"] or "not attempted yet" not in feedback):
            problems.append(f"ex{number} blank: {verdict}")
        elif label.startswith(("right", "answer key")) and not verdict["passed"]:
            problems.append(f"ex{number} {label}: rejected: {feedback}")
        elif label.startswith("wrong") and (
            verdict["passed"] or words[(number, label)] not in feedback.lower()
        ):
            problems.append(
                f"ex{number} {label}: passed={verdict['passed']}, feedback {feedback!r} "
                f"lacks {words[(number, label)]!r}"
            )
    _save(chapter, "grading", {"choices": choices, "seconds": round(time.monotonic() - started)})
    _save(chapter, "variants", verdicts)
    assert problems == [], "\n".join(problems)


CHECK = (
    "import json as _json\n"
    "_result = grader.check({name!r})\n"
    "print(_json.dumps([_result.passed_all, _result.score, _result.possible, repr(_result)]))"
)


@pytest.mark.grading
def test_the_students_self_check_still_works(labs):
    chapter = CHAPTERS[0]
    lab = labs[chapter["path"].stem]
    nb = nbformat.read(lab.student, as_version=4)
    first = exercises(nbformat.read(chapter["path"], as_version=4))[0]
    with (
        notebook_client(nb, timeout=chapter["cell_timeout"], cwd=lab.student.parent) as client,
        client.setup_kernel(),
    ):
        for index, cell in enumerate(nb.cells):
            if cell.cell_type == "code":
                client.execute_cell(cell, index)  # the blank edition, run as a learner would
        blank = [_graded(client, n)[1] for n in range(1, 4)]
        client.execute_cell(nbformat.v4.new_code_cell(first.solution), 0)
        passed, score, possible, _ = _graded(client, first.number)
    assert blank == [0, 0, 0]
    assert (passed, score, possible) == (True, 1, 1)


def _graded(client, number: int) -> list:
    """[passed, score, possible, report] of otter's grader.check("exK") in the kernel."""
    probe = nbformat.v4.new_code_cell(CHECK.format(name=f"ex{number}"))
    client.execute_cell(probe, 0)
    text = "".join(o.get("text", "") for o in probe.outputs if o.get("name") == "stdout")
    return json.loads(text.strip().splitlines()[-1])


def _save(chapter, part: str, value) -> None:
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{chapter['path'].stem}.json"
    saved = json.loads(path.read_text()) if path.exists() else {}
    saved[part] = value
    path.write_text(json.dumps(saved, indent=1))


@pytest.mark.grading
def test_chapter_9_is_graded_beside_and_by_query_in_one_row(labs, tmp_path):
    from bookbuild.grading import grade
    from bookbuild.grading.submission import answers_of

    lab = labs["09_the_landscape"]
    program = json.loads(Path(lab.program).read_text())
    key = {s["exercise"]: s["solution"] for s in program["steps"] if s["kind"] == "answer"}
    student = nbformat.read(lab.student, as_version=4)
    blanks = {source.strip(): k for k, source in answers_of(student, [1, 2]).items()}
    for cell in student.cells:
        if cell.cell_type == "code" and cell.source.strip() in blanks:
            cell.source = key[blanks[cell.source.strip()]]
    nbformat.write(student, tmp_path / "ada.ipynb")
    result = grade(lab, tmp_path / "ada.ipynb", timeout=900, choices={"replicas": [4], "seed": 5})
    assert result.total == (2.0, 2.0), result
    assert "exercise 1 judged in the student's process" in result.isolation
    assert "exercise 2 judged by query" in result.isolation
