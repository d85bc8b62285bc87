"""How long does a local cluster take to start, next to one process starting TensorFlow?

Usage: python bench/cluster_start.py [--repeats 5] [--workers 2 3]

Interleaves, in one run so machine noise hits all of them alike, in each repeat:

- one process: a new Python process that imports TensorFlow (through
  mirrorkit.make_reproducible, as every worker does) and runs one op;
- cold: ``LocalCluster(n, warm=False)``, every process a new Python process, for each n;
- warm, first start: the kernel's warm process ended first (``mk.stop_warm_process()``), so
  the run starts a new one, which imports TensorFlow, then forks (the first cluster of a
  kernel), for each n;
- warm, later start: the warm process already running (every cluster after the first).

Each run only all-reduces one number. "Formed" is from launch until every worker had joined
(ClusterRun.start_seconds); a single process is "ready" when its op has run (its slow
TensorFlow teardown at exit is printed apart: workers skip it with os._exit). Prints the
medians, their ratios to one process ready, and each ratio's spread over the repeats
(each repeat's cluster time over the same repeat's single process, min-max).
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import time

import mirrorkit as mk

SINGLE = (
    "import mirrorkit as mk; mk.make_reproducible(0); import tensorflow as tf; "
    "tf.reduce_sum(tf.ones(4)).numpy(); print('ready', flush=True)"
)
KINDS = ("cold", "warm, first start", "warm, later start")


def single_process() -> tuple[float, float]:
    """Seconds until the op has run (as a cluster's start), and until the process ended."""
    started = time.perf_counter()
    process = subprocess.Popen([sys.executable, "-c", SINGLE], stdout=subprocess.PIPE, text=True)
    assert process.stdout.readline().strip() == "ready"
    ready = time.perf_counter() - started
    process.wait()
    return ready, time.perf_counter() - started


def all_reduce_once(context):
    import tensorflow as tf

    value = context.strategy.run(lambda: tf.constant(1.0))
    return float(context.strategy.reduce("SUM", value, axis=None))


def cluster_start(n: int, kind: str) -> float:
    if kind == "warm, first start":
        mk.stop_warm_process()
    run = mk.LocalCluster(n, echo=False, warm=kind != "cold").run(all_reduce_once)
    assert run.results == [float(n)] * n, run.results
    expected = {"cold": "new processes", "warm, first start": "new warm", "warm, later start": ""}
    assert expected[kind] in run.launch and ("warm" in kind) == ("forked" in run.launch), (
        kind,
        run.launch,
    )
    return run.start_seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args()

    single: list[float] = []
    single_exit: list[float] = []
    formed: dict[tuple[int, str], list[float]] = {
        (n, kind): [] for n in args.workers for kind in KINDS
    }
    for _ in range(args.repeats):
        ready, ended = single_process()
        single.append(ready)
        single_exit.append(ended)
        for n in args.workers:
            for kind in KINDS:
                formed[n, kind].append(cluster_start(n, kind))
    mk.stop_warm_process()

    base = statistics.median(single)
    print(
        f"one process, import TensorFlow + one op: ready after {base:.2f} s median "
        f"(min {min(single):.2f}, max {max(single):.2f}, {args.repeats} runs); "
        f"process ended after {statistics.median(single_exit):.2f} s"
    )
    print()
    print("| workers | start | formed, median (s) | ratio to one process | ratio per repeat |")
    print("| ---: | --- | ---: | ---: | ---: |")
    for (n, kind), seconds in formed.items():
        median = statistics.median(seconds)
        per_repeat = [s / b for s, b in zip(seconds, single, strict=True)]
        print(
            f"| {n} | {kind} | {median:.2f} | {median / base:.2f} | "
            f"{min(per_repeat):.2f}-{max(per_repeat):.2f} |"
        )


if __name__ == "__main__":
    main()
