"""Time the real all-reduce of ``tf.distribute``, and read it against this machine's memory.

:func:`benchmark_all_reduce` sums float32 tensors of several sizes across several
replica counts with each all-reduce algorithm of :func:`mirrorkit.make_strategy`,
and reports the bandwidths the way NVIDIA's nccl-tests do:

* ``algbw = bytes / time``: how fast one replica's tensor gets reduced.
* ``busbw = algbw * 2 * (n - 1) / n``: the bandwidth each link must carry in the
  best (ring) all-reduce on ``n`` replicas; it is the figure comparable across
  replica counts and with a hardware limit.

The hardware limit printed next to them is this machine's memory-copy bandwidth,
measured in the same run, so every result also reads as "x% of what this machine
can move". On simulated CPU replicas every device shares one memory: a "copy"
between two of them may move no bytes at all, so busbw there tells you about
TensorFlow's overheads and the reduction arithmetic more than about links.
"""

from __future__ import annotations

import csv
import io
import json
import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import numpy as np

from mirrorkit.errors import AllReduceUnavailableError
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import (
    format_percent,
    format_rate,
    format_seconds,
    format_size,
    parse_size,
)
from mirrorkit.report.values import short_device
from mirrorkit.strategy import ALL_REDUCE_ALGORITHMS, make_strategy

FORMAT = "mirrorkit.measure.allreduce/1"  # the "format" field of the JSON files written here
DEFAULT_SIZES = (4 << 10, 1 << 20, 16 << 20)
COPY_BYTES = 64 << 20  # larger than any CPU cache, so the copy runs at memory speed
_FLOAT32 = 4

# Class name of a MirroredStrategy's cross_device_ops -> its name in ALL_REDUCE_ALGORITHMS.
_OPS_NAMES = {
    "CollectiveAllReduce": "collective",
    "ReductionToOneDevice": "one_device",
    "HierarchicalCopyAllReduce": "hierarchical_copy",
    "NcclAllReduce": "nccl",
}

Progress = Callable[[int, int, str], None]  # (done, total, what is running now)


def bus_bandwidth(nbytes: int, seconds: float, replicas: int) -> tuple[float, float]:
    """The (algbw, busbw) of one all-reduce, in bytes per second, as nccl-tests defines them.

    ``algbw = nbytes / seconds`` and ``busbw = algbw * 2 * (replicas - 1) / replicas``:
    a ring all-reduce sends and receives ``2 * (n - 1) / n`` times the tensor through
    each replica's link, so busbw is what the slowest link had to carry.

    Args:
        nbytes: Size of the tensor each replica contributes, in bytes.
        seconds: Time one all-reduce took.
        replicas: How many replicas took part (at least 2).

    Returns:
        ``(algbw, busbw)`` in bytes per second.

    Raises:
        ValueError: If ``nbytes`` or ``seconds`` is not positive, or ``replicas < 2``.

    Example:
        >>> from mirrorkit.measure.allreduce import bus_bandwidth
        >>> bus_bandwidth(1_000_000, 0.001, 4)  # 1 MB in 1 ms on 4 replicas
        (1000000000.0, 1500000000.0)
    """
    if nbytes <= 0:
        raise ValueError(f"nbytes must be positive, got {nbytes}.")
    if not seconds > 0:
        raise ValueError(f"seconds must be positive, got {seconds}.")
    _check_replica_count(replicas)
    algbw = nbytes / seconds
    return algbw, algbw * 2 * (replicas - 1) / replicas


