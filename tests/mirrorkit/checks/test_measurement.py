"""The predict-then-measure checks: a derivation from benchmark records, judged exactly.

Most tests use a benchmark built from chosen times (record_from_times, the benchmark's own
arithmetic), so every verdict here is known in advance; one test runs a real benchmark.
"""

import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.checks._benchmark_records import this_machine
from mirrorkit.measure.benchmark import record_from_times

ALGORITHMS = ("collective", "hierarchical_copy", "one_device")
SIZES = (4 << 10, 256 << 10, 1 << 20, 4 << 20, 8 << 20)
EIGHT_MIB, SMALL, LARGE = 8 << 20, 256 << 10, 4 << 20
LATENCY = {"collective": 1e-3, "hierarchical_copy": 0.6e-3, "one_device": 0.5e-3}
BANDWIDTH = {"collective": 0.7e9, "hierarchical_copy": 2e9, "one_device": 3e9}


def seconds(algorithm, replicas, nbytes):
    return LATENCY[algorithm] * replicas / 2 + nbytes / BANDWIDTH[algorithm]


def record(algorithm, replicas, nbytes, median=None):
    t = seconds(algorithm, replicas, nbytes) if median is None else median
    return record_from_times(algorithm, replicas, nbytes, [t - 1e-4, t, t + 3e-4], 1e10)


def make_benchmark(algorithms=ALGORITHMS, counts=(2, 4), sizes=SIZES, skipped=None):
    records = tuple(record(a, n, s) for a in algorithms for n in counts for s in sizes)
    skipped = skipped or {"nccl": "NCCL all-reduce cannot run here"}
    return mk.AllReduceBenchmark(records, skipped, machine=this_machine())  # as if measured here


BENCHMARK = make_benchmark()
FASTEST_FIRST = ["one_device", "hierarchical_copy", "collective"]  # at 8 MiB on 4 replicas


def at(benchmark=BENCHMARK, nbytes=EIGHT_MIB, replicas=4):
    return [r for r in benchmark.records if r.bytes == nbytes and r.replicas == replicas]


def pairs(records, field="median_s", scale=1.0):
    return [(r.algorithm, scale * getattr(r, field)) for r in records]


def by_time(entries, reverse=False):
    return sorted(entries, key=lambda pair: pair[1], reverse=reverse)


def rank(predicted, ranking, benchmark=BENCHMARK, size="8MiB", replicas=4):
    return mk.check_all_reduce_ranking(predicted, ranking, benchmark, size=size, replicas=replicas)


def growth_of(measurement, nbytes=(SMALL, LARGE), algorithm="collective", replicas=4):
    small, large = (
        next(
            r
            for r in measurement.records
            if (r.algorithm, r.replicas, r.bytes) == (algorithm, replicas, size)
        )
        for size in nbytes
    )
    return small, large


def grow(predicted, measured, measurement=BENCHMARK, **kwargs):
    settings = dict(small="256KiB", large="4MiB", replicas=4) | kwargs
    return mk.check_all_reduce_growth(predicted, measured, measurement, **settings)


# -- not attempted ------------------------------------------------------------------------


def test_any_answer_left_at_ellipsis_is_not_attempted():
    right = by_time(pairs(at()))
    small, large = growth_of(BENCHMARK)
    for result in (
        rank(..., ...),
        rank(FASTEST_FIRST, ...),
        rank(..., right),
        grow(..., ..., ...),
        grow(3.0, ..., BENCHMARK),
        grow(3.0, large.median_s / small.median_s, ...),
    ):
        assert not result
        assert repr(result) == (
            "NOT YET: not attempted yet: replace the ... with your answer and run the cell."
        )


# -- check_all_reduce_ranking --------------------------------------------------------------


