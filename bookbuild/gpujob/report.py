"""The gpu job's one report file: every check's row in Markdown, then the raw results as JSON.

Example:
    >>> from bookbuild.gpujob.verdicts import Verdict
    >>> text = render({"GPUs": "1: Tesla T4"}, {"devices": [Verdict("1 replicas: gpus", True,
    ...     "1 replica on 1 GPU: GPU 0 (Tesla T4)")]}, raw={})
    >>> print(text.splitlines()[0])
    # GPU job: passed
"""

from __future__ import annotations

import json

from bookbuild.gpujob.verdicts import Verdict

RESULTS = {True: "passed", False: "FAILED", None: "measured"}


def failures(sections: dict[str, list[Verdict]]) -> list[str]:
    """``section: check: detail`` of every failed row.

    Example:
        >>> failures({"all-reduce": [Verdict("nccl", False, "refused"), Verdict("x", None, "")]})
        ['all-reduce: nccl: refused']
    """
    return [
        f"{section}: {row.check}: {row.detail}"
        for section, rows in sections.items()
        for row in rows
        if row.passed is False
    ]


def render(facts: dict[str, str], sections: dict[str, list[Verdict]], raw: dict) -> str:
    """The report: a headline, the machine's facts, a table per section, the raw results.

    Args:
        facts: ``name: value`` lines about the machine (its GPUs, the versions).
        sections: Each section's rows, in order.
        raw: What the probes and the benchmark returned, kept as JSON at the end.

    Example:
        >>> print(render({}, {"claims": [Verdict("01.ipynb claims", False, "cell 3 raised")]},
        ...              raw={"x": 1}))  # doctest: +NORMALIZE_WHITESPACE
        # GPU job: FAILED
        <BLANKLINE>
        ## claims
        <BLANKLINE>
        | check | result | detail |
        | --- | --- | --- |
        | 01.ipynb claims | FAILED | cell 3 raised |
        <BLANKLINE>
        ## raw results
        <BLANKLINE>
        ```json
        {
          "x": 1
        }
        ```
    """
    lines = [f"# GPU job: {'FAILED' if failures(sections) else 'passed'}", ""]
    lines += [f"- {name}: {value}" for name, value in facts.items()]
    lines += [""] if facts else []
    for section, rows in sections.items():
        lines += [f"## {section}", "", "| check | result | detail |", "| --- | --- | --- |"]
        for row in rows:
            detail = row.detail.replace("|", "\\|").replace("\n", " ")
            lines.append(f"| {row.check} | {RESULTS[row.passed]} | {detail} |")
        lines.append("")
    lines += ["## raw results", "", "```json", json.dumps(raw, indent=2), "```"]
    return "\n".join(lines) + "\n"
