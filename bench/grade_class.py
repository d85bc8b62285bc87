"""Grade a class: 30 drawn submissions of one chapter through ``python3 dev.py grade``.

Each submission is the chapter's student edition with every answer cell replaced by a draw
among the blank prompt, the answer key, and the wrong and right answers of
``tests/book/variants/<chapter>.py``; the draws' expected points (1 for the key and a right
answer, 0 for the blank and a wrong one) are compared with ``grades.csv``. Prints the wall
time of the whole command, each submission's seconds (from its progress line) and the peak
RSS of the largest process the command waited for. Run it on a quiet machine, after
``python3 dev.py labs`` (it builds the lab if missing):

    .venv/bin/python bench/grade_class.py 4          # chapter 4, 30 submissions, 2 at a time
    .venv/bin/python bench/grade_class.py 8 --count 10 --jobs 1 --seed 3
"""

from __future__ import annotations

import argparse
import csv
import importlib.util
import json
import os
import random
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from bookbuild.exercises import exercises  # noqa: E402
from bookbuild.grading.submission import ANSWER_TAGS  # noqa: E402
from bookbuild.labs import LABS, chapters_with_exercises  # noqa: E402
from bookbuild.manifest import load_manifest  # noqa: E402

LINE = re.compile(r"^\[grade\] \d+/\d+ (?P<student>\S+): \S+ \S+ in (?P<seconds>\d+) s")


def answers_to_draw(chapter: dict) -> dict[int, list[tuple[str, str, int]]]:
    """Per exercise: (label, source, expected points) of every answer a draw may pick."""
    import nbformat

    path = ROOT / "tests" / "book" / "variants" / f"{chapter['path'].stem}.py"
    spec = importlib.util.spec_from_file_location(f"variants_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    book = nbformat.read(chapter["path"], as_version=4)
    drawn = {}
    for exercise in exercises(book):
        number = exercise.number
        drawn[number] = [
            ("blank", book.cells[exercise.answer].source, 0),
            ("answer key", exercise.solution, 1),
            *[(f"wrong: {label}", code, 0) for label, code, _ in module.WRONG[number]],
            *[(f"right {i + 1}", code, 1) for i, code in enumerate(module.RIGHT[number])],
        ]
    return drawn


def write_class(chapter: dict, folder: Path, count: int, seed: int) -> dict[str, dict]:
    """Write ``count`` submissions into ``folder``: {student: {exN: (label, points)}}."""
    import nbformat

    stem = chapter["path"].stem
    student_edition = LABS / stem / "student" / f"{stem}.ipynb"
    if not student_edition.exists():
        subprocess.run([sys.executable, ROOT / "dev.py", "labs", stem], check=True)
    draws, rng, expected = answers_to_draw(chapter), random.Random(seed), {}
    for index in range(count):
        nb = nbformat.read(student_edition, as_version=4)
        answer_cells = [
            c for c in nb.cells if any(t in c.metadata.get("tags", []) for t in ANSWER_TAGS)
        ]
        student = f"s{index:02d}"
        expected[student] = {}
        for cell, number in zip(answer_cells, sorted(draws), strict=True):
            label, source, points = rng.choice(draws[number])
            cell.source = source
            expected[student][f"ex{number}"] = (label, points)
        nbformat.write(nb, folder / f"{student}.ipynb")
    return expected


def graded(command: list) -> tuple[str, int, list[float]]:
    """Run the grade command: its output (each progress line also echoed to stderr as it
    comes, so a long class shows how far it got), its status, and the 1-minute load average
    sampled every 30 s while it ran."""
    loads: list[float] = []
    stopped = threading.Event()

    def sample() -> None:
        loads.append(round(os.getloadavg()[0], 2))
        while not stopped.wait(30):
            loads.append(round(os.getloadavg()[0], 2))

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    lines = []
    with subprocess.Popen(
        command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True
    ) as process:
        for line in process.stdout:
            lines.append(line)
            if line.startswith("[grade]"):
                print(time.strftime("%H:%M:%S"), line, end="", file=sys.stderr, flush=True)
    stopped.set()
    return "".join(lines), process.returncode, loads


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("chapter", help="its number or stem")
    parser.add_argument("--count", type=int, default=30)
    parser.add_argument("--jobs", type=int, default=2)
    parser.add_argument("--seed", type=int, default=1, help="draws the answers")
    known = parser.parse_args()
    (chapter,) = chapters_with_exercises(load_manifest(), [known.chapter])
    work = Path(tempfile.mkdtemp(prefix="grade-class-"))
    (work / "class").mkdir()
    expected = write_class(chapter, work / "class", known.count, known.seed)
    command = [sys.executable, ROOT / "dev.py", "grade", chapter["path"].stem, work / "class"]
    command += ["--jobs", str(known.jobs), "--out", work / "out"]
    started = time.monotonic()
    output, returncode, loads = graded(command)
    wall = time.monotonic() - started
    (work / "grade.log").write_text(output)
    peak = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1e6  # GB (kB on Linux)
    seconds = [int(m["seconds"]) for m in map(LINE.match, output.splitlines()) if m]
    rows = {r["student"]: r for r in csv.DictReader((work / "out" / "grades.csv").open())}
    wrong = [
        f"{student} {name} ({label}): expected {points}, got {rows.get(student, {}).get(name)}"
        for student, answers in expected.items()
        for name, (label, points) in answers.items()
        if float(rows.get(student, {}).get(name) or -1) != points
    ]
    statuses = sorted({r["status"] for r in rows.values()})
    summary = {
        "chapter": chapter["path"].stem,
        "submissions": known.count,
        "jobs": known.jobs,
        "wall_s": round(wall),
        "per_submission_s": [min(seconds), round(statistics.median(seconds)), max(seconds)]
        if seconds
        else None,
        "peak_rss_gb": round(peak, 2),
        "load_1min": [min(loads), max(loads)] if loads else None,
        "statuses": statuses,
        "grades_as_drawn": not wrong,
        "work": str(work),
    }
    print(json.dumps(summary))
    for line in wrong:
        print("MISMATCH", line)
    return 0 if not wrong and returncode == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
