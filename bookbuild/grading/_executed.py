"""Exported answers run by an executor that holds no verdict; judged by the grader from data.

For a check cut into an ask and a verdict (:data:`CHECKS`), three processes grade its
answer, and no two share a namespace, a token, a writable file or a pipe:

1. The student's process (the runner in ``export`` mode) writes the answer as data: state as
   its copies' values, a replica function as its traced graph. Read as untrusted data.
2. The executor (``execute`` mode, sandboxed): the chapter without the key's solutions, each
   answer rebuilt from its export (state from data, a graph of allow-listed operations only),
   and at the check the check's ask on it (:func:`ask`): what it read, or what the rebuilt
   function gave and which all-reduces fed it, sealed as data. It runs no Python of the
   submission and no verdict.
3. The grader: the check's own verdict on that record (:func:`judge`), with NumPy, and for a
   loss, a clip or an accumulation the one-device reference on the chapter's model, rebuilt
   from the Keras configuration the executor sent (Keras's own classes only); nothing of the
   submission runs here, not even its graphs.

Example:
    >>> judge("check_mirrored", {"failed": "no answer cell found"})
    (False, 'no answer cell found')
"""

from __future__ import annotations

import json
import threading

from bookbuild.grading._exports import checks_function
from bookbuild.grading._wire import opened

CHECKS = {  # each check asked by the executor: its ask, and its verdict from the ask's record
    "check_mirrored": ("replica_values.ask_mirrored", "_replica_verdicts.judge_mirrored"),
    "check_per_replica": ("replica_values.ask_per_replica", "_replica_verdicts.judge_per_replica"),
    "check_all_reduced": ("replica_values.ask_all_reduced", "_replica_verdicts.judge_all_reduced"),
    "check_input_pipeline": (
        "input_pipeline.ask_input_pipeline",
        "_pipeline_verdicts.judge_input_pipeline",
    ),
    "check_loss_step": ("loss_step.ask_loss_step", "loss_step.judge_loss_step"),
    "check_clipping": ("clipping.ask_clipping", "_clipping_verdicts.judge_clipping"),
    "check_accumulation": (
        "accumulation.ask_accumulation",
        "_accumulation_verdicts.judge_accumulation",
    ),
}
KINDS = frozenset({"state", "replica_fn", "dataset", "loss", "clip", "accumulate"})
MAX_RECORD = 4 << 20  # characters of one record, at most
_ONE_AT_A_TIME = threading.Lock()  # submissions are graded in threads; verdicts one at a time
JUDGED = (
    "judged by export: the answers crossed as data (values, graphs) to an executor that runs "
    "none of the submission's Python and gives no verdict; the grader judged what it recorded"
)


def ask(check: str, answer, arguments, keywords) -> dict:
    """The executor's record of one answer: ``{"record": ...}`` or ``{"failed": why}``.

    ``answer``: the answer rebuilt from its export, or the feedback that fails it.
    """
    if isinstance(answer, str):
        return {"failed": answer[:2000]}
    from mirrorkit.checks._arrays import encoded
    from mirrorkit.checks.result import raised

    asked = checks_function(CHECKS[check][0])
    try:
        record = asked(answer, *arguments, **keywords)
    except Exception as error:  # noqa: BLE001 - as the runner reports a check that stopped
        return {"failed": f"the check stopped: {raised(error)}"[:2000]}
    return {"record": encoded(record)}


def judge(check: str, line) -> tuple[bool, str]:
    """(passed, feedback) of one answer, from the executor's sealed line about it.

    The check is the chapter's (from the program), never the record's own say.
    """
    record, why = opened(line, "record")
    if record is None:
        return False, why
    if len(json.dumps(record)) > MAX_RECORD:
        return False, "the executor's record of this answer is too large to judge"
    from mirrorkit.checks._arrays import decoded
    from mirrorkit.checks.result import raised

    verdict = checks_function(CHECKS[check][1])
    try:
        with _ONE_AT_A_TIME:  # a reference model is built here, and Keras names it globally
            result = verdict(decoded(record))
    except RuntimeError as error:  # the check stops here, as it would in the chapter
        return False, f"the check stopped: {raised(error)}"[:2000]
    except ValueError as error:  # a record the checks refuse: their own words say why
        return False, f"the executor's record could not be judged: {error}"[:500]
    except Exception as error:  # noqa: BLE001 - a record this version cannot read
        return False, f"the executor's record could not be judged: {type(error).__name__}"
    return result.passed, "" if result.passed else str(result.message)


def for_executor(program: dict) -> dict:
    """The program as the executor gets it: the key's solutions gone, the checks' text kept
    (the student edition shows it), the answers to come from the student's exports.

    Example:
        >>> for_executor({"steps": [{"kind": "answer", "solution": "x = 1", "asks": ["x"]}]})
        {'steps': [{'kind': 'answer', 'asks': ['x']}]}
    """
    steps = [
        {k: v for k, v in step.items() if k != "solution"} if step["kind"] == "answer" else step
        for step in program["steps"]
    ]
    return dict(program, steps=steps)
