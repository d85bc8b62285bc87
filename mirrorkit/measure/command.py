"""Command line all-reduce benchmark: ``python -m mirrorkit.measure --replicas 2 4 ...``.

Runs :func:`mirrorkit.measure.allreduce.benchmark_all_reduce` in a fresh process: it splits
the CPU into ``max(--replicas)`` simulated replicas (or uses that many GPUs where
there are some) before TensorFlow starts, shows a plain-text progress bar on
stderr, prints the results table on stdout and writes them as JSON (``--out``)
and CSV (``--csv``). Load a JSON file back with
``AllReduceBenchmark.from_json(path)`` to compare machines.

Example:
    >>> from mirrorkit.measure.command import main
    >>> main(["--replicas", "1"])  # refused before TensorFlow starts; the reason is on stderr
    Traceback (most recent call last):
    ...
    SystemExit: 2
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import NoReturn

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import parse_size
from mirrorkit.devices import MAX_REPLICAS

_BAR = 30


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark the command line asks for; return the exit status.

    Args:
        argv: Arguments without the program name; ``None`` reads ``sys.argv[1:]``.

    Returns:
        0 on success. Argument errors exit with status 2 and a message (argparse), before
        anything runs: this includes ``--out`` or ``--csv`` in a folder that does not exist.

    Example:
        >>> from mirrorkit.measure.command import main
        >>> main(["--help"])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        SystemExit: 0
    """
    parser = _parser()
    args = parser.parse_args(argv)
    for option, path in (("--out", args.out), ("--csv", args.csv)):
        problem = _unwritable(option, path) if path is not None else None
        if problem:
            parser.error(problem)

    import mirrorkit as mk

    mk.make_reproducible(0)
    try:
        devices = mk.simulate_replicas(max(args.replicas), use_gpus=not args.cpu)
    except mk.ReplicaSetupError as error:  # pragma: no cover - only in a used process
        print(f"error: {error}", file=sys.stderr)
        return 1

    from mirrorkit.measure.allreduce import benchmark_all_reduce

    if max(args.replicas) > len(devices):
        _parser().error(
            f"--replicas {max(args.replicas)} asked for, but this machine gives only "
            f"{len(devices)} devices ({', '.join(devices)}); use --cpu to simulate them."
        )
    bar = _ProgressBar(sys.stderr)
    result = benchmark_all_reduce(
        args.algorithms,
        sizes=args.sizes,
        replicas=args.replicas,
        devices=devices,
        repeats=args.repeats,
        warmup=args.warmup,
        progress=bar,
    )
    bar.finish()
    print(result)
    if args.out:
        result.to_json(args.out)
        print(f"Wrote {args.out}", file=sys.stderr)
    if args.csv:
        result.to_csv(args.csv)
        print(f"Wrote {args.csv}", file=sys.stderr)
    return 0


def _unwritable(option: str, path: str) -> str | None:
    """Why the run could not write ``path`` at its end, or ``None``: refused before it starts."""
    target = Path(path)
    if target.is_dir():
        return (
            f"argument {option}: {path!r} is a folder; give a file name in it, e.g. "
            f"{option} {target / 'results.json'}."
        )
    folder = target.parent
    if not folder.is_dir():
        return (
            f"argument {option}: the folder {str(folder)!r} does not exist, so {path!r} could "
            f"not be written after the run; create it first (mkdir -p {folder}) or write the "
            "file elsewhere."
        )
    return None


def _refuse_option(problem: str, example: str) -> NoReturn:
    """Refuse an option's value: argparse prints ``problem; example.`` and exits with 2."""
    raise argparse.ArgumentTypeError(f"{problem}; {example}.")


def _size(text: str) -> int:
    example = "write sizes such as --sizes 4KiB 1MiB"
    try:
        nbytes = parse_size(text)
    except (TypeError, ValueError) as error:
        _refuse_option(str(error).rstrip("."), example)
    if nbytes <= 0:
        _refuse_option(
            f"{text!r} is not a positive size: each replica sends at least 4 bytes", example
        )
    if nbytes % 4:
        _refuse_option(
            f"{text!r} ({nbytes} bytes) is not a multiple of 4 (float32 elements)", example
        )
    return nbytes


def _replicas(text: str) -> int:
    example = "write counts such as --replicas 2 4"
    n = _whole(text)
    if n is None:
        _refuse_option(f"{text!r} is not a whole number of replicas", example)
    if n < 2:
        _refuse_option(
            f"{n}: an all-reduce needs at least 2 replicas (with 1 there is nothing to "
            "reduce with, so nothing to measure)",
            example,
        )
    if n > MAX_REPLICAS:
        _refuse_option(f"{n} replicas is more than mirrorkit simulates ({MAX_REPLICAS})", example)
    return n


def _positive(text: str) -> int:
    n = _whole(text)
    if n is None:
        _refuse_option(f"{text!r} is not a whole number", "write a count such as 5")
    if n < 1:
        _refuse_option(f"{n} must be at least 1", "write a count such as 5")
    return n


def _whole(text: str) -> int | None:
    try:
        return int(text)
    except ValueError:
        return None


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m mirrorkit.measure",
        description=(
            "Time tf.distribute's all-reduce algorithms across replica counts and sizes "
            "(float32 SUM), with nccl-tests' algbw and busbw and this machine's "
            "memory-copy bandwidth as the reference."
        ),
    )
    parser.add_argument(
        "--replicas", nargs="+", type=_replicas, default=[2], metavar="N",
        help="replica counts to sweep, each at least 2 (default: 2)",
    )  # fmt: skip
    parser.add_argument(
        "--sizes", nargs="+", type=_size, default=[4 << 10, 1 << 20], metavar="SIZE",
        help="bytes per replica, e.g. 4KiB 1MiB 16MiB (default: 4KiB 1MiB)",
    )  # fmt: skip
    parser.add_argument(
        "--algorithms", nargs="+", choices=list(ALL_REDUCE_ALGORITHMS), default=None,
        metavar="NAME",
        help=f"all-reduce algorithms, from {', '.join(ALL_REDUCE_ALGORITHMS)} (default: all; "
        "those that cannot run here are reported as skipped)",
    )  # fmt: skip
    parser.add_argument("--repeats", type=_positive, default=10, help="timed runs (default: 10)")
    parser.add_argument(
        "--warmup", type=_positive, default=2, help="untimed runs first (default: 2)"
    )
    parser.add_argument("--out", metavar="PATH", help="write the results as JSON here")
    parser.add_argument("--csv", metavar="PATH", help="write the results as CSV here")
    parser.add_argument(
        "--cpu", action="store_true", help="simulate replicas on the CPU even if there are GPUs"
    )
    return parser


class _ProgressBar:
    """``[#######.......] 5/12  collective, 2 replicas, 1 MiB  3.1 s`` on stderr."""

    def __init__(self, stream):
        self.stream = stream
        self.live = hasattr(stream, "isatty") and stream.isatty()
        self.start = time.perf_counter()
        self.last = ""
        self.printed = 0

    def __call__(self, done: int, total: int, label: str) -> None:
        filled = _BAR * done // total if total else _BAR
        elapsed = time.perf_counter() - self.start
        line = f"[{'#' * filled}{'.' * (_BAR - filled)}] {done}/{total}  {label}  {elapsed:.1f} s"
        if self.live:
            self.stream.write("\r" + line.ljust(len(self.last)))
        elif done > self.printed:  # a log file: one line per finished measurement
            self.stream.write(line + "\n")
            self.printed = done
        self.last = line
        self.stream.flush()

    def finish(self) -> None:
        if self.live and self.last:
            self.stream.write("\n")
            self.stream.flush()
