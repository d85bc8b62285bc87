import json
import math
import os
import subprocess
import sys

import pytest
import tensorflow as tf

from mirrorkit._validate import parse_size
from mirrorkit.errors import AllReduceUnavailableError
from mirrorkit.measure.allreduce import (
    available_algorithms,
    benchmark_all_reduce,
    measure_copy_bandwidth,
)
from mirrorkit.measure.benchmark import (
    AllReduceBenchmark,
    AllReduceRecord,
    bus_bandwidth,
    record_from_times,
)
from mirrorkit.strategy import make_strategy
from tests.conftest import ROOT

TINY = dict(sizes=[64, "1KiB"], repeats=2, warmup=1, copy_bytes=1 << 20)


# -- arithmetic ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("nbytes", "seconds", "replicas", "algbw", "busbw"),
    [
        (1_000_000, 0.001, 2, 1e9, 1e9),  # 2(n-1)/n = 1
        (1_000_000, 0.001, 4, 1e9, 1.5e9),  # 2*3/4
        (8_000_000, 0.002, 8, 4e9, 7e9),  # 2*7/8
        (4096, 1.0, 3, 4096.0, 4096 * 4 / 3),
    ],
)
def test_bus_bandwidth_follows_nccl_tests(nbytes, seconds, replicas, algbw, busbw):
    got = bus_bandwidth(nbytes, seconds, replicas)
    assert got == pytest.approx((algbw, busbw))


CALL = r"bus_bandwidth\(nbytes, seconds, replicas\), e\.g\. bus_bandwidth\(1_000_000, 0\.001, 4\)"
WRONG_BUS_BANDWIDTH = [
    pytest.param(
        (0, 1.0, 2), ValueError, "nbytes", r"positive, got 0: pass the bytes", id="0 bytes"
    ),
    pytest.param(
        (-4, 1.0, 2), ValueError, "nbytes", r"positive, got -4: pass the bytes", id="negative bytes"
    ),
    pytest.param(
        (4, 0.0, 2), ValueError, "seconds", r"pass the time one all-reduce took", id="no time"
    ),
    pytest.param(
        (4, 1.0, 1),
        ValueError,
        "replicas",
        r"nobody to reduce with.*ask for 2 or more",
        id="one replica",
    ),
    pytest.param(
        (0.001, 1_000_000, 4),
        TypeError,
        "nbytes",
        rf"whole number, got 0\.001; are the arguments in this order\? Call {CALL}",
        id="seconds and bytes swapped",
    ),
    pytest.param(
        ("1MiB", 0.001, 4),
        TypeError,
        "nbytes",
        rf"got str '1MiB': call {CALL}",
        id="a size as text",
    ),
    pytest.param(
        (4096, None, 4),
        TypeError,
        "seconds",
        rf"got NoneType None: call {CALL}",
        id="no time measured",
    ),
    pytest.param(
        (4096, 0.001, "4"),
        TypeError,
        "replicas",
        rf"got str '4': call {CALL}",
        id="replicas as text",
    ),
]


@pytest.mark.wrong_inputs("mk.bus_bandwidth")
@pytest.mark.parametrize(("args", "error", "argument", "match"), WRONG_BUS_BANDWIDTH)
def test_wrong_bus_bandwidth_arguments_get_a_clear_message(refuses, args, error, argument, match):
    refuses(lambda: bus_bandwidth(*args), error, argument, match)


def test_record_from_times_median_spread_and_fraction():
    times = [0.004, 0.001, 0.002, 0.003, 0.010]
    record = record_from_times("one_device", 4, 1_000_000, times, copy_bandwidth=1e9)
    assert record.median_s == 0.003
    assert record.min_s == 0.001 and record.max_s == 0.010
    assert record.iqr_s == pytest.approx(0.004 - 0.002)
    assert record.repeats == 5
    assert record.algbw == pytest.approx(1_000_000 / 0.003)
    assert record.busbw == pytest.approx(record.algbw * 1.5)
    assert record.fraction_of_copy_bw == pytest.approx(record.busbw / 1e9)
    with pytest.raises(ValueError, match="times is empty"):
        record_from_times("one_device", 4, 4, [], 1e9)


