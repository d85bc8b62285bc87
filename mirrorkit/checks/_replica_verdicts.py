"""The verdicts of the checks of replica values, given only what their asks recorded.

:mod:`mirrorkit.checks.replica_values` asks (reads the learner's value, runs the replica
function) and records plain data (:mod:`mirrorkit.checks._replica_reading`); these functions
judge that record alone, with NumPy: no TensorFlow, and nothing of the learner's runs here.
A check in the chapter calls its ask and then its verdict; the grader asks in an executor
and calls the verdict in its own process, so the two give the same words.

Example:
    >>> record = {"check": "all_reduced", "replicas": 4, "expected": None,
    ...           "answer": {"verdict": {"passed": False, "message": "not attempted yet"}}}
    >>> judge_all_reduced(record).message
    'not attempted yet'
"""

from __future__ import annotations

import numpy as np

from mirrorkit.checks._arrays import from_data
from mirrorkit.checks.result import CheckResult, from_record
from mirrorkit.inspection import MIRRORED, MIRRORED_VALUE, PER_REPLICA, SINGLE
from mirrorkit.report.values import summarize

MAKE = "create it with tf.Variable(...) inside `with strategy.scope():`"


def judge_mirrored(record: dict) -> CheckResult:
    """The verdict of ``check_mirrored`` from what its ask recorded."""
    answer = record["answer"]
    if (given := from_record(answer)) is not None:
        return given
    kind = answer["rows"][0]["kind"]
    if kind == SINGLE and not answer["variable"]:
        return CheckResult(False, f"value has type {answer['type']}, not a variable: {MAKE}.")
    if kind == SINGLE:
        return CheckResult(
            False,
            "value is a plain variable with one copy: create it inside "
            "`with strategy.scope():` so that every replica gets its own copy.",
        )
    if kind != MIRRORED:
        return CheckResult(
            False,
            f"value is a {kind}, not a MirroredVariable: create it with tf.Variable(...) "
            "and the default synchronization.",
        )
    wanted = record["replicas"]
    if answer["copies"] != wanted:
        return CheckResult(
            False,
            f"it has {answer['copies']} copies but the strategy has {wanted} replicas: "
            "was it created under another strategy's scope?",
        )
    if not answer["same_strategy"]:
        return CheckResult(
            False,
            "it was created under another strategy's scope, not this strategy's: create it "
            "inside `with strategy.scope():` of the strategy you were given.",
        )
    if not answer["in_sync"]:
        return CheckResult(False, "its copies differ; assign to it in cross-replica context.")
    if record["dtype"] is not None and answer["dtype"] != record["dtype"]:
        return CheckResult(False, dtype_mismatch("the variable", answer["dtype"], record["dtype"]))
    first = answer["rows"][0]
    if record["expected"] is not None:
        want = from_data(record["expected"])
        if not _holds(first["array"], want):
            return CheckResult(
                False,
                f"its copies hold {first['summary']}, expected {summarize(want)}: "
                "give tf.Variable that initial value.",
            )
    return CheckResult(True, f"a MirroredVariable with {wanted} identical copies.")


def judge_per_replica(record: dict) -> CheckResult:
    """The verdict of ``check_per_replica`` from what its ask recorded."""
    wanted = record["replicas"]
    expected = [from_data(e) for e in record["expected"]]
    lead = f"the values do not follow the replica number at {wanted} replicas: "
    passed = "every replica holds its expected value."
    return compare(record["answer"], expected, passed, record["dtype"], lead)