def test_a_right_ranking_passes_whatever_was_predicted():
    right = by_time(pairs(at()))
    assert [name for name, _ in right] == FASTEST_FIRST
    exact = rank(FASTEST_FIRST, right)
    assert exact and "Your prediction was right in every place." in exact.message
    assert exact.message.startswith(
        "the measured ranking at 8 MiB on 4 replicas is one_device (3.8 ms), then "
        "hierarchical_copy (5.39 ms), then collective (14 ms)."
    )
    wrong = rank(FASTEST_FIRST[::-1], right)
    assert wrong, wrong
    assert "had 1 of 3 places right; you predicted collective fastest." in wrong.message
    first_only = rank(["one_device", "collective", "hierarchical_copy"], right)
    assert "had 1 of 3 places right, the fastest included." in first_only.message


@pytest.mark.parametrize(
    "ranking",
    [
        pytest.param(sorted(at(), key=lambda r: r.median_s), id="the-records-themselves"),
        pytest.param(
            [(r.algorithm, r.median_s) for r in sorted(at(), key=lambda r: -r.busbw)],
            id="sorted-by-busbw-highest-first",
        ),
        pytest.param(
            [(r.algorithm, r.bytes / r.algbw) for r in sorted(at(), key=lambda r: -r.algbw)],
            id="time-from-algbw",
        ),
        pytest.param(
            tuple((a, np.float64(t)) for a, t in by_time(pairs(at()))), id="numpy-seconds"
        ),
    ],
)
def test_other_right_derivations_pass(ranking):
    assert rank(FASTEST_FIRST, ranking)


WRONG_RANKINGS = [
    pytest.param(
        by_time(pairs(at()), reverse=True),
        "ranking is slowest first: sort it fastest first",
        id="slowest-first",
    ),
    pytest.param(
        [pairs(at())[i] for i in (2, 0, 1)],  # one_device, collective, hierarchical_copy
        "ranking is not in order of time: 'collective' (14 ms) comes before "
        "'hierarchical_copy' (5.39 ms), which is faster",
        id="unsorted",
    ),
    pytest.param(
        by_time(pairs(at(nbytes=1 << 20))),
        "which is its median time at 1 MiB on 4 replicas, not at 8 MiB on 4 replicas: keep "
        "only the records with record.bytes == 8388608 and record.replicas == 4.",
        id="another-size",
    ),
    pytest.param(
        by_time(pairs(at(replicas=2))),
        "its median time at 8 MiB on 2 replicas, not at 8 MiB on 4 replicas",
        id="another-replica-count",
    ),
    pytest.param(
        by_time(pairs(at(), "min_s")),
        "the fastest of its repeats (record.min_s), not their median",
        id="fastest-repeat",
    ),
    pytest.param(
        by_time(pairs(at(), "max_s")),
        "the slowest of its repeats (record.max_s)",
        id="slowest-repeat",
    ),
    pytest.param(
        by_time(pairs(at(nbytes=1 << 20), "min_s")),
        "the fastest of its repeats (record.min_s), not their median: use record.median_s, "
        "which one lucky repeat cannot move (and at 1 MiB on 4 replicas, not at 8 MiB",
        id="fastest-repeat-at-another-size",
    ),
    pytest.param(
        by_time(pairs(at(), "busbw"), reverse=True),
        "its bandwidth record.busbw, in bytes per second, not a time",
        id="bandwidth",
    ),
    pytest.param(
        by_time(pairs(at(), "median_s", 1000)),
        "its median time in milliseconds: give seconds",
        id="milliseconds",
    ),
    pytest.param(
        [("one_device", at()[1].median_s), ("hierarchical_copy", 0.0054), ("collective", 1)],
        "ranking pairs 'one_device' with 0.0053943, which is the median time of "
        "'hierarchical_copy', not its own",
        id="times-of-another-algorithm",
    ),
    pytest.param(
        [("one_device", 0.0031), ("hierarchical_copy", 0.0054), ("collective", 0.014)],
        "ranking pairs 'one_device' with 0.0031, which is none of the times benchmark "
        "recorded for it: a time typed in or copied from an earlier output is not from these "
        "records (every run measures again, and so does grading). Compute each pair from "
        "benchmark.records: record.median_s of the record with algorithm == 'one_device', "
        "bytes == 8388608 and replicas == 4.",
        id="typed-in-guesses",
    ),
    pytest.param(
        FASTEST_FIRST,
        "ranking holds names only ('one_device'): write (algorithm, median seconds) pairs",
        id="names-only",
    ),
    pytest.param(
        dict(by_time(pairs(at()))),
        "ranking is a dict: write a list of (algorithm, median seconds) pairs",
        id="a-dict",
    ),
    pytest.param(
        by_time(pairs(at()))[:2],
        "ranking leaves out 'collective': name every algorithm measured at 8 MiB on 4 "
        "replicas once",
        id="one-left-out",
    ),
    pytest.param(
        [*by_time(pairs(at())), ("nccl", 0.001)],
        "ranking names 'nccl', which did not run here (NCCL all-reduce cannot run here)",
        id="a-skipped-algorithm",
    ),
    pytest.param(
        [("one_device", "3.8 ms"), *by_time(pairs(at()))[1:]],
        "ranking holds ('one_device', '3.8 ms'), which is not a pair (algorithm, seconds)",
        id="time-as-text",
    ),
]