def measure_copy_bandwidth(nbytes: int = COPY_BYTES, repeats: int = 5) -> float:
    """This machine's memory-copy bandwidth: bytes per second ``np.copyto`` moves, median.

    Copies ``nbytes`` from one NumPy buffer to another (one thread, both buffers much
    larger than the CPU caches) ``repeats`` times after one untimed copy. Each byte
    copied counts once (it is read once and written once), as for ``algbw``.

    Args:
        nbytes: Bytes per copy; at least 1 MiB.
        repeats: Timed copies; at least 1.

    Returns:
        The median bandwidth in bytes per second.

    Raises:
        ValueError: If ``nbytes`` is below 1 MiB or ``repeats`` below 1.

    Example:
        >>> from mirrorkit.measure.allreduce import measure_copy_bandwidth
        >>> measure_copy_bandwidth(1 << 20, repeats=3) > 1e6  # more than 1 MB/s
        True
    """
    if nbytes < 1 << 20:
        raise ValueError(f"nbytes must be at least 1 MiB to time memory, not cache; got {nbytes}.")
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}.")
    source = np.ones(nbytes, dtype=np.uint8)
    target = np.empty_like(source)
    np.copyto(target, source)  # touches every page of the target before timing
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - start)
    return nbytes / statistics.median(times)


def available_algorithms(devices: Sequence[str] | None = None) -> dict[str, str | None]:
    """Which all-reduce algorithms can run on ``devices``: ``None``, or the reason they cannot.

    Args:
        devices: Device names of the replicas; ``None`` means every local GPU, or every
            logical CPU device when there is no GPU.

    Returns:
        ``{name: None or reason}`` for every name in ``ALL_REDUCE_ALGORITHMS``.

    Example:
        >>> from mirrorkit.measure.allreduce import available_algorithms
        >>> found = available_algorithms()
        >>> found["collective"] is None
        True
        >>> print(found["nccl"][:60])  # on a machine without GPUs
        NCCL all-reduce cannot run here: this machine has no GPU. NC
    """
    devices = _devices(devices)
    found: dict[str, str | None] = {}
    for name in ALL_REDUCE_ALGORITHMS:
        try:
            make_strategy(name, devices=devices)
        except AllReduceUnavailableError as error:
            found[name] = str(error)
        else:
            found[name] = None
    return found


@dataclass(frozen=True)
class AllReduceRecord:
    """One measurement: an algorithm summing ``bytes`` of float32 on ``replicas`` replicas.

    Attributes:
        algorithm: A name from ``ALL_REDUCE_ALGORITHMS`` (or the class name of a
            strategy's custom ``cross_device_ops``).
        replicas: How many replicas took part.
        bytes: Size of the tensor each replica contributes.
        median_s: Median seconds of one all-reduce over the timed repeats.
        iqr_s: Interquartile range of those times (spread; 0 with fewer than 2 repeats).
        min_s: Fastest repeat, in seconds.
        max_s: Slowest repeat, in seconds.
        repeats: How many timed repeats.
        algbw: ``bytes / median_s``, bytes per second.
        busbw: ``algbw * 2 * (replicas - 1) / replicas``, bytes per second.
        fraction_of_copy_bw: ``busbw`` divided by the machine's memory-copy bandwidth.

    Example:
        >>> from mirrorkit.measure.allreduce import AllReduceRecord
        >>> record = AllReduceRecord("collective", 2, 4096, 1e-3, 1e-4, 9e-4, 2e-3, 5,
        ...                          4.096e6, 4.096e6, 0.001)
        >>> record.busbw == record.algbw  # 2 * (2 - 1) / 2 == 1
        True
    """

    algorithm: str
    replicas: int
    bytes: int
    median_s: float
    iqr_s: float
    min_s: float
    max_s: float
    repeats: int
    algbw: float
    busbw: float
    fraction_of_copy_bw: float