@pytest.mark.parametrize(
    ("text", "nbytes"),
    [(4096, 4096), ("4096", 4096), ("4KiB", 4096), ("1 MiB", 1 << 20), ("16M", 16 << 20),
     ("1MB", 10**6), ("2GiB", 2 << 30), ("0.5KiB", 512)],
)  # fmt: skip
def test_parse_size(text, nbytes):
    assert parse_size(text) == nbytes


@pytest.mark.parametrize("text", ["4 kilobytes", "", "KiB", "1.1B"])
def test_parse_size_rejects_unreadable_text(text):
    with pytest.raises(ValueError):
        parse_size(text)


def test_copy_bandwidth_is_a_plausible_rate():
    assert 1e7 < measure_copy_bandwidth(1 << 20, repeats=2) < 1e13  # 10 MB/s .. 10 TB/s
    assert measure_copy_bandwidth(float(1 << 20), repeats=1) > 0  # 1e6-style sizes are bytes too


WRONG_COPY_BANDWIDTH = [
    pytest.param(
        dict(nbytes=1024),
        ValueError,
        "nbytes",
        r"at least 1 MiB to time memory, not cache; got 1024: write e\.g\. nbytes=64 << 20",
        id="fits in a cache",
    ),
    pytest.param(
        dict(nbytes=-1), ValueError, "nbytes", r"at least 1 MiB.*nbytes=64 << 20", id="negative"
    ),
    pytest.param(
        dict(nbytes="64MiB"),
        TypeError,
        "nbytes",
        r"int number of bytes, got str '64MiB': write e\.g\. nbytes=64 << 20",
        id="text",
    ),
    pytest.param(
        dict(repeats=0),
        ValueError,
        "repeats",
        r"at least 1, got 0: write e\.g\. repeats=5",
        id="no repeats",
    ),
    pytest.param(
        dict(repeats=2.5),
        TypeError,
        "repeats",
        r"got float 2\.5: write e\.g\. repeats=5",
        id="fractional repeats",
    ),
]


@pytest.mark.wrong_inputs("mk.measure_copy_bandwidth")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_COPY_BANDWIDTH)
def test_wrong_copy_bandwidth_arguments_get_a_clear_message(
    refuses, kwargs, error, argument, match
):
    refuses(
        lambda: measure_copy_bandwidth(**({"nbytes": 1 << 20} | kwargs)), error, argument, match
    )


# -- detection ----------------------------------------------------------------------------


def test_nccl_is_reported_unavailable_on_cpu_with_the_reason(devices):
    found = available_algorithms(devices)
    assert found["collective"] is None and found["one_device"] is None
    assert "no GPU" in found["nccl"]


WRONG_DEVICES = [
    pytest.param(
        "/cpu:0",
        TypeError,
        r"not the string '/cpu:0': write devices=\['/cpu:0', \.\.\.\]",
        id="one name",
    ),
    pytest.param(4, TypeError, r"got int 4: write devices=\['/cpu:0', '/cpu:1'\]", id="a count"),
    pytest.param([], ValueError, r"empty; pass device names or None", id="empty"),
    pytest.param(
        ["/gpu:0"],
        ValueError,
        r"no device '/gpu:0'.*mk\.simulate_replicas\(n\)",
        id="a GPU that is not there",
    ),
    pytest.param(
        ["/cpu:0", "/cpu:0"],
        ValueError,
        r"names CPU:0 twice.*a device of its own",
        id="one device twice",
    ),
    pytest.param(
        "strategy",
        TypeError,
        r"got a strategy: pass devices=mk\.replica_devices\(strategy\)",
        id="the strategy",
    ),
]


