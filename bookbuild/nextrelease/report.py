"""test-next's report, in Markdown: each environment's versions, what broke, the issue's line.

Example:
    >>> print(report_text("2.22.0rc0", "tensorflow<2.22", [], [], [], tests=False).splitlines()[0])
    # dev.py test-next: TensorFlow 2.22.0rc0
"""

from __future__ import annotations

from bookbuild.jobs import OTHER_JOBS_SKIP
from bookbuild.nextrelease.environments import Outcome


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