@dataclass(frozen=True, repr=False)
class AllReduceBenchmark(Reported):
    """What :func:`benchmark_all_reduce` returns: records, skips and the machine's limit.

    Saves to JSON (:meth:`to_json`, reloaded by :meth:`from_json` to compare machines)
    and CSV (:meth:`to_csv`); prints as a text table and renders as HTML.

    Attributes:
        records: One :class:`AllReduceRecord` per (algorithm, replicas, size).
        skipped: ``{what: why}`` for each algorithm (or algorithm on a replica count)
            that could not run here.
        copy_bandwidth: This machine's memory-copy bandwidth in bytes per second,
            measured in the same run (see :func:`measure_copy_bandwidth`).
        machine: Facts about the machine and software the run used.
        settings: How it was measured (``warmup``, ``repeats``, ``copy_bytes``).

    Example:
        >>> from mirrorkit.measure.allreduce import AllReduceBenchmark, AllReduceRecord
        >>> record = AllReduceRecord("collective", 2, 4096, 1e-3, 1e-4, 9e-4, 2e-3, 5,
        ...                          4.096e6, 4.096e6, 4.096e-4)
        >>> result = AllReduceBenchmark((record,), {"nccl": "no GPU"}, 1e10)
        >>> AllReduceBenchmark.from_json(result.to_json()) == result
        True
        >>> print(result.to_csv().splitlines()[0])
        algorithm,replicas,bytes,median_s,iqr_s,min_s,max_s,repeats,algbw,busbw,fraction_of_copy_bw
        >>> print(result)  # doctest: +NORMALIZE_WHITESPACE
        All-reduce benchmark (float32 SUM): 1 algorithm, 2 replicas, 4 KiB
        Memory copy on this machine: 10 GB/s = the 100% of the last column
        algorithm   replicas  size   time (median)  spread (IQR)  algbw       busbw       busbw/copy
        collective  2         4 KiB  1 ms           100 us        4.1 MB/s    4.1 MB/s    0.041%
        Skipped: nccl: no GPU
    """

    records: tuple[AllReduceRecord, ...]
    skipped: dict[str, str] = field(default_factory=dict)
    copy_bandwidth: float = 0.0
    machine: dict = field(default_factory=dict)
    settings: dict = field(default_factory=dict)

    def best(self, size: int | str | None = None) -> dict[str, AllReduceRecord]:
        """For each algorithm, its record with the highest busbw (at ``size`` if given).

        Args:
            size: Only consider records of this many bytes (an int or text like "1MiB").

        Returns:
            ``{algorithm: record}``.
        """
        nbytes = None if size is None else parse_size(size)
        best: dict[str, AllReduceRecord] = {}
        for record in self.records:
            if nbytes is not None and record.bytes != nbytes:
                continue
            if record.algorithm not in best or record.busbw > best[record.algorithm].busbw:
                best[record.algorithm] = record
        return best

    def to_dict(self) -> dict:
        """Plain data, as written to JSON."""
        return {
            "format": FORMAT,
            "machine": dict(self.machine),
            "settings": dict(self.settings),
            "copy_bandwidth": self.copy_bandwidth,
            "records": [asdict(record) for record in self.records],
            "skipped": dict(self.skipped),
        }

    def to_json(self, path: str | os.PathLike | None = None) -> str:
        """The results as JSON text; also written to ``path`` if one is given."""
        text = json.dumps(self.to_dict(), indent=2) + "\n"
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    @classmethod
    def from_json(cls, source: str | os.PathLike) -> AllReduceBenchmark:
        """Load results written by :meth:`to_json`: JSON text, or the path of a file.

        Raises:
            ValueError: If the text is not a mirrorkit all-reduce benchmark, or the path
                names no file.
        """
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text = source
        elif Path(source).is_file():
            text = Path(source).read_text(encoding="utf-8")
        else:
            hint = (
                f"; {source!r} is an algorithm's name: benchmark it with "
                f"mk.benchmark_all_reduce([{source!r}]) and use the result"
                if source in ALL_REDUCE_ALGORITHMS
                else ""
            )
            raise ValueError(
                f"{source!r} is neither benchmark JSON text nor the path of a file (no such "
                f"file){hint}. Pass what AllReduceBenchmark.to_json wrote."
            )
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"not a mirrorkit all-reduce benchmark: the text is not JSON ({error})."
            ) from None
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(
                f"not a mirrorkit all-reduce benchmark (expected format {FORMAT!r}, got "
                f"{data.get('format') if isinstance(data, Mapping) else type(data).__name__!r})."
            )
        return cls(
            records=tuple(AllReduceRecord(**record) for record in data["records"]),
            skipped=dict(data.get("skipped", {})),
            copy_bandwidth=float(data.get("copy_bandwidth", 0.0)),
            machine=dict(data.get("machine", {})),
            settings=dict(data.get("settings", {})),
        )

    def to_csv(self, path: str | os.PathLike | None = None) -> str:
        """One CSV row per record (the machine and skips are in the JSON only)."""
        names = list(AllReduceRecord.__dataclass_fields__)
        buffer = io.StringIO()
        writer = csv.writer(buffer, lineterminator="\n")
        writer.writerow(names)
        for record in self.records:
            writer.writerow([getattr(record, name) for name in names])
        text = buffer.getvalue()
        if path is not None:
            Path(path).write_text(text, encoding="utf-8")
        return text

    def _headline(self) -> list[str]:
        algorithms = list(dict.fromkeys(r.algorithm for r in self.records))
        counts = sorted({r.replicas for r in self.records})
        sizes = sorted({r.bytes for r in self.records})
        what = f"{len(algorithms)} algorithm{'s' if len(algorithms) != 1 else ''}"
        if counts:
            what += ", " + "/".join(map(str, counts)) + " replicas"
        if sizes:
            what += ", " + format_size(sizes[0])
            if len(sizes) > 1:
                what += " to " + format_size(sizes[-1])
        lines = [f"All-reduce benchmark (float32 SUM): {what}"]
        where = self.machine.get("summary")
        if where:
            lines.append(f"On {where}")
        if self.copy_bandwidth:
            lines.append(
                f"Memory copy on this machine: {format_rate(self.copy_bandwidth)} "
                "= the 100% of the last column"
            )
        return lines

    def _columns(self) -> list[tuple[str, list[str]]]:
        rows = self.records
        return [
            ("algorithm", [r.algorithm for r in rows]),
            ("replicas", [str(r.replicas) for r in rows]),
            ("size", [format_size(r.bytes) for r in rows]),
            ("time (median)", [format_seconds(r.median_s) for r in rows]),
            ("spread (IQR)", [format_seconds(r.iqr_s) for r in rows]),
            ("algbw", [format_rate(r.algbw) for r in rows]),
            ("busbw", [format_rate(r.busbw) for r in rows]),
            ("busbw/copy", [format_percent(r.fraction_of_copy_bw) for r in rows]),
        ]

    def report(self) -> Report:
        """The benchmark as a report: where it ran, one row per measurement, what was skipped."""
        return Report(
            headline=tuple(self._headline()),
            columns=self._columns(),
            lines=tuple(
                Line(f"{name}: {why}", tone="warn", label="Skipped")
                for name, why in self.skipped.items()
            ),
        )


