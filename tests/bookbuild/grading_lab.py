"""A tiny chapter with two exercises, made into a lab whose grading is quick (no otter)."""

from __future__ import annotations

import concurrent.futures
from pathlib import Path
from types import SimpleNamespace

import nbformat
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from bookbuild.grading import grade
from bookbuild.grading.program import write_program

KEY = {
    1: "with strategy.scope():\n    counter = tf.Variable(0.0)",
    2: "squares = strategy.run(\n    lambda: tf.cast(\n"
    "        tf.distribute.get_replica_context().replica_id_in_sync_group ** 2, tf.float32\n"
    "    )\n)",
}
BLANK = {1: "counter = ...  # your answer", 2: "squares = ...  # your answer"}
CHECK = {
    1: "mk.check_mirrored(counter, strategy, dtype=tf.float32, expected=0.0)",
    2: "expected_squares = [i * i for i in range(strategy.num_replicas_in_sync)]\n"
    "mk.check_per_replica(squares, strategy, expected=expected_squares, dtype=tf.float32)",
}
SETUP = (
    "import mirrorkit as mk\n\nmk.make_reproducible(SEED)\n"
    "devices = mk.simulate_replicas(REPLICAS)\n\nimport tensorflow as tf\n\n"
    "strategy = mk.make_strategy()"
)


# The tiny chapter: its set-up, its answer key, its blanks and its checks (another test can
# give its own, e.g. tests/bookbuild/test_grading_export.py's dataset exercises). Its checks
# are judged by export (bookbuild/grading/_exports.py's EXPORTED_CHECKS).
MIRRORED = SimpleNamespace(setup=SETUP, key=KEY, blank=BLANK, check=CHECK)
# The same chapter judged beside the answer, as chapters 3 to 8 are: each check is called
# through a name of the chapter's, which the grader does not take for one it judges by export
# (test_grading_cheats.py asserts that it is judged beside).
BESIDE = SimpleNamespace(
    setup=SETUP + "\ncheck_beside = {1: mk.check_mirrored, 2: mk.check_per_replica}",
    key=KEY,
    blank=BLANK,
    check={
        1: CHECK[1].replace("mk.check_mirrored", "check_beside[1]"),
        2: CHECK[2].replace("mk.check_per_replica", "check_beside[2]"),
    },
)


def _cells(answers: dict, chapter_cells: tuple[str, ...] = (), tiny=MIRRORED) -> list:
    cells = [
        new_code_cell("REPLICAS = 2\nSEED = 0", metadata={"tags": ["parameters"]}),
        new_code_cell(tiny.setup),
        *map(new_code_cell, chapter_cells),
    ]
    for number in (1, 2):
        cells += [
            new_markdown_cell(f"**Exercise {number}.** Do it."),
            new_code_cell(answers[number], metadata={"tags": ["exercise-answer"]}),
            new_code_cell(tiny.check[number], metadata={"tags": ["exercise-check"]}),
        ]
    return cells


def make_lab(folder: Path, chapter_cells: tuple[str, ...] = (), tiny=MIRRORED) -> SimpleNamespace:
    """The lab: its chapter (with the Solutions block, and these cells after its set-up)."""
    solutions = "\n\n".join(f"# Exercise {k}\n{code}" for k, code in tiny.key.items())
    block = f"<details>\n<summary>Solutions</summary>\n\n```python\n{solutions}\n```\n</details>"
    cells = [*_cells(tiny.blank, chapter_cells, tiny), new_markdown_cell(block)]
    path = Path(folder) / "tiny.ipynb"
    nbformat.write(new_notebook(cells=cells), path)
    chapter = {"path": path, "replicas": 2, "seed": 0, "grade_replicas": [], "cell_timeout": 60}
    return SimpleNamespace(program=write_program(chapter, Path(folder) / "program.json"))


def submission(
    folder: Path, name: str, ex1: str = BLANK[1], ex2: str = BLANK[2], tiny=MIRRORED
) -> Path:
    """A student's notebook with these answers."""
    path = Path(folder) / f"{name}.ipynb"
    nbformat.write(new_notebook(cells=_cells({1: ex1, 2: ex2}, tiny=tiny)), path)
    return path


def grade_many(lab, paths: dict, timeout: float = 300.0, timeouts=None, limit=None) -> dict:
    """Grade the submissions side by side: {name: Grade} (``limit``: each exercise's)."""
    timeouts = timeouts or {}
    with concurrent.futures.ThreadPoolExecutor(max_workers=4) as pool:
        futures = {
            name: pool.submit(
                grade,
                lab,
                path,
                timeout=timeouts.get(name, timeout),
                choices={"replicas": [2], "seed": 0},
                exercise_limit=limit,
            )
            for name, path in paths.items()
        }
        return {name: future.result() for name, future in futures.items()}
