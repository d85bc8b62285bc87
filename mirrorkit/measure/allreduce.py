"""Time the real all-reduce of ``tf.distribute``, and read it against this machine's memory.

What the bandwidths mean, and why simulated CPU replicas move no bytes:
docs/design/measure.md.

Example:
    >>> from mirrorkit.measure.allreduce import measure_copy_bandwidth
    >>> measure_copy_bandwidth(1 << 20, repeats=3) > 1e6  # more than 1 MB/s
    True
"""

from __future__ import annotations

import os
import platform
import statistics
import time
from collections.abc import Callable, Iterable, Mapping, Sequence

import numpy as np

from mirrorkit._algorithms import ALL_REDUCE_ALGORITHMS
from mirrorkit._validate import parse_size, refuse, require_count, require_int, require_items
from mirrorkit.errors import AllReduceUnavailableError
from mirrorkit.measure.benchmark import (
    AllReduceBenchmark,
    record_from_times,
    too_few_replicas,
)
from mirrorkit.report.units import format_size
from mirrorkit.report.values import short_device
from mirrorkit.strategy import all_reduce_name, make_strategy

DEFAULT_SIZES = (4 << 10, 1 << 20, 16 << 20)
COPY_BYTES = 64 << 20  # larger than any CPU cache, so the copy runs at memory speed
_FLOAT32 = 4

Progress = Callable[[int, int, str], None]  # (done, total, what is running now)


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
    repeats = require_count("repeats", repeats, write="e.g. repeats=5")
    source = np.ones(nbytes, dtype=np.uint8)
    target = np.empty_like(source)
    np.copyto(target, source)  # touches every page of the target before timing
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        np.copyto(target, source)
        times.append(time.perf_counter() - start)
    return nbytes / statistics.median(times)