@pytest.mark.wrong_inputs("mk.available_algorithms")
@pytest.mark.parametrize(("devices", "error", "match"), WRONG_DEVICES)
def test_wrong_devices_for_available_algorithms(refuses, strategy, devices, error, match):
    devices = strategy if devices == "strategy" else devices
    refuses(lambda: available_algorithms(devices), error, "devices", match)


def test_nccl_is_skipped_not_raised(devices):
    result = benchmark_all_reduce(["nccl", "one_device"], replicas=[2], devices=devices, **TINY)
    assert set(result.skipped) == {"nccl"}
    assert "no GPU" in result.skipped["nccl"]
    assert {r.algorithm for r in result.records} == {"one_device"}
    assert "Skipped: nccl: NCCL all-reduce cannot run here" in str(result)


# -- real runs ----------------------------------------------------------------------------


def test_sweep_records_every_combination(devices):
    seen = []
    result = benchmark_all_reduce(
        ["collective", "one_device"],
        replicas=[2, 4],
        devices=devices,
        progress=lambda done, total, label: seen.append((done, total)),
        **TINY,
    )
    keys = [(r.algorithm, r.replicas, r.bytes) for r in result.records]
    assert keys == [
        (a, n, b) for a in ("collective", "one_device") for n in (2, 4) for b in (64, 1024)
    ]
    assert seen[-1] == (8, 8)
    assert result.copy_bandwidth > 0
    assert result.settings == {"warmup": 1, "repeats": 2, "copy_bytes": 1 << 20}
    assert result.machine["simulated_replicas"] is True
    for r in result.records:
        assert 0 < r.min_s <= r.median_s <= r.max_s
        assert r.repeats == 2
        assert (r.algbw, r.busbw) == pytest.approx(bus_bandwidth(r.bytes, r.median_s, r.replicas))
        assert r.fraction_of_copy_bw == pytest.approx(r.busbw / result.copy_bandwidth)


def test_strategy_argument_uses_its_algorithm_and_devices(devices):
    strategy = make_strategy("hierarchical_copy", devices=devices[:2])
    result = benchmark_all_reduce(strategy, **TINY)
    assert {(r.algorithm, r.replicas) for r in result.records} == {("hierarchical_copy", 2)}


def test_default_replica_counts_are_powers_of_two_and_all(devices):
    result = benchmark_all_reduce("one_device", devices=devices, sizes=[64], repeats=1,
                                  warmup=1, copy_bytes=1 << 20)  # fmt: skip
    assert [r.replicas for r in result.records] == [2, 4]


def test_json_and_csv_round_trip(devices, tmp_path):
    result = benchmark_all_reduce("one_device", replicas=[2], devices=devices, **TINY)
    path = tmp_path / "r.json"
    text = result.to_json(path)
    assert json.loads(path.read_text())["format"] == "mirrorkit.measure.allreduce/1"
    assert AllReduceBenchmark.from_json(path) == result
    assert AllReduceBenchmark.from_json(str(path)) == result
    assert AllReduceBenchmark.from_json(text) == result
    csv_text = result.to_csv(tmp_path / "r.csv")
    lines = csv_text.splitlines()
    assert lines[0].split(",") == list(AllReduceRecord.__dataclass_fields__)
    assert len(lines) == 1 + len(result.records)
    assert (tmp_path / "r.csv").read_text() == csv_text


SAVED = AllReduceBenchmark((record_from_times("collective", 2, 4096, [1e-3], 1e10),))
FROM_THE_FILE = r"pass the file AllReduceBenchmark\.to_json \(or --out\) wrote"


def saved_csv(folder):
    path = folder / "results.csv"
    SAVED.to_csv(path)
    return path


