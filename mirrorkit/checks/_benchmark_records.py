"""Reading an all-reduce benchmark's records for the checks of a learner's derivation.

The benchmark is read through its attributes (``records``, ``skipped``) and those of its
records, so that the checks do not import :mod:`mirrorkit.measure`.

Example:
    >>> from mirrorkit.checks._benchmark_records import records_of
    >>> records_of({"records": []}, "benchmark")[1][:40]
    'benchmark is a dict, not a benchmark: pa'
"""

from __future__ import annotations

import math
import numbers
import os
import platform
import sys
from collections.abc import Mapping

from mirrorkit._validate import refuse, require_int, require_size

# Two derivations from the same records (a ratio of times, or the same ratio through algbw)
# agree to rounding; different recorded numbers differ by far more.
_SAME = 1e-9
_FIELDS = ("algorithm", "replicas", "bytes", "median_s", "min_s", "max_s", "iqr_s")
_MAKE = "make it with mk.benchmark_all_reduce(...)"


def message_size(name: str, value, call: str) -> int:
    """``value`` as a positive number of bytes; anything else is refused, naming ``name``."""
    write = f"e.g. {name}='8MiB' in mk.{call}(...)"
    try:
        return require_size(name, value, write=write)
    except TypeError:
        refuse(name, value, must="a size, bytes or text such as '8MiB'", write=write)


def replica_count(value, call: str) -> int:
    """``value`` as a replica count of at least 2; anything else is refused."""
    write = f"the replica count the benchmark measured, e.g. mk.{call}(..., replicas=REPLICAS)"
    if require_int("replicas", value, must="an int", write=write) < 2:
        raise ValueError(
            f"replicas must be at least 2, got {value}: an all-reduce over one replica has "
            "nobody to reduce with, so there is no all-reduce to measure. Simulate more with "
            "mk.simulate_replicas(4) before TensorFlow starts."
        )
    return value


def records_of(benchmark, argument: str) -> tuple[list, str | None]:
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
    if records is None and is_record(benchmark):
        return [], (
            f"{argument} is one record, not a benchmark: pass the AllReduceBenchmark that "
            "mk.benchmark_all_reduce returned."
        )
    if records is None and isinstance(benchmark, list | tuple):
        return [], (
            f"{argument} is a {type(benchmark).__name__}, not a benchmark: pass the "
            "AllReduceBenchmark that mk.benchmark_all_reduce returned itself, not its records."
        )
    if not isinstance(records, list | tuple) or not all(is_record(r) for r in records):
        return [], (
            f"{argument} has type {type(benchmark).__name__}, not an AllReduceBenchmark: {_MAKE}."
        )
    return list(records), None


def is_record(value) -> bool:
    return all(hasattr(value, name) for name in _FIELDS) and not isinstance(value, type)


def skipped_of(benchmark) -> dict[str, str]:
    skipped = getattr(benchmark, "skipped", None)
    return dict(skipped) if isinstance(skipped, Mapping) else {}


def skip_reason(skipped: dict[str, str], algorithm: str, replicas: int) -> str | None:
    """Why ``algorithm`` did not run (on ``replicas`` replicas), first clause only."""
    reason = skipped.get(algorithm) or skipped.get(f"{algorithm} on {replicas} replicas")
    return reason.split(":")[0].split(". ")[0] if reason else None


def one_number(value) -> float | None:
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


def same(a: float, b: float) -> bool:
    return math.isclose(a, b, rel_tol=_SAME, abs_tol=0.0)


def listing(values) -> str:
    return ", ".join(values)


def this_machine() -> dict:
    """The facts of this machine that :func:`mk.benchmark_all_reduce` records in ``machine``.

    Example:
        >>> from mirrorkit.checks._benchmark_records import this_machine
        >>> this_machine()["cpu_count"] == os.cpu_count()
        True
    """
    facts = {"cpu_count": os.cpu_count(), "python": platform.python_version()}
    tensorflow = sys.modules.get("tensorflow")
    if tensorflow is not None and isinstance(getattr(tensorflow, "__version__", None), str):
        facts["tensorflow"] = tensorflow.__version__
    return facts


def not_measured_here(benchmark, argument: str, again: str) -> str | None:
    """Why ``benchmark`` was not measured by mk.benchmark_all_reduce on this machine, or None.

    A benchmark records the machine it ran on; one typed in, built from copied numbers or
    loaded from another machine's file does not hold this machine's facts.
    """
    machine = getattr(benchmark, "machine", None)
    machine = machine if isinstance(machine, Mapping) else {}
    differ = [k for k, v in this_machine().items() if machine.get(k) != v]
    if not differ:
        return None
    why = (
        "it records no machine at all"
        if not machine
        else "its machine is not this one ("
        + ", ".join(
            f"{k} {machine.get(k)!r}, here {v!r}" for k, v in this_machine().items() if k in differ
        )
        + ")"
    )
    return (
        f"{argument} was not measured here by mk.benchmark_all_reduce: {why}. Numbers typed in, "
        "copied from an earlier output or loaded from another run are not a measurement: "
        f"{again}."
    )