@pytest.mark.parametrize(("ranking", "message"), WRONG_RANKINGS)
def test_a_wrong_ranking_is_rejected_and_the_message_names_the_mistake(ranking, message):
    result = rank(FASTEST_FIRST, ranking)
    assert not result
    assert message in result.message, result.message


@pytest.mark.parametrize(
    ("predicted", "message"),
    [
        ("one_device", "predicted_ranking is the text 'one_device', not a list"),
        (["one_device", "nccl", "collective"], "names 'nccl', which did not run here"),
        (["one_device", "one_device", "collective"], "names 'one_device' twice"),
        (["one_device", "collective"], "leaves out 'hierarchical_copy'"),
        (["one_device", "ring", "collective"], "names 'ring', which was not measured at 8 MiB"),
        ({"one_device": 1}, "predicted_ranking has type dict, not a list"),
        ([1, 2, 3], "predicted_ranking holds 1, which is not an algorithm's name"),
    ],
)
def test_the_prediction_must_name_each_measured_algorithm_once(predicted, message):
    result = rank(predicted, by_time(pairs(at())))
    assert not result
    assert message in result.message, result.message


def test_neighbours_closer_than_their_spread_are_said_to_be_swappable():
    close = mk.AllReduceBenchmark(
        (
            record("one_device", 2, EIGHT_MIB, median=0.0040),
            record("hierarchical_copy", 2, EIGHT_MIB, median=0.0041),
            record("collective", 2, EIGHT_MIB, median=0.0100),
        )
    )
    result = rank(FASTEST_FIRST, by_time(pairs(at(close, replicas=2))), close, replicas=2)
    assert result
    assert result.message.endswith(
        ". Another run may swap one_device and hierarchical_copy: they are closer than the "
        "spread (IQR) of their repeats."
    )
    assert "hierarchical_copy and collective" not in result.message
    closer = mk.AllReduceBenchmark(
        (*close.records[:2], record("collective", 2, EIGHT_MIB, median=0.0042))
    )
    result = rank(FASTEST_FIRST, by_time(pairs(at(closer, replicas=2))), closer, replicas=2)
    assert result.message.endswith(
        ". Another run may swap one_device and hierarchical_copy, and hierarchical_copy and "
        "collective: each pair is closer than the spread (IQR) of its repeats."
    )


