"""Reading pytest's JUnit XML reports: each test case, its seconds and what went wrong.

Example:
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as folder:
    ...     report = Path(folder) / "unit.xml"
    ...     _ = report.write_text('<testsuite><testcase classname="tests.a" name="t1" '
    ...         'time="2.5"><failure message="assert 1 == 2"/></testcase></testsuite>')
    ...     read_cases(report)
    [Case(classname='tests.a', name='t1', seconds=2.5, problems=('assert 1 == 2',))]
"""

from __future__ import annotations

import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Case:
    """One test case of a report.

    Attributes:
        classname: The test's module (``tests.a.test_b``), or what doctests and nbval name.
        name: The test's name.
        seconds: How long it took.
        problems: The first line of each failure's or error's message; empty if it passed.
    """

    classname: str
    name: str
    seconds: float
    problems: tuple[str, ...] = ()


def read_cases(report: Path) -> list[Case]:
    """Every test case of a JUnit XML report; none if the report is missing.

    Args:
        report: The report (a stage that failed before pytest started wrote none).

    Returns:
        The cases, in the report's order.

    Example:
        >>> read_cases(Path("no-such-report.xml"))
        []
    """
    if not report.is_file():
        return []
    return [
        Case(
            classname=case.get("classname", ""),
            name=case.get("name", ""),
            seconds=float(case.get("time", 0)),
            problems=tuple(
                "".join((problem.get("message") or "").splitlines()[:1])
                for problem in (*case.iter("failure"), *case.iter("error"))
            ),
        )
        for case in ET.parse(report).iter("testcase")
    ]


def failures_in(junit_xml: Path, label: str) -> list[str]:
    """One line per failed or broken test of a report, or one saying pytest wrote none.

    Args:
        junit_xml: The report.
        label: What ran (``tests``, ``doctests``): each line starts with it.

    Returns:
        ``"label: classname::name: first line of the message"`` per problem.

    Example:
        >>> failures_in(Path("no-such-report.xml"), "doctests")
        ['doctests: pytest wrote no report (it could not start; output above)']
    """
    if not junit_xml.exists():
        return [f"{label}: pytest wrote no report (it could not start; output above)"]
    return [
        f"{label}: {case.classname}::{case.name}: {problem}"
        for case in read_cases(junit_xml)
        for problem in case.problems
    ]
