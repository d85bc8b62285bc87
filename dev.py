#!/usr/bin/env python3
"""mirrorbook's task runner. Needs only Python (3.11, 3.12 or 3.13) and pip to start.

    python3 dev.py book         set up, execute every chapter, build the HTML book, and
                                write the labs (student editions and autograders, build/labs/)
    python3 dev.py labs [CH..]  set up and write only the labs
    python3 dev.py grade CH NB..  grade submitted notebooks of chapter CH (e.g. 3) offline,
                                without Docker: a score per exercise, the checks' feedback
    python3 dev.py test         set up, then lint, doctests, unit and browser tests and nbval;
                                then the same tests on the other supported Pythons and at
                                the oldest supported TensorFlow (Colab's), and a summary
    python3 dev.py lock         refresh requirements/*.txt (uv pip compile), not part of CI
    python3 dev.py test-latest  run the tests against the newest releases on the package
                                index, ignoring the lock, and report what broke (not CI)

`python3 dev.py test --jobs reference` runs only the first job, `--quick` only its lint,
doctests and unit tests; the jobs' stages run side by side, `--lanes N` at once (default 3).
Set-up makes virtual environments (.venv for the book, .venvs/ for the other test jobs)
pinned by requirements/*.txt, reused until a lock or pyproject file changes, and installs
graphviz's `dot` (and, for the tests, Chromium) with apt-get when run as root. Everything
the book needs is read from jupyter_book.toml. This file only sets up and runs tasks; the
book's own logic is in bookbuild/ (README, "Developing").
"""

from __future__ import annotations

import argparse
import glob
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

# The book's logic (stdlib-only imports at the top, like this file): see bookbuild/__init__.py.
from bookbuild import ROOT
from bookbuild.checks import DOCTESTED, SUITE_PARTS, pytest_command
from bookbuild.lanes import Stage, run_stages
from bookbuild.manifest import load_manifest
from bookbuild.shell import CHILD_ENV, run, say
from bookbuild.tasks import TASKS, run_task
from bookbuild.timing import ALLOWANCES, report

VENV = ROOT / ".venv"
VENVS = ROOT / ".venvs"
PYPROJECTS = (ROOT / "pyproject.toml", ROOT / "widgets" / "pyproject.toml")

# The Pythons both distributions support (their requires-python says the same; a test checks).
PYTHONS = ("3.11", "3.12", "3.13")
# Every environment but the hosted one installs from LOCK: the newest supported TensorFlow and
# Keras, for all of PYTHONS. The hosted job installs from HOSTED_LOCK: what Colab preinstalls
# (the oldest supported TensorFlow/Keras), on HOSTED_PYTHON. `python3 dev.py lock` remakes both.
REQUIREMENTS = ROOT / "requirements"
LOCK = REQUIREMENTS / "lock.txt"
HOSTED_LOCK = REQUIREMENTS / "colab.txt"
HOSTED_PYTHON = "3.12"
UV = "uv==0.13.9"  # makes the lock files; only `dev.py lock` installs it
OUR_DISTRIBUTIONS = ("mirrorkit", "mirrorbook-widgets")  # installed from this tree, not locked


# ---------------------------------------------------------------- set-up (stdlib only)

# Programs the project needs from the system: (program, Debian package, what it is for).
DOT = ("dot", "graphviz", "graphviz's `dot` draws the topology diagrams")
CHROMIUM = ("chromium", "chromium", "Chromium runs the widgets' browser tests")


def can_apt_get() -> bool:
    return os.name == "posix" and os.geteuid() == 0 and bool(shutil.which("apt-get"))


def ensure_system_tools(*tools: tuple[str, str, str]) -> None:
    """Install missing programs with apt-get when we can; otherwise say which package to get."""
    missing = [tool for tool in tools if not shutil.which(tool[0])]
    if not missing:
        return
    packages = [package for _, package, _ in missing]
    if can_apt_get():
        say(f"installing the Debian package(s) {', '.join(packages)} (apt-get)")
        run("apt-get", "update", "-q")
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", *packages)
        return
    reasons = "; ".join(f"`{program}` is missing ({why})" for program, _, why in missing)
    names = " ".join(packages)
    raise SystemExit(
        f"[dev] {reasons}. Install the package(s) named {names} "
        f"(Debian/Ubuntu: sudo apt-get install {names}; macOS: brew install {names}; "
        f"conda: conda install -c conda-forge {names}), then run this command again."
    )


