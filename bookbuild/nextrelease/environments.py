"""test-next's environments: which Pythons, each Keras, and what each run gives.

Example:
    >>> keras_release_requirements(["numpy>=1.26.0", "keras-nightly>=3.12.0.dev"])
    ['numpy>=1.26.0', 'keras']
"""

from __future__ import annotations

import json
import re
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from bookbuild import ROOT
from bookbuild.environments import PYTHONS, VENVS, Env
from bookbuild.jobs import OTHER_JOBS_ENV, OTHER_JOBS_PARTS, OTHER_JOBS_SKIP
from bookbuild.locks import (
    check_environment,
    dependency_requirements,
    doctests_command,
    fresh_env,
    install_ours,
    installed,
    requirement_name,
)
from bookbuild.manifest import load_manifest
from bookbuild.nextrelease.issue import ISSUE, issue_claim, issue_verdict

KERAS_MODES = ("keras-nightly", "keras-release")  # TensorFlow's own Keras, or the release
# Prints TensorFlow's Requires-Dist lines, one a line, in an environment.
REQUIRES = "import importlib.metadata as m; print(*m.requires('tensorflow'), sep='\\n')"


@dataclass
class Outcome:
    """What one environment of ``test-next`` gave.

    Attributes:
        python: ``"3.13"``.
        mode: One of :data:`KERAS_MODES`.
        versions: ``python``, ``tensorflow`` and ``keras`` (with its distribution's name).
        broke: One line per failed test, changed claim or failed set-up.
        claims: The changed claims alone.
        issue: The :data:`ISSUE` line, read from its claim cell's result.
        seconds: Wall seconds, set-up included.
    """

    python: str
    mode: str
    versions: dict[str, str] = field(default_factory=dict)
    broke: list[str] = field(default_factory=list)
    claims: list[str] = field(default_factory=list)
    issue: str = f"{ISSUE}: not checked (no environment)"
    seconds: float = 0.0


def plan_pythons(
    pythons: list[str], asked: list[str] | None
) -> tuple[list[str], list[tuple[str, str]]]:
    """Which Pythons to try, and why each other one is not run.

    Args:
        pythons: The Pythons the release has wheels for here.
        asked: The Pythons named with ``--python``, or None for all.

    Example:
        >>> plan_pythons(["3.10", "3.13", "3.14"], ["3.13", "3.9"])[0]
        ['3.13']
        >>> for python, why in plan_pythons(["3.10", "3.13", "3.14"], ["3.13", "3.9"])[1]:
        ...     print(python, why)
        3.10 older than every Python the book supports (3.11, 3.12, 3.13)
        3.14 not asked for (--python 3.13 3.9)
        3.9 the release has no wheel for it on this platform
    """
    oldest = [int(n) for n in PYTHONS[0].split(".")]
    run, skipped = [], []
    for python in pythons:
        if [int(n) for n in python.split(".")] < oldest:
            why = f"older than every Python the book supports ({', '.join(PYTHONS)})"
            skipped.append((python, why))
        elif asked and python not in asked:
            skipped.append((python, f"not asked for (--python {' '.join(asked)})"))
        else:
            run.append(python)
    skipped += [
        (p, "the release has no wheel for it on this platform")
        for p in asked or []
        if p not in pythons
    ]
    return run, skipped


def keras_release_requirements(requires: list[str]) -> list[str]:
    """TensorFlow's requirements with the newest keras release in place of keras-nightly.

    Args:
        requires: TensorFlow's ``Requires-Dist`` lines.

    Example:
        >>> keras_release_requirements(["numpy>=1.26.0", "keras-nightly>=3.12.0.dev",
        ...     'nvidia-nccl-cu12<3.0; extra == "and-cuda"'])
        ['numpy>=1.26.0', 'keras']
    """
    kept = [
        r
        for r in requires
        if "extra ==" not in r and not re.match(r"keras[-_.]nightly\b", r, re.IGNORECASE)
    ]
    return [*kept, "keras"]