@pytest.mark.parametrize(
    ("benchmark", "size", "message"),
    [
        pytest.param(
            make_benchmark(algorithms=["collective"]),
            "8MiB",
            "cannot check: benchmark measured only collective at 8 MiB on 4 replicas, and a "
            "ranking needs two algorithms or more",
            id="one-algorithm",
        ),
        pytest.param(
            BENCHMARK,
            "2MiB",
            "cannot check: benchmark has no record of 2 MiB on 4 replicas (sizes measured: "
            "4 KiB, 256 KiB, 1 MiB, 4 MiB, 8 MiB)",
            id="size-not-measured",
        ),
        pytest.param(
            make_benchmark(counts=(2,)),
            "8MiB",
            "cannot check: benchmark has no record on 4 replicas (replica counts measured: 2)",
            id="replica-count-not-measured",
        ),
        pytest.param(
            mk.AllReduceBenchmark((), {"collective": "no devices"}),
            "8MiB",
            "cannot check: benchmark has no record on 4 replicas (replica counts measured: none)",
            id="empty",
        ),
    ],
)
def test_a_ranking_the_benchmark_cannot_support_never_passes(benchmark, size, message):
    result = rank(FASTEST_FIRST, by_time(pairs(at())), benchmark, size=size)
    assert not result
    assert message in result.message, result.message


# -- check_all_reduce_growth ---------------------------------------------------------------


def test_the_growth_of_the_median_times_passes_whatever_was_predicted():
    small, large = growth_of(BENCHMARK)
    measured = large.median_s / small.median_s
    good = grow(6.0, measured)
    assert good
    assert good.message == (
        "collective on 4 replicas took 3.37 times as long for 4 MiB as for 256 KiB, which is "
        "16 times the bytes (1 would mean all latency, 16 all bandwidth). Your prediction, 6, "
        "is within a factor of 2 of the measurement."
    )
    high = grow(16, measured)
    assert high and "Your prediction, 16, is 4.75 times too high: not within a factor" in (
        high.message
    )
    low = grow(1, measured, tolerance=3.0)
    assert low and "is 3.37 times too low: not within a factor of 3" in low.message
    assert grow(2.0, measured, tolerance=4.0).message.endswith(
        "within a factor of 4 of the measurement."
    )


@pytest.mark.parametrize(
    "measured",
    [
        pytest.param(lambda small, large: 16 * small.algbw / large.algbw, id="through-algbw"),
        pytest.param(
            lambda small, large: np.float64(large.median_s) / small.median_s, id="numpy-scalar"
        ),
        pytest.param(
            lambda small, large: tf.constant(large.median_s / small.median_s, tf.float64),
            id="tensor",
        ),
    ],
)
def test_other_right_derivations_of_the_growth_pass(measured):
    small, large = growth_of(BENCHMARK)
    assert grow(3, measured(small, large))


def test_a_disturbed_measurement_is_said_to_be_one_but_its_arithmetic_still_passes():
    upset = mk.AllReduceBenchmark(
        (
            record("collective", 4, SMALL, median=0.004),
            record("collective", 4, LARGE, median=0.003),
        ),
        machine=this_machine(),
    )
    result = grow(4.0, 0.75, upset)
    assert result
    assert "the larger message was faster, so the machine was busy during the measurement" in (
        result.message
    )


def ratio(field):
    return lambda small, large: getattr(large, field) / getattr(small, field)