def benchmark_all_reduce(
    algorithms=None,
    *,
    sizes: Iterable[int | str] = DEFAULT_SIZES,
    replicas: Iterable[int] | None = None,
    devices: Sequence[str] | None = None,
    repeats: int = 10,
    warmup: int = 2,
    copy_bytes: int = COPY_BYTES,
    progress: Progress | None = None,
) -> AllReduceBenchmark:
    """Time the real cross-device all-reduce of ``tf.distribute`` across sizes and replicas.

    For each algorithm, replica count ``n`` and size, a ``tf.function`` runs
    ``strategy.run(fn)`` where ``fn`` calls ``ReplicaContext.all_reduce(SUM, x)`` on a
    float32 tensor of that size already placed on each of the first ``n`` devices,
    and returns one element of the sum so that fetching it (``.numpy()`` on every
    replica) waits for the reduction to finish without copying the whole result.
    ``warmup`` untimed calls come first (the first one traces and builds the graph),
    then ``repeats`` calls timed with ``time.perf_counter``; the record keeps their
    median, interquartile range, minimum and maximum. Each timed call includes the
    fixed cost of launching a ``tf.function`` (tens of microseconds to a millisecond),
    which dominates for small sizes, as the launch latency does in nccl-tests.

    Algorithms that cannot run here (NCCL without GPUs) are not errors: they are
    listed in ``skipped`` with the reason, as is an algorithm that fails on one
    replica count.

    Args:
        algorithms: What to measure: a ``tf.distribute.MirroredStrategy`` (its own
            all-reduce; smaller replica counts use the same algorithm on its first
            devices), one name from ``ALL_REDUCE_ALGORITHMS``, a list of names, or
            ``None`` for all of them.
        sizes: Bytes each replica contributes: ints or text such as ``"4KiB"``,
            ``"1MiB"``; each a positive multiple of 4 (float32 elements).
        replicas: Replica counts to sweep, each from 2 to the number of devices;
            ``None`` means the powers of two up to the number of devices, and that number.
        devices: Devices to take replicas from, in order; ``None`` means the strategy's
            devices, else every local GPU, else every logical CPU device (see
            :func:`mirrorkit.simulate_replicas`).
        repeats: Timed calls per measurement, at least 1.
        warmup: Untimed calls first, at least 1 (the first call traces the function).
        copy_bytes: Bytes per copy when measuring the memory-copy bandwidth.
        progress: Called as ``progress(done, total, label)`` before and after each
            measurement (``mirrorkit.measure`` draws its progress bar with it).

    Returns:
        An :class:`AllReduceBenchmark`.

    Raises:
        ValueError: For an unknown algorithm name, a size that is not a positive
            multiple of 4 bytes, a replica count below 2 (one replica has nothing to
            reduce with) or above the number of devices, or ``repeats``/``warmup``
            below 1.
        TypeError: If ``algorithms`` is neither a strategy nor names.

    Example:
        >>> from mirrorkit.measure.allreduce import benchmark_all_reduce
        >>> benchmark_all_reduce("collective", replicas=[1])  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        ValueError: replicas must be at least 2: an all-reduce over 1 replica has nobody ...
        >>> result = benchmark_all_reduce(sizes=["4KiB"], replicas=[2])  # doctest: +SKIP
        >>> print(result)  # doctest: +SKIP
    """
    import tensorflow as tf

    strategy, names = _algorithms(tf, algorithms)
    if devices is None and strategy is not None:
        devices = strategy.extended.worker_devices
    devices = _devices(devices)
    nbytes_list = _sizes(sizes)
    counts = _replica_counts(replicas, len(devices))
    if repeats < 1:
        raise ValueError(f"repeats must be at least 1, got {repeats}.")
    if warmup < 1:
        raise ValueError(
            f"warmup must be at least 1, got {warmup}: the first call traces the tf.function "
            "and would be timed with it."
        )

    copy_bandwidth = measure_copy_bandwidth(copy_bytes)
    skipped: dict[str, str] = {}
    runnable = []
    for name in names:
        reason = _unavailable(name, devices) if name in ALL_REDUCE_ALGORITHMS else None
        if reason:
            skipped[name] = reason
        else:
            runnable.append(name)

    total = len(runnable) * len(counts) * len(nbytes_list)
    done = 0
    records = []
    for name in runnable:
        for n in counts:
            try:
                run_on = _strategy_for(strategy, name, tuple(devices[:n]))
            except (RuntimeError, ValueError) as error:
                skipped[f"{name} on {n} replicas"] = f"{type(error).__name__}: {error}"
                done += len(nbytes_list)
                continue
            for nbytes in nbytes_list:
                label = f"{name}, {n} replicas, {format_size(nbytes)}"
                if progress is not None:
                    progress(done, total, label)
                try:
                    times = _time_all_reduce(tf, run_on, nbytes, repeats, warmup)
                except (tf.errors.OpError, RuntimeError, ValueError) as error:
                    skipped[f"{name} on {n} replicas"] = f"{type(error).__name__}: {error}"
                    done += len(nbytes_list) - nbytes_list.index(nbytes)
                    break
                records.append(_record(name, n, nbytes, times, copy_bandwidth))
                done += 1
                if progress is not None:
                    progress(done, total, label)
    return AllReduceBenchmark(
        records=tuple(records),
        skipped=skipped,
        copy_bandwidth=copy_bandwidth,
        machine=_machine(tf, devices),
        settings={"warmup": warmup, "repeats": repeats, "copy_bytes": copy_bytes},
    )


