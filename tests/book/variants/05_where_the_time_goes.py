"""Chapter 5: a ranking of all-reduce algorithms and a growth with message size, predicted first.

Every wrong answer here is wrong whatever the timings: it takes another recorded number (a
size, a replica count, the fastest repeat, a bandwidth) or another arithmetic (the inverse
ratio, a difference), which the check recognises exactly, never by a margin. The
predictions vary and some are surely wrong: a prediction only has to be well formed. The
benchmarks are measured again in every run (and when graded), so numbers copied from a stored
output, and a measurement typed in from one, are never these records.
"""

AT_8MIB = (
    "at_8mib = [r for r in benchmark.records if r.bytes == 8 << 20 and r.replicas == REPLICAS]\n"
)
PREDICTED = 'predicted_ranking = ["one_device", "hierarchical_copy", "collective"]\n'
MEASURE = (
    "measurement = mk.benchmark_all_reduce(\n"
    '    "collective", sizes=["256KiB", "4MiB"], replicas=[{replicas}], repeats=3\n'
    ")\n"
    "median = {{r.bytes: r.median_s for r in measurement.records}}\n"
    "small = next(r for r in measurement.records if r.bytes == 256 << 10)\n"
    "large = next(r for r in measurement.records if r.bytes == 4 << 20)\n"
)
GROW = "predicted_growth = 4.0\n" + MEASURE.format(replicas="REPLICAS")

WRONG = {
    1: [
        (
            "sorted slowest first",
            PREDICTED + AT_8MIB + "ranking = sorted([(r.algorithm, r.median_s) for r in at_8mib],"
            " key=lambda pair: pair[1], reverse=True)",
            "slowest first",
        ),
        (
            "the times at 1 MiB, not 8 MiB",
            PREDICTED + "at_1mib = [r for r in benchmark.records"
            " if r.bytes == 1 << 20 and r.replicas == REPLICAS]\n"
            "ranking = sorted([(r.algorithm, r.median_s) for r in at_1mib],"
            " key=lambda pair: pair[1])",
            "median time at 1 mib",
        ),
        (
            "the times on 2 replicas, not REPLICAS",
            PREDICTED
            + "on_two = [r for r in benchmark.records if r.bytes == 8 << 20 and r.replicas == 2]\n"
            "ranking = sorted([(r.algorithm, r.median_s) for r in on_two],"
            " key=lambda pair: pair[1])",
            "on 2 replicas",
        ),
        (
            "the fastest repeat instead of the median",
            PREDICTED + AT_8MIB + "ranking = sorted([(r.algorithm, r.min_s) for r in at_8mib],"
            " key=lambda pair: pair[1])",
            "fastest of its repeats",
        ),
        (
            "ranked by bandwidth, highest first",
            PREDICTED + AT_8MIB + "ranking = sorted([(r.algorithm, r.busbw) for r in at_8mib],"
            " key=lambda pair: pair[1], reverse=True)",
            "bandwidth",
        ),
        (
            "milliseconds",
            PREDICTED
            + AT_8MIB
            + "ranking = sorted([(r.algorithm, 1000 * r.median_s) for r in at_8mib],"
            " key=lambda pair: pair[1])",
            "milliseconds",
        ),
        (
            "names only",
            PREDICTED
            + AT_8MIB
            + "ranking = [r.algorithm for r in sorted(at_8mib, key=lambda r: r.median_s)]",
            "pairs",
        ),
        (
            "the prediction names NCCL, which did not run",
            'predicted_ranking = ["nccl", "one_device", "hierarchical_copy"]\n'
            + AT_8MIB
            + "ranking = sorted([(r.algorithm, r.median_s) for r in at_8mib],"
            " key=lambda pair: pair[1])",
            "did not run here",
        ),
        (
            "the ranking copied from a stored output",
            PREDICTED + "ranking = [('one_device', 0.0042), ('hierarchical_copy', 0.0061),"
            " ('collective', 0.0123)]",
            "copied from an earlier output",
        ),
    ],
    2: [
        (
            "the small time over the large",
            GROW + "measured_growth = small.median_s / large.median_s",
            "256 kib time divided by the 4 mib time",
        ),
        (
            "a ratio of bandwidths",
            GROW + "measured_growth = large.busbw / small.busbw",
            "bandwidths",
        ),
        (
            "a difference of times",
            GROW + "measured_growth = large.median_s - small.median_s",
            "difference",
        ),
        (
            "the fastest repeats",
            GROW + "measured_growth = large.min_s / small.min_s",
            "fastest repeats",
        ),
        (
            "the ratio of the sizes, not measured",
            GROW + "measured_growth = (4 << 20) / (256 << 10)",
            "ratio of the sizes",
        ),
        (
            "measured on 2 replicas",
            "predicted_growth = 4.0\n"
            + MEASURE.format(replicas=2)
            + "measured_growth = large.median_s / small.median_s",
            "no record of collective on",
        ),
        (
            "the chapter's benchmark reused: neither size was measured",
            "predicted_growth = 4.0\n"
            "measurement = benchmark\n"
            "times = {r.bytes: r.median_s for r in benchmark.records"
            ' if r.algorithm == "collective" and r.replicas == REPLICAS}\n'
            "measured_growth = times[8 << 20] / times[1 << 20]",
            "no record of collective at 256 kib or 4 mib",
        ),
        (
            "the prediction written as text",
            'predicted_growth = "about 8x"\n'
            + MEASURE.format(replicas="REPLICAS")
            + "measured_growth = large.median_s / small.median_s",
            "must be a positive number",
        ),
        (
            "the growth copied as a number",
            GROW + "measured_growth = 2.87",
            "copied from an earlier output",
        ),
        (
            "a measurement typed in from a stored output",
            "predicted_growth = 4.0\n"
            "from mirrorkit.measure.benchmark import record_from_times\n"
            "measurement = mk.AllReduceBenchmark(records=(\n"
            '    record_from_times("collective", REPLICAS, 256 << 10, [0.0011, 0.0012, 0.0013],'
            " 1e10),\n"
            '    record_from_times("collective", REPLICAS, 4 << 20, [0.0051, 0.0052, 0.0054],'
            " 1e10),\n"
            "))\n"
            "small, large = measurement.records\n"
            "measured_growth = large.median_s / small.median_s",
            "not measured here",
        ),
    ],
}

