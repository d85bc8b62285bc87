"""The verdict every learner check returns, and the answers all checks share.

Example:
    >>> from mirrorkit.checks.result import NOT_ATTEMPTED
    >>> NOT_ATTEMPTED.passed
    False
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.values import error_lines


@dataclass(frozen=True, repr=False)
class CheckResult(Reported):
    """The verdict of a check: ``passed`` plus a sentence saying why (and what to try).

    Example:
        >>> from mirrorkit import CheckResult
        >>> CheckResult(True, "well done")
        PASS: well done
        >>> bool(CheckResult(False, "not yet"))
        False
    """

    passed: bool
    message: str

    def __bool__(self) -> bool:
        return self.passed

    def report(self) -> Report:
        """The verdict as a report: one line, ``PASS`` or ``NOT YET`` and the message.

        Example:
            >>> from mirrorkit import CheckResult
            >>> CheckResult(False, "not yet").report().lines[0].tone
            'warn'
        """
        label, tone = ("PASS", "good") if self.passed else ("NOT YET", "warn")
        return Report(lines=(Line(self.message, tone=tone, label=label),))


# What every check answers while the learner's answer is still the ``...`` placeholder.
NOT_ATTEMPTED = CheckResult(
    False, "not attempted yet: replace the ... with your answer and run the cell."
)


def as_record(result: CheckResult, **fields) -> dict:
    """A verdict an ask gives before there is anything to compare, as data that can cross.

    Example:
        >>> as_record(CheckResult(False, "not yet"), check="clipping")
        {'check': 'clipping', 'verdict': {'passed': False, 'message': 'not yet'}}
    """
    return {**fields, "verdict": {"passed": bool(result.passed), "message": result.message}}


def from_record(record: dict) -> CheckResult | None:
    """The verdict a record holds (written by :func:`as_record`), or None if it holds none.

    A record is data, perhaps from another process: it passes only where it says exactly
    ``true``, and a verdict that is not one fails.

    Example:
        >>> from_record({"verdict": {"passed": "yes", "message": "forged"}})
        NOT YET: forged
        >>> from_record({"runs": []}) is None
        True
    """
    if "verdict" not in record:
        return None
    verdict = record["verdict"]
    if not isinstance(verdict, dict):
        return CheckResult(False, "the record's verdict is not a verdict")
    return CheckResult(verdict.get("passed") is True, str(verdict.get("message", "")))


def cannot_check_with_one_replica(strategy, what: str) -> CheckResult | None:
    """The refusal a check gives when one replica cannot show the mistakes it looks for."""
    if strategy.num_replicas_in_sync > 1:
        return None
    return CheckResult(
        False,
        f"cannot check {what} with one replica: with a single replica every per-replica "
        "value is the global one, so the mistakes this check looks for do not show. Run "
        "mk.simulate_replicas(4) at the start of the notebook (restart the kernel first) "
        "and make the strategy again.",
    )


def raised(error: BaseException) -> str:
    r"""An error from the learner's code in one sentence: its type and the line that says why.

    An error raised inside a traced function carries the traceback of the learner's code in
    its message, then TensorFlow's own line, which is the one kept.

    Example:
        >>> from mirrorkit.checks.result import raised
        >>> raised(ValueError("in user code:\n  File x.py, line 3\n  ValueError: Shapes differ"))
        'ValueError: Shapes differ.'
    """
    lines = error_lines(error)
    named = [line.split(": ", 1)[1] for line in lines if re.match(r"\w+(Error|Exception): ", line)]
    line = (named[-1] if named else lines[0] if lines else "no message")[:200]
    return f"{type(error).__name__}: {line}" + ("" if line.endswith(".") else ".")


def recorded_error(text: str) -> Exception:
    """An error another process reported as ``"Type: why"``, rebuilt under that type's name.

    A grader reads such reports as data: a name that is not an identifier (or is longer than
    60 characters) becomes ``Exception``, and nothing of the reporting process is imported.

    Example:
        >>> from mirrorkit.checks.result import raised, recorded_error
        >>> raised(recorded_error("ZeroDivisionError: division by zero"))
        'ZeroDivisionError: division by zero.'
    """
    name, _, why = str(text).partition(": ")
    kind = name if name.isidentifier() and len(name) <= 60 else "Exception"
    return type(kind, (Exception,), {"__module__": "builtins"})(why)