WRONG_GROWTHS = [
    pytest.param(
        lambda small, large: small.median_s / large.median_s,
        "measured_growth is the 256 KiB time divided by the 4 MiB time: divide the median "
        "time at 4 MiB by the one at 256 KiB (record.median_s).",
        id="inverted",
    ),
    pytest.param(ratio("algbw"), "a ratio of bandwidths (record.algbw or busbw)", id="algbw"),
    pytest.param(ratio("busbw"), "a ratio of bandwidths (record.algbw or busbw)", id="busbw"),
    pytest.param(
        lambda small, large: small.algbw / large.algbw, "a ratio of bandwidths", id="algbw-inverted"
    ),
    pytest.param(ratio("min_s"), "a ratio of the fastest repeats (record.min_s)", id="min"),
    pytest.param(ratio("max_s"), "a ratio of the slowest repeats (record.max_s)", id="max"),
    pytest.param(
        lambda small, large: large.median_s - small.median_s,
        "a difference of times",
        id="difference",
    ),
    pytest.param(
        lambda small, large: 16, "the ratio of the sizes (16 times the bytes)", id="sizes"
    ),
    pytest.param(
        lambda small, large: (
            growth_of(BENCHMARK, replicas=2)[1].median_s
            / growth_of(BENCHMARK, replicas=2)[0].median_s
        ),
        "the growth of collective on 2 replicas, not of collective on 4",
        id="another-replica-count",
    ),
    pytest.param(
        lambda small, large: (
            growth_of(BENCHMARK, algorithm="one_device")[1].median_s
            / growth_of(BENCHMARK, algorithm="one_device")[0].median_s
        ),
        "the growth of one_device on 4 replicas, not of collective on 4",
        id="another-algorithm",
    ),
    pytest.param(
        lambda small, large: (
            growth_of(BENCHMARK, (1 << 20, 8 << 20))[1].median_s
            / growth_of(BENCHMARK, (1 << 20, 8 << 20))[0].median_s
        ),
        "which is not the ratio of measurement's median times: a number typed in or copied "
        "from an earlier output is not from these records (every run measures again, and so "
        "does grading). Compute it from measurement.records: divide the median time at "
        "4 MiB by the one at 256 KiB (record.median_s), both for collective on 4 replicas.",
        id="other-sizes",
    ),
    pytest.param(
        lambda small, large: {"collective": large.median_s / small.median_s},
        "measured_growth has type dict, not a number: give one number, the median time",
        id="a-dict",
    ),
    pytest.param(
        lambda small, large: f"{large.median_s / small.median_s:.2f}x",
        "measured_growth has type str, not a number: give one number, the median time at 4 MiB",
        id="text",
    ),
]


@pytest.mark.parametrize(("measured", "message"), WRONG_GROWTHS)
def test_a_wrong_growth_is_rejected_and_the_message_names_the_mistake(measured, message):
    result = grow(4.0, measured(*growth_of(BENCHMARK)))
    assert not result
    assert message in result.message, result.message


@pytest.mark.parametrize(
    ("predicted", "got"),
    [("16x", "str '16x'"), (0, "int 0"), (-2.0, "float -2.0"), (float("inf"), "float inf")],
)
def test_the_prediction_must_be_a_positive_number(predicted, got):
    small, large = growth_of(BENCHMARK)
    result = grow(predicted, large.median_s / small.median_s)
    assert not result
    assert result.message == (
        "predicted_growth must be a positive number, your guess of how many times longer "
        f"4 MiB takes than 256 KiB (1 means no longer at all), e.g. 3.0; got {got}."
    )


@pytest.mark.parametrize(
    ("measurement", "message"),
    [
        pytest.param(
            make_benchmark(sizes=(4 << 10, 1 << 20, 8 << 20)),
            "measurement has no record of collective at 256 KiB or 4 MiB on 4 replicas (it "
            "measured 4 KiB, 1 MiB, 8 MiB): benchmark it again with mk.benchmark_all_reduce("
            "'collective', sizes=['256KiB', '4MiB'], replicas=[4]).",
            id="sizes-not-measured",
        ),
        pytest.param(
            make_benchmark(counts=(2,)),
            "measurement has no record of collective on 4 replicas (it measured 2)",
            id="replica-count-not-measured",
        ),
        pytest.param(
            make_benchmark(algorithms=["one_device"]),
            "measurement has no record of collective: benchmark it again",
            id="algorithm-not-measured",
        ),
        pytest.param(
            mk.AllReduceBenchmark((), {"collective": "ValueError: no devices. Try again"}),
            "measurement skipped collective (ValueError): nothing of it was measured.",
            id="algorithm-skipped",
        ),
        pytest.param(
            BENCHMARK.records,
            "measurement is a tuple, not a benchmark: pass the AllReduceBenchmark",
            id="its-records",
        ),
        pytest.param(
            BENCHMARK.to_dict(),
            "measurement is a dict, not a benchmark",
            id="its-dict",
        ),
        pytest.param(
            BENCHMARK.to_json(),
            "measurement is text, not a benchmark: load a saved one with "
            "mk.AllReduceBenchmark.from_json(...)",
            id="its-json",
        ),
        pytest.param(
            BENCHMARK.records[0],
            "measurement is one record, not a benchmark",
            id="one-record",
        ),
    ],
)
def test_a_growth_the_measurement_cannot_support_never_passes(measurement, message):
    small, large = growth_of(BENCHMARK)
    result = grow(4.0, large.median_s / small.median_s, measurement)
    assert not result
    assert message in result.message, result.message


