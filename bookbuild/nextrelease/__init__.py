"""``dev.py test-next``: the book against the next TensorFlow, above the supported range.

It asks the package index for the newest TensorFlow above pyproject.toml's cap
(:mod:`~bookbuild.nextrelease.index`), tests it on each Python it has wheels for, with its
keras-nightly and with the newest keras release (:mod:`~bookbuild.nextrelease.environments`),
reads whether keras#23085 still fails (:mod:`~bookbuild.nextrelease.issue`) and writes
test-artifacts/test-next.md (:mod:`~bookbuild.nextrelease.report`). Not part of CI.

Example:
    >>> newest_above(["2.21.0", "2.22.0rc0", "2.22.0rc1", "2.23.0.dev1"], "2.22")
    '2.22.0rc1'
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bookbuild import ROOT
from bookbuild.environments import find_python
from bookbuild.nextrelease.environments import (
    KERAS_MODES,
    Outcome,
    keras_release_requirements,
    plan_pythons,
    run_environment,
)
from bookbuild.nextrelease.index import (
    newest_above,
    read_index,
    tensorflow_requirement,
    upper_bound,
    version_key,
    wheel_pythons,
)
from bookbuild.nextrelease.issue import issue_claim, issue_verdict
from bookbuild.nextrelease.report import report_text
from bookbuild.shell import say
from bookbuild.system import DOT, ensure_system_tools

__all__ = [
    "KERAS_MODES",
    "Outcome",
    "issue_claim",
    "issue_verdict",
    "keras_release_requirements",
    "newest_above",
    "plan_pythons",
    "report_text",
    "test_next",
    "upper_bound",
    "version_key",
    "wheel_pythons",
]
REPORT = ROOT / "test-artifacts" / "test-next.md"


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
