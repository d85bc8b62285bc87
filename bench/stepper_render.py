"""How long does AllReduceStepper take to draw one step, and to build its static snapshot?

Usage: python bench/stepper_render.py [--repeats 5] [--replicas 8] [--mib 1]

Replays an all-reduce of ``--mib`` MiB of float32 values per replica on ``--replicas``
simulated replicas (the ring, ``collective``, and ``one_device``) and times what the live
widget does when ``step`` changes: reading that step's buffers from the replay and drawing
the frame's HTML. Every timed step is drawn for the first time (a fresh widget per
measurement: the widget keeps the numbers of steps it has drawn, so a step seen before is
cheaper; that revisit is timed apart). Also times ``snapshot_html()`` (every step drawn
once, as a built book stores it) and prints its size. Goal: one step well under 100 ms.
"""

from __future__ import annotations

import argparse
import statistics
import time

import mirrorkit as mk

GOAL_MS = 100.0
SIZE_GOAL_KB = 300.0


def parse() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="measurements per step")
    parser.add_argument("--replicas", type=int, default=8)
    parser.add_argument("--mib", type=float, default=1.0, help="MiB of float32 per replica")
    return parser.parse_args()


ARGS = parse()
mk.make_reproducible(0)
mk.simulate_replicas(ARGS.replicas, report=False)  # before TensorFlow starts

import tensorflow as tf  # noqa: E402

from mirrorwidgets import AllReduceStepper  # noqa: E402


def ms(seconds: float) -> str:
    return f"{seconds * 1e3:.1f} ms"


def time_steps(replay, repeats: int) -> dict[int, list[float]]:
    """Seconds to show each step for the first time, ``repeats`` times, each on a new widget."""
    last = len(replay.schedule.steps)
    times: dict[int, list[float]] = {k: [] for k in range(last + 1)}
    for _ in range(repeats):
        for k in range(last + 1):
            stepper = AllReduceStepper(replay, step=1 if k == 0 else 0)
            start = time.perf_counter()
            stepper.step = k
            times[k].append(time.perf_counter() - start)
            stepper.close()
    return times


def time_revisits(replay, repeats: int) -> list[float]:
    """Seconds to show a step drawn before (e.g. going back with "previous")."""
    stepper = AllReduceStepper(replay)
    last = len(stepper.steps)
    for k in range(last + 1):
        stepper.step = k
    times = []
    for _ in range(repeats):
        for k in range(last + 1):
            start = time.perf_counter()
            stepper.step = k
            times.append(time.perf_counter() - start)
    stepper.close()
    return times


def time_snapshot(replay, repeats: int) -> tuple[list[float], int]:
    times, size = [], 0
    for _ in range(repeats):
        stepper = AllReduceStepper(replay)
        start = time.perf_counter()
        html = stepper.snapshot_html()
        times.append(time.perf_counter() - start)
        size = len(html.encode())
        stepper.close()
    return times, size


def main() -> None:
    strategy = mk.make_strategy()
    n = strategy.num_replicas_in_sync
    length = int(ARGS.mib * (1 << 20)) // 4
    values = strategy.run(lambda: tf.random.normal([length]))
    print(
        f"AllReduceStepper on {n} replicas, {length:,} float32 values ({ARGS.mib:g} MiB) per "
        f"replica, {ARGS.repeats} repeats; goal: one step well under {GOAL_MS:.0f} ms"
    )
    for algorithm in ("collective", "one_device"):
        start = time.perf_counter()
        replay = mk.replay_all_reduce(strategy, values, algorithm=algorithm)
        replay.comparison  # noqa: B018 - the verdict, computed once per replay
        made = time.perf_counter() - start
        times = time_steps(replay, ARGS.repeats)
        medians = {k: statistics.median(v) for k, v in times.items()}
        every = [x for v in times.values() for x in v]
        worst_step = max(medians, key=medians.get)
        revisits = time_revisits(replay, ARGS.repeats)
        snapshot, size = time_snapshot(replay, ARGS.repeats)
        verdict = "OK" if max(every) < GOAL_MS / 1e3 else "OVER"
        print(f"{algorithm}: {len(times) - 1} steps (replay and verdict made in {ms(made)})")
        print(
            f"  one step, first drawn: median {ms(statistics.median(every))}, max over steps "
            f"of the medians {ms(medians[worst_step])} (step {worst_step}), max of all "
            f"{len(every)} {ms(max(every))}  [{verdict} against {GOAL_MS:.0f} ms]"
        )
        print(
            "  per step (median): "
            + ", ".join(f"{k}: {medians[k] * 1e3:.1f}" for k in sorted(medians))
            + " ms"
        )
        print(
            f"  one step drawn before: median {ms(statistics.median(revisits))}, "
            f"max {ms(max(revisits))}"
        )
        fits = "OK" if size / 1e3 < SIZE_GOAL_KB else "OVER"
        print(
            f"  snapshot_html (all {len(times)} frames): median {ms(statistics.median(snapshot))}"
            f", max {ms(max(snapshot))}; {size / 1e3:.1f} KB  [{fits} against "
            f"{SIZE_GOAL_KB:.0f} KB]"
        )


if __name__ == "__main__":
    main()
