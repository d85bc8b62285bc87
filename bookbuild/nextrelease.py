"""``dev.py test-next``: the book against the next TensorFlow, above the supported range.

It asks the package index for the newest TensorFlow above pyproject.toml's cap, tests it on
each Python it has wheels for, with its keras-nightly and with the newest keras release, and
writes test-artifacts/test-next.md (:func:`test_next`). Not part of CI.

Example:
    >>> newest_above(["2.21.0", "2.22.0rc0", "2.22.0rc1", "2.23.0.dev1"], "2.22")
    '2.22.0rc1'
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import subprocess
import tempfile
import time
import tomllib
import urllib.request
from dataclasses import dataclass, field
from pathlib import Path

from bookbuild import ROOT
from bookbuild.claims import CLAIM_TAG
from bookbuild.environments import PYPROJECTS, PYTHONS, VENVS, Env, find_python
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
from bookbuild.shell import say
from bookbuild.system import DOT, ensure_system_tools

REPORT = ROOT / "test-artifacts" / "test-next.md"
KERAS_MODES = ("keras-nightly", "keras-release")  # TensorFlow's own Keras, or the release
ISSUE = "keras#23085"  # the chapter's claim cell that asserts it says whether it is fixed
VERSION = re.compile(r"^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")
WHEEL = re.compile(r"^([^-]+)-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$")
# Prints TensorFlow's Requires-Dist lines, one a line, in an environment.
REQUIRES = "import importlib.metadata as m; print(*m.requires('tensorflow'), sep='\\n')"
PLATFORMS = {"Linux": ("manylinux", "linux"), "Darwin": ("macosx",), "Windows": ("win",)}


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


def version_key(version: str) -> tuple | None:
    """A sort key for a PEP 440 version (release, pre-release, post, dev); None if not one.

    Example:
        >>> sorted(["2.22.0", "2.22.0rc0", "2.22.0.dev1", "2.21.1"], key=version_key)
        ['2.21.1', '2.22.0.dev1', '2.22.0rc0', '2.22.0']
        >>> version_key("latest") is None
        True
    """
    match = VERSION.match(version)
    if not match:
        return None
    release, pre, pre_number, post, dev = match.groups()
    numbers = tuple(int(n) for n in release.split("."))
    numbers += (0,) * (6 - len(numbers))
    if pre:
        phase = ({"a": 0, "b": 1, "rc": 2}[pre], int(pre_number))
    else:
        phase = (-1, 0) if dev is not None and post is None else (3, 0)
    return numbers, phase, int(post or -1), int(dev) if dev is not None else float("inf")


def newest_above(versions: list[str], cap: str) -> str | None:
    """The newest release or pre-release at or above ``cap`` (a ``<`` bound); dev builds not.

    Args:
        versions: The versions on the index.
        cap: The exclusive upper bound of the supported range (``"2.22"``).

    Returns:
        The version, or None if the index has nothing above the range.

    Example:
        >>> newest_above(["2.20.0", "2.21.0", "2.22.0rc0"], "2.22")
        '2.22.0rc0'
        >>> newest_above(["2.20.0", "2.21.0", "2.21.1rc0"], "2.22") is None
        True
    """
    floor = version_key(cap)[0]
    above = [
        v
        for v in versions
        if (key := version_key(v)) and key[0] >= floor and key[3] == float("inf")
    ]
    return max(above, key=version_key, default=None)


def upper_bound(requirement: str) -> str:
    """The exclusive upper bound (``<``) of a requirement.

    Raises:
        ValueError: If it has none.

    Example:
        >>> upper_bound("tensorflow>=2.20.0,<2.22")
        '2.22'
    """
    match = re.search(r"(?<![<>=!~])<(?!=)\s*([0-9][\w.]*)", requirement)
    if not match:
        raise ValueError(f"requirement must have a < bound, got {requirement!r}: write 'x<2.22'.")
    return match[1]


def tensorflow_requirement() -> str:
    """The TensorFlow requirement of mirrorkit: the supported range (pyproject.toml).

    Example:
        >>> tensorflow_requirement().startswith("tensorflow>=")
        True
    """
    dependencies = tomllib.loads(PYPROJECTS[0].read_text())["project"]["dependencies"]
    return next(d for d in dependencies if re.match(r"tensorflow\b(?![-_.\w])", d))


def wheel_pythons(
    files: list[str],
    version: str,
    system: str = platform.system(),
    machine: str = platform.machine(),
) -> list[str]:
    """The Pythons a release has a wheel for, on a platform (this machine's by default).

    Args:
        files: The file names on the index.
        version: The release.
        system: ``platform.system()``: ``Linux``, ``Darwin`` or ``Windows``.
        machine: ``platform.machine()``: ``x86_64``, ``arm64``, ``AMD64``...

    Returns:
        ``"3.X"`` versions, oldest first (CPython wheels; free-threaded ones left out).

    Example:
        >>> files = ["tensorflow-2.22.0rc0-cp313-cp313-manylinux_2_27_x86_64.whl",
        ...          "tensorflow-2.22.0rc0-cp310-cp310-macosx_12_0_arm64.whl",
        ...          "tensorflow-2.22.0rc0-cp311-cp311-manylinux_2_27_x86_64.whl",
        ...          "tensorflow-2.21.0-cp312-cp312-manylinux_2_27_x86_64.whl"]
        >>> wheel_pythons(files, "2.22.0rc0", "Linux", "x86_64")
        ['3.11', '3.13']
    """
    families = PLATFORMS.get(system, (system.lower(),))
    found = set()
    for name in files:
        match = WHEEL.match(name)
        if not match or match[2] != version or match[4].endswith("t"):
            continue
        tags = match[5].split(".")
        if any(t.startswith(families) and t.lower().endswith(machine.lower()) for t in tags):
            found.update(re.findall(r"cp(3)(\d+)", match[3]))
    return [f"{major}.{minor}" for major, minor in sorted(found, key=lambda p: int(p[1]))]


def read_index(name: str) -> tuple[list[str], list[str]]:
    """A distribution's versions and wheel files on the package index (PEP 691 JSON).

    The index is ``$PIP_INDEX_URL``, else PyPI. Yanked files are left out.

    Raises:
        SystemExit: If the index cannot be read: nothing is tested then.

    Example:
        >>> versions, files = read_index("tensorflow")  # doctest: +SKIP
        >>> "2.21.0" in versions  # doctest: +SKIP
        True
    """
    url = f"{os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple').rstrip('/')}/{name}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            page = json.load(response)
    except (OSError, ValueError) as error:
        raise SystemExit(
            f"[dev] test-next: could not read the package index at {url} ({error}); "
            "nothing was tested"
        ) from error
    files = [f["filename"] for f in page.get("files", []) if not f.get("yanked")]
    wheels = [match for f in files if (match := WHEEL.match(f))]
    return sorted({m[2] for m in wheels}, key=version_key), files


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


def issue_claim(chapters: list[tuple[str, dict]]) -> tuple[str, int] | None:
    """The claim cell about :data:`ISSUE`: the first claim cell from its first mention on.

    Args:
        chapters: ``(file name, notebook as JSON)`` pairs, in reading order.

    Example:
        >>> cells = [{"cell_type": "markdown", "source": ["fails (keras-team/keras#23085)"]},
        ...          {"cell_type": "code", "source": "", "metadata": {"tags": ["claim"]}}]
        >>> issue_claim([("03.ipynb", {"cells": cells})])
        ('03.ipynb', 1)
    """
    for name, notebook in chapters:
        cells = notebook["cells"]
        mentions = [i for i, cell in enumerate(cells) if ISSUE in "".join(cell["source"])]
        for index in range(mentions[0] if mentions else len(cells), len(cells)):
            cell = cells[index]
            if cell["cell_type"] == "code" and CLAIM_TAG in cell["metadata"].get("tags", []):
                return name, index
    return None


def issue_verdict(cell: dict | None, keras: str) -> str:
    r"""Whether :data:`ISSUE` still fails, from its claim cell as executed in an environment.

    The cell runs a first step with an Adam that was not built, prints the type of the error
    it caught (``NoneType`` when none) and asserts the step failed as the issue says.

    Args:
        cell: The executed claim cell (JSON), or None if its chapter was not executed.
        keras: The environment's Keras version, for the line.

    Example:
        >>> held = {"outputs": [{"output_type": "stream", "text": "...: InvalidArgumentError"}]}
        >>> issue_verdict(held, "3.15.1")
        'keras#23085: still fails (work-around needed)'
        >>> ran = {"outputs": [{"output_type": "stream", "text": ["...: NoneType\n"]},
        ...     {"output_type": "error", "ename": "AssertionError", "evalue": ""}]}
        >>> issue_verdict(ran, "3.16.0")
        'keras#23085: fixed in keras 3.16.0 — the work-around can go'
    """
    if cell is None:
        return f"{ISSUE}: not checked (its chapter was not executed)"
    outputs = cell.get("outputs", [])
    printed = "".join("".join(o["text"]) for o in outputs if o["output_type"] == "stream")
    last = (printed.strip().splitlines() or [""])[-1]
    errors = [o for o in outputs if o["output_type"] == "error"]
    if not errors:
        return f"{ISSUE}: still fails (work-around needed)"
    error = f"{errors[0]['ename']}: {errors[0]['evalue']}".rstrip(": ")
    if errors[0]["ename"] == "AssertionError" and last.endswith("NoneType"):
        return f"{ISSUE}: fixed in keras {keras} — the work-around can go"
    if errors[0]["ename"] == "AssertionError":
        return f"{ISSUE}: still fails, with another message (work-around needed): {last!r}"
    if errors[0]["ename"] == "NameError":
        return f"{ISSUE}: not checked: a cell before its claim failed ({error})"
    return f"{ISSUE}: not decided: its claim cell raised {error}"


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


def report_text(
    tensorflow: str,
    requirement: str,
    pythons: list[str],
    outcomes: list[Outcome],
    not_run: list[tuple[str, str]],
    tests: bool = True,
) -> str:
    """The report, in Markdown: each environment's versions, what broke and the issue's line.

    Args:
        tensorflow: The TensorFlow tested.
        requirement: The supported range it is above (``tensorflow>=2.20.0,<2.22``).
        pythons: The Pythons it has wheels for here.
        outcomes: Each environment's :class:`Outcome`.
        not_run: ``(python, why)`` for each Python (or Python and Keras) not run.
        tests: Whether the tests ran, or only the chapters (``--claims-only``).

    Example:
        >>> outcome = Outcome("3.13", "keras-release", {"python": "3.13.0",
        ...     "tensorflow": "2.22.0rc0", "keras": "keras 3.15.1"}, [], [],
        ...     "keras#23085: still fails (work-around needed)", 1200.0)
        >>> print(report_text("2.22.0rc0", "tensorflow<2.22", ["3.13", "3.14"], [outcome],
        ...     [("3.14", "no interpreter")]))  # doctest: +ELLIPSIS
        # dev.py test-next: TensorFlow 2.22.0rc0
        ...
        ## Python 3.13.0, keras-release: TensorFlow 2.22.0rc0, keras 3.15.1 (1200 s)
        <BLANKLINE>
        - keras#23085: still fails (work-around needed)
        - tests that failed: none
        - claims changed: none
        <BLANKLINE>
        Python 3.14: NOT RUN: no interpreter
        <BLANKLINE>
        Nothing broke in 1 environment(s).
    """
    lines = [
        f"# dev.py test-next: TensorFlow {tensorflow}",
        "",
        f"The newest TensorFlow on the package index above the supported range "
        f"(`{requirement}`), with wheels for this platform for Python "
        f"{', '.join(pythons)}. "
        + (
            f"Doctests, the tests as the other Pythons' jobs run them (skipping "
            f"`{OTHER_JOBS_SKIP}`), and every chapter with its claims."
            if tests
            else "Only every chapter with its claims (--claims-only): no tests ran."
        ),
        "",
    ]
    for o in outcomes:
        v = o.versions
        title = f"Python {v.get('python', o.python)}, {o.mode}: TensorFlow {v.get('tensorflow')}"
        lines += [f"## {title}, {v.get('keras')} ({o.seconds:.0f} s)", "", f"- {o.issue}"]
        failed = [line for line in o.broke if not line.startswith("claim: ")]  # listed below
        lines.append(
            f"- tests that failed: {len(failed)}" if failed else "- tests that failed: none"
        )
        lines += [f"  - {line}" for line in failed]
        lines.append(f"- claims changed: {len(o.claims)}" if o.claims else "- claims changed: none")
        lines += [f"  - {line}" for line in o.claims]
        lines.append("")
    lines += [f"Python {python}: NOT RUN: {why}" for python, why in not_run]
    broken = sum(1 for o in outcomes if o.broke)
    lines += [
        "",
        f"Something broke in {broken} of {len(outcomes)} environment(s)."
        if broken
        else f"Nothing broke in {len(outcomes)} environment(s).",
    ]
    return "\n".join(lines)


def test_next(args: list[str]) -> int:
    """Test the newest TensorFlow above the supported range; write and print the report.

    Args:
        args: ``--python 3.13`` (repeatable: only those Pythons), ``--keras MODE``
            (repeatable: only those of :data:`KERAS_MODES`), ``--claims-only`` (no tests:
            every chapter and its claims only), ``--report PATH`` (instead of :data:`REPORT`;
            written again after each environment).

    Returns:
        1 if anything broke, or no environment could be made.

    Example:
        >>> test_next(["--python", "3.13"])  # doctest: +SKIP
        [dev] TensorFlow 2.22.0rc0 is above the supported range ...
    """
    parser = argparse.ArgumentParser(prog="dev.py test-next")
    parser.add_argument("--python", action="append", help="only this Python (repeatable)")
    parser.add_argument("--keras", action="append", choices=KERAS_MODES, help="only this Keras")
    parser.add_argument("--claims-only", action="store_true", help="no tests: chapters only")
    parser.add_argument("--report", type=Path, default=REPORT, help="where the report goes")
    options = parser.parse_args(args)
    modes = options.keras or KERAS_MODES
    ensure_system_tools(DOT)
    versions, files = read_index("tensorflow")
    tensorflow = newest_above(versions, upper_bound(tensorflow_requirement()))
    if tensorflow is None:
        say(f"no TensorFlow above {tensorflow_requirement()} on the package index: nothing to test")
        return 0
    pythons = wheel_pythons(files, tensorflow)
    say(f"TensorFlow {tensorflow} is above the supported range; wheels: {', '.join(pythons)}")
    to_run, not_run = plan_pythons(pythons, options.python)
    not_run = [(p, f"{why}; {find_python(p, install=False)[1]}") for p, why in not_run]
    not_run += [
        (f"{p} {m}", f"not asked for (--keras {' '.join(modes)})")
        for p in to_run
        for m in KERAS_MODES
        if m not in modes
    ]
    outcomes: list[Outcome] = []

    def write() -> str:  # after each environment too: a long run can be read as it goes
        text = report_text(
            tensorflow,
            tensorflow_requirement(),
            pythons,
            outcomes,
            not_run,
            not options.claims_only,
        )
        options.report.parent.mkdir(parents=True, exist_ok=True)
        options.report.write_text(text + "\n")
        return text

    for python in to_run:
        interpreter, how = find_python(python)
        if interpreter is None:
            not_run.append((python, how))
            continue
        for mode in modes:
            outcomes.append(
                run_environment(python, interpreter, tensorflow, mode, not options.claims_only)
            )
            write()
    print(write())
    say(f"wrote {options.report}")
    return 1 if not outcomes or any(o.broke for o in outcomes) else 0


test_next.__test__ = False  # a command, not a test for pytest to collect