def next_env(python: str, interpreter: Path, tensorflow: str, mode: str) -> Env:
    """A fresh ``.venvs/next-<python>-<mode>``: TensorFlow, one Keras, the tools, this tree.

    Args:
        python: ``"3.13"``.
        interpreter: The Python that makes it.
        tensorflow: The TensorFlow version.
        mode: ``keras-nightly`` (what TensorFlow's metadata asks for) or ``keras-release``
            (TensorFlow without its dependencies, then them with ``keras`` instead).

    Example:
        >>> next_env("3.13", Path("/usr/bin/python3.13"), "2.22.0rc0", "keras-release")  # doctest: +SKIP
    """  # noqa: E501
    env = fresh_env(VENVS / f"next-{python}-{mode}", interpreter)
    # The tools within the book's own ranges: only TensorFlow and Keras go above them.
    tools = [
        r for r in dependency_requirements() if requirement_name(r) not in ("tensorflow", "keras")
    ]
    env.pip("--upgrade", "pip", "setuptools")
    if mode == "keras-nightly":
        env.pip(f"tensorflow=={tensorflow}", *tools)
    else:
        env.pip("--no-deps", f"tensorflow=={tensorflow}")
        requires = subprocess.run(
            [env.python, "-c", REQUIRES],
            capture_output=True,
            text=True,
            check=True,
        ).stdout
        env.pip(*keras_release_requirements(requires.splitlines()), *tools)
    install_ours(env, "--ignore-requires-python")  # a Python above the book's range too
    return env


def run_environment(
    python: str, interpreter: Path, tensorflow: str, mode: str, tests: bool = True
) -> Outcome:
    """Make one environment, run the tests and every chapter in it, and read the claims.

    Args:
        python: ``"3.13"``.
        interpreter: Its interpreter.
        tensorflow: The TensorFlow version.
        mode: One of :data:`KERAS_MODES`.
        tests: Run the doctests and the tests too; else only every chapter and its claims.

    Example:
        >>> run_environment("3.13", Path("python3.13"), "2.22.0rc0", "keras-nightly")  # doctest: +SKIP
        Outcome(python='3.13', mode='keras-nightly', ...)
    """  # noqa: E501
    start = time.perf_counter()
    outcome = Outcome(python=python, mode=mode)
    try:
        env = next_env(python, interpreter, tensorflow, mode)
    except (SystemExit, subprocess.CalledProcessError) as error:
        outcome.broke.append(f"set-up: {error}")
        outcome.seconds = time.perf_counter() - start
        return outcome
    outcome.versions = env_versions(env)
    if " and " in outcome.versions["keras"]:
        outcome.broke.append(f"set-up: two Keras installed ({outcome.versions['keras']})")
    chapters = [(c["file"], json.loads(c["path"].read_text())) for c in load_manifest()["chapters"]]
    where = issue_claim(chapters)
    with tempfile.TemporaryDirectory(prefix="mirrorbook-next-") as tmp:
        suites = [("doctests", doctests_command(env))] + [
            (part, [env.python, ROOT / "dev.py", "_suite", part, "--skip", OTHER_JOBS_SKIP, "-q"])
            for part in OTHER_JOBS_PARTS
        ]
        suites = suites if tests else []
        outcome.broke, outcome.claims = check_environment(env, Path(tmp), suites, OTHER_JOBS_ENV)
        executed = Path(tmp) / where[0] if where else Path(tmp, "none")
        cell = json.loads(executed.read_text())["cells"][where[1]] if executed.is_file() else None
    outcome.issue = issue_verdict(cell, outcome.versions["keras"].split()[-1])
    if not where:
        outcome.issue = f"{ISSUE}: not checked: no chapter has its claim cell any more"
    outcome.seconds = time.perf_counter() - start
    return outcome


def env_versions(env: Env) -> dict[str, str]:
    """The Python, TensorFlow and Keras of an environment (Keras named by its distribution).

    Example:
        >>> env_versions(env)  # doctest: +SKIP
        {'python': '3.13.0', 'tensorflow': '2.22.0rc0', 'keras': 'keras-nightly 3.16.0.dev2026102704'}
    """  # noqa: E501
    found = installed(env.python)
    python = subprocess.run(
        [env.python, "-c", "import platform; print(platform.python_version())"],
        capture_output=True,
        text=True,
    ).stdout.strip()
    kerases = [f"{name} {found[name]}" for name in ("keras", "keras-nightly") if name in found]
    return {
        "python": python,
        "tensorflow": found.get("tensorflow", "none"),
        "keras": " and ".join(kerases) or "none",
    }