def judge_all_reduced(record: dict) -> CheckResult:
    """The verdict of ``check_all_reduced`` from what its ask recorded."""
    answer = record["answer"]
    if (given := from_record(answer)) is not None:
        return given
    wanted, total = record["replicas"], from_data(record["expected"])
    value = answer["value"]
    compared = compare(value, [total] * wanted, "")
    if not compared:
        if "verdict" not in value and value["parts"]:
            rows = [r["array"] for r in value["rows"] if r["array"]["kind"] in "biuf"]
            held = [from_data(r) for r in rows]
            if held and all(h is not None and np.allclose(h * wanted, total) for h in held):
                return CheckResult(
                    False,
                    f"{compared.message} Every replica holds {summarize(total)} / {wanted}: "
                    "the mean of the replicas' values. All-reduce with "
                    "tf.distribute.ReduceOp.SUM.",
                )
        return compared
    if not all(answer["fed"]):
        return CheckResult(
            False,
            "every replica holds the right value, but no all-reduce produced it: the value "
            "was computed on each replica alone (from a constant or num_replicas_in_sync). "
            "Return the result of ctx.all_reduce(...), with ctx = "
            "tf.distribute.get_replica_context(), so that the replicas combine their own "
            "values.",
        )
    if not all(answer["varied"]):
        return CheckResult(
            False,
            "every replica holds the right value, but it is computed from an all-reduce of a "
            "constant: every replica gave the all-reduce the same input, and the number came "
            "from arithmetic after the all-reduce. All-reduce each replica's own value, "
            "computed from its replica_id_in_sync_group.",
        )
    return CheckResult(
        True, f"all {wanted} replicas hold the all-reduced value {summarize(total)}."
    )


def compare(answer: dict, expected: list, passed: str, dtype=None, lead: str = "") -> CheckResult:
    """Compare the recorded per-replica value with one array per replica.

    ``dtype``: the dtype's name every replica's value must have, or None; ``lead`` starts
    the sentence that names a replica holding a wrong value.
    """
    if (given := from_record(answer)) is not None:
        return given
    wanted, rows = len(expected), answer["rows"]
    if wanted > 1 and rows[0]["kind"] not in (PER_REPLICA, MIRRORED_VALUE):
        return CheckResult(
            False, "value is not a per-replica value: compute it with strategy.run(fn)."
        )
    if len(rows) != wanted:
        return CheckResult(
            False,
            f"value has {len(rows)} values for {wanted} replicas: return one tensor "
            "from the function strategy.run runs.",
        )
    got = answer["local_dtype"]
    if dtype is not None and got is not None and got != dtype:
        return CheckResult(False, dtype_mismatch("the value", got, dtype))
    for row, want in zip(rows, expected, strict=True):
        array = row["array"]
        if array["kind"] not in "biuf":
            return CheckResult(
                False,
                f"replica {row['replica']} holds {row['summary']} of dtype {row['dtype']}, not "
                "a number: return a number, e.g. a tf.float32 tensor.",
            )
        if tuple(array["shape"]) != want.shape:
            return CheckResult(
                False,
                f"replica {row['replica']} holds a value of shape {tuple(array['shape'])}, "
                f"expected shape {want.shape}.",
            )
        if not _holds(array, want):
            return CheckResult(
                False,
                f"{lead}replica {row['replica']} holds {row['summary']}, expected "
                f"{summarize(want)}.",
            )
    return CheckResult(True, passed)


def dtype_mismatch(what: str, got: str, wanted: str) -> str:
    """The sentence for a value of the wrong dtype, with the usual cause when there is one.

    Example:
        >>> dtype_mismatch("the variable", "int32", "float32")[:44]
        "the variable's dtype is int32, expected floa"
    """
    message = f"{what}'s dtype is {got}, expected {wanted}: "
    if wanted.startswith(("float", "bfloat")) and got.startswith(("int", "uint")):
        return message + (
            f"an integer such as 0 makes an {got}; write 0.0, or convert with "
            f"tf.cast(..., tf.{wanted})."
        )
    return message + f"convert with tf.cast(..., tf.{wanted})."


def _holds(array: dict, want: np.ndarray) -> bool:
    """Whether the recorded array has ``want``'s shape and values."""
    held = from_data(array)
    return held is not None and held.shape == want.shape and bool(np.allclose(held, want))
