"""Checks of predict-then-measure exercises: a committed prediction, and a derivation from timings.

The learner first writes down a prediction (which all-reduce algorithm wins at a size, how much
longer a larger message takes), then derives the measured answer from the records of an
:class:`~mirrorkit.AllReduceBenchmark`. Timings change from run to run, and more so on a busy
machine, so no check here compares a time with a threshold. Each one recomputes, from the same
records the learner used, what the learner was asked to derive, and judges the derivation: the
verdict depends on the learner's arithmetic, never on how fast the machine was. A wrong answer
is recognised by the recorded number it took instead (another size or replica count, the
fastest repeat, a bandwidth, the inverse ratio) and the message names it. The prediction only
has to be well formed: the message says how far it was from the measurement.

A check cannot test what the benchmark did not measure (a size, a replica count, or an
algorithm that was skipped or not asked for; one replica has no all-reduce to time at all), so
it then says what is missing and does not pass.

The benchmark is read through its attributes (``records``, ``skipped``) and those of its
records, so that this package does not import :mod:`mirrorkit.measure`.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping

from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult
from mirrorkit.report.units import format_seconds, format_size, parse_size

# Two derivations from the same records (a ratio of times, or the same ratio through algbw)
# agree to rounding; different recorded numbers differ by far more.
_SAME = 1e-9
_FIELDS = ("algorithm", "replicas", "bytes", "median_s", "min_s", "max_s", "iqr_s")
_MAKE = "make it with mk.benchmark_all_reduce(...)"


def check_all_reduce_ranking(
    predicted_ranking, ranking, benchmark, *, size: int | str, replicas: int
) -> CheckResult:
    """Check a ranking of all-reduce algorithms derived from a benchmark, after a prediction.

    The learner commits ``predicted_ranking`` (the measured algorithms' names, fastest first)
    and derives ``ranking``: one ``(algorithm, median seconds)`` pair per algorithm that
    ``benchmark`` measured at ``size`` on ``replicas`` replicas, fastest first. The check
    passes when each pair holds that algorithm's recorded median time (``record.median_s``,
    to rounding) and the pairs go from the shortest time to the longest. The prediction must
    name every measured algorithm once; it need not be right, the message compares it with
    the measured ranking and says which neighbours are closer than the spread of their
    repeats (another run may swap those).

    Args:
        predicted_ranking: The learner's prediction, a list of algorithm names
            (``...``: not attempted).
        ranking: The learner's answer, a list of ``(algorithm, seconds)`` pairs (or the
            benchmark's records themselves), fastest first (``...``: not attempted).
        benchmark: The :class:`~mirrorkit.AllReduceBenchmark` both come from.
        size: The message size to rank at, in bytes or as text such as ``"8MiB"``.
        replicas: The replica count to rank at, at least 2.

    Returns:
        A :class:`~mirrorkit.CheckResult`. It does not pass when ``benchmark`` holds fewer
        than two algorithms at ``size`` on ``replicas`` replicas: there is nothing to rank.

    Raises:
        TypeError: If ``benchmark`` is not an ``AllReduceBenchmark``, ``size`` is not a size
            or ``replicas`` not an int.
        ValueError: If ``size`` is not positive or ``replicas`` is below 2 (one replica
            all-reduces with nobody).

    Example:
        >>> import mirrorkit as mk
        >>> from mirrorkit.measure.allreduce import record_from_times
        >>> benchmark = mk.AllReduceBenchmark(records=(
        ...     record_from_times("collective", 2, 8 << 20, [0.012, 0.010, 0.011], 1e10),
        ...     record_from_times("one_device", 2, 8 << 20, [0.004, 0.003, 0.005], 1e10),
        ... ))
        >>> ranking = [("one_device", 0.004), ("collective", 0.011)]
        >>> mk.check_all_reduce_ranking(["collective", "one_device"], ranking, benchmark,
        ...                             size="8MiB", replicas=2)  # doctest: +NORMALIZE_WHITESPACE
        PASS: the measured ranking at 8 MiB on 2 replicas is one_device (4 ms), then
        collective (11 ms). Your prediction had 0 of 2 places right; you predicted collective
        fastest.
        >>> mk.check_all_reduce_ranking(["collective", "one_device"], ranking[::-1], benchmark,
        ...                             size="8MiB", replicas=2).message[:33]
        'ranking is slowest first: sort it'
    """
    nbytes = _size("size", size, "check_all_reduce_ranking")
    _replicas(replicas, "check_all_reduce_ranking")
    records, problem = _records(benchmark, "benchmark")
    if problem:
        raise TypeError(problem)
    if predicted_ranking is Ellipsis or ranking is Ellipsis:
        return NOT_ATTEMPTED
    here = {r.algorithm: r for r in records if r.bytes == nbytes and r.replicas == replicas}
    if len(here) < 2:
        return CheckResult(False, _nothing_to_rank(benchmark, records, here, nbytes, replicas))
    where = f"at {format_size(nbytes)} on {replicas} replicas"
    skipped = _skipped(benchmark)
    problem = _names_problem(predicted_ranking, "predicted_ranking", here, replicas, skipped)
    if problem:
        return CheckResult(False, problem)
    pairs = _pairs(ranking, list(here))
    if isinstance(pairs, str):
        return CheckResult(False, pairs)
    problem = _names_problem([n for n, _ in pairs], "ranking", here, replicas, skipped)
    if problem:
        return CheckResult(False, problem)
    for name, seconds in pairs:
        if not _same(seconds, here[name].median_s):
            return CheckResult(False, _which_time(name, seconds, records, nbytes, replicas))
    times = [seconds for _, seconds in pairs]
    if any(later < earlier for earlier, later in zip(times, times[1:], strict=False)):
        return CheckResult(False, _order_problem(pairs))
    return CheckResult(True, _ranking_verdict(list(predicted_ranking), pairs, here, where))


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
    rounding); the prediction need only be a positive number. The message says whether it
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
        >>> from mirrorkit.measure.allreduce import record_from_times
        >>> measurement = mk.AllReduceBenchmark(records=(
        ...     record_from_times("collective", 2, 256 << 10, [0.002, 0.002, 0.003], 1e10),
        ...     record_from_times("collective", 2, 4 << 20, [0.008, 0.009, 0.010], 1e10),
        ... ))
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
    low, high = _size("small", small, call), _size("large", large, call)
    if low >= high:
        raise ValueError(
            f"small must be smaller than large, got small={small!r} and large={large!r}: "
            "write e.g. small='256KiB', large='4MiB'."
        )
    _replicas(replicas, call)
    if not isinstance(algorithm, str):
        raise TypeError(
            f"algorithm must be an algorithm's name, got {type(algorithm).__name__} "
            f"{algorithm!r}: write e.g. algorithm='collective'."
        )
    if isinstance(tolerance, bool) or not isinstance(tolerance, numbers.Real):
        raise TypeError(
            f"tolerance must be a number, got {type(tolerance).__name__} {tolerance!r}: write "
            "e.g. tolerance=2.0 (a prediction within a factor 2 of the measurement is right)."
        )
    if not tolerance > 1 or math.isinf(tolerance):
        raise ValueError(
            f"tolerance must be a factor above 1, got {tolerance!r}: write e.g. tolerance=2.0 "
            "(a prediction within a factor 2 of the measurement is right)."
        )
    if any(answer is Ellipsis for answer in (predicted_growth, measured_growth, measurement)):
        return NOT_ATTEMPTED
    sizes = f"{format_size(high)} takes than {format_size(low)}"
    predicted = _number(predicted_growth)
    if predicted is None or not predicted > 0 or math.isinf(predicted):
        got = f"{type(predicted_growth).__name__} {predicted_growth!r}"
        return CheckResult(
            False,
            f"predicted_growth must be a positive number, your guess of how many times longer "
            f"{sizes} (1 means no longer at all), e.g. 3.0; got {got}.",
        )
    records, problem = _records(measurement, "measurement")
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
    growth = _number(measured_growth)
    if growth is None:
        what = type(measured_growth).__name__
        return CheckResult(
            False,
            f"measured_growth has type {what}, not a number: give one number, the median time at "
            f"{format_size(high)} divided by the median time at {format_size(low)}.",
        )
    expected = picked[high].median_s / picked[low].median_s
    if not _same(growth, expected):
        return CheckResult(
            False, _which_growth(growth, records, algorithm, replicas, low, high, picked)
        )
    return CheckResult(
        True, _growth_verdict(predicted, expected, algorithm, replicas, low, high, tolerance)
    )


# --- arguments ---------------------------------------------------------------------------


def _size(name: str, value, call: str) -> int:
    """``value`` as a positive number of bytes, or a TypeError/ValueError naming ``name``."""
    example = f"write e.g. {name}='8MiB' in mk.{call}(...)"
    try:
        nbytes = parse_size(value)
    except TypeError:
        raise TypeError(
            f"{name} must be a size, bytes or text such as '8MiB', got "
            f"{type(value).__name__} {value!r}: {example}."
        ) from None
    except ValueError as error:
        raise ValueError(f"{name}: {error}") from None
    if nbytes <= 0:
        raise ValueError(f"{name} must be a positive size, got {value!r}: {example}.")
    return nbytes


def _replicas(value, call: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"replicas must be an int, got {type(value).__name__} {value!r}: write the replica "
            f"count the benchmark measured, e.g. mk.{call}(..., replicas=REPLICAS)."
        )
    if value < 2:
        raise ValueError(
            f"replicas must be at least 2, got {value}: an all-reduce over one replica has "
            "nobody to reduce with, so there is no all-reduce to measure. Simulate more with "
            "mk.simulate_replicas(4) before TensorFlow starts."
        )


def _records(benchmark, argument: str) -> tuple[list, str | None]:
    """The records of an AllReduceBenchmark, or why ``benchmark`` is not one."""
    if isinstance(benchmark, str):
        return [], (
            f"{argument} is text, not a benchmark: load a saved one with "
            "mk.AllReduceBenchmark.from_json(...), or make it with mk.benchmark_all_reduce(...)."
        )
    if isinstance(benchmark, Mapping):
        return [], (
            f"{argument} is a dict, not a benchmark: pass the AllReduceBenchmark itself "
            "(what mk.benchmark_all_reduce returned), not its to_dict()."
        )
    records = getattr(benchmark, "records", None)
    if records is None and _is_record(benchmark):
        return [], (
            f"{argument} is one record, not a benchmark: pass the AllReduceBenchmark that "
            "mk.benchmark_all_reduce returned."
        )
    if records is None and isinstance(benchmark, list | tuple):
        return [], (
            f"{argument} is a {type(benchmark).__name__}, not a benchmark: pass the "
            "AllReduceBenchmark that mk.benchmark_all_reduce returned itself, not its records."
        )
    if not isinstance(records, list | tuple) or not all(_is_record(r) for r in records):
        return [], (
            f"{argument} has type {type(benchmark).__name__}, not an AllReduceBenchmark: {_MAKE}."
        )
    return list(records), None


def _is_record(value) -> bool:
    return all(hasattr(value, name) for name in _FIELDS) and not isinstance(value, type)


def _skipped(benchmark) -> dict[str, str]:
    skipped = getattr(benchmark, "skipped", None)
    return dict(skipped) if isinstance(skipped, Mapping) else {}


def _skip_reason(skipped: dict[str, str], algorithm: str, replicas: int) -> str | None:
    """Why ``algorithm`` did not run (on ``replicas`` replicas), first clause only."""
    reason = skipped.get(algorithm) or skipped.get(f"{algorithm} on {replicas} replicas")
    return reason.split(":")[0].split(". ")[0] if reason else None


def _number(value) -> float | None:
    """``value`` as a float if it is one real number (a NumPy or TensorFlow scalar too)."""
    if isinstance(value, bool | str | bytes):
        return None
    if isinstance(value, numbers.Real):
        return float(value)
    if getattr(value, "shape", None) == () and hasattr(value, "dtype"):
        try:
            number = float(value)
        except (TypeError, ValueError):
            return None
        return None if math.isnan(number) else number
    return None


def _same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_SAME, abs_tol=0.0)


def _listing(values) -> str:
    return ", ".join(values)


# --- check_all_reduce_ranking ------------------------------------------------------------


def _nothing_to_rank(benchmark, records, here, nbytes: int, replicas: int) -> str:
    size = format_size(nbytes)
    counts = sorted({r.replicas for r in records})
    if replicas not in counts:
        measured = _listing(str(n) for n in counts) or "none"
        return (
            f"cannot check: benchmark has no record on {replicas} replicas (replica counts "
            f"measured: {measured}), so there is nothing to rank: benchmark with "
            f"replicas=[{replicas}] and run this check again."
        )
    sizes = sorted({r.bytes for r in records if r.replicas == replicas})
    if nbytes not in sizes:
        return (
            f"cannot check: benchmark has no record of {size} on {replicas} replicas (sizes "
            f"measured: {_listing(format_size(s) for s in sizes)}): benchmark with "
            f"sizes=['{size.replace(' ', '')}'] and run this check again."
        )
    skipped = _skipped(benchmark)
    why = "; ".join(f"{name}: {reason.split(':')[0]}" for name, reason in skipped.items())
    return (
        f"cannot check: benchmark measured only {_listing(here)} at {size} on {replicas} "
        "replicas, and a ranking needs two algorithms or more: benchmark more of them, e.g. "
        "mk.benchmark_all_reduce(None, ...) for every one that can run here"
        + (f" (skipped: {why})." if why else ".")
    )


def _names_problem(value, argument: str, here, replicas: int, skipped) -> str | None:
    """Why ``value`` is not a list naming each algorithm of ``here`` once, or None."""
    measured = list(here)
    where = f"at {format_size(next(iter(here.values())).bytes)} on {replicas} replicas"
    example = f"[{', '.join(map(repr, sorted(measured)))}]"
    ask = f"write a list naming each algorithm measured {where} once, fastest first, e.g. {example}"
    if isinstance(value, str):
        return f"{argument} is the text {value!r}, not a list: {ask}."
    if not isinstance(value, list | tuple):
        return f"{argument} has type {type(value).__name__}, not a list: {ask}."
    for name in value:
        if not isinstance(name, str):
            return f"{argument} holds {name!r}, which is not an algorithm's name: {ask}."
        if name not in measured:
            reason = _skip_reason(skipped, name, replicas)
            ran = f"did not run here ({reason})" if reason else f"was not measured {where}"
            return (
                f"{argument} names {name!r}, which {ran}: rank only the measured algorithms, "
                f"{_listing(sorted(measured))}."
            )
    for name in value:
        if list(value).count(name) > 1:
            return f"{argument} names {name!r} twice: name each measured algorithm once."
    missing = [name for name in sorted(measured) if name not in value]
    if missing:
        return (
            f"{argument} leaves out {_listing(map(repr, missing))}: name every algorithm "
            f"measured {where} once, fastest first."
        )
    return None


def _pairs(ranking, measured: list[str]) -> list[tuple[str, float]] | str:
    """``ranking`` as (name, seconds) pairs, or a message saying why it is not a list of them."""
    name = sorted(measured)[0]
    ask = (
        "write a list of (algorithm, median seconds) pairs, fastest first, e.g. "
        f"[({name!r}, 0.0042), ...]"
    )
    if isinstance(ranking, Mapping):
        return (
            "ranking is a dict: write a list of (algorithm, median seconds) pairs, fastest "
            "first, e.g. sorted(times.items(), key=lambda pair: pair[1])."
        )
    if isinstance(ranking, str) or not isinstance(ranking, list | tuple):
        return f"ranking has type {type(ranking).__name__}, not a list: {ask}."
    pairs = []
    for entry in ranking:
        if isinstance(entry, str):
            return (
                f"ranking holds names only ({entry!r}): write (algorithm, median seconds) "
                "pairs, so that the check can see which measurement you ranked by."
            )
        if _is_record(entry):
            pairs.append((entry.algorithm, float(entry.median_s)))
            continue
        seconds = _number(entry[1]) if isinstance(entry, list | tuple) and len(entry) == 2 else None
        if seconds is None or not isinstance(entry[0], str):
            return f"ranking holds {entry!r}, which is not a pair (algorithm, seconds): {ask}."
        pairs.append((entry[0], seconds))
    return pairs


# What a number taken from another field of a record is, and what to use instead.
_FIELD_MISTAKES = {
    "min_s": "the fastest of its repeats (record.min_s), not their median: use "
    "record.median_s, which one lucky repeat cannot move",
    "max_s": "the slowest of its repeats (record.max_s), not their median: use "
    "record.median_s, which one unlucky repeat cannot move",
    "iqr_s": "the spread of its repeats (record.iqr_s), not a time: use record.median_s",
    "algbw": "its bandwidth record.algbw, in bytes per second, not a time: use "
    "record.median_s, in seconds (the fastest algorithm has the shortest time)",
    "busbw": "its bandwidth record.busbw, in bytes per second, not a time: use "
    "record.median_s, in seconds (the fastest algorithm has the shortest time)",
}


def _which_time(name: str, seconds: float, records, nbytes: int, replicas: int) -> str:
    """Which recorded number ``seconds`` is, for the message that names the mistake."""
    said = f"ranking pairs {name!r} with {seconds:.6g}"
    target = f"at {format_size(nbytes)} on {replicas} replicas"
    keep = f"keep only the records with record.bytes == {nbytes} and record.replicas == {replicas}"
    own = [r for r in records if r.algorithm == name]
    mine = next(r for r in own if r.bytes == nbytes and r.replicas == replicas)
    if _same(seconds, mine.median_s * 1000):
        return (
            f"{said}, which is its median time in milliseconds: give seconds, as "
            "record.median_s does."
        )
    for record in own:
        here = record.bytes == nbytes and record.replicas == replicas
        place = f"at {format_size(record.bytes)} on {record.replicas} replicas"
        if not here and _same(seconds, record.median_s):
            return f"{said}, which is its median time {place}, not {target}: {keep}."
        for field, mistake in _FIELD_MISTAKES.items():
            if _same(seconds, getattr(record, field)):
                also = "" if here else f" (and {place}, not {target}: {keep})"
                return f"{said}, which is {mistake}{also}."
    for record in records:
        place = (record.bytes, record.replicas) == (nbytes, replicas)
        if place and record.algorithm != name and _same(seconds, record.median_s):
            return (
                f"{said}, which is the median time of {record.algorithm!r}, not its own: "
                "pair each algorithm with the time of its own record."
            )
    return (
        f"{said}, which is none of the times benchmark recorded for it: give record.median_s "
        f"of the record with algorithm == {name!r}, bytes == {nbytes} and replicas == "
        f"{replicas}."
    )


def _order_problem(pairs: list[tuple[str, float]]) -> str:
    times = [seconds for _, seconds in pairs]
    if all(later <= earlier for earlier, later in zip(times, times[1:], strict=False)):
        return (
            "ranking is slowest first: sort it fastest first, the shortest median time first "
            "(sorted(pairs, key=lambda pair: pair[1]), without reverse=True)."
        )
    for (first, t1), (second, t2) in zip(pairs, pairs[1:], strict=False):
        if t2 < t1:
            return (
                f"ranking is not in order of time: {first!r} ({format_seconds(t1)}) comes "
                f"before {second!r} ({format_seconds(t2)}), which is faster: sort the pairs "
                "by their time, fastest first."
            )
    raise AssertionError("pairs in order")  # pragma: no cover


def _ranking_verdict(predicted: list[str], pairs, here, where: str) -> str:
    order = [name for name, _ in pairs]
    shown = ", then ".join(f"{name} ({format_seconds(t)})" for name, t in pairs)
    right = sum(p == a for p, a in zip(predicted, order, strict=True))
    if right == len(order):
        guess = "Your prediction was right in every place."
    else:
        first = (
            ", the fastest included"
            if predicted[0] == order[0]
            else f"; you predicted {predicted[0]} fastest"
        )
        guess = f"Your prediction had {right} of {len(order)} places right{first}."
    close = [
        f"{a} and {b}"
        for (a, ta), (b, tb) in zip(pairs, pairs[1:], strict=False)
        if tb - ta < max(here[a].iqr_s, here[b].iqr_s)
    ]
    if len(close) == 1:
        note = (
            f" Another run may swap {close[0]}: they are closer than the spread (IQR) of "
            "their repeats."
        )
    elif close:
        note = (
            f" Another run may swap {', and '.join(close)}: each pair is closer than the "
            "spread (IQR) of its repeats."
        )
    else:
        note = ""
    return f"the measured ranking {where} is {shown}. {guess}{note}"


# --- check_all_reduce_growth -------------------------------------------------------------


def _not_measured(measurement, records, algorithm: str, replicas: int, sizes) -> str:
    low, high = (format_size(s) for s in sizes)
    wanted = f"sizes=['{low.replace(' ', '')}', '{high.replace(' ', '')}']"
    again = (
        f"benchmark it again with mk.benchmark_all_reduce({algorithm!r}, {wanted}, "
        f"replicas=[{replicas}])"
    )
    mine = [r for r in records if r.algorithm == algorithm]
    if not mine:
        reason = _skip_reason(_skipped(measurement), algorithm, replicas)
        if reason:
            return f"measurement skipped {algorithm} ({reason}): nothing of it was measured."
        return f"measurement has no record of {algorithm}: {again}."
    counts = sorted({r.replicas for r in mine})
    if replicas not in counts:
        return (
            f"measurement has no record of {algorithm} on {replicas} replicas (it measured "
            f"{_listing(str(n) for n in counts)}): {again}."
        )
    have = sorted({r.bytes for r in mine if r.replicas == replicas})
    missing = [format_size(s) for s in sizes if s not in have]
    return (
        f"measurement has no record of {algorithm} at {' or '.join(missing)} on {replicas} "
        f"replicas (it measured {_listing(format_size(s) for s in have)}): {again}."
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
        if _same(growth, value):
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
        if partner is not None and _same(growth, other.median_s / partner.median_s):
            return (
                f"{said}, the growth of {other.algorithm} on {other.replicas} replicas, not of "
                f"{algorithm} on {replicas}: {divide}, both for {algorithm} on {replicas} "
                "replicas."
            )
    return (
        f"{said}, which is not the ratio of measurement's median times: {divide}, both for "
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
