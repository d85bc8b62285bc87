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
from mirrorkit.strategy import ALL_REDUCE_ALGORITHMS, all_reduce_name, make_strategy

FORMAT = "mirrorkit.measure.allreduce/1"  # the "format" field of the JSON files written here
DEFAULT_SIZES = (4 << 10, 1 << 20, 16 << 20)
COPY_BYTES = 64 << 20  # larger than any CPU cache, so the copy runs at memory speed
_FLOAT32 = 4

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
        TypeError: If an argument is not a number, or ``nbytes`` or ``replicas`` is not a
            whole number (arguments given in the wrong order, for example).
        ValueError: If ``nbytes`` or ``seconds`` is not positive, or ``replicas < 2``.

    Example:
        >>> from mirrorkit.measure.allreduce import bus_bandwidth
        >>> bus_bandwidth(1_000_000, 0.001, 4)  # 1 MB in 1 ms on 4 replicas
        (1000000000.0, 1500000000.0)
    """
    call = "bus_bandwidth(nbytes, seconds, replicas), e.g. bus_bandwidth(1_000_000, 0.001, 4)"
    _whole("nbytes", nbytes, call)
    _number("seconds", seconds, call)
    _whole("replicas", replicas, call)
    if nbytes <= 0:
        raise ValueError(
            f"nbytes must be positive, got {nbytes}: pass the bytes each replica sent."
        )
    if not seconds > 0:
        raise ValueError(
            f"seconds must be positive, got {seconds}: pass the time one all-reduce took, "
            "e.g. 0.001 for 1 ms."
        )
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
        TypeError: If ``nbytes`` or ``repeats`` is not a whole number.
        ValueError: If ``nbytes`` is below 1 MiB or ``repeats`` below 1.

    Example:
        >>> from mirrorkit.measure.allreduce import measure_copy_bandwidth
        >>> measure_copy_bandwidth(1 << 20, repeats=3) > 1e6  # more than 1 MB/s
        True
    """
    nbytes = _copy_bytes("nbytes", nbytes)
    repeats = _at_least_one("repeats", repeats)
    source = np.ones(nbytes, dtype=np.uint8)
    target = np.empty_like(source)
    np.copyto(target, source)  # touches every page of the target before timing
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - start)
    return nbytes / statistics.median(times)


def _whole(name: str, value, call: str) -> None:
    """``value`` must be a whole number (an int, or a float such as 1e6 that is one)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}: call {call}."
        )
    if isinstance(value, float) and not value.is_integer():
        raise TypeError(
            f"{name} must be a whole number, got {value!r}; are the arguments in this order? "
            f"Call {call}."
        )


def _number(name: str, value, call: str) -> None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise TypeError(
            f"{name} must be a number, got {type(value).__name__} {value!r}: call {call}."
        )


def _at_least_one(name: str, value) -> int:
    """``value`` as an int of at least 1 (``repeats``, ``warmup``), or a clear error."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int, got {type(value).__name__} {value!r}: write e.g. {name}=5."
        )
    if value < 1:
        raise ValueError(f"{name} must be at least 1, got {value}: write e.g. {name}=5.")
    return value


def _copy_bytes(name: str, value) -> int:
    """The bytes of the memory copy: a whole number of at least 1 MiB."""
    example = f"write e.g. {name}=64 << 20 (64 MiB)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(
            f"{name} must be an int number of bytes, got {type(value).__name__} {value!r}: "
            f"{example}."
        )
    if value < 1 << 20:
        raise ValueError(
            f"{name} must be at least 1 MiB to time memory, not cache; got {value}: {example}."
        )
    return value