# ---- interpreters: found on this machine, or installed, or named as missing


def this_python() -> str:
    return f"{sys.version_info.major}.{sys.version_info.minor}"


def interpreter_version(executable: str | Path) -> str | None:
    """'3.12' for an interpreter that runs and can make virtual environments, else None."""
    probe = "import sys, venv, ensurepip; print('%d.%d' % sys.version_info[:2])"
    try:
        out = subprocess.run(
            [str(executable), "-c", probe], capture_output=True, text=True, timeout=60
        )
    except (OSError, subprocess.SubprocessError):
        return None
    return out.stdout.strip() if out.returncode == 0 else None


def interpreter_candidates(version: str) -> list[Path]:
    """Where a Python of this version may be: PATH, pyenv's and uv's folders, the usual places."""
    found = [Path(sys.executable)] if this_python() == version else []
    if on_path := shutil.which(f"python{version}"):
        found.append(Path(on_path))  # may be a pyenv shim that refuses: each is tried
    pyenv = Path(os.environ.get("PYENV_ROOT", Path.home() / ".pyenv")) / "versions"
    uv = Path(os.environ.get("UV_PYTHON_INSTALL_DIR", Path.home() / ".local/share/uv/python"))
    patterns = (
        f"{pyenv}/{version}.*/bin/python{version}",
        f"{uv}/cpython-{version}.*/bin/python{version}",
    )
    for pattern in patterns:
        by_patch = sorted(glob.glob(pattern), key=lambda p: [int(n) for n in re.findall(r"\d+", p)])
        found += [Path(p) for p in reversed(by_patch)]
    found += [Path(d) / f"python{version}" for d in ("/usr/local/bin", "/usr/bin")]
    return list(dict.fromkeys(found))


def find_python(version: str, *, install: bool = True) -> tuple[Path | None, str]:
    """A Python `version` interpreter, installing one if none is found; else (None, why)."""
    for candidate in interpreter_candidates(version):
        if interpreter_version(candidate) == version:
            return candidate, f"found {candidate}"
    tried = [f"python{version} on PATH, pyenv's and uv's folders, /usr/local/bin, /usr/bin"]
    if install:
        for installer in (install_python_with_apt, install_python_with_uv):
            outcome = installer(version)
            tried.append(outcome)
            for candidate in interpreter_candidates(version):
                if interpreter_version(candidate) == version:
                    return candidate, f"installed: {outcome}"
    return None, "no interpreter: looked at " + "; ".join(tried)


def install_python_with_apt(version: str) -> str:
    packages = [f"python{version}", f"python{version}-venv"]
    if not can_apt_get():
        return "apt-get: not available (needs root and apt-get)"
    known = subprocess.run(["apt-cache", "show", *packages], capture_output=True, timeout=120)
    if known.returncode:
        return f"apt-get: this system's package lists have no {packages[0]}"
    done = subprocess.run(
        ["apt-get", "install", "-y", "-q", *packages], capture_output=True, timeout=900
    )
    return "apt-get install " + " ".join(packages) + (" failed" if done.returncode else "")


def install_python_with_uv(version: str) -> str:
    try:
        uv = tool("uv")
        done = subprocess.run(
            [uv, "python", "install", version], capture_output=True, text=True, timeout=300
        )
    except (OSError, subprocess.SubprocessError, SystemExit) as error:
        return f"uv python install {version}: {error}"
    if done.returncode:
        last = (done.stderr.strip().splitlines() or ["failed"])[-1]
        return f"uv python install {version}: {last.strip()}"
    return f"uv python install {version}"


def tool(name: str) -> Path:
    """A command-line tool from the pinned tools environment (.venvs/tools), made on first use."""
    env = Env(VENVS / "tools", Path(sys.executable), None, (UV,))
    ensure_env(env)
    return env.bin(name)


