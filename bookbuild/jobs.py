"""The test jobs of ``dev.py test``: each one an environment and its stages.

A job is a list of stages (:mod:`bookbuild.lanes`): its set-up, then lint, doctests, the
parts of the test suite (:data:`bookbuild.checks.SUITE_PARTS`), nbval. Each stage runs one
internal ``dev.py _...`` task (:mod:`bookbuild.tasks`) with the job's Python and writes its
log and JUnit report to :data:`LOGS`. The hosted job is in :mod:`bookbuild.hosted`.

Example:
    >>> from bookbuild.environments import book_env
    >>> job = reference_job(book_env(), quick=True)
    >>> [stage.name for stage in job.stages]
    ['set-up', 'lint', 'doctests', 'unit tests 1/2', 'unit tests 2/2']
"""

from __future__ import annotations

import os
import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from bookbuild import ROOT, built
from bookbuild.checks import SUITE_PARTS
from bookbuild.environments import LOCK, VENVS, Env, ensure_env, find_python
from bookbuild.lanes import Stage
from bookbuild.system import interpreter_version
from bookbuild.timing import ALLOWANCES, EXPECTED

LOGS = ROOT / "test-artifacts" / "test-logs"
TMP = Path(tempfile.gettempdir()) / f"mirrorbook-test-{os.getpid()}"  # the stages' tmp_path
UNIT_SHARDS = 2  # the unit tests are the longest part: two stages, balanced by durations.json
# The HTML book, its lab site and the labs, built once per run by the reference job's build
# stage (bookbuild.built); the parts of the suite whose tests read them wait for it.
BUILT = TMP / "built"
BUILD = "reference/build"
READS_BUILT = ("chapters", "grading", "browser")
# The chapters executed at other replica counts, the labs (built by dev.py in the book's
# environment, then graded) and the browser tests (the same JupyterLab, Chromium and built
# pages whatever the kernel's Python) and the real Slurm's job (the workers' Python is the
# job's own; what it tests is the scheduler's side) need one job, not three.
OTHER_JOBS_SKIP = "replica_counts or grading or browser or slurm"
OTHER_JOBS_PARTS = ("unit tests", "chapters")  # the parts of SUITE_PARTS left after the skip
# Other jobs run each chapter's "Run All" once before its solutions (tests/book/test_rerun.py);
# running it a second time in the same kernel tests re-running, which the reference job does.
OTHER_JOBS_ENV = {"MIRRORBOOK_RUN_ALL": "1"}
# Where a job already runs every chapter and then its solutions in one kernel (the reference
# job's nbval stage, the hosted job's execution), tests/book/test_rerun.py would run them again.
RUN_ALL_ELSEWHERE = "run_all"
# Doctests whose examples run what only the book's environment runs: the HTML book is built
# there alone (dev.py book, the build stage), by the Jupyter Book every lock pins alike. The
# reference job runs them; in the other jobs they would build a two-page book again.
BOOK_ENV_DOCTESTS = ("bookbuild/jupyterbook.py::bookbuild.jupyterbook.build_html",)
# Colab's classic front end (Notebook 6 with ipywidgets 7: tests/browser/test_notebook6.py) is
# in the hosted job's environment only; the lock's have ipywidgets 8 and no Notebook 6.
HOSTED_ONLY = "browser_classic"
# Tests whose meaning changes with TensorFlow's and Keras's versions, not Python's: the other
# Python's job has the reference's versions, so it leaves them to the reference job.
PER_KERAS = "per_keras"


