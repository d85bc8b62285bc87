"""``dev.py _gpu [--report PATH]``: the gpu job's checks, run with the gpu environment's Python.

In order: the device decision at each of :func:`~bookbuild.gpujob.plan.replica_cases`, each
all-reduce algorithm (NCCL or its skip), mixed precision against float32, the GPU's copy
bandwidth and chapter 5's all-reduce benchmark (``python -m mirrorkit.measure``), then every
chapter executed once, errors allowed, at the replica count it gets, with its claims compared
(:func:`bookbuild.claims.claim_changes`). Each TensorFlow part runs in a fresh process
(:mod:`bookbuild.gpujob.probe`); the verdicts (:mod:`bookbuild.gpujob.verdicts`) go into one
report (:mod:`bookbuild.gpujob.report`). Never run on a GPU: none was available.

Example:
    >>> gpu_checks(["--report", "gpu-report.md"])  # doctest: +SKIP
    [dev] wrote test-artifacts/gpu-report.md: passed
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from importlib.metadata import PackageNotFoundError, version
from pathlib import Path

from bookbuild import ROOT
from bookbuild.claims import executed_claims, output_text
from bookbuild.gpujob import REPORT
from bookbuild.gpujob.plan import all_reduce_replicas, benchmark_replicas, replica_cases
from bookbuild.gpujob.report import failures, render
from bookbuild.gpujob.verdicts import (
    all_reduce_verdicts,
    benchmark_verdicts,
    chapter_verdicts,
    device_verdict,
    precision_verdicts,
    replica_line,
)
from bookbuild.gpujob.visible import ask_nvidia_smi, visible_gpus
from bookbuild.manifest import load_manifest
from bookbuild.shell import CHILD_ENV, say

BENCHMARK_SIZES = ("4KiB", "64KiB", "1MiB", "8MiB", "64MiB")  # chapter 5's, and one GPU-sized
VERSIONS = ("tensorflow", "keras", "nvidia-cudnn-cu12", "nvidia-nccl-cu12")


def _child(*args: str, out: Path | None = None) -> dict:
    """Run this Python with ``args``: the JSON it wrote to ``out`` or printed last, or an error.

    Returns:
        The JSON, or ``{"error": "exit status N: <its last line>"}``.
    """
    done = subprocess.run(
        [sys.executable, *args],
        cwd=ROOT,
        capture_output=True,
        text=True,
        env={**os.environ, **CHILD_ENV, "TF_CPP_MIN_LOG_LEVEL": "2"},
    )
    print(done.stdout[-4000:], done.stderr[-4000:], sep="\n", file=sys.stderr)  # to the log
    lines = done.stdout.strip().splitlines()
    if done.returncode or not (out or lines):
        last = (done.stderr.strip().splitlines() or ["no output"])[-1]
        return {"error": f"exit status {done.returncode}: {last}"}
    return json.loads(out.read_text() if out else lines[-1])


def _probe(section: str, replicas: int) -> dict:
    say(f"gpu: {section} on {replicas} replica(s)")
    return _child("-m", "bookbuild.gpujob.probe", section, str(replicas))


def _benchmark(replicas: tuple[int, ...], folder: Path) -> dict:
    """Chapter 5's all-reduce benchmark (``python -m mirrorkit.measure``), as its JSON."""
    say(f"gpu: chapter 5's benchmark on {', '.join(map(str, replicas))} replicas")
    out = folder / "benchmark.json"
    counts = [str(n) for n in replicas]
    sizes = ["--sizes", *BENCHMARK_SIZES, "--out", str(out)]
    return _child("-m", "mirrorkit.measure", "--replicas", *counts, *sizes, out=out)


def _chapters(folder: Path) -> tuple[list, dict]:
    """Every chapter executed once, errors allowed: rows of its run and of its claims."""
    rows, where = [], {}
    for chapter, nb, changes in executed_claims(folder):
        code = [output_text(cell) for cell in nb.cells if cell.cell_type == "code"]
        where[chapter["file"]] = replica_line(code)
        rows += chapter_verdicts(chapter["file"], changes, where[chapter["file"]])
    return rows, where


def _version(name: str) -> str:
    try:
        return version(name)
    except PackageNotFoundError:
        return "not installed"


def gpu_checks(args: list[str]) -> None:
    """Run every check of the gpu job and write its report.

    Args:
        args: ``[--report PATH]`` (default ``test-artifacts/gpu-report.md``).

    Raises:
        SystemExit: If no GPU is visible, or a check failed (the report says which).

    Example:
        >>> gpu_checks([])  # doctest: +SKIP
        [dev] wrote test-artifacts/gpu-report.md: passed
    """
    parser = argparse.ArgumentParser(prog="dev.py _gpu")
    parser.add_argument("--report", type=Path, default=REPORT)
    report = parser.parse_args(args).report
    names, reason = visible_gpus(ask_nvidia_smi(), os.environ.get("CUDA_VISIBLE_DEVICES"))
    if reason:
        raise SystemExit(f"[dev] {reason}")
    gpus, book = len(names), max(c["replicas"] for c in load_manifest()["chapters"])
    cases, on = replica_cases(gpus, book), all_reduce_replicas(gpus, book)
    raw = {"devices": {case.replicas: _probe("devices", case.replicas) for case in cases}}
    raw["all-reduce"] = _probe("all-reduce", on)
    raw["precision"] = _probe("precision", on)
    raw["copy-bandwidth"] = _probe("copy-bandwidth", 1)  # one whole GPU
    with tempfile.TemporaryDirectory(prefix="mirrorbook-gpu-") as folder:
        raw["benchmark"] = _benchmark(benchmark_replicas(gpus, book), Path(folder))
        say("gpu: every chapter, then its claims")
        chapter_rows, raw["chapters"] = _chapters(Path(folder))
    sections = {
        "device decision": [device_verdict(case, raw["devices"][case.replicas]) for case in cases],
        "all-reduce": all_reduce_verdicts(gpus, raw["all-reduce"]),
        "mixed precision": precision_verdicts(raw["precision"]),
        "chapter 5 benchmark": benchmark_verdicts(raw["benchmark"], raw["copy-bandwidth"]),
        "chapters and claims": chapter_rows,
    }
    facts = {
        "GPUs (nvidia-smi -L)": ", ".join(f"{i}: {name}" for i, name in enumerate(names)),
        "CUDA_VISIBLE_DEVICES": os.environ.get("CUDA_VISIBLE_DEVICES", "unset"),
        "Python": sys.version.split()[0],
        **{name: _version(name) for name in VERSIONS},
    }
    report.parent.mkdir(parents=True, exist_ok=True)
    report.write_text(render(facts, sections, raw))
    failed = failures(sections)
    say(f"wrote {report}: {'FAILED' if failed else 'passed'}")
    if failed:
        raise SystemExit("[dev] the gpu job failed:\n  " + "\n  ".join(failed))