# ---- virtual environments, pinned by a lock file


@dataclass(frozen=True)
class Env:
    """A virtual environment: where, made by which interpreter, pinned by which lock."""

    path: Path
    interpreter: Path
    lock: Path | None
    packages: tuple[str, ...] = field(
        default=("-e", f"{ROOT}[book,test]", "-e", f"{ROOT / 'widgets'}[test]")
    )

    def bin(self, name: str) -> Path:
        return self.path / ("Scripts" if os.name == "nt" else "bin") / name

    @property
    def python(self) -> Path:
        return self.bin("python.exe" if os.name == "nt" else "python")

    def pip(self, *args, constrained: bool = True) -> None:
        lock = ["-c", self.lock] if constrained and self.lock else []
        run(self.python, "-m", "pip", "install", "--disable-pip-version-check", "-q", *lock, *args)

    def dev(self, *args, env: dict | None = None) -> None:
        """Run one of dev.py's tasks with this environment's Python."""
        run(self.python, ROOT / "dev.py", *args, env=env or {})


def ensure_env(env: Env, *, fresh: bool = False) -> None:
    """Create `env` and install its packages as the lock pins them, unless already so."""
    version = interpreter_version(env.interpreter)
    inputs = [env.lock.read_bytes() if env.lock else b"", *(p.read_bytes() for p in PYPROJECTS)]
    digest = hashlib.sha256(b"".join(inputs) + repr((version, env.packages)).encode()).hexdigest()
    stamp = env.path / ".mirrorbook-installed"
    if not fresh and stamp.exists() and stamp.read_text() == digest:
        return
    if fresh or (env.python.exists() and interpreter_version(env.python) != version):
        shutil.rmtree(env.path, ignore_errors=True)
    if not env.python.exists():
        say(f"creating {env.path.relative_to(ROOT)} with Python {version} ({env.interpreter})")
        run(env.interpreter, "-m", "venv", env.path)
    say(f"installing into {env.path.relative_to(ROOT)} (first run: a few minutes)")
    if env.lock:
        env.pip("pip", "setuptools")  # the lock's own versions of the installers first
    if env.packages:
        env.pip("--no-build-isolation", *env.packages)
    stamp.write_text(digest)


def book_env() -> Env:
    """.venv: the book's environment, made by this Python if supported, else another one."""
    interpreter = Path(sys.executable)
    if this_python() not in PYTHONS:
        found = [find_python(v, install=False)[0] for v in PYTHONS]
        usable = [p for p in found if p]
        if not usable:
            raise SystemExit(
                f"[dev] mirrorbook supports Python {', '.join(PYTHONS)}; this is "
                f"{sys.version.split()[0]} and none of them was found. Install one "
                "(python.org, your system's packages, pyenv or uv) and run this command with it."
            )
        interpreter = usable[0]
        say(f"Python {this_python()} is not supported; using {interpreter}")
    return Env(VENV, interpreter, LOCK)


def setup(*tools: tuple[str, str, str]) -> Env:
    ensure_system_tools(*tools)
    env = book_env()
    ensure_env(env)
    return env


# ---------------------------------------------------------------- the test jobs (stdlib only)

# Each job is a list of stages (bookbuild.lanes): its set-up, then lint, doctests, the parts of
# the test suite (bookbuild.checks.SUITE_PARTS), nbval. Stages of every job run side by side,
# LANES at a time; each writes its log and JUnit report to LOGS.
LOGS = ROOT / "test-artifacts" / "test-logs"
TMP = Path(tempfile.gettempdir()) / f"mirrorbook-test-{os.getpid()}"  # the stages' tmp_path
TIMES = ROOT / "test-artifacts" / "test-times.json"
LANES = 3  # the suite waits on kernels, clusters and a browser about half of the time
UNIT_SHARDS = 2  # the unit tests are the longest part: two stages, balanced by durations.json
# The chapters executed at other replica counts, the labs' grading and the browser tests (the
# same JupyterLab, Chromium and built pages whatever the kernel's Python) need one job, not
# three.
OTHER_JOBS_SKIP = "replica_counts or grading or browser"
OTHER_JOBS_PARTS = ("unit tests", "chapters")  # the parts of SUITE_PARTS left after the skip
# Other jobs run each chapter's "Run All" once before its solutions (tests/book/test_rerun.py);
# running it a second time in the same kernel tests re-running, which the reference job does.
OTHER_JOBS_ENV = {"MIRRORBOOK_RUN_ALL": "1"}