RIGHT = {
    1: [
        PREDICTED + AT_8MIB + "ranking = sorted([(r.algorithm, r.median_s) for r in at_8mib],"
        " key=lambda pair: pair[1])",
        'predicted_ranking = ["collective", "one_device", "hierarchical_copy"]\n'
        "times = {}\n"
        "for record in benchmark.records:\n"
        "    if record.bytes == 8 * 1024 * 1024 and record.replicas == REPLICAS:\n"
        "        times[record.algorithm] = record.median_s\n"
        "ranking = sorted(times.items(), key=lambda pair: pair[1])",
        'predicted_ranking = ("hierarchical_copy", "collective", "one_device")\n'
        + AT_8MIB
        + "ranking = [(r.algorithm, r.median_s) for r in sorted(at_8mib, key=lambda r: -r.busbw)]",
        'predicted_ranking = ["one_device", "collective", "hierarchical_copy"]\n'
        "left = {r.algorithm: r.median_s for r in benchmark.records\n"
        "        if r.bytes == 8 << 20 and r.replicas == REPLICAS}\n"
        "ranking = []\n"
        "while left:\n"
        "    fastest = min(left, key=left.get)\n"
        "    ranking.append((fastest, left.pop(fastest)))",
        PREDICTED + AT_8MIB + "ranking = sorted(at_8mib, key=lambda record: record.median_s)",
    ],
    2: [
        GROW + "measured_growth = median[4 << 20] / median[256 << 10]",
        "predicted_growth = 16\n"
        "measurement = mk.benchmark_all_reduce(\n"
        '    ["collective", "one_device"], sizes=["256KiB", "1MiB", "4MiB"],'
        " replicas=[2, REPLICAS], repeats=3\n"
        ")\n"
        "mine = {r.bytes: r for r in measurement.records"
        ' if r.algorithm == "collective" and r.replicas == REPLICAS}\n'
        "measured_growth = 16 * mine[256 << 10].algbw / mine[4 << 20].algbw",
        "predicted_growth = 2.5\n"
        "measurement = mk.benchmark_all_reduce(\n"
        '    "collective", sizes=[4 << 20, 256 << 10], replicas=[REPLICAS], repeats=4\n'
        ")\n"
        "times = sorted((r.bytes, r.median_s) for r in measurement.records)\n"
        "measured_growth = times[-1][1] / times[0][1]",
    ],
}
