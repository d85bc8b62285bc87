"""Check how much longer a larger all-reduce took, as a learner derived it from the records.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_all_reduce_growth(..., ..., ..., small="256KiB", large="4MiB", replicas=2)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

import math

from mirrorkit._validate import refuse, require_number
from mirrorkit.checks._benchmark_records import (
    listing,
    message_size,
    not_measured_here,
    one_number,
    records_of,
    replica_count,
    same,
    skip_reason,
    skipped_of,
)
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult
from mirrorkit.report.units import format_size


def check_all_reduce_growth(
    predicted_growth,
    measured_growth,
    measurement,
    *,
    small: int | str,
    large: int | str,
    replicas: int,
    algorithm: str = "collective",
    tolerance: float = 2.0,
) -> CheckResult:
    """Check how much longer a larger message's all-reduce took, measured after a prediction.

    The learner commits ``predicted_growth`` (how many times longer ``algorithm`` takes on
    ``replicas`` replicas for ``large`` bytes than for ``small`` bytes), runs a benchmark at
    both sizes (``measurement``) and derives ``measured_growth`` from its records. The check
    passes when ``measured_growth`` is the ratio of the two recorded median times (to
    rounding) and ``measurement`` records this machine, as :func:`mk.benchmark_all_reduce`
    does (a benchmark typed in from copied numbers records none); the prediction need only be
    a positive number. The message says whether it
    came within a factor ``tolerance`` of the measurement, and where the measurement lies
    between all latency (1) and all bandwidth (``large / small``).

    Args:
        predicted_growth: The learner's prediction, a number (``...``: not attempted).
        measured_growth: The learner's answer, a number (``...``: not attempted).
        measurement: The learner's :class:`~mirrorkit.AllReduceBenchmark` holding both sizes
            (``...``: not attempted).
        small: The smaller message size, in bytes or as text such as ``"256KiB"``.
        large: The larger message size.
        replicas: The replica count, at least 2.
        algorithm: The all-reduce algorithm whose growth is asked for.
        tolerance: The factor within which the message calls a prediction right; above 1.

    Returns:
        A :class:`~mirrorkit.CheckResult`. It does not pass when ``measurement`` lacks either
        size for ``algorithm`` on ``replicas`` replicas: the growth was not measured.

    Raises:
        TypeError: If ``small``, ``large``, ``replicas``, ``algorithm`` or ``tolerance`` has
            the wrong type.
        ValueError: If ``small`` is not smaller than ``large``, ``replicas`` is below 2 (one
            replica all-reduces with nobody) or ``tolerance`` is not above 1.

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.checks._benchmark_records import this_machine
        >>> from mirrorkit.measure.benchmark import record_from_times
        >>> measurement = mk.AllReduceBenchmark(records=(
        ...     record_from_times("collective", 2, 256 << 10, [0.002, 0.002, 0.003], 1e10),
        ...     record_from_times("collective", 2, 4 << 20, [0.008, 0.009, 0.010], 1e10),
        ... ), machine=this_machine())  # as if measured here
        >>> mk.check_all_reduce_growth(16, 0.009 / 0.002, measurement, small="256KiB",
        ...                            large="4MiB", replicas=2)  # doctest: +NORMALIZE_WHITESPACE
        PASS: collective on 2 replicas took 4.5 times as long for 4 MiB as for 256 KiB, which
        is 16 times the bytes (1 would mean all latency, 16 all bandwidth). Your prediction,
        16, is 3.56 times too high: not within a factor of 2 of the measurement.
        >>> mk.check_all_reduce_growth(16, 0.002 / 0.009, measurement, small="256KiB",
        ...                            large="4MiB", replicas=2).message[:62]
        'measured_growth is the 256 KiB time divided by the 4 MiB time:'
    """
    call = "check_all_reduce_growth"
    low, high = message_size("small", small, call), message_size("large", large, call)
    if low >= high:
        got = f"small={small!r} and large={large!r}"
        write = "e.g. small='256KiB', large='4MiB'"
        refuse("small", must="smaller than large", got=got, write=write, error=ValueError)
    replica_count(replicas, call)
    if not isinstance(algorithm, str):
        refuse(
            "algorithm", algorithm, must="an algorithm's name", write="e.g. algorithm='collective'"
        )
    write = "e.g. tolerance=2.0 (a prediction within a factor 2 of the measurement is right)"
    if require_number("tolerance", tolerance, write=write) <= 1:
        refuse("tolerance", tolerance, must="a factor above 1", write=write, error=ValueError)
    if any(answer is Ellipsis for answer in (predicted_growth, measured_growth, measurement)):
        return NOT_ATTEMPTED
    sizes = f"{format_size(high)} takes than {format_size(low)}"
    predicted = one_number(predicted_growth)
    if predicted is None or not predicted > 0 or math.isinf(predicted):
        got = f"{type(predicted_growth).__name__} {predicted_growth!r}"
        return CheckResult(
            False,
            f"predicted_growth must be a positive number, your guess of how many times longer "
            f"{sizes} (1 means no longer at all), e.g. 3.0; got {got}.",
        )
    records, problem = records_of(measurement, "measurement")
    if problem:
        return CheckResult(False, problem)
    picked = {
        r.bytes: r
        for r in records
        if r.algorithm == algorithm and r.replicas == replicas and r.bytes in (low, high)
    }
    if len(picked) < 2:
        return CheckResult(
            False, _not_measured(measurement, records, algorithm, replicas, (low, high))
        )
    sizes_text = ", ".join(repr(format_size(b).replace(" ", "")) for b in (low, high))
    again = (
        f"measure with mk.benchmark_all_reduce({algorithm!r}, sizes=[{sizes_text}], "
        f"replicas=[{replicas}]) in the same notebook and derive the growth from its records"
    )
    problem = not_measured_here(measurement, "measurement", again)
    if problem:
        return CheckResult(False, problem)
    growth = one_number(measured_growth)
    if growth is None:
        what = type(measured_growth).__name__
        return CheckResult(
            False,
            f"measured_growth has type {what}, not a number: give one number, the median time at "
            f"{format_size(high)} divided by the median time at {format_size(low)}.",
        )
    expected = picked[high].median_s / picked[low].median_s
    if not same(growth, expected):
        return CheckResult(
            False, _which_growth(growth, records, algorithm, replicas, low, high, picked)
        )
    return CheckResult(
        True, _growth_verdict(predicted, expected, algorithm, replicas, low, high, tolerance)
    )


def _not_measured(measurement, records, algorithm: str, replicas: int, sizes) -> str:
    low, high = (format_size(s) for s in sizes)
    wanted = f"sizes=['{low.replace(' ', '')}', '{high.replace(' ', '')}']"
    again = (
        f"benchmark it again with mk.benchmark_all_reduce({algorithm!r}, {wanted}, "
        f"replicas=[{replicas}])"
    )
    mine = [r for r in records if r.algorithm == algorithm]
    if not mine:
        reason = skip_reason(skipped_of(measurement), algorithm, replicas)
        if reason:
            return f"measurement skipped {algorithm} ({reason}): nothing of it was measured."
        return f"measurement has no record of {algorithm}: {again}."
    counts = sorted({r.replicas for r in mine})
    if replicas not in counts:
        return (
            f"measurement has no record of {algorithm} on {replicas} replicas (it measured "
            f"{listing(str(n) for n in counts)}): {again}."
        )
    have = sorted({r.bytes for r in mine if r.replicas == replicas})
    missing = [format_size(s) for s in sizes if s not in have]
    return (
        f"measurement has no record of {algorithm} at {' or '.join(missing)} on {replicas} "
        f"replicas (it measured {listing(format_size(s) for s in have)}): {again}."
    )


def _which_growth(growth: float, records, algorithm, replicas, low, high, picked) -> str:
    """Which derivation ``growth`` came from, for the message that names the mistake."""
    small, large = picked[low], picked[high]
    s, b = format_size(low), format_size(high)
    divide = f"divide the median time at {b} by the one at {s} (record.median_s)"
    said = f"measured_growth is {growth:.6g}"
    mistakes = [
        (small.median_s / large.median_s, f"the {s} time divided by the {b} time"),
        (large.algbw / small.algbw, "a ratio of bandwidths (record.algbw or busbw), not of times"),
        (small.algbw / large.algbw, "a ratio of bandwidths (record.algbw or busbw), not of times"),
        (large.min_s / small.min_s, "a ratio of the fastest repeats (record.min_s)"),
        (large.max_s / small.max_s, "a ratio of the slowest repeats (record.max_s)"),
        (large.median_s - small.median_s, "a difference of times, not a ratio"),
        (1000 * (large.median_s - small.median_s), "a difference of times, not a ratio"),
        (high / low, f"the ratio of the sizes ({high // low} times the bytes), not of times"),
    ]
    for value, what in mistakes:
        if same(growth, value):
            return f"measured_growth is {what}: {divide}."
    for other in records:
        if (other.algorithm, other.replicas) == (algorithm, replicas) or other.bytes != high:
            continue
        partner = next(
            (
                r
                for r in records
                if (r.algorithm, r.replicas, r.bytes) == (other.algorithm, other.replicas, low)
            ),
            None,
        )
        if partner is not None and same(growth, other.median_s / partner.median_s):
            return (
                f"{said}, the growth of {other.algorithm} on {other.replicas} replicas, not of "
                f"{algorithm} on {replicas}: {divide}, both for {algorithm} on {replicas} "
                "replicas."
            )
    return (
        f"{said}, which is not the ratio of measurement's median times: a number typed in or "
        "copied from an earlier output is not from these records (every run measures again, "
        f"and so does grading). Compute it from measurement.records: {divide}, both for "
        f"{algorithm} on {replicas} replicas."
    )


def _growth_verdict(predicted, growth, algorithm, replicas, low, high, tolerance) -> str:
    bytes_ratio = high / low
    if growth < 1:
        regime = (
            "the larger message was faster, so the machine was busy during the measurement: "
            "measure again for a cleaner picture"
        )
    elif growth > bytes_ratio:
        regime = "more than the bytes grew: the larger message was slower per byte"
    else:
        regime = f"1 would mean all latency, {bytes_ratio:g} all bandwidth"
    measured = (
        f"{algorithm} on {replicas} replicas took {growth:.3g} times as long for "
        f"{format_size(high)} as for {format_size(low)}, which is {bytes_ratio:g} times the "
        f"bytes ({regime})."
    )
    factor = predicted / growth
    if 1 / tolerance <= factor <= tolerance:
        guess = (
            f"Your prediction, {predicted:.3g}, is within a factor of {tolerance:g} of the "
            "measurement."
        )
    else:
        off, way = (factor, "high") if factor > 1 else (1 / factor, "low")
        guess = (
            f"Your prediction, {predicted:.3g}, is {off:.3g} times too {way}: not within a "
            f"factor of {tolerance:g} of the measurement."
        )
    return f"{measured} {guess}"
