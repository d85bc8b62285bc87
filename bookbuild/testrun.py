"""The ``dev.py test`` command: every job's stages side by side, then the summary.

Example:
    >>> from bookbuild.environments import book_env
    >>> [job.name for job in test_jobs(book_env(), quick=True)]
    ['reference']
"""

from __future__ import annotations

import argparse
import os
import shutil
import time

from bookbuild import ROOT
from bookbuild.environments import HOSTED_PYTHON, PYTHONS, Env, book_env
from bookbuild.gpujob import gpu_job
from bookbuild.hosted import hosted_job
from bookbuild.jobs import LOGS, TMP, Job, python_job, reference_job
from bookbuild.lanes import run_stages
from bookbuild.shell import say
from bookbuild.system import CHROMIUM, DOT, SLURM, ensure_system_tools, interpreter_version
from bookbuild.timing import report

TIMES = ROOT / "test-artifacts" / "test-times.json"
LANES = 3  # the suite waits on kernels, clusters and a browser about half of the time
SPARE = 1  # and one more stage starts while a core stands idle (bookbuild.lanes.SPARE_IDLE)


def test_jobs(book: Env, only: set[str] | None = None, quick: bool = False) -> list[Job]:
    """The reference job, one per other supported Python, the hosted (Colab) job and the gpu job.

    Every supported Python runs the lock's TensorFlow: the unit tests on each but the hosted
    job's, where that job runs them at Colab's TensorFlow, and every chapter on each.

    Args:
        book: The book's environment, the reference job's.
        only: The names of the jobs to run; the others are listed as not asked for.
        quick: Only the reference job's lint, doctests and unit tests.

    Example:
        >>> from bookbuild.environments import book_env
        >>> [job.stages is None for job in test_jobs(book_env(), {"x"}, quick=True)]
        [True]
    """
    jobs = [reference_job(book, quick=quick)]
    if not quick:
        # The reference job builds the book and the labs once for every job that reads them.
        shared = only is None or "reference" in only
        reference = interpreter_version(book.interpreter)
        for version in PYTHONS:
            if version == HOSTED_PYTHON:  # its unit tests run in the hosted job
                jobs.append(python_job(version, parts=("chapters",), shared=shared))
            elif version != reference:
                jobs.append(python_job(version, shared=shared))
        jobs.append(hosted_job())
        jobs.append(gpu_job(book))  # NOT RUN, with nvidia-smi's answer, where no GPU is visible
    for job in jobs:
        if only is not None and job.name not in only:
            job.stages, job.detail = None, "not asked for (--jobs)"
    return jobs


test_jobs.__test__ = False  # a command's jobs, not a test for pytest to collect


def summarize(jobs: list[Job], wall: float = 0.0, lanes: int = LANES) -> int:
    """Print the jobs, the stage table and the slowest tests; 1 if any job failed.

    Args:
        jobs: The jobs, after their stages ran.
        wall: The command's wall time in seconds.
        lanes: How many stages could run at once.

    Returns:
        The command's exit status.

    Example:
        >>> summarize([Job(name="python3.99", what="tests", detail="no interpreter")])
        [dev] summary
          job         Python TF Keras  result   time  what
          python3.99  -                NOT RUN  -     tests
          python3.99: NOT RUN: no interpreter
        0
    """
    rows = [("job", "Python TF Keras", "result", "time", "what")]
    for job in jobs:
        minutes = f"{job.seconds / 60:.1f} min" if job.seconds else "-"
        rows.append((job.name, job.versions, job.result, minutes, job.what))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    say("summary")
    for row in rows:
        cells = "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
        print("  " + cells + "  " + row[4])
    for job in jobs:
        for stage in job.stages or ():
            if stage.result != "passed":
                print(f"  {stage.key}: {stage.result}: {stage.detail}")
        if job.detail:
            print(f"  {job.name}: {job.result}: {job.detail}")
    stages = [s for job in jobs for s in job.stages or ()]
    if any(s.seconds for s in stages):
        report(stages, wall=wall, lanes=lanes, path=TIMES)
        say(f"wrote {os.path.relpath(TIMES, ROOT)} (python3 bench/ci_budget.py reads it)")
    return 1 if any(job.result == "FAILED" for job in jobs) else 0


def run_tests(args: list[str], start: float) -> int:
    """``dev.py test [--jobs A,B] [--quick] [--lanes N] [--spare N]``: every job's stages.

    Args:
        args: The command's arguments.
        start: When the command started (:func:`time.perf_counter`).

    Returns:
        The exit status: 1 if a job failed.

    Example:
        >>> run_tests(["--help"], 0.0)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        SystemExit: 0
    """
    parser = argparse.ArgumentParser(prog="python3 dev.py test")
    parser.add_argument("--jobs", type=lambda text: set(text.split(",")), default=None)
    parser.add_argument("--quick", action="store_true", help="lint, doctests, unit tests")
    parser.add_argument("--lanes", type=int, default=LANES, help="stages at once")
    parser.add_argument("--spare", type=int, default=SPARE, help="more while cores stand idle")
    options = parser.parse_args(args)
    ensure_system_tools(*((DOT, *SLURM) if options.quick else (DOT, CHROMIUM, *SLURM)))
    jobs = test_jobs(book_env(), options.jobs, quick=options.quick)
    shutil.rmtree(LOGS, ignore_errors=True)  # no report of an earlier run is read
    TMP.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        say(f"job {job.name}: {job.what}" if job.stages else f"job {job.name}: {job.detail}")
    try:
        stages = [s for job in jobs for s in job.stages or ()]
        run_stages(stages, lanes=options.lanes, spare=options.spare, logs=LOGS)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    for job in jobs:
        job.read_versions()
    return summarize(jobs, wall=time.perf_counter() - start, lanes=options.lanes)
