"""What the gpu job's results mean: each probe's output (plain data) in, a verdict out.

Every function is pure: a probe's JSON (:mod:`bookbuild.gpujob.probe`), a benchmark's records
or a chapter's claim lines in, :class:`Verdict` rows out. A probe that failed gives
``{"error": ...}``, and every check that needed it fails with that error.

Example:
    >>> device_verdict(ReplicaCase(2, "gpus"), {"error": "exit status 1: ImportError"})
    Verdict(check='2 replicas: gpus', passed=False, detail='the probe failed: exit status 1: ImportError')
"""  # noqa: E501

from __future__ import annotations

import math
import re
from typing import NamedTuple

from bookbuild.gpujob.plan import ReplicaCase, skip_reason

# How far a mixed-precision run's losses may be from float32's, relatively, at a fixed loss
# scale: float16 keeps 11 significant bits, bfloat16 8. Measured on a CPU (the same steps):
# at most 2e-4 (float16) and 5e-3 (bfloat16) over 6 steps; these bounds leave room for a
# GPU's other kernels (cuBLAS, cuDNN) and catch a precision that does not train alike.
PRECISION_TOLERANCE = {"mixed_float16": 0.01, "mixed_bfloat16": 0.03}
REFERENCE_POLICY = "float32"
_REPLICA_LINE = re.compile(r"^(?:only \d+ replica\(s\)|\d+ replicas? on )")
_RAN_THROUGH_NOT = "(the chapter did not run through from there)"  # bookbuild.claims' line


class Verdict(NamedTuple):
    """One row of the report.

    Attributes:
        check: What was checked, e.g. ``"4 replicas: logical_gpus"``.
        passed: Whether it held; None for a measurement with nothing to hold to.
        detail: What was seen.
    """

    check: str
    passed: bool | None
    detail: str


def _failed_probe(check: str, found: dict) -> Verdict | None:
    """The failed row of a check whose probe failed, else None."""
    if "error" not in found:
        return None
    return Verdict(check=check, passed=False, detail=f"the probe failed: {found['error']}")


def device_verdict(case: ReplicaCase, found: dict) -> Verdict:
    """Whether ``simulate_replicas`` gave the case's kind, as many devices, as planned.

    Args:
        case: The replica count and the kind it must get (:func:`~.plan.replica_cases`).
        found: The ``devices`` probe's output.

    Example:
        >>> found = {"kind": "logical_gpus", "message": "4 replicas on 4 logical GPUs: ...",
        ...          "planned": ["/device:GPU:0", "/device:GPU:1"],
        ...          "devices": ["/device:GPU:0", "/device:GPU:1"],
        ...          "logical_gpus": ["/device:GPU:0", "/device:GPU:1"]}
        >>> device_verdict(ReplicaCase(2, "logical_gpus"), found).passed
        True
        >>> device_verdict(ReplicaCase(2, "gpus"), found).detail
        "planned 'logical_gpus', not 'gpus': 4 replicas on 4 logical GPUs: ..."
    """
    check = f"{case.replicas} replicas: {case.kind}"
    if broken := _failed_probe(check, found):
        return broken
    problem = None
    if found["kind"] != case.kind:
        problem = f"planned {found['kind']!r}, not {case.kind!r}: {found['message']}"
    elif found["devices"] != found["planned"] or len(found["devices"]) != case.replicas:
        problem = f"simulate_replicas gave {found['devices']}, planned {found['planned']}"
    elif len(found["logical_gpus"]) != case.replicas:
        problem = f"TensorFlow lists {len(found['logical_gpus'])} logical GPUs for {case.replicas}"
    return Verdict(check=check, passed=problem is None, detail=problem or found["message"])


def all_reduce_verdicts(gpus: int, found: dict) -> list[Verdict]:
    """Each algorithm's SUM on every replica, or its skip, agreeing with mirrorkit's decision.

    Args:
        gpus: Physical GPUs.
        found: The ``all-reduce`` probe's output.

    Example:
        >>> found = {"replicas": 4, "algorithms": {
        ...     "collective": {"unavailable": None, "passed": True, "message": "all 4 ..."},
        ...     "nccl": {"unavailable": "NCCL all-reduce cannot run here: ..."}}}
        >>> [(v.check, v.passed) for v in all_reduce_verdicts(1, found)]
        [('collective on 4 replicas', True), ('nccl on 4 replicas', True)]
        >>> all_reduce_verdicts(2, found)[1].detail
        'mirrorkit refuses it: NCCL all-reduce cannot run here: ...'
    """
    if broken := _failed_probe("all-reduce", found):
        return [broken]
    verdicts = []
    for name, entry in found["algorithms"].items():
        ours, theirs = skip_reason(name, gpus), entry["unavailable"]
        if ours and theirs:
            passed, detail = True, f"skipped: {ours} (mirrorkit: {theirs})"
        elif ours:
            passed, detail = False, f"mirrorkit would run it, but {ours}"
        elif theirs:
            passed, detail = False, f"mirrorkit refuses it: {theirs}"
        else:
            passed, detail = entry["passed"], entry["message"]
        check = f"{name} on {found['replicas']} replicas"
        verdicts.append(Verdict(check=check, passed=passed, detail=detail))
    return verdicts