def test_a_saved_and_reloaded_benchmark_is_checked_like_the_original():
    reloaded = mk.AllReduceBenchmark.from_json(BENCHMARK.to_json())
    small, large = growth_of(reloaded)
    assert grow(4.0, large.median_s / small.median_s, reloaded)
    assert rank(FASTEST_FIRST, by_time(pairs(at(reloaded))), reloaded)


def test_a_measurement_not_made_here_is_rejected_however_right_its_arithmetic():
    typed = mk.AllReduceBenchmark(BENCHMARK.records)  # built from numbers, no machine
    small, large = growth_of(typed)
    result = grow(4.0, large.median_s / small.median_s, typed)
    assert not result
    assert "was not measured here by mk.benchmark_all_reduce: it records no machine" in (
        result.message
    )
    assert "copied from an earlier output" in result.message
    elsewhere = mk.AllReduceBenchmark(
        BENCHMARK.records, machine=this_machine() | {"cpu_count": 999}
    )
    result = grow(4.0, large.median_s / small.median_s, elsewhere)
    assert not result and "its machine is not this one (cpu_count 999" in result.message


def test_numbers_copied_from_another_run_are_said_to_be_not_from_these_records():
    copied = [(name, round(seconds, 4)) for name, seconds in by_time(pairs(at()))]
    result = rank(FASTEST_FIRST, copied)
    assert not result and "copied from an earlier output is not from these records" in (
        result.message
    )
    small, large = growth_of(BENCHMARK)
    result = grow(4.0, round(large.median_s / small.median_s, 2))
    assert not result and "copied from an earlier output is not from these records" in (
        result.message
    )


def test_an_order_written_by_hand_is_told_to_be_sorted():
    times = {r.algorithm: r.median_s for r in at()}
    by_hand = [(name, times[name]) for name in ("hierarchical_copy", "one_device", "collective")]
    result = rank(FASTEST_FIRST, by_hand)
    assert not result and "not in order of time" in result.message
    assert "written by hand or copied from an earlier output" in result.message


# -- a real benchmark -----------------------------------------------------------------------


def test_real_measurements_derived_right_pass_and_derived_wrong_do_not():
    measured = mk.benchmark_all_reduce(
        ["collective", "one_device"],
        sizes=["4KiB", "64KiB"],
        replicas=[2],
        repeats=3,
        copy_bytes=1 << 20,
    )
    records = at(measured, nbytes=64 << 10, replicas=2)
    ranking = by_time(pairs(records))
    assert rank(["collective", "one_device"], ranking, measured, size="64KiB", replicas=2)
    assert not rank(["collective", "one_device"], ranking[::-1], measured, "64KiB", 2)
    small, large = growth_of(measured, (4 << 10, 64 << 10), replicas=2)
    settings = dict(small="4KiB", large="64KiB", replicas=2)
    assert grow(2.0, large.median_s / small.median_s, measured, **settings)
    wrong = grow(2.0, small.median_s / large.median_s, measured, **settings)
    assert not wrong and "the 4 KiB time divided by the 64 KiB time" in wrong.message


# -- wrong inputs ----------------------------------------------------------------------------


