"""Check a ranking of all-reduce algorithms a learner derived from a benchmark's records.

Example:
    >>> import mirrorkit as mk
    >>> mk.check_all_reduce_ranking(..., ..., mk.AllReduceBenchmark(records=()), size="8MiB",
    ...                             replicas=2)
    NOT YET: not attempted yet: replace the ... with your answer and run the cell.
"""

from __future__ import annotations

from collections.abc import Mapping

from mirrorkit.checks._benchmark_records import (
    is_record,
    listing,
    message_size,
    one_number,
    records_of,
    replica_count,
    same,
    skip_reason,
    skipped_of,
)
from mirrorkit.checks.result import NOT_ATTEMPTED, CheckResult
from mirrorkit.report.units import format_seconds, format_size


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
        >>> from mirrorkit.measure.benchmark import record_from_times
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
    nbytes = message_size("size", size, "check_all_reduce_ranking")
    replica_count(replicas, "check_all_reduce_ranking")
    records, problem = records_of(benchmark, "benchmark")
    if problem:
        raise TypeError(problem)
    if predicted_ranking is Ellipsis or ranking is Ellipsis:
        return NOT_ATTEMPTED
    here = {r.algorithm: r for r in records if r.bytes == nbytes and r.replicas == replicas}
    if len(here) < 2:
        return CheckResult(False, _nothing_to_rank(benchmark, records, here, nbytes, replicas))
    where = f"at {format_size(nbytes)} on {replicas} replicas"
    skipped = skipped_of(benchmark)
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
        if not same(seconds, here[name].median_s):
            return CheckResult(False, _which_time(name, seconds, records, nbytes, replicas))
    times = [seconds for _, seconds in pairs]
    if any(later < earlier for earlier, later in zip(times, times[1:], strict=False)):
        return CheckResult(False, _order_problem(pairs))
    return CheckResult(True, _ranking_verdict(list(predicted_ranking), pairs, here, where))


def _nothing_to_rank(benchmark, records, here, nbytes: int, replicas: int) -> str:
    size = format_size(nbytes)
    counts = sorted({r.replicas for r in records})
    if replicas not in counts:
        measured = listing(str(n) for n in counts) or "none"
        return (
            f"cannot check: benchmark has no record on {replicas} replicas (replica counts "
            f"measured: {measured}), so there is nothing to rank: benchmark with "
            f"replicas=[{replicas}] and run this check again."
        )
    sizes = sorted({r.bytes for r in records if r.replicas == replicas})
    if nbytes not in sizes:
        return (
            f"cannot check: benchmark has no record of {size} on {replicas} replicas (sizes "
            f"measured: {listing(format_size(s) for s in sizes)}): benchmark with "
            f"sizes=['{size.replace(' ', '')}'] and run this check again."
        )
    skipped = skipped_of(benchmark)
    why = "; ".join(f"{name}: {reason.split(':')[0]}" for name, reason in skipped.items())
    return (
        f"cannot check: benchmark measured only {listing(here)} at {size} on {replicas} "
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
            reason = skip_reason(skipped, name, replicas)
            ran = f"did not run here ({reason})" if reason else f"was not measured {where}"
            return (
                f"{argument} names {name!r}, which {ran}: rank only the measured algorithms, "
                f"{listing(sorted(measured))}."
            )
    for name in value:
        if list(value).count(name) > 1:
            return f"{argument} names {name!r} twice: name each measured algorithm once."
    missing = [name for name in sorted(measured) if name not in value]
    if missing:
        return (
            f"{argument} leaves out {listing(map(repr, missing))}: name every algorithm "
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
        if is_record(entry):
            pairs.append((entry.algorithm, float(entry.median_s)))
            continue
        seconds = (
            one_number(entry[1]) if isinstance(entry, list | tuple) and len(entry) == 2 else None
        )
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
    if same(seconds, mine.median_s * 1000):
        return (
            f"{said}, which is its median time in milliseconds: give seconds, as "
            "record.median_s does."
        )
    for record in own:
        here = record.bytes == nbytes and record.replicas == replicas
        place = f"at {format_size(record.bytes)} on {record.replicas} replicas"
        if not here and same(seconds, record.median_s):
            return f"{said}, which is its median time {place}, not {target}: {keep}."
        for field, mistake in _FIELD_MISTAKES.items():
            if same(seconds, getattr(record, field)):
                also = "" if here else f" (and {place}, not {target}: {keep})"
                return f"{said}, which is {mistake}{also}."
    for record in records:
        place = (record.bytes, record.replicas) == (nbytes, replicas)
        if place and record.algorithm != name and same(seconds, record.median_s):
            return (
                f"{said}, which is the median time of {record.algorithm!r}, not its own: "
                "pair each algorithm with the time of its own record."
            )
    return (
        f"{said}, which is none of the times benchmark recorded for it: a time typed in or "
        "copied from an earlier output is not from these records (every run measures again, "
        "and so does grading). Compute each pair from benchmark.records: record.median_s of "
        f"the record with algorithm == {name!r}, bytes == {nbytes} and replicas == {replicas}."
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
                "by their time, fastest first (an order written by hand or copied from an "
                "earlier output need not be this run's)."
            )
    return "ranking is not in order of time: sort the pairs by their time, fastest first."


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
