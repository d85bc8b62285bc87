"""The all-reduce benchmark's results: one record per measurement, saved as JSON and CSV.

Example:
    >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, record_from_times
    >>> record = record_from_times("collective", 2, 4096, [0.001, 0.002], copy_bandwidth=1e10)
    >>> result = AllReduceBenchmark(records=(record,), copy_bandwidth=1e10)
    >>> AllReduceBenchmark.from_json(result.to_json()) == result
    True
"""

from __future__ import annotations

import csv
import io
import json
import os
import statistics
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import parse_size, refuse
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import (
    format_percent,
    format_rate,
    format_seconds,
    format_size,
)

FORMAT = "mirrorkit.measure.allreduce/1"  # the "format" field of the JSON files written here
_TWO = "replicas=[2, 4] (ask for 2 or more)"


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
        >>> from mirrorkit.measure.benchmark import bus_bandwidth
        >>> bus_bandwidth(1_000_000, 0.001, 4)  # 1 MB in 1 ms on 4 replicas
        (1000000000.0, 1500000000.0)
    """
    call = "bus_bandwidth(nbytes, seconds, replicas), e.g. bus_bandwidth(1_000_000, 0.001, 4)"
    for name, value in (("nbytes", nbytes), ("seconds", seconds), ("replicas", replicas)):
        number = isinstance(value, int | float) and not isinstance(value, bool)
        if not number or (name != "seconds" and not float(value).is_integer()):
            must, got = "a number", f"{type(value).__name__} {value!r}: call {call}"
            if number:
                must, got = (
                    "a whole number",
                    f"{value!r}; are the arguments in this order? Call {call}",
                )
            refuse(
                name,
                value,
                must=must,
                got=got,
                write="the bytes, the seconds and the replicas, as numbers",
            )
    if nbytes <= 0:
        got = f"{nbytes}: pass the bytes each replica sent"
        refuse("nbytes", must="positive", got=got, write="nbytes=4096", error=ValueError)
    if not seconds > 0:
        must = "positive (pass the time one all-reduce took)"
        refuse("seconds", seconds, must=must, write="seconds=0.001 for 1 ms", error=ValueError)
    if replicas < 2:
        refuse("replicas", replicas, must=too_few_replicas(replicas), write=_TWO, error=ValueError)
    algbw = nbytes / seconds
    return algbw, algbw * 2 * (replicas - 1) / replicas


def too_few_replicas(replicas: int) -> str:
    """Why ``replicas`` below 2 cannot be measured: what a refusal says ``replicas`` must be.

    Example:
        >>> from mirrorkit.measure.benchmark import too_few_replicas
        >>> too_few_replicas(1)
        'at least 2: an all-reduce over 1 replica has nobody to reduce with, so there is nothing to measure'
    """  # noqa: E501
    return (
        f"at least 2: an all-reduce over {replicas} replica{'' if replicas == 1 else 's'} "
        "has nobody to reduce with, so there is nothing to measure"
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
        >>> from mirrorkit.measure.benchmark import record_from_times
        >>> r = record_from_times("one_device", 4, 8_000_000, [0.004, 0.002, 0.003], 1e10)
        >>> r.median_s, r.algbw, r.busbw, r.fraction_of_copy_bw
        (0.003, 2666666666.6666665, 4000000000.0, 0.4)
    """
    if not times:
        raise ValueError("times is empty: time at least one repeat.")
    times = [float(t) for t in times]
    median = statistics.median(times)
    import numpy as np  # here, not at the top: the browser labs' code has no NumPy

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
        >>> from mirrorkit.measure.benchmark import AllReduceRecord
        >>> record = AllReduceRecord(algorithm="collective", replicas=2, bytes=4096,
        ...     median_s=1e-3, iqr_s=1e-4, min_s=9e-4, max_s=2e-3, repeats=5,
        ...     algbw=4.096e6, busbw=4.096e6, fraction_of_copy_bw=0.001)
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
        >>> from mirrorkit.measure.benchmark import AllReduceBenchmark, AllReduceRecord
        >>> record = AllReduceRecord(algorithm="collective", replicas=2, bytes=4096,
        ...     median_s=1e-3, iqr_s=1e-4, min_s=9e-4, max_s=2e-3, repeats=5,
        ...     algbw=4.096e6, busbw=4.096e6, fraction_of_copy_bw=4.096e-4)
        >>> result = AllReduceBenchmark(records=(record,), skipped={"nccl": "no GPU"},
        ...                             copy_bandwidth=1e10)
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
        must = "JSON text or the path of a JSON file"
        write = "AllReduceBenchmark.from_json('results.json'), the file to_json (or --out) wrote"
        if not isinstance(source, str | os.PathLike):
            got = f"{type(source).__name__} {source!r}: pass what AllReduceBenchmark.to_json wrote"
            if isinstance(source, AllReduceBenchmark):
                got = "the benchmark itself, already an AllReduceBenchmark: use it as it is"
            elif isinstance(source, Mapping):
                got = f"a {type(source).__name__}: pass the text (json.dumps(data)) instead"
            refuse("source", must=must, got=got, write=write)
        if isinstance(source, str) and source.lstrip().startswith("{"):
            text = source
        elif _is(Path.is_file, source):
            text = Path(source).read_text(encoding="utf-8")
        else:
            name = str(source)
            got = f"no file: {name!r} is neither benchmark JSON text nor the path of a file"
            got += " (no such file)" + (
                f"; {source!r} is an algorithm's name: benchmark it with "
                f"mk.benchmark_all_reduce([{source!r}]) and use the result"
                if source in ALL_REDUCE_ALGORITHMS
                else ""
            )
            got += ". Pass what AllReduceBenchmark.to_json wrote"
            if _is(Path.is_dir, source):
                got = f"{name!r}, which is a folder: pass the path of the JSON file in it"
            elif isinstance(source, str) and "\n" in source.strip():
                got = "text that is not benchmark JSON (it does not start with '{')"
                write += "; a CSV from to_csv cannot be read back"
            refuse("source", must=must, got=got, write=write, error=ValueError)
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