@dataclass
class Job:
    """One part of `dev.py test`: its stages, and how they went."""

    name: str
    what: str
    stages: list[Stage] | None = None  # None: the job cannot run here
    env: Env | None = None
    detail: str = ""
    versions: str = "-"

    @property
    def result(self) -> str:
        if self.stages is None:
            return "NOT RUN"
        return "passed" if all(s.result == "passed" for s in self.stages) else "FAILED"

    @property
    def seconds(self) -> float:
        """From its first stage's start to its last stage's end."""
        ran = [s for s in self.stages or () if s.seconds]
        return max(s.started + s.seconds for s in ran) - min(s.started for s in ran) if ran else 0

    def read_versions(self) -> None:
        if self.env and self.env.python.exists():
            out = subprocess.run(
                [self.env.python, ROOT / "dev.py", "_versions"], capture_output=True, text=True
            )
            self.versions = out.stdout.strip() or "-"


def weight(job: str, kind: str) -> float:
    """A stage's expected seconds (its allowance): the longest start first."""
    return ALLOWANCES.get((job, kind), max(v for (_, k), v in ALLOWANCES.items() if k == kind))


def suite_stages(job: str, env: Env, parts, *, after: str, skip: str = "", **env_vars) -> list:
    """A stage per part of the test suite (the unit tests in UNIT_SHARDS shards)."""
    stages = []
    for part in parts:
        count = UNIT_SHARDS if part == "unit tests" else 1
        for index in range(1, count + 1):
            name = part if count == 1 else f"{part} {index}/{count}"
            stage = Stage(job, name, print, after=(after,), weight=weight(job, part) / count)
            args = [part, "--shard", f"{index}/{count}", *(["--skip", skip] if skip else [])]
            args += [f"--junitxml={LOGS / stage.stem}.xml", f"--basetemp={TMP / stage.stem}"]
            stage.action = lambda args=args: env.dev("_suite", *args, env=env_vars)
            stages.append(stage)
    return stages


def checked_stage(job: str, env: Env, name: str, task: str, *args: str, after: str, **env_vars):
    """A stage running one dev.py task with a JUnit report (lint, doctests, nbval)."""
    stage = Stage(job, name, print, after=(after,), weight=weight(job, name))
    junit = [f"--junitxml={LOGS / stage.stem}.xml"] if name != "lint" else []
    stage.action = lambda: env.dev(task, *args, *junit, env=env_vars)
    return stage


def test_jobs(book: Env, only: set[str] | None = None, quick: bool = False) -> list[Job]:
    """The reference job, one job per other supported Python, and the hosted (Colab) job."""
    reference = interpreter_version(book.interpreter)
    parts = ("unit tests",) if quick else tuple(SUITE_PARTS)
    stages = [
        Stage(
            "reference", "set-up", lambda: ensure_env(book), weight=weight("reference", "set-up")
        ),
        checked_stage("reference", book, "lint", "_lint", after="set-up"),
        checked_stage("reference", book, "doctests", "_doctests", after="set-up"),
        *suite_stages("reference", book, parts, after="set-up"),
    ]
    if not quick:
        stages.append(checked_stage("reference", book, "nbval", "_nbval", after="set-up"))
    what = f"Python {reference}, lock.txt: lint, doctests, tests, nbval strict"
    jobs = [Job("reference", what if not quick else "lint, doctests, unit tests", stages, book)]
    if not quick:
        for version in PYTHONS:
            if version not in (reference, HOSTED_PYTHON):
                jobs.append(python_job(version))
        jobs.append(hosted_job())
    for job in jobs:
        if only is not None and job.name not in only:
            job.stages, job.detail = None, "not asked for (--jobs)"
    return jobs


