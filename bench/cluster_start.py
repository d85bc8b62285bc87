"""How long does a local cluster take to start, next to one process starting TensorFlow?

Usage: python bench/cluster_start.py [--repeats 5] [--workers 2 3]

Alternates, in one run so machine noise hits all of them: a fresh Python process that
imports TensorFlow (through mirrorkit.make_reproducible, as every worker does) and runs
one op; and LocalCluster runs of a function that only all-reduces one number, for each
worker count. Prints the medians and the ratios cluster / single process, for the time
until every worker joined (start), against the time one process needs until its op has
run (its slow TensorFlow teardown at exit is printed apart: workers skip it with os._exit).
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


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--workers", type=int, nargs="+", default=[2, 3])
    args = parser.parse_args()

    single: list[float] = []
    single_exit: list[float] = []
    start: dict[int, list[float]] = {n: [] for n in args.workers}
    wall: dict[int, list[float]] = {n: [] for n in args.workers}
    for _ in range(args.repeats):
        ready, ended = single_process()
        single.append(ready)
        single_exit.append(ended)
        for n in args.workers:
            run = mk.LocalCluster(n, echo=False).run(all_reduce_once)
            assert run.results == [float(n)] * n
            start[n].append(run.start_seconds)
            wall[n].append(run.wall_seconds)

    base = statistics.median(single)
    print(
        f"one process, import TensorFlow + one op: ready after {base:.2f} s median "
        f"(min {min(single):.2f}, max {max(single):.2f}, {args.repeats} runs); "
        f"process ended after {statistics.median(single_exit):.2f} s"
    )
    for n in args.workers:
        s, w = statistics.median(start[n]), statistics.median(wall[n])
        print(
            f"{n} workers: cluster formed {s:.2f} s (ratio {s / base:.2f} to one process ready), "
            f"whole run {w:.2f} s"
        )


if __name__ == "__main__":
    main()