def record_from_times(
    algorithm: str, replicas: int, nbytes: int, times: Sequence[float], copy_bandwidth: float
) -> AllReduceRecord:
    """Summarise timed repeats of one all-reduce into an :class:`AllReduceRecord`.

    The arithmetic of :func:`benchmark_all_reduce`, without TensorFlow: median, IQR
    (NumPy's default linear quantiles), min, max, then :func:`bus_bandwidth` at the
    median and busbw as a fraction of ``copy_bandwidth``.

    Args:
        algorithm: The algorithm's name.
        replicas: Replica count, at least 2.
        nbytes: Bytes per replica.
        times: Seconds of each timed repeat (at least one).
        copy_bandwidth: The machine's memory-copy bandwidth, bytes per second.

    Returns:
        An :class:`AllReduceRecord`.

    Example:
        >>> from mirrorkit.measure.allreduce import record_from_times
        >>> r = record_from_times("one_device", 4, 8_000_000, [0.004, 0.002, 0.003], 1e10)
        >>> r.median_s, r.algbw, r.busbw, r.fraction_of_copy_bw
        (0.003, 2666666666.6666665, 4000000000.0, 0.4)
    """
    if not times:
        raise ValueError("times is empty: time at least one repeat.")
    times = [float(t) for t in times]
    median = statistics.median(times)
    q1, q3 = np.percentile(times, [25, 75])
    algbw, busbw = bus_bandwidth(nbytes, median, replicas)
    return AllReduceRecord(
        algorithm=algorithm,
        replicas=replicas,
        bytes=nbytes,
        median_s=median,
        iqr_s=float(q3 - q1),
        min_s=min(times),
        max_s=max(times),
        repeats=len(times),
        algbw=algbw,
        busbw=busbw,
        fraction_of_copy_bw=busbw / copy_bandwidth if copy_bandwidth > 0 else float("nan"),
    )