def python_job(version: str) -> Job:
    name = f"python{version}"
    what = f"Python {version}, lock.txt: doctests, tests (each chapter once)"
    interpreter, how = find_python(version)
    if interpreter is None:
        return Job(name, what, None, detail=f"Python {version}: {how}")
    env = Env(VENVS / name, interpreter, LOCK)
    stages = [
        Stage(name, "set-up", lambda: ensure_env(env), weight=weight(name, "set-up")),
        checked_stage(name, env, "doctests", "_doctests", after="set-up"),
        *suite_stages(
            name, env, OTHER_JOBS_PARTS, after="set-up", skip=OTHER_JOBS_SKIP, **OTHER_JOBS_ENV
        ),
    ]
    return Job(name, what, stages, env)


def summarize(jobs: list[Job], wall: float = 0.0, lanes: int = LANES) -> int:
    """Print the jobs, the stage table and the slowest tests; 1 if any job failed."""
    rows = [("job", "Python TF Keras", "result", "time", "what")]
    for job in jobs:
        minutes = f"{job.seconds / 60:.1f} min" if job.seconds else "-"
        rows.append((job.name, job.versions, job.result, minutes, job.what))
    widths = [max(len(row[i]) for row in rows) for i in range(4)]
    say("summary")
    for row in rows:
        print(
            "  "
            + "  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=False))
            + "  "
            + row[4]
        )
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


# ---- the hosted job: a notebook opened alone where only TensorFlow is installed (Colab)

# What the hosted environment holds before any chapter runs, as Colab has it (versions from
# HOSTED_LOCK): TensorFlow and Keras at the low end of mirrorkit's range, the libraries the
# widgets draw with, and a kernel to run notebooks. mirrorkit is not there: each chapter's
# set-up cell must install it. COLAB_WIDGETS are Colab's own, which that install replaces.
HOSTED_BASE = (
    *("tensorflow", "keras", "numpy", "matplotlib", "traitlets", "cloudpickle", "graphviz"),
    *("protobuf", "h5py", "ipykernel", "nbclient", "nbformat"),
)
COLAB_WIDGETS = ("ipywidgets==7.7.1", "widgetsnbextension==3.6.10")


def hosted_job() -> Job:
    what = (
        f"Python {HOSTED_PYTHON}, colab.txt (Colab's TensorFlow and Keras): each chapter alone, "
        "its set-up cell installing mirrorkit from a clone of this tree; doctests, tests"
    )
    interpreter, how = find_python(HOSTED_PYTHON)
    if interpreter is None:
        return Job("hosted", what, None, detail=f"Python {HOSTED_PYTHON}: {how}")
    env = Env(VENVS / "hosted", interpreter, HOSTED_LOCK, HOSTED_BASE)

    def set_up() -> None:
        ensure_env(env, fresh=True)  # fresh: the set-up cell must find mirrorkit missing
        env.pip("--no-deps", *COLAB_WIDGETS, constrained=False)

    def execute() -> None:
        with tempfile.TemporaryDirectory(prefix="mirrorbook-hosted-") as tmp:
            source = clone_of_this_tree(Path(tmp) / "clone")
            book = Path(tmp) / "notebooks"
            book.mkdir()
            env.dev(
                "_execute",
                "--into",
                book,
                env={"MIRRORBOOK_SOURCE": source, "PIP_CONSTRAINT": str(HOSTED_LOCK)},
            )
            check_hosted_setup(book)

    def test_tools() -> None:  # after the chapters: their set-up cells must find none of it
        env.pip(*(r for p in PYPROJECTS for r in optional_requirements(p, "book", "test")))

    stages = [
        Stage("hosted", "set-up", set_up, weight=weight("hosted", "set-up")),
        Stage(
            "hosted",
            "hosted execution",
            execute,
            after=("set-up",),
            weight=weight("hosted", "hosted execution"),
        ),
        Stage(
            "hosted",
            "set-up of the test tools",
            test_tools,
            after=("hosted execution",),
            kind="set-up",
            weight=60,
        ),
        checked_stage("hosted", env, "doctests", "_doctests", after="set-up of the test tools"),
        *suite_stages(
            "hosted",
            env,
            OTHER_JOBS_PARTS,
            after="set-up of the test tools",
            skip=OTHER_JOBS_SKIP,
            **OTHER_JOBS_ENV,
        ),
    ]
    return Job("hosted", what, stages, env)