@dataclass
class Job:
    """One part of ``dev.py test``: its stages, and how they went.

    Attributes:
        name: ``reference``, ``python3.13``, ``hosted``.
        what: One line saying what it tests, for the summary.
        stages: Its stages; None if the job cannot run here.
        env: Its environment.
        detail: Why it did not run, if it did not.
        versions: Its Python, TensorFlow and Keras versions, once read.
    """

    name: str
    what: str
    stages: list[Stage] | None = None  # None: the job cannot run here
    env: Env | None = None
    detail: str = ""
    versions: str = "-"

    @property
    def result(self) -> str:
        """``passed``, ``FAILED`` or ``NOT RUN``."""
        if self.stages is None:
            return "NOT RUN"
        return "passed" if all(s.result == "passed" for s in self.stages) else "FAILED"

    @property
    def seconds(self) -> float:
        """From its first stage's start to its last stage's end."""
        ran = [s for s in self.stages or () if s.seconds]
        return max(s.started + s.seconds for s in ran) - min(s.started for s in ran) if ran else 0

    def read_versions(self) -> None:
        """Ask its environment's Python for its Python, TensorFlow and Keras versions."""
        if self.env and self.env.python.exists():
            out = subprocess.run(
                [self.env.python, ROOT / "dev.py", "_versions"], capture_output=True, text=True
            )
            self.versions = out.stdout.strip() or "-"


def weight(job: str, kind: str) -> float:
    """A stage's expected seconds: the longest chain starts first.

    What it took in the last full run on a machine like CI's (:data:`EXPECTED`), else its
    allowance.

    Args:
        job: The job's name.
        kind: The stage's kind; a job with neither for it gets the largest of that kind.

    Example:
        >>> weight("reference", "lint"), weight("hosted", "unit tests")
        (1, 2875)
        >>> weight("python3.99", "doctests")
        171
    """
    for table in (EXPECTED, ALLOWANCES):
        if (job, kind) in table:
            return table[job, kind]
    known = [v for table in (EXPECTED, ALLOWANCES) for (_, k), v in table.items() if k == kind]
    return max(known)


def suite_stages(
    job: str, env: Env, parts, *, after: str, skip: str = "", shared: bool = False, **env_vars
) -> list:
    """A stage per part of the test suite (the unit tests in UNIT_SHARDS shards).

    Args:
        job: The job's name.
        env: Its environment.
        parts: Names of :data:`bookbuild.checks.SUITE_PARTS`.
        after: The stage they wait for.
        skip: A marker expression of tests to leave out.
        shared: Whether this run has the build stage (:data:`BUILD`): the parts in
            :data:`READS_BUILT` then wait for it and read what it built.
        **env_vars: Variables set for the tests.

    Example:
        >>> from bookbuild.environments import book_env
        >>> [s.name for s in suite_stages("j", book_env(), ["chapters"], after="set-up")]
        ['chapters']
        >>> suite_stages("j", book_env(), ["chapters"], after="set-up", shared=True)[0].needs
        ('reference/build',)
    """
    stages = []
    for part in parts:
        count = UNIT_SHARDS if part == "unit tests" else 1
        reads = shared and part in READS_BUILT
        variables = {**env_vars, built.VARIABLE: str(BUILT)} if reads else env_vars
        for index in range(1, count + 1):
            name = part if count == 1 else f"{part} {index}/{count}"
            needs = (BUILD,) if reads else ()
            stage = Stage(
                job, name, print, after=(after,), needs=needs, weight=weight(job, part) / count
            )
            args = [part, "--shard", f"{index}/{count}", *(["--skip", skip] if skip else [])]
            args += [f"--junitxml={LOGS / stage.stem}.xml", f"--basetemp={TMP / stage.stem}"]
            stage.action = lambda args=args, v=variables: env.dev("_suite", *args, env=v)
            stages.append(stage)
    return stages


def checked_stage(job: str, env: Env, name: str, task: str, *args: str, after: str, **env_vars):
    """A stage running one dev.py task: lint, the build, doctests and nbval (these two report).

    Example:
        >>> from bookbuild.environments import book_env
        >>> checked_stage("j", book_env(), "nbval", "_nbval", after="set-up").after
        ('set-up',)
    """
    stage = Stage(job, name, print, after=(after,), weight=weight(job, name))
    junit = [f"--junitxml={LOGS / stage.stem}.xml"] if task in ("_doctests", "_nbval") else []
    stage.action = lambda: env.dev(task, *args, *junit, env=env_vars)
    return stage