RIGHT = by_time(pairs(at()))

WRONG_RANKING_INPUTS = [
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, BENCHMARK.records),
        TypeError,
        "benchmark",
        r"benchmark is a tuple, not a benchmark: pass the AllReduceBenchmark",
        id="benchmark-records",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, "results.json"),
        TypeError,
        "benchmark",
        r"load a saved one with mk\.AllReduceBenchmark\.from_json",
        id="benchmark-a-path",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, size=8.5),
        TypeError,
        "size",
        r"must be a size, bytes or text such as '8MiB', got float 8\.5",
        id="size-a-fraction",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, size="8 megs"),
        ValueError,
        "size",
        r"cannot read the size '8 megs': write bytes",
        id="size-unreadable",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, replicas=1),
        ValueError,
        "replicas",
        r"at least 2, got 1: an all-reduce over one replica has nobody to reduce with",
        id="one-replica",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, RIGHT, replicas="4"),
        TypeError,
        "replicas",
        r"must be an int, got str '4'",
        id="replicas-text",
    ),
    pytest.param(
        lambda: rank("one_device", RIGHT),
        None,
        "predicted_ranking",
        r"not a list: write a list naming each algorithm",
        id="prediction-a-name",
    ),
    pytest.param(
        lambda: rank(FASTEST_FIRST, {"one_device": 0.0038}),
        None,
        "ranking",
        r"is a dict: write a list of \(algorithm, median seconds\) pairs",
        id="ranking-a-dict",
    ),
]


@pytest.mark.wrong_inputs("mk.check_all_reduce_ranking")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_RANKING_INPUTS)
def test_check_all_reduce_ranking_wrong_inputs(judged, call, error, argument, match):
    judged(call, error, argument, match)


GROWTH = growth_of(BENCHMARK)[1].median_s / growth_of(BENCHMARK)[0].median_s

WRONG_GROWTH_INPUTS = [
    pytest.param(
        lambda: grow(4.0, GROWTH, small="4MiB", large="256KiB"),
        ValueError,
        "small",
        r"must be smaller than large, got small='4MiB' and large='256KiB'",
        id="sizes-swapped",
    ),
    pytest.param(
        lambda: grow(4.0, GROWTH, small=None),
        TypeError,
        "small",
        r"must be a size, bytes or text such as '8MiB', got NoneType",
        id="small-None",
    ),
    pytest.param(
        lambda: grow(4.0, GROWTH, replicas=1),
        ValueError,
        "replicas",
        r"nobody to reduce with, so there is no all-reduce to measure",
        id="one-replica",
    ),
    pytest.param(
        lambda: grow(4.0, GROWTH, algorithm=["collective"]),
        TypeError,
        "algorithm",
        r"must be an algorithm's name, got list",
        id="algorithm-a-list",
    ),
    pytest.param(
        lambda: grow(4.0, GROWTH, tolerance=0.5),
        ValueError,
        "tolerance",
        r"must be a factor above 1, got 0\.5: write e\.g\. tolerance=2\.0",
        id="tolerance-below-one",
    ),
    pytest.param(
        lambda: grow(4.0, GROWTH, tolerance="2"),
        TypeError,
        "tolerance",
        r"must be a number, got str '2'",
        id="tolerance-text",
    ),
    pytest.param(
        lambda: grow("16x", GROWTH),
        None,
        "predicted_growth",
        r"must be a positive number, your guess",
        id="prediction-text",
    ),
    pytest.param(
        lambda: grow(4.0, [GROWTH]),
        None,
        "measured_growth",
        r"has type list, not a number: give one number, the median time at 4 MiB",
        id="growth-in-a-list",
    ),
]


@pytest.mark.wrong_inputs("mk.check_all_reduce_growth")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_GROWTH_INPUTS)
def test_check_all_reduce_growth_wrong_inputs(judged, call, error, argument, match):
    judged(call, error, argument, match)