def available_algorithms(devices: Sequence[str] | None = None) -> dict[str, str | None]:
    """Which all-reduce algorithms can run on ``devices``: ``None``, or the reason they cannot.

    Args:
        devices: Device names of the replicas; ``None`` means every local GPU, or every
            logical CPU device when there is no GPU.

    Returns:
        ``{name: None or reason}`` for every name in ``ALL_REDUCE_ALGORITHMS``.

    Raises:
        TypeError: If ``devices`` is not a list of device names.
        ValueError: If ``devices`` is empty, or names a device this process does not have
            or one device twice.

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
            TypeError: If ``source`` is neither text nor a path (a benchmark object or a
                dict, for example).
            ValueError: If the text is not a mirrorkit all-reduce benchmark, or the path
                names no file.
        """
        if isinstance(source, AllReduceBenchmark):
            raise TypeError(
                "source is already an AllReduceBenchmark: use it as it is; from_json loads "
                "what its to_json() wrote (text, or the path of the file)."
            )
        if isinstance(source, Mapping):
            raise TypeError(
                f"source must be JSON text or the path of a JSON file, got a "
                f"{type(source).__name__}: pass the text (json.dumps(data)) or the file that "
                "AllReduceBenchmark.to_json wrote."
            )
        if not isinstance(source, str | os.PathLike):
            raise TypeError(
                f"source must be JSON text or the path of a JSON file, got "
                f"{type(source).__name__} {source!r}: pass what AllReduceBenchmark.to_json "
                "wrote, e.g. AllReduceBenchmark.from_json('results.json')."
            )
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text = source
        elif _is(Path.is_dir, source):
            raise ValueError(
                f"source {str(source)!r} is a folder: pass the path of the JSON file in it, "
                "the one AllReduceBenchmark.to_json (or --out) wrote."
            )
        elif _is(Path.is_file, source):
            text = Path(source).read_text(encoding="utf-8")
        elif isinstance(source, str) and "\n" in source.strip():
            raise ValueError(
                "source is text but not benchmark JSON (it does not start with '{'): pass "
                "what AllReduceBenchmark.to_json wrote; a CSV from to_csv cannot be read back."
            )
        else:
            hint = (
                f"; {source!r} is an algorithm's name: benchmark it with "
                f"mk.benchmark_all_reduce([{source!r}]) and use the result"
                if source in ALL_REDUCE_ALGORITHMS
                else ""
            )
            raise ValueError(
                f"source {str(source)!r} is neither benchmark JSON text nor the path of a "
                f"file (no such file){hint}. Pass what AllReduceBenchmark.to_json wrote."
            )
        written = "pass the file AllReduceBenchmark.to_json (or --out) wrote"
        try:
            data = json.loads(text)
        except json.JSONDecodeError as error:
            raise ValueError(
                f"source is not a mirrorkit all-reduce benchmark: the text is not JSON "
                f"({error}); {written} (a CSV from to_csv cannot be read back)."
            ) from None
        if not isinstance(data, Mapping) or data.get("format") != FORMAT:
            raise ValueError(
                f"source is not a mirrorkit all-reduce benchmark (expected format {FORMAT!r}, "
                f"got {data.get('format') if isinstance(data, Mapping) else type(data).__name__!r}"
                f"); {written}."
            )
        fields = list(AllReduceRecord.__dataclass_fields__)
        records = data.get("records", [])
        for i, record in enumerate(records if isinstance(records, list) else [records]):
            if not isinstance(record, Mapping) or set(record) != set(fields):
                have = set(record) if isinstance(record, Mapping) else set()
                missing = [f for f in fields if f not in have]
                raise ValueError(
                    f"source holds a broken record (records[{i}]"
                    + (f" lacks {', '.join(missing)}" if missing else " has unknown fields")
                    + f"); {written}, unedited, or run the benchmark again."
                )
        return cls(
            records=tuple(AllReduceRecord(**record) for record in records),
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


def _is(test, source) -> bool:
    """``Path(source).is_file()`` and the like, False for text no path can be."""
    try:
        return test(Path(source))
    except (OSError, ValueError):  # a name too long, a NUL character
        return False


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
            reduce with) or above the number of devices, ``repeats``/``warmup``
            below 1, ``copy_bytes`` below 1 MiB, or ``devices`` naming no device here.
        TypeError: If ``algorithms`` is neither a ``MirroredStrategy`` nor names, or
            another argument has the wrong type (``sizes`` or ``replicas`` not numbers,
            ``devices`` a single string, ``progress`` not callable).

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
    repeats = _at_least_one("repeats", repeats)
    if isinstance(warmup, int) and not isinstance(warmup, bool) and warmup < 1:
        raise ValueError(
            f"warmup must be at least 1, got {warmup}: the first call traces the tf.function "
            "and would be timed with it; write e.g. warmup=2."
        )
    warmup = _at_least_one("warmup", warmup)
    copy_bytes = _copy_bytes("copy_bytes", copy_bytes)
    if progress is not None and not callable(progress):
        raise TypeError(
            f"progress must be a function progress(done, total, label), got "
            f"{type(progress).__name__} {progress!r}; leave it None for no progress."
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
            f"{'' if n == 1 else 's'} has nobody to reduce with, so there is nothing to measure; "
            "ask for 2 or more."
        )