def doctest_stage(job: str, env: Env, *, after: str) -> Stage:
    """The doctests of a job other than the reference one: all but :data:`BOOK_ENV_DOCTESTS`.

    Example:
        >>> from bookbuild.environments import book_env
        >>> doctest_stage("python3.12", book_env(), after="set-up").name
        'doctests'
    """
    left_out = [arg for test in BOOK_ENV_DOCTESTS for arg in ("--deselect", test)]
    return checked_stage(job, env, "doctests", "_doctests", *left_out, after=after)


def reference_job(book: Env, *, quick: bool = False) -> Job:
    """The book's environment: lint, doctests, the whole suite and nbval (or, quick, less).

    Args:
        book: The book's environment.
        quick: Only lint, doctests and the unit tests.

    Example:
        >>> from bookbuild.environments import book_env
        >>> [s.name for s in reference_job(book_env()).stages][-2:]
        ['nbval', 'build']
    """
    parts = ("unit tests",) if quick else tuple(SUITE_PARTS)
    stages = [
        Stage(
            "reference", "set-up", lambda: ensure_env(book), weight=weight("reference", "set-up")
        ),
        checked_stage("reference", book, "lint", "_lint", after="set-up"),
        checked_stage("reference", book, "doctests", "_doctests", after="set-up"),
        *suite_stages(
            "reference",
            book,
            parts,
            after="set-up",
            skip=f"{RUN_ALL_ELSEWHERE} or {HOSTED_ONLY}",
            shared=not quick,
        ),
    ]
    if not quick:
        stages.append(checked_stage("reference", book, "nbval", "_nbval", after="set-up"))
        stages.append(
            checked_stage("reference", book, "build", "_built", str(BUILT), after="set-up")
        )
    reference = interpreter_version(book.interpreter)
    what = f"Python {reference}, lock.txt: lint, doctests, tests, nbval strict"
    what = what if not quick else "lint, doctests, unit tests"
    return Job(name="reference", what=what, stages=stages, env=book)


def python_job(
    version: str, parts: tuple[str, ...] = OTHER_JOBS_PARTS, *, shared: bool = False
) -> Job:
    """Another supported Python at the lock: doctests, the unit tests and the chapters.

    Args:
        version: ``"3.13"``; an interpreter is found or installed (:func:`find_python`).
        parts: The parts of the test suite it runs: only ``("chapters",)`` on the hosted
            job's Python, whose job runs the unit tests there (at Colab's TensorFlow).
        shared: Whether the reference job's build stage runs (:func:`suite_stages`).

    Example:
        >>> python_job("3.99").detail  # doctest: +SKIP
        "Python 3.99: no interpreter: looked at python3.99 on PATH, ..."
    """
    name = f"python{version}"
    tests = "tests (each chapter once)" if "unit tests" in parts else "each chapter once"
    what = f"Python {version}, lock.txt: doctests, {tests}"
    interpreter, how = find_python(version)
    if interpreter is None:
        return Job(name=name, what=what, detail=f"Python {version}: {how}")
    env = Env(path=VENVS / name, interpreter=interpreter, lock=LOCK)
    stages = [
        Stage(name, "set-up", lambda: ensure_env(env), weight=weight(name, "set-up")),
        doctest_stage(name, env, after="set-up"),
        *suite_stages(
            name,
            env,
            parts,
            after="set-up",
            skip=f"{OTHER_JOBS_SKIP} or {HOSTED_ONLY} or {PER_KERAS}",
            shared=shared,
            **OTHER_JOBS_ENV,
        ),
    ]
    return Job(name=name, what=what, stages=stages, env=env)