_record = record_from_times


def _check_replica_count(n: int) -> None:
    if n < 2:
        raise ValueError(
            f"replicas must be at least 2: an all-reduce over {n} replica"
            f"{'' if n == 1 else 's'} has nobody to reduce with, so there is nothing to measure."
        )


def _algorithms(tf, algorithms) -> tuple[object | None, list[str]]:
    if algorithms is None:
        return None, list(ALL_REDUCE_ALGORITHMS)
    if isinstance(algorithms, tf.distribute.Strategy):
        if not isinstance(algorithms, tf.distribute.MirroredStrategy):
            raise TypeError(
                f"expected a MirroredStrategy (or algorithm names), got "
                f"{type(algorithms).__name__}."
            )
        ops = type(algorithms.extended._cross_device_ops).__name__
        return algorithms, [_OPS_NAMES.get(ops, ops)]
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    if not isinstance(algorithms, Iterable):
        raise TypeError(
            f"algorithms must be a MirroredStrategy, a name or a list of names, got "
            f"{type(algorithms).__name__}."
        )
    names = list(dict.fromkeys(algorithms))
    if not names:
        raise ValueError("algorithms is empty; pass names, or None for all of them.")
    for name in names:
        if name not in ALL_REDUCE_ALGORITHMS:
            known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
            raise ValueError(f"unknown all-reduce algorithm {name!r}; choose from {known}.")
    return None, names


def _devices(devices) -> tuple[str, ...]:
    if devices is not None:
        devices = tuple(devices)
        if not devices:
            raise ValueError("devices is empty; pass device names or None for all local ones.")
        return devices
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return tuple(d.name for d in (gpus or tf.config.list_logical_devices("CPU")))