def precision_verdicts(
    found: dict, tolerance: dict[str, float] = PRECISION_TOLERANCE
) -> list[Verdict]:
    """Each mixed precision's losses against float32's, and its matrix product's speed.

    Args:
        found: The ``precision`` probe's output.
        tolerance: The largest relative difference of a step's loss, per policy.

    Example:
        >>> policy = lambda losses, tflops: {"losses": losses, "skipped_steps": [],
        ...                                  "matmul_tflops": tflops}
        >>> found = {"policies": {"float32": policy([1.0, 0.5], 10.0),
        ...     "mixed_float16": policy([1.001, 0.5], 40.0),
        ...     "mixed_bfloat16": policy([1.0, float("nan")], 40.0)}}
        >>> for verdict in precision_verdicts(found):
        ...     print(verdict.passed, verdict.detail)
        True losses within 0.10% of float32's (at most 1%); matrix product 4.0x float32's speed (40 TFLOP/s)
        False a loss is not finite: [1.0, nan]; matrix product 4.0x float32's speed (40 TFLOP/s)
    """  # noqa: E501
    if broken := _failed_probe("mixed precision", found):
        return [broken]
    policies = found["policies"]
    reference = policies[REFERENCE_POLICY]
    verdicts = []
    for policy, bound in tolerance.items():
        got = policies[policy]
        speed = got["matmul_tflops"] / reference["matmul_tflops"]
        faster = f"matrix product {speed:.1f}x float32's speed ({got['matmul_tflops']:.3g} TFLOP/s)"
        if got["skipped_steps"]:
            faster += f"; loss scaling skipped steps {got['skipped_steps']}"
        if not all(math.isfinite(loss) for loss in got["losses"]):
            passed, detail = False, f"a loss is not finite: {got['losses']}; {faster}"
        else:
            pairs = zip(got["losses"], reference["losses"], strict=True)
            worst = max(abs(a - b) / abs(b) for a, b in pairs)
            passed = worst <= bound and not got["skipped_steps"]
            detail = f"losses within {worst:.2%} of float32's (at most {bound:.0%}); {faster}"
        verdicts.append(Verdict(check=policy, passed=passed, detail=detail))
    return verdicts


def _size(nbytes: int) -> str:
    return f"{nbytes >> 20} MiB" if nbytes >= 1 << 20 else f"{nbytes >> 10} KiB"


def benchmark_verdicts(result: dict, copy: dict) -> list[Verdict]:
    """The chapter 5 benchmark's busbw against the GPU's copy bandwidth, one row per record.

    Args:
        result: The benchmark's JSON (``python -m mirrorkit.measure --out``), or
            ``{"error": ...}``.
        copy: The ``copy-bandwidth`` probe's output: the first GPU's copy bandwidth.

    Example:
        >>> record = {"algorithm": "nccl", "replicas": 2, "bytes": 1 << 20, "busbw": 2e11}
        >>> copy = {"device": "/device:GPU:0", "bytes_per_second": 1e12}
        >>> benchmark_verdicts({"records": [record], "skipped": {}}, copy)[0].detail
        'busbw 200 GB/s: 20% of the GPU copy bandwidth (1000 GB/s)'
    """
    if broken := _failed_probe("benchmark", result) or _failed_probe("GPU copy", copy):
        return [broken]
    gpu_copy = copy["bytes_per_second"]
    rows = [
        Verdict(
            check=f"{r['algorithm']}, {r['replicas']} replicas, {_size(r['bytes'])}",
            passed=None,
            detail=f"busbw {r['busbw'] / 1e9:.3g} GB/s: {r['busbw'] / gpu_copy:.0%} of the GPU "
            f"copy bandwidth ({gpu_copy / 1e9:.4g} GB/s)",
        )
        for r in result["records"]
    ]
    rows += [
        Verdict(check=f"{name} (skipped)", passed=None, detail=why)
        for name, why in result["skipped"].items()
    ]
    return rows or [Verdict(check="benchmark", passed=False, detail="no record, no skip")]


def replica_line(outputs: list[str]) -> str:
    r"""The line ``simulate_replicas`` printed in a chapter: where its replicas ran.

    Args:
        outputs: The text each code cell showed, in order.

    Example:
        >>> replica_line(["x\n", "4 replicas on 4 logical GPUs: GPU 0 (T4, 15360 MiB) ...\n"])
        '4 replicas on 4 logical GPUs: GPU 0 (T4, 15360 MiB) ...'
        >>> replica_line(["nothing"])
        'no replica line printed'
    """
    for text in outputs:
        for line in text.splitlines():
            if _REPLICA_LINE.match(line):
                return line
    return "no replica line printed"


def chapter_verdicts(name: str, changes: list[str], where: str) -> list[Verdict]:
    """A chapter that ran through, and its claims, from :func:`bookbuild.claims.claim_changes`.

    Args:
        name: The chapter's file name.
        changes: The claim lines (empty: every claim holds).
        where: Its replica line (:func:`replica_line`).

    Example:
        >>> [v.passed for v in chapter_verdicts("05.ipynb", [], "4 replicas on 4 GPUs")]
        [True, True]
        >>> broke = "05.ipynb cell 7: not a claim, raised X " + _RAN_THROUGH_NOT
        >>> chapter_verdicts("05.ipynb", [broke], "-")[0].detail == broke
        True
    """
    broke = [line for line in changes if line.endswith(_RAN_THROUGH_NOT)]
    claims = [line for line in changes if line not in broke]
    return [
        Verdict(
            check=f"{name} ran",
            passed=not broke,
            detail=broke[0] if broke else f"ran through; {where}",
        ),
        Verdict(
            check=f"{name} claims",
            passed=not claims,
            detail="; ".join(claims) or "every claim holds",
        ),
    ]