# Each case: source(tmp_path) is what the learner passes.
WRONG_SOURCES = [
    pytest.param(
        lambda folder: SAVED,
        TypeError,
        r"already an AllReduceBenchmark: use it as it is",
        id="the benchmark itself",
    ),
    pytest.param(
        lambda folder: SAVED.to_dict(),
        TypeError,
        r"got a dict: pass the text \(json\.dumps\(data\)\)",
        id="its to_dict()",
    ),
    pytest.param(
        lambda folder: None, TypeError, r"got NoneType None: pass what .*to_json wrote", id="None"
    ),
    pytest.param(
        lambda folder: "results.json",
        ValueError,
        r"'results\.json' is neither .* \(no such file\)\. Pass what",
        id="a missing file",
    ),
    pytest.param(
        lambda folder: "collective",
        ValueError,
        r"an algorithm's name: benchmark it with mk\.benchmark_all_reduce\(\['collective'\]\)",
        id="an algorithm's name",
    ),
    pytest.param(
        lambda folder: folder,
        ValueError,
        r"is a folder: pass the path of the JSON file",
        id="the folder",
    ),
    pytest.param(
        saved_csv, ValueError, rf"the text is not JSON .*{FROM_THE_FILE} \(a CSV", id="the CSV file"
    ),
    pytest.param(
        lambda folder: SAVED.to_csv(),
        ValueError,
        r"not benchmark JSON.*a CSV from to_csv",
        id="the CSV text",
    ),
    pytest.param(
        lambda folder: '{"format": "other"}',
        ValueError,
        rf"not a mirrorkit all-reduce benchmark \(expected format.*{FROM_THE_FILE}",
        id="other JSON",
    ),
    pytest.param(
        lambda folder: "{not json",
        ValueError,
        rf"the text is not JSON.*{FROM_THE_FILE}",
        id="broken JSON",
    ),
    pytest.param(
        lambda folder: SAVED.to_json().replace('"busbw"', '"bus_bw"'),
        ValueError,
        rf"records\[0\] lacks busbw\); {FROM_THE_FILE}, unedited",
        id="an edited record",
    ),
]


@pytest.mark.wrong_inputs("mk.AllReduceBenchmark.from_json")
@pytest.mark.parametrize(("source", "error", "match"), WRONG_SOURCES)
def test_wrong_sources_get_a_clear_message(refuses, tmp_path, source, error, match):
    refuses(lambda: AllReduceBenchmark.from_json(source(tmp_path)), error, "source", match)


def test_text_and_html_reprs(devices):
    result = benchmark_all_reduce("one_device", replicas=[2], devices=devices, **TINY)
    text = str(result)
    assert text.startswith("All-reduce benchmark (float32 SUM): 1 algorithm, 2 replicas, 64 B")
    assert "Memory copy on this machine:" in text
    assert "busbw/copy" in text and "one_device" in text
    page = result._repr_html_()
    assert page.startswith('<div class="mirrorkit-report"') and "<table " in page
    best = result.best("1KiB")
    assert best["one_device"].bytes == 1024


# -- bad inputs ---------------------------------------------------------------------------