def _sizes(sizes) -> list[int]:
    if isinstance(sizes, int | str):
        sizes = [sizes]
    result = []
    for size in sizes:
        nbytes = parse_size(size)
        if nbytes <= 0:
            raise ValueError(
                f"size {size!r} is not positive: each replica must contribute at least one "
                "float32 (4 bytes)."
            )
        if nbytes % _FLOAT32:
            raise ValueError(
                f"size {size!r} ({nbytes} bytes) is not a multiple of 4: the tensors are "
                "float32, 4 bytes per element."
            )
        result.append(nbytes)
    if not result:
        raise ValueError("sizes is empty; pass at least one size such as '1MiB'.")
    return list(dict.fromkeys(result))


def _replica_counts(replicas, available: int) -> list[int]:
    if replicas is None:
        if available < 2:
            raise ValueError(
                f"only {available} device is available and an all-reduce needs at least 2 "
                "replicas; call mirrorkit.simulate_replicas(4) before TensorFlow starts."
            )
        counts = [n for n in (2, 4, 8, 16, 32, 64) if n < available] + [available]
        return counts
    if isinstance(replicas, int):
        replicas = [replicas]
    counts = list(dict.fromkeys(replicas))
    if not counts:
        raise ValueError("replicas is empty; pass replica counts such as [2, 4].")
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"replica counts must be ints, got {type(n).__name__} {n!r}.")
        _check_replica_count(n)
        if n > available:
            raise ValueError(
                f"{n} replicas asked for, but only {available} device"
                f"{'s are' if available != 1 else ' is'} available; simulate more with "
                f"mirrorkit.simulate_replicas({n}) before TensorFlow starts (or use fewer)."
            )
    return counts


def _unavailable(name: str, devices: tuple[str, ...]) -> str | None:
    try:
        make_strategy(name, devices=devices)
    except AllReduceUnavailableError as error:
        return str(error)
    return None


def _strategy_for(strategy, name: str, devices: tuple[str, ...]):
    if strategy is not None and tuple(strategy.extended.worker_devices) == devices:
        return strategy
    if name not in ALL_REDUCE_ALGORITHMS:
        raise ValueError(
            f"cannot make a smaller strategy with the custom all-reduce {name}; "
            "benchmark it on all of its replicas."
        )
    return make_strategy(name, devices=devices)


def _time_all_reduce(tf, strategy, nbytes: int, repeats: int, warmup: int) -> list[float]:
    elements = nbytes // _FLOAT32
    # Placed on each replica's device before timing: only the reduction is timed.
    values = strategy.experimental_distribute_values_from_function(
        lambda context: tf.zeros([elements], tf.float32)
    )

    def reduce_one(value):
        context = tf.distribute.get_replica_context()
        total = context.all_reduce(tf.distribute.ReduceOp.SUM, value)
        return total[:1]  # depends on the whole reduction; cheap to fetch

    @tf.function
    def all_reduce(values):
        return strategy.run(reduce_one, args=(values,))

    def call() -> None:
        for part in strategy.experimental_local_results(all_reduce(values)):
            part.numpy()  # returns once this replica's sum is complete

    for _ in range(warmup):
        call()
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        times.append(time.perf_counter() - start)
    return times


def _machine(tf, devices: tuple[str, ...]) -> dict:
    kinds = sorted({short_device(d).split(":")[0] for d in devices})
    simulated = kinds == ["CPU"] and len(devices) > 1
    summary = (
        f"{platform.system()} {platform.machine()}, {os.cpu_count()} CPU cores, "
        f"{len(devices)} {'/'.join(kinds)} devices"
        + (" (replicas simulated on the CPU, sharing its memory)" if simulated else "")
    )
    return {
        "summary": summary,
        "platform": platform.platform(),
        "processor": platform.processor() or platform.machine(),
        "cpu_count": os.cpu_count(),
        "python": platform.python_version(),
        "tensorflow": tf.__version__,
        "numpy": np.__version__,
        "devices": [short_device(d) for d in devices],
        "simulated_replicas": simulated,
    }