def _copy_bytes(name: str, value) -> int:
    """The bytes of the memory copy: a whole number of at least 1 MiB."""
    write = f"e.g. {name}=64 << 20 (64 MiB)"
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    require_int(name, value, must="an int number of bytes", write=write)
    if value < 1 << 20:  # the message's "; got" is what the wrong-input tables read
        raise ValueError(
            f"{name} must be at least 1 MiB to time memory, not cache; got {value}: write {write}."
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
    repeats = require_count("repeats", repeats, write="e.g. repeats=5")
    must = "an int of at least 1, as the first call traces the tf.function and would be timed"
    warmup = require_int("warmup", warmup, must=must, write="e.g. warmup=2", minimum=1)
    copy_bytes = _copy_bytes("copy_bytes", copy_bytes)
    if progress is not None and not callable(progress):
        got = f"{type(progress).__name__} {progress!r}; leave it None for no progress"
        must = "a function progress(done, total, label)"
        refuse("progress", must=must, got=got, write="progress=print")

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
                records.append(record_from_times(name, n, nbytes, times, copy_bandwidth))
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


def _algorithms(tf, algorithms) -> tuple[object | None, list[str]]:
    """The strategy to measure (or None) and the algorithms' names, from ``algorithms``."""
    names = "names such as ['collective', 'one_device']"
    if algorithms is None:
        return None, list(ALL_REDUCE_ALGORITHMS)
    if isinstance(algorithms, tf.distribute.Strategy):
        if not isinstance(algorithms, tf.distribute.MirroredStrategy):
            got = f"{type(algorithms).__name__}: pass mk.make_strategy()"
            must = "a MirroredStrategy (or algorithm names)"
            write = f"{names} to name the algorithms instead"
            refuse("algorithms", must=must, got=got, write=write)
        ops = type(algorithms.extended._cross_device_ops).__name__
        return algorithms, [all_reduce_name(algorithms) or ops]
    if isinstance(algorithms, str):
        algorithms = [algorithms]
    if not isinstance(algorithms, Iterable) or isinstance(algorithms, Mapping):
        must = "a MirroredStrategy, a name or a list of names"
        write = "e.g. algorithms=['collective', 'one_device'], or None for all of them"
        refuse("algorithms", must=must, got=type(algorithms).__name__, write=write)
    chosen = list(dict.fromkeys(algorithms))
    known = ", ".join(repr(k) for k in ALL_REDUCE_ALGORITHMS)
    unknown = [n for n in chosen if not isinstance(n, str) or n not in ALL_REDUCE_ALGORITHMS]
    if unknown or not chosen:
        got = f"the unknown all-reduce algorithm {unknown[0]!r}" if unknown else "an empty list"
        must = "names of all-reduce algorithms"
        write = f"{names}, or None for all of them"
        refuse(
            "algorithms",
            must=must,
            got=f"{got}; choose from {known}",
            write=write,
            error=ValueError,
        )
    return None, chosen


def _devices(devices) -> tuple[str, ...]:
    """The replicas' device names: ``devices`` as a tuple, or every local device for None."""
    if devices is None:
        import tensorflow as tf

        gpus = tf.config.list_logical_devices("GPU")
        return tuple(d.name for d in (gpus or tf.config.list_logical_devices("CPU")))
    every = "or None for every local device"
    got, write = None, f"devices=['/cpu:0', '/cpu:1'], {every}"
    if isinstance(devices, str):
        got, write = f"one name, not the string {devices!r}", f"devices=[{devices!r}, ...], {every}"
    elif hasattr(devices, "extended") and hasattr(devices, "scope"):
        got = "a strategy: pass devices=mk.replica_devices(strategy) instead"
        write = "devices=None to use every local device"
    elif isinstance(devices, Iterable) and (devices := tuple(devices)):
        return devices
    elif isinstance(devices, Iterable):
        must = "a list that is not empty; pass device names or None for all local ones"
        refuse("devices", devices, must=must, write=write, error=ValueError)
    refuse("devices", devices, must="a list of device names", got=got, write=write)


def _sizes(sizes) -> list[int]:
    """Each size of ``sizes`` in bytes, a positive multiple of 4 (float32), once each."""
    write = "sizes=['4KiB', '1MiB'] or sizes=[4096]"
    sizes = [sizes] if isinstance(sizes, int | str) else sizes
    result = []
    for size in require_items("sizes", sizes, write=write, allow_empty=True):
        try:
            nbytes, problem = parse_size(size), None
        except (TypeError, ValueError) as error:
            nbytes, problem = 0, error
        if problem is not None:  # refused outside the except: no "during handling" chain
            must = "sizes in bytes or text such as '4KiB'"
            got = f"a list that holds {size!r}: {str(problem).split(': write ')[0].rstrip('.')}"
            example = "e.g. '4KiB' or 4096 for each size, as in sizes=['4KiB', '1MiB']"
            refuse("sizes", must=must, got=got, write=example, error=type(problem))
        if nbytes <= 0 or nbytes % _FLOAT32:
            must = "positive multiples of 4 bytes (each replica sends float32, 4 bytes each)"
            got = f"a list that holds {size!r}, which is not positive"
            if nbytes > 0:
                rounded = nbytes - nbytes % _FLOAT32 or _FLOAT32
                got = f"a list that holds {size!r} ({nbytes} bytes), not a multiple of 4"
                write = f"sizes=[{rounded}] (round it to {rounded})"
            refuse("sizes", must=must, got=got, write=write, error=ValueError)
        result.append(nbytes)
    if not result:
        must = "a list that is not empty; pass at least one size such as '1MiB'"
        refuse("sizes", must=must, got="an empty list", write=write, error=ValueError)
    return list(dict.fromkeys(result))


def _replica_counts(replicas, available: int) -> list[int]:
    """The replica counts to sweep: ``replicas``, or powers of two up to ``available``."""
    write, simulate = (
        "e.g. replicas=[2, 4]",
        "mirrorkit.simulate_replicas({}) before TensorFlow starts",
    )
    if replicas is None:
        if available < 2:
            got = f"None, but only {available} device is available"
            must = "replica counts of at least 2 (an all-reduce needs 2 replicas)"
            refuse("replicas", must=must, got=got, write=simulate.format(4), error=ValueError)
        return [n for n in (2, 4, 8, 16, 32, 64) if n < available] + [available]
    if isinstance(replicas, int) and not isinstance(replicas, bool):
        replicas = [replicas]
    if isinstance(replicas, str) or not isinstance(replicas, Iterable):
        refuse("replicas", replicas, must="a list of replica counts", write=write)
    counts = list(dict.fromkeys(replicas))
    if not counts:
        must = "a list of replica counts"
        refuse("replicas", must=must, got="an empty list", write=write, error=ValueError)
    for n in counts:
        if isinstance(n, bool) or not isinstance(n, int):
            got = f"a list that holds {n!r}, but replica counts must be ints"
            refuse("replicas", must="a list of replica counts", got=got, write=write)
        if n < 2:
            write = "replicas=[2, 4] (ask for 2 or more)"
            refuse("replicas", n, must=too_few_replicas(n), write=write, error=ValueError)
        if n > available:
            got = f"{n} replicas asked for, but only {available} device"
            got += f"{'s are' if available != 1 else ' is'} available"
            write = simulate.format(n) + " (or use fewer)"
            refuse("replicas", must=f"at most {available}", got=got, write=write, error=ValueError)
    return counts