# Each case: call(devices) is the learner's call; every one is refused before timing anything.
WRONG_BENCHMARKS = [
    pytest.param(
        lambda d: benchmark_all_reduce("ring", devices=d),
        ValueError,
        "algorithms",
        r"unknown all-reduce algorithm 'ring'; choose from 'collective'",
        id="ring",
    ),
    pytest.param(
        lambda d: benchmark_all_reduce(["collective", "ring"], devices=d),
        ValueError,
        "algorithms",
        r"unknown .* 'ring'; choose from",
        id="a list with a wrong name",
    ),
    pytest.param(
        lambda d: benchmark_all_reduce(3, devices=d),
        TypeError,
        "algorithms",
        r"got int: write e\.g\. algorithms=\['collective', 'one_device'\]",
        id="a number",
    ),
    pytest.param(
        lambda d: benchmark_all_reduce(tf.distribute.get_strategy()),
        TypeError,
        "algorithms",
        r"got _DefaultDistributionStrategy: pass mk\.make_strategy\(\)",
        id="the default strategy",
    ),
    pytest.param(
        lambda d: one_device(d, sizes=[0]),
        ValueError,
        "sizes",
        r"holds 0, which is not positive.*sizes=\['4KiB', '1MiB'\]",
        id="size 0",
    ),
    pytest.param(
        lambda d: one_device(d, sizes=-4),
        ValueError,
        "sizes",
        r"holds -4, which is not positive",
        id="a negative size",
    ),
    pytest.param(
        lambda d: one_device(d, sizes=[6]),
        ValueError,
        "sizes",
        r"holds 6 \(6 bytes\), not a multiple of 4.*round it to 4",
        id="not float32",
    ),
    pytest.param(
        lambda d: one_device(d, sizes=["lots"]),
        ValueError,
        "sizes",
        r"holds 'lots': cannot read the size.*e\.g\. '4KiB'",
        id="unreadable size",
    ),
    pytest.param(
        lambda d: one_device(d, sizes=[]),
        ValueError,
        "sizes",
        r"empty; pass at least one size such as '1MiB'",
        id="no size",
    ),
    pytest.param(
        lambda d: one_device(d, replicas=[1]),
        ValueError,
        "replicas",
        r"at least 2: an all-reduce over 1 replica has nobody.*ask for 2",
        id="1 replica",
    ),
    pytest.param(
        lambda d: one_device(d, replicas=[0]),
        ValueError,
        "replicas",
        r"at least 2.*ask for 2 or more",
        id="0 replicas",
    ),
    pytest.param(
        lambda d: one_device(d, replicas=[5]),
        ValueError,
        "replicas",
        r"5 replicas asked for, but only 4 devices.*simulate_replicas\(5\)",
        id="more replicas than devices",
    ),
    pytest.param(
        lambda d: one_device(d, replicas=[2.0]),
        TypeError,
        "replicas",
        r"holds 2\.0, but replica counts must be ints.*replicas=\[2, 4\]",
        id="a float count",
    ),
    pytest.param(
        lambda d: one_device(d, replicas=2.0),
        TypeError,
        "replicas",
        r"list of replica counts, got float 2\.0: write e\.g\. replicas=\[2, 4\]",
        id="a float",
    ),
    pytest.param(
        lambda d: one_device(d, replicas="4"),
        TypeError,
        "replicas",
        r"got str '4': write e\.g\. replicas=\[2, 4\]",
        id="text",
    ),
    pytest.param(
        lambda d: one_device(d[:1], replicas=None),
        ValueError,
        "replicas",
        r"only 1 device is available.*simulate_replicas\(4\)",
        id="one device only",
    ),
    pytest.param(
        lambda d: one_device(d, repeats=0),
        ValueError,
        "repeats",
        r"at least 1, got 0: write e\.g\. repeats=5",
        id="no repeats",
    ),
    pytest.param(
        lambda d: one_device(d, repeats="10"),
        TypeError,
        "repeats",
        r"got str '10': write e\.g\. repeats=5",
        id="repeats as text",
    ),
    pytest.param(
        lambda d: one_device(d, warmup=0),
        ValueError,
        "warmup",
        r"first call traces the tf\.function.*warmup=2",
        id="no warmup",
    ),
    pytest.param(
        lambda d: one_device(d, copy_bytes=1024),
        ValueError,
        "copy_bytes",
        r"at least 1 MiB.*copy_bytes=64 << 20",
        id="a copy in the cache",
    ),
    pytest.param(
        lambda d: one_device(d, progress="bar"),
        TypeError,
        "progress",
        r"progress\(done, total, label\), got str 'bar'; leave it None",
        id="progress as text",
    ),
    pytest.param(
        lambda d: one_device("/cpu:0"),
        TypeError,
        "devices",
        r"not the string '/cpu:0'",
        id="devices as a string",
    ),
]


def one_device(devices, **kwargs):
    arguments = dict(sizes=[64], replicas=[2], devices=devices) | kwargs
    return benchmark_all_reduce("one_device", **arguments)


@pytest.mark.wrong_inputs("mk.benchmark_all_reduce")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_BENCHMARKS)
def test_wrong_benchmark_arguments_get_a_clear_message(
    refuses, devices, call, error, argument, match
):
    refuses(lambda: call(devices), error, argument, match)