def optional_requirements(pyproject: Path, *extras: str) -> list[str]:
    with open(pyproject, "rb") as f:
        optional = tomllib.load(f)["project"].get("optional-dependencies", {})
    return [requirement for extra in extras for requirement in optional.get(extra, [])]


def clone_of_this_tree(target: Path) -> str:
    """A git clone of this working tree, uncommitted changes included; its pip source URL."""
    subprocess.run(["git", "clone", "-q", "--no-local", ROOT, target], check=True)
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source, copy = ROOT / name, target / name
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
        elif copy.exists():
            copy.unlink()  # deleted in the working tree
    git = ["git", "-c", "user.name=dev.py", "-c", "user.email=dev@localhost"]
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "working tree"], cwd=target, check=True
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=target, capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"git+{target.as_uri()}@{commit}"


def check_hosted_setup(folder: Path) -> None:
    """The first chapter's set-up cell installed mirrorkit and left TensorFlow alone."""
    first = load_manifest()["chapters"][0]
    nb = json.loads((folder / first["path"].name).read_text())
    cell = next(c for c in nb["cells"] if "hosted-setup" in c["metadata"].get("tags", []))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    say(f"the set-up cell of {first['file']} printed: {text.strip()}")
    if "are installed" not in text or "pip changed" in text or "Restart" in text:
        raise SystemExit(
            "[dev] the hosted set-up did not install mirrorkit cleanly: a Colab learner would "
            f"have to restart or would lose Colab's TensorFlow. It printed: {text.strip()!r}"
        )


# ---- refreshing the locks, and trying the newest releases (neither is part of CI)

LOCKS = (  # (input, output, Python, universal: one lock for every Python in PYTHONS)
    (REQUIREMENTS / "lock.in", LOCK, PYTHONS[0], True),
    (REQUIREMENTS / "colab.in", HOSTED_LOCK, HOSTED_PYTHON, False),
)


def lock() -> None:
    """Re-resolve requirements/*.txt to the newest releases their inputs allow."""
    uv = tool("uv")
    for source, target, python, universal in LOCKS:
        run(
            uv,
            "pip",
            "compile",
            "--quiet",
            "--upgrade",
            source.relative_to(ROOT),
            "-o",
            target.relative_to(ROOT),
            "--python-version",
            python,
            *(["--universal"] if universal else []),
            *(arg for name in OUR_DISTRIBUTIONS for arg in ("--no-emit-package", name)),
            "--custom-compile-command",
            "python3 dev.py lock",
        )
        say(f"wrote {target.relative_to(ROOT)}")


