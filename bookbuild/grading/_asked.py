"""Answers asked in the chapter's process on drawn inputs, judged by the grader from data.

Chapter 7's answers are Python functions of the chapter's objects (``evaluate(model,
dataset)``, ``restore_on_one_device(path)``): they need the chapter around them, so the
student's process (the runner in ``export`` mode) runs the chapter and the answers, and at
the check calls each answer on inputs the verdict can recompute or holds alone, writing what
came back as data (:func:`ask`). For a restore, those inputs are checkpoints drawn by a third
process before the student's starts (the runner in ``inputs`` mode: the chapter without the
key or any answer, :func:`drawn_for`): their values come from a seed the student's process
never sees, and their saved records stay with the grader. The grader judges each record with
the check's own verdict (:func:`judge`); it runs nothing the submission made.

Example:
    >>> judge("evaluate", {"failed": "your answer raised NameError: x"}, None, 1, 2)
    (False, 'your answer raised NameError: x')
"""

from __future__ import annotations

import base64
import re
import tempfile
from pathlib import Path

from bookbuild.grading._wire import NO_RESULTS, opened

KINDS = frozenset({"evaluate", "restore"})  # export kinds asked at the check, judged here
DRAWN = 2  # checkpoints drawn for a restore
FILE_NAME = re.compile(r"[A-Za-z0-9_.-]{1,80}")
UNREADABLE = "its results are not ones the grader reads"


def ask(kind: str, answer, arguments, keywords, inputs, seed: int) -> dict:
    """Call the answer on the drawn inputs (the student's process): what it gave, as data.

    Args:
        kind: ``evaluate`` or ``restore``.
        answer: The learner's function.
        arguments: The check call's positional arguments after the answer.
        keywords: Its keyword arguments.
        inputs: What the grader sent for this exercise (a restore's drawn checkpoints).
        seed: The row's seed (an evaluation's drawn model and examples).
    """
    if answer is Ellipsis:
        return {"ellipsis": True}
    given = _bound(kind, arguments, keywords)
    if kind == "evaluate":
        from mirrorkit.checks._evaluation_query import ask_drawn, example_shape

        shape = example_shape(given["data"])
        return ask_drawn(answer, given["strategy"], seed, given["global_batch"], shape)
    from mirrorkit.checks._restore_records import restored_record, saved_record

    path, reference, strategy = given["path"], given["reference"], given["strategy"]
    restored = [restored_record(answer, path, reference, strategy)]
    for drawn in (inputs or {}).get("drawn", []):
        with tempfile.TemporaryDirectory(prefix="drawn-") as folder:
            for name, data in drawn["files"].items():
                if FILE_NAME.fullmatch(name):
                    (Path(folder) / name).write_bytes(base64.b64decode(data))
            prefix = Path(folder) / drawn["prefix"]
            restored.append(restored_record(answer, prefix, reference, strategy))
    return {"saved": saved_record(reference), "restored": restored}


def drawn_for(kind: str, arguments, keywords, secret: int) -> dict:
    """A restore's drawn checkpoints (the inputs process): files to send, records to keep."""
    from mirrorkit.checks._restore_records import drawn_files

    if kind != "restore":
        return {}
    given = _bound(kind, arguments, keywords)
    strategy = given["strategy"]
    drawn = drawn_files(given["reference"], given["path"], [secret + k for k in range(DRAWN)])
    return {
        "drawn": [
            {
                "prefix": made["prefix"],
                "files": {n: base64.b64encode(b).decode() for n, b in made["files"].items()},
            }
            for made in drawn
        ],
        "saved": [made["saved"] for made in drawn],
        "where": None if strategy is None else type(strategy).__name__,
    }


def _bound(kind: str, arguments, keywords) -> dict:
    """The check call's arguments after the answer, by the check's own parameter names."""
    from bookbuild.grading._exports import check_arguments
    from mirrorkit.checks.evaluation import check_evaluation
    from mirrorkit.checks.restore import check_restore

    check = check_evaluation if kind == "evaluate" else check_restore
    return check_arguments(check, arguments, keywords)


def sent(inputs: dict) -> dict:
    """What of the drawn inputs the student's process gets: the files, not the records."""
    return {"drawn": inputs.get("drawn", [])}


def judge(kind: str, line, inputs, seed: int, replicas: int) -> tuple[bool, str]:
    """(passed, feedback) of one exported answer, from its (untrusted) export line."""
    from mirrorkit.checks.result import NOT_ATTEMPTED

    names, why = opened(line)
    if names is None:
        return False, why
    values = list(names.values())
    if len(values) != 1 or not isinstance(values[0], dict):
        return False, NO_RESULTS
    answer = values[0]
    if answer.get("ellipsis") is True:
        return False, NOT_ATTEMPTED.message
    if kind == "evaluate":
        from mirrorkit.checks._evaluation_query import judge_drawn

        result = judge_drawn(seed, replicas, answer)
    else:
        result = _judge_restore(answer, inputs or {})
    return result.passed, "" if result.passed else str(result.message)


def _judge_restore(answer: dict, inputs: dict):
    from mirrorkit.checks.restore import judge_restore
    from mirrorkit.checks.result import CheckResult

    saved = inputs.get("saved") or []
    if len(saved) != DRAWN:
        return CheckResult(False, "the grader could not draw checkpoints for this chapter")
    restored = answer.get("restored")
    restored = restored if isinstance(restored, list) else []
    if len(restored) != DRAWN + 1:
        return CheckResult(False, f"{UNREADABLE}: one result per checkpoint was expected")
    first = _saved(answer.get("saved")) or saved[0]  # the chapter's own checkpoint: names only
    records = [_restored(record) for record in restored]
    return judge_restore([first, *saved], records, inputs.get("where"))


def _digests(value) -> list | None:
    """``value`` if it is a list of ``[shape, dtype, hex digest]``, else None."""
    if not isinstance(value, list) or len(value) > 4096:
        return None
    for item in value:
        if not (
            isinstance(item, list)
            and len(item) == 3
            and isinstance(item[0], list)
            and all(type(d) is int for d in item[0])
            and all(isinstance(s, str) for s in item[1:])
        ):
            return None
    return value


def _saved(value) -> dict | None:
    if not isinstance(value, dict) or type(value.get("steps")) is not int:
        return None
    weights, optimizer = _digests(value.get("weights")), _digests(value.get("optimizer"))
    if weights is None or optimizer is None:
        return None
    return {"weights": weights, "steps": value["steps"], "optimizer": optimizer}


def _restored(value) -> dict:
    """A restored record as :func:`~mirrorkit.checks.restore.judge_restore` reads it."""
    if not isinstance(value, dict):
        return {"failed": UNREADABLE}
    if "failed" in value:
        return {"failed": str(value["failed"])[:600]}
    weights = _digests(value.get("weights"))
    if weights is None:
        return {"failed": UNREADABLE}
    placement = value.get("placement") if isinstance(value.get("placement"), dict) else {}
    record = {
        "same": value.get("same") is True,
        "weights": weights,
        "placement": {
            "kind": str(placement.get("kind", "variable"))[:60],
            "distributed": placement.get("distributed") is True,
            "in_scope": placement.get("in_scope") is True,
        },
        "optimizer": None,
    }
    optimizer = value.get("optimizer")
    if isinstance(optimizer, dict) and type(optimizer.get("steps")) is int:
        variables = _digests(optimizer.get("variables"))
        if variables is not None:
            record["optimizer"] = {"steps": optimizer["steps"], "variables": variables}
    return record
