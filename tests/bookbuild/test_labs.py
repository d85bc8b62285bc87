import nbformat
import pytest
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from bookbuild.exercises import Exercise, exercises
from bookbuild.labs import chapters_with_exercises, master_notebook, otter_test
from bookbuild.manifest import load_manifest

SOLUTIONS = "<details>\n<summary>Solutions</summary>\n\n```python\n{}```\n</details>"


def chapter(*cells, solutions="# Exercise 1\nx = 1\n"):
    return new_notebook(cells=[*cells, new_markdown_cell(SOLUTIONS.format(solutions))])


def answer(source="x = ...  # your answer"):
    return new_code_cell(source, metadata={"tags": ["exercise-answer"]})


def check(source="mk.check(x)"):
    return new_code_cell(source, metadata={"tags": ["exercise-check"]})


def test_exercises_are_read_with_their_cells_and_solutions():
    nb = chapter(
        new_markdown_cell("## Exercises\n\n**Exercise 1.** Make x."),
        new_code_cell("helper = 2"),
        answer(),
        check(),
        new_markdown_cell("**Exercise 2.** Make y."),
        answer("y = ..."),
        check("mk.check(y)"),
        solutions="# Exercise 1\nx = 1\n\n# Exercise 2\ny = 2\n",
    )
    assert exercises(nb) == [Exercise(1, 0, 2, 3, "x = 1"), Exercise(2, 4, 5, 6, "y = 2")]
    master = master_notebook(nb, "lab")
    sources = [c.source for c in master.cells]
    # The helper cell stays in the question, before the solution; the Solutions block goes.
    assert sources.index("helper = 2") < sources.index("# BEGIN SOLUTION")
    assert not any("<summary>Solutions" in s for s in sources)
    assert sources.count("# BEGIN QUESTION\nname: ex2\npoints: 1") == 1


@pytest.mark.parametrize(
    ("cells", "solutions", "match"),
    [
        (
            [new_markdown_cell("**Exercise 1.** x"), check()],
            None,
            "0 cells tagged 'exercise-answer'",
        ),
        (
            [new_markdown_cell("**Exercise 1.** x"), answer()],
            None,
            "0 cells tagged 'exercise-check'",
        ),
        (
            [new_markdown_cell("**Exercise 1.** x"), answer(), check(), check()],
            None,
            "2 cells tagged 'exercise-check'",
        ),
        ([new_markdown_cell("**Exercise 2.** x"), answer(), check()], None, "should be exercise 1"),
        (
            [new_markdown_cell("**Exercise 1.** x"), answer(), check()],
            "# Exercise 2\ny = 1\n",
            "no '# Exercise 1' part",
        ),
    ],
)
def test_a_broken_exercise_format_is_named(cells, solutions, match):
    nb = chapter(*cells) if solutions is None else chapter(*cells, solutions=solutions)
    with pytest.raises(ValueError, match=match):
        exercises(nb)


def test_a_chapter_without_exercises_makes_no_lab():
    with pytest.raises(ValueError, match="has no exercises"):
        master_notebook(chapter(new_markdown_cell("# Prose only")), "prose")


def test_the_otter_test_reads_what_the_check_reads_and_asserts_its_verdict():
    source = otter_test(Exercise(3, 0, 1, 2, ""), "n = len(ids)\nmk.check(f, strategy, n * 2)")
    assert source.splitlines()[0] == "def test_ex3(f, ids, mk, strategy):"  # not len, not n
    namespace = {}
    exec(source, namespace)

    class Verdict:
        def __init__(self, passed):
            self.passed, self.message = passed, "the check's own words"

    class Checks:
        @staticmethod
        def check(f, strategy, n):
            return Verdict(f(n))

    namespace["test_ex3"](lambda n: n == 4, [0, 1], Checks, None)
    with pytest.raises(AssertionError, match="the check's own words"):
        namespace["test_ex3"](lambda n: False, [0, 1], Checks, None)
    with pytest.raises(ValueError, match="must end with the check's call"):
        otter_test(Exercise(1, 0, 1, 2, ""), "verdict = mk.check(x)")


def test_chapters_are_picked_by_file_stem_or_number():
    manifest = load_manifest()
    with_exercises = chapters_with_exercises(manifest)
    assert [c["file"] for c in with_exercises] == [
        c["file"] for c in manifest["chapters"] if c["exercises"]
    ]
    assert chapters_with_exercises(manifest, ["01_strategy_scope.ipynb", "4"]) == [
        c for c in with_exercises if c["file"][:2] in ("01", "04")
    ]
    with pytest.raises(SystemExit, match="no chapter with exercises is called 99"):
        chapters_with_exercises(manifest, ["99"])


def test_every_chapter_with_exercises_follows_the_format():
    for c in chapters_with_exercises(load_manifest()):
        found = exercises(nbformat.read(c["path"], as_version=4))
        assert [e.number for e in found] == list(range(1, len(found) + 1)) and found, c["file"]