def test_latest(book: Env) -> int:
    """Install the newest release of every dependency (our caps ignored), test, report."""
    env = Env(VENVS / "latest", book.interpreter, None, ())
    ensure_env(env, fresh=True)
    names = sorted(
        {
            re.split(r"[\s<>=!~;\[]", requirement, maxsplit=1)[0]
            for pyproject in PYPROJECTS
            for requirement in [
                *tomllib.loads(pyproject.read_text())["project"]["dependencies"],
                *optional_requirements(pyproject, "book", "test"),
            ]
        }
        - set(OUR_DISTRIBUTIONS)
    )
    env.pip("--upgrade", "pip", "setuptools", *names)
    env.pip("--no-deps", "--no-build-isolation", "-e", ROOT, "-e", ROOT / "widgets")
    ensure_env(book)  # what the lock gives this Python, to compare with

    def installed(python: Path) -> dict[str, str]:
        listed = subprocess.run(
            [python, "-m", "pip", "list", "--format=freeze"], capture_output=True, text=True
        ).stdout
        found = re.findall(r"^([\w.-]+)==(\S+)", listed, re.M)
        return {re.sub(r"[-_.]+", "-", name).lower(): version for name, version in found}

    pinned = installed(book.python)
    newer = [
        f"{name} {pinned[name]} -> {version}"
        for name, version in installed(env.python).items()
        if name in pinned and pinned[name] != version
    ]
    broke = []
    with tempfile.TemporaryDirectory(prefix="mirrorbook-latest-") as tmp:
        for label, args in (("doctests", ["--doctest-modules", *DOCTESTED]), ("tests", ["tests"])):
            report = Path(tmp) / f"{label}.xml"
            subprocess.run(
                pytest_command("-q", *args, f"--junitxml={report}", python=env.python),
                cwd=ROOT,
                env={**os.environ, **CHILD_ENV},
            )
            broke += failures_in(report, label)
        try:  # every chapter, errors allowed: prints each claim that changed
            env.dev("_claims", "--into", tmp)
        except SystemExit:
            broke.append("claims: some no longer hold, or a chapter failed (listed above)")
    python = interpreter_version(book.interpreter)
    say(f"newest releases against requirements/lock.txt (Python {python}):")
    print("\n".join(f"  {line}" for line in newer) or "  (nothing newer than the lock)")
    say("what broke:" if broke else "nothing broke")
    print("\n".join(f"  {line}" for line in broke))
    return 1 if broke else 0


def failures_in(junit_xml: Path, label: str) -> list[str]:
    import xml.etree.ElementTree as ET

    if not junit_xml.exists():
        return [f"{label}: pytest wrote no report (it could not start; output above)"]
    broke = []
    for case in ET.parse(junit_xml).iter("testcase"):
        for problem in (*case.iter("failure"), *case.iter("error")):
            message = (problem.get("message") or "").splitlines()[:1]
            broke.append(
                f"{label}: {case.get('classname')}::{case.get('name')}: {''.join(message)}"
            )
    return broke


# ---------------------------------------------------------------- the commands


def test(args: list[str], start: float) -> int:
    """`dev.py test [--jobs A,B] [--quick] [--lanes N]`: every job's stages, side by side."""
    parser = argparse.ArgumentParser(prog="python3 dev.py test")
    parser.add_argument("--jobs", type=lambda text: set(text.split(",")), default=None)
    parser.add_argument("--quick", action="store_true", help="lint, doctests, unit tests")
    parser.add_argument("--lanes", type=int, default=LANES, help="stages at once")
    options = parser.parse_args(args)
    ensure_system_tools(DOT) if options.quick else ensure_system_tools(DOT, CHROMIUM)
    jobs = test_jobs(book_env(), options.jobs, quick=options.quick)
    shutil.rmtree(LOGS, ignore_errors=True)  # no report of an earlier run is read
    TMP.mkdir(parents=True, exist_ok=True)
    for job in jobs:
        say(f"job {job.name}: {job.what}" if job.stages else f"job {job.name}: {job.detail}")
    try:
        run_stages([s for job in jobs for s in job.stages or ()], lanes=options.lanes, logs=LOGS)
    finally:
        shutil.rmtree(TMP, ignore_errors=True)
    for job in jobs:
        job.read_versions()
    return summarize(jobs, wall=time.perf_counter() - start, lanes=options.lanes)


def main(argv: list[str]) -> None:
    command, args = (argv[1] if len(argv) > 1 else "help"), argv[2:]
    start = time.perf_counter()
    if command in TASKS:  # internal: run inside an environment by the commands below
        run_task(command, args)
        return
    status = 0
    if command == "book":
        book = setup(DOT)
        book.dev("_execute")
        book.dev("_html")
        book.dev("_labs")
    elif command == "labs":
        setup().dev("_labs", *args)
    elif command == "grade":
        setup().dev("_grade", *args)
    elif command == "test":
        status = test(args, start)
    elif command == "lock":
        lock()
    elif command == "test-latest":
        status = test_latest(setup(DOT, CHROMIUM))
    else:
        print(__doc__)
        raise SystemExit(0 if command in ("help", "-h", "--help") else 2)
    say(f"{command}: done in {time.perf_counter() - start:.0f} s")
    raise SystemExit(status)


if __name__ == "__main__":
    main(sys.argv)
