import json
import math
import os
import subprocess
import sys

import pytest

from mirrorkit.errors import AllReduceUnavailableError
from mirrorkit.measure.allreduce import (
    AllReduceBenchmark,
    AllReduceRecord,
    available_algorithms,
    benchmark_all_reduce,
    bus_bandwidth,
    measure_copy_bandwidth,
    record_from_times,
)
from mirrorkit.report.units import parse_size
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


@pytest.mark.parametrize(
    ("args", "match"),
    [
        ((0, 1.0, 2), "nbytes must be positive"),
        ((-4, 1.0, 2), "nbytes must be positive"),
        ((4, 0.0, 2), "seconds must be positive"),
        ((4, 1.0, 1), "at least 2.*nobody to reduce with"),
    ],
)
def test_bus_bandwidth_rejects_bad_inputs(args, match):
    with pytest.raises(ValueError, match=match):
        bus_bandwidth(*args)


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
    with pytest.raises(ValueError, match="at least 1 MiB"):
        measure_copy_bandwidth(1024)


# -- detection ----------------------------------------------------------------------------


def test_nccl_is_reported_unavailable_on_cpu_with_the_reason(devices):
    found = available_algorithms(devices)
    assert found["collective"] is None and found["one_device"] is None
    assert "no GPU" in found["nccl"]


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
    with pytest.raises(ValueError, match="not a mirrorkit all-reduce benchmark"):
        AllReduceBenchmark.from_json('{"format": "other"}')


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


@pytest.mark.parametrize(
    ("kwargs", "error", "match"),
    [
        (dict(sizes=[0]), ValueError, "size 0 is not positive"),
        (dict(sizes=[-4]), ValueError, "size -4 is not positive"),
        (dict(sizes=[6]), ValueError, "not a multiple of 4"),
        (dict(sizes=[]), ValueError, "sizes is empty"),
        (dict(replicas=[1]), ValueError, "at least 2: an all-reduce over 1 replica has nobody"),
        (dict(replicas=[0]), ValueError, "at least 2"),
        (dict(replicas=[5]), ValueError, "5 replicas asked for, but only 4 devices"),
        (dict(replicas=[2.0]), TypeError, "must be ints"),
        (dict(repeats=0), ValueError, "repeats must be at least 1"),
        (dict(warmup=0), ValueError, "first call traces"),
    ],
)
def test_bad_inputs_are_clear_errors(devices, kwargs, error, match):
    arguments = dict(sizes=[64], replicas=[2], devices=devices) | kwargs
    with pytest.raises(error, match=match):
        benchmark_all_reduce("one_device", **arguments)


def test_unknown_algorithm_lists_the_known_ones(devices):
    with pytest.raises(ValueError, match="unknown all-reduce algorithm 'ring'.*'collective'"):
        benchmark_all_reduce(["collective", "ring"], devices=devices)
    with pytest.raises(TypeError, match="MirroredStrategy, a name or a list"):
        benchmark_all_reduce(3, devices=devices)


def test_one_device_only_says_why(devices):
    with pytest.raises(ValueError, match="only 1 device is available.*simulate_replicas"):
        benchmark_all_reduce("one_device", devices=devices[:1], sizes=[64])


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


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--replicas", "1"], "an all-reduce needs at least 2 replicas"),
        (["--sizes", "0"], "'0' is not a positive size"),
        (["--sizes=-4KiB"], "is not a positive size"),
        (["--sizes", "6"], "not a multiple of 4"),
        (["--sizes", "lots"], "cannot read the size 'lots'"),
        (["--algorithms", "ring"], "invalid choice: 'ring'"),
        (["--repeats", "0"], "must be at least 1"),
    ],
)
def test_cli_argument_errors(args, message, capsys):
    from mirrorkit.measure.command import main

    with pytest.raises(SystemExit) as exit_info:
        main(args)
    assert exit_info.value.code == 2
    assert message in capsys.readouterr().err