def _algorithms(tf, algorithms) -> tuple[object | None, list[str]]:
    if algorithms is None:
        return None, list(ALL_REDUCE_ALGORITHMS)
    if isinstance(algorithms, tf.distribute.Strategy):
        if not isinstance(algorithms, tf.distribute.MirroredStrategy):
            raise TypeError(
                f"algorithms must be a MirroredStrategy (or algorithm names), got "
                f"{type(algorithms).__name__}: pass mk.make_strategy(), or names such as "
                "['collective', 'one_device']."
            )
        ops = type(algorithms.extended._cross_device_ops).__name__
        return algorithms, [all_reduce_name(algorithms) or ops]
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    if not isinstance(algorithms, Iterable) or isinstance(algorithms, Mapping):
        raise TypeError(
            f"algorithms must be a MirroredStrategy, a name or a list of names, got "
            f"{type(algorithms).__name__}: write e.g. algorithms=['collective', 'one_device'], "
            "or None for all of them."
        )
    names = list(algorithms)
    known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
    for name in names:
        if not isinstance(name, str) or name not in ALL_REDUCE_ALGORITHMS:
            raise ValueError(
                f"algorithms holds an unknown all-reduce algorithm {name!r}; choose from {known}."
            )
    names = list(dict.fromkeys(names))
    if not names:
        raise ValueError("algorithms is empty; pass names, or None for all of them.")
    return None, names


def _devices(devices) -> tuple[str, ...]:
    example = "devices=['/cpu:0', '/cpu:1'], or None for every local device"
    if isinstance(devices, str):
        raise TypeError(
            f"devices must be a list of device names, not the string {devices!r}: write "
            f"devices=[{devices!r}, ...] (a list), or None for every local device."
        )
    if devices is not None and hasattr(devices, "extended") and hasattr(devices, "scope"):
        raise TypeError(
            "devices must be a list of device names, got a strategy: pass "
            "devices=mk.replica_devices(strategy), or None for every local device."
        )
    if devices is not None and not isinstance(devices, Iterable):
        raise TypeError(
            f"devices must be a list of device names, got {type(devices).__name__} "
            f"{devices!r}: write {example}."
        )
    if devices is not None:
        devices = tuple(devices)
        if not devices:
            raise ValueError("devices is empty; pass device names or None for all local ones.")
        return devices
    import tensorflow as tf

    gpus = tf.config.list_logical_devices("GPU")
    return tuple(d.name for d in (gpus or tf.config.list_logical_devices("CPU")))


def _sizes(sizes) -> list[int]:
    example = "sizes=['4KiB', '1MiB'] or sizes=[4096]"
    if isinstance(sizes, int | str):
        sizes = [sizes]
    if not isinstance(sizes, Iterable):
        raise TypeError(
            f"sizes must be a list of sizes, got {type(sizes).__name__} {sizes!r}: write {example}."
        )
    result = []
    for size in sizes:
        try:
            nbytes = parse_size(size)
        except (TypeError, ValueError) as error:
            raise type(error)(f"sizes holds {size!r}: {error}") from None
        if nbytes <= 0:
            raise ValueError(
                f"sizes holds {size!r}, which is not positive: each replica must contribute "
                f"at least one float32 (4 bytes); write e.g. {example}."
            )
        if nbytes % _FLOAT32:
            raise ValueError(
                f"sizes holds {size!r} ({nbytes} bytes), not a multiple of 4: the tensors are "
                f"float32, 4 bytes per element; round it to {nbytes - nbytes % _FLOAT32 or 4}."
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
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        replicas = [replicas]
    if isinstance(replicas, str) or not isinstance(replicas, Iterable):
        raise TypeError(
            f"replicas must be a list of replica counts, got {type(replicas).__name__} "
            f"{replicas!r}: write e.g. replicas=[2, 4]."
        )
    counts = list(dict.fromkeys(replicas))
    if not counts:
        raise ValueError("replicas is empty; pass replica counts such as [2, 4].")
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(
                f"replicas holds {n!r}, but replica counts must be ints ({type(n).__name__} "
                "given): write e.g. replicas=[2, 4]."
            )
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