def test_make_strategy_nccl_error_type_is_the_one_reported():
    with pytest.raises(AllReduceUnavailableError):
        make_strategy("nccl")


# -- command line -------------------------------------------------------------------------


def run_cli(*args, cwd):
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    return subprocess.run(
        [sys.executable, "-m", "mirrorkit.measure", *args],
        capture_output=True,
        text=True,
        cwd=cwd,
        env=env,
        timeout=300,
    )


def test_cli_real_run_writes_json(tmp_path):
    out = tmp_path / "results.json"
    done = run_cli(
        "--replicas", "2", "3", "--sizes", "64", "1KiB", "--algorithms", "collective", "nccl",
        "--repeats", "2", "--warmup", "1", "--out", str(out), "--csv", str(tmp_path / "r.csv"),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "collective  3" in done.stdout
    assert "Skipped: nccl" in done.stdout
    assert "[" + "#" * 30 + "] 4/4" in done.stderr  # the progress bar reached the end
    result = AllReduceBenchmark.from_json(out)
    assert [(r.replicas, r.bytes) for r in result.records] == [(2, 64), (2, 1024), (3, 64),
                                                               (3, 1024)]  # fmt: skip
    assert result.machine["devices"] == ["CPU:0", "CPU:1", "CPU:2"]
    assert all(math.isfinite(r.busbw) for r in result.records)
    assert (tmp_path / "r.csv").exists()


WRONG_COMMAND_LINES = [
    pytest.param(
        ["--replicas", "1"], "--replicas", r"at least 2 replicas.*--replicas 2 4", id="1 replica"
    ),
    pytest.param(
        ["--replicas", "0"], "--replicas", r"at least 2 replicas.*--replicas 2 4", id="0 replicas"
    ),
    pytest.param(
        ["--replicas", "two"],
        "--replicas",
        r"'two' is not a whole number of replicas; write counts such as --replicas 2 4",
        id="a word",
    ),
    pytest.param(
        ["--replicas", "100"], "--replicas", r"more than mirrorkit simulates \(64\)", id="too many"
    ),
    pytest.param(
        ["--sizes", "-1"],
        "--sizes",
        r"'-1' is not a positive size.*--sizes 4KiB 1MiB",
        id="negative size",
    ),
    pytest.param(
        ["--sizes", "6"], "--sizes", r"not a multiple of 4.*--sizes 4KiB 1MiB", id="not float32"
    ),
    pytest.param(
        ["--sizes", "lots"],
        "--sizes",
        r"cannot read the size 'lots'.*--sizes 4KiB",
        id="unreadable size",
    ),
    pytest.param(
        ["--algorithms", "ring"],
        "--algorithms",
        r"invalid choice: 'ring' \(choose from 'collective'",
        id="unknown algorithm",
    ),
    pytest.param(
        ["--repeats", "0"],
        "--repeats",
        r"must be at least 1; write a count such as 5",
        id="no repeats",
    ),
    pytest.param(
        ["--out", "no-such-folder/results.json"],
        "--out",
        r"the folder 'no-such-folder' does not exist.*create it first",
        id="--out missing folder",
    ),
    pytest.param(
        ["--out", "."], "--out", r"is a folder; give a file name in it", id="--out a folder"
    ),
    pytest.param(
        ["--csv", "no-such-folder/r.csv"],
        "--csv",
        r"does not exist.*create it first",
        id="--csv missing folder",
    ),
]


@pytest.mark.wrong_inputs("python -m mirrorkit.measure")
@pytest.mark.parametrize(("args", "option", "match"), WRONG_COMMAND_LINES)
def test_wrong_command_lines_get_a_clear_message(clear_message, tmp_path, args, option, match):
    # Refused while reading the options, before TensorFlow is imported: each run is quick.
    done = run_cli(*args, cwd=tmp_path)
    assert done.returncode == 2, done.stdout + done.stderr
    clear_message(done.stderr, option, match)
    assert not list(tmp_path.iterdir())  # nothing written
