"""How well does the all-reduce cost model predict sizes it was not fitted on?

Usage: python bench/cost_model.py [--rounds 4] [--repeats 15]

Simulates 4 replicas on the CPU. Each round benchmarks collective, one_device and
hierarchical_copy (even counts only: with an odd count its last replica is left out) on 2
and 4 replicas over 9 sizes from 4 KiB to 16 MiB, each sqrt(8) times the last; the order of
the algorithms alternates between rounds so machine noise hits all of them. The model is
fitted to every other size (4 KiB, 32 KiB, 256 KiB, 2 MiB, 16 MiB: both ends, so the held-out
sizes are interpolated), then predicts the 4 sizes in between. Printed per round and
algorithm: the median absolute relative error on the held-out sizes next to the one on the
fitted sizes (their ratio says how much worse a fresh size is predicted than a fitted one),
and the fitted parameters with their standard errors; how much the parameters move from
round to round is how far to trust them.
"""

from __future__ import annotations

import argparse
import statistics
import time

import numpy as np

import mirrorkit as mk

mk.make_reproducible(0)
mk.simulate_replicas(4)

from mirrorkit.measure.allreduce import benchmark_all_reduce  # noqa: E402
from mirrorkit.measure.benchmark import AllReduceBenchmark  # noqa: E402
from mirrorkit.measure.cost_model import fit_cost_model  # noqa: E402
from mirrorkit.report.units import format_rate, format_seconds, format_size  # noqa: E402

ALGORITHMS = ["collective", "one_device", "hierarchical_copy"]
SIZES = [int(round(s / 4)) * 4 for s in np.geomspace(4 << 10, 16 << 20, 9)]
FITTED, HELD_OUT = SIZES[::2], SIZES[1::2]


def errors(model, records) -> dict[str, list[float]]:
    """|measured - predicted| / measured of each record, by algorithm."""
    out: dict[str, list[float]] = {}
    for r in records:
        predicted = model.predict(r.bytes, r.replicas, algorithm=r.algorithm)
        out.setdefault(r.algorithm, []).append(abs(r.median_s - predicted) / r.median_s)
    return out


def parameters(fit) -> str:
    """The fitted parameters ± standard errors, and the fixed cost at each replica count."""

    def pm(name, value, show):
        if name in fit.at_bound:
            return "0 (at its bound)"
        error = fit.errors.get(name)
        return show(value) + (f" ± {show(error)}" if error else "")

    rate = pm("bandwidth", fit.bandwidth, format_rate)
    if fit.merged:
        return f"fixed {pm('fixed', fit.fixed_s, format_seconds)} (merged), bandwidth {rate}"

    def fixed_cost(steps):
        value, error = fit.fixed_cost(steps)
        return format_seconds(value) + (f" ± {format_seconds(error)}" if error else "")

    fixed = ", ".join(
        f"on {n} replicas {fixed_cost(steps)}"
        for n, steps in sorted({(p.replicas, p.steps) for p in fit.points})
    )
    return (
        f"launch {pm('launch', fit.launch_s, format_seconds)}, alpha "
        f"{pm('alpha', fit.alpha_s, format_seconds)}/step (fixed cost {fixed}), "
        f"bandwidth {rate}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=4)
    parser.add_argument("--repeats", type=int, default=15)
    args = parser.parse_args()

    started = time.perf_counter()
    print(
        f"sizes fitted: {', '.join(format_size(s) for s in FITTED)}; "
        f"held out: {', '.join(format_size(s) for s in HELD_OUT)}; "
        f"2 and 4 replicas, {args.repeats} timed repeats per point"
    )
    summary: dict[str, list[tuple[float, float]]] = {a: [] for a in ALGORITHMS}
    for round_ in range(args.rounds):
        order = ALGORITHMS if round_ % 2 == 0 else ALGORITHMS[::-1]
        measured = benchmark_all_reduce(
            order, sizes=SIZES, replicas=[2, 4], repeats=args.repeats, warmup=2
        )
        fit_on = tuple(r for r in measured.records if r.bytes in FITTED)
        held = tuple(r for r in measured.records if r.bytes in HELD_OUT)
        model = fit_cost_model(AllReduceBenchmark(fit_on, machine=measured.machine))
        inside, outside = errors(model, fit_on), errors(model, held)
        print(f"round {round_ + 1} ({time.perf_counter() - started:.0f} s):")
        for name in ALGORITHMS:
            a, b = statistics.median(inside[name]), statistics.median(outside[name])
            summary[name].append((a, b))
            print(
                f"  {name:18} median |error| fitted sizes {a * 100:5.1f}%, held-out sizes "
                f"{b * 100:5.1f}% (held-out / fitted {b / a:4.2f})\n"
                f"    {parameters(model.fits[name])}"
            )
    print(f"over {args.rounds} rounds (median of the rounds' medians):")
    for name in ALGORITHMS:
        a = statistics.median(x for x, _ in summary[name])
        b = statistics.median(y for _, y in summary[name])
        print(f"  {name:18} fitted {a * 100:5.1f}%, held-out {b * 100:5.1f}%, ratio {b / a:4.2f}")
    print(f"total {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
