"""bookbuild.gpujob: the gpu job's decisions, from nvidia-smi's output and GPU counts as data.

Nothing here starts TensorFlow or needs a GPU: every decision the job makes is a function of
plain data (what nvidia-smi printed, how many GPUs, what a probe returned), tested as such.
"""

import json
import re
import shutil
import stat
import sys

import nbformat.v4 as v4
import pytest

from bookbuild import ROOT, testrun
from bookbuild.claims import claim_changes
from bookbuild.environments import LOCK, book_env
from bookbuild.gpujob import CUDA, GPU_LOCK, REPORT, gpu_job, verdicts
from bookbuild.gpujob.plan import (
    ReplicaCase,
    all_reduce_replicas,
    benchmark_replicas,
    expected_sum,
    replica_cases,
    skip_reason,
)
from bookbuild.gpujob.probe import SECTIONS
from bookbuild.gpujob.report import failures, render
from bookbuild.gpujob.verdicts import Verdict
from bookbuild.gpujob.visible import SmiAnswer, ask_nvidia_smi, visible_gpus

T4 = "GPU 0: Tesla T4 (UUID: GPU-9b1c5f7e-0000-0000-0000-000000000000)\n"
EIGHT = "".join(f"GPU {i}: NVIDIA A100-SXM4-40GB (UUID: GPU-{i})\n" for i in range(8))
MIG = (
    "GPU 0: NVIDIA A100-SXM4-40GB (UUID: GPU-0)\n"
    "  MIG 1g.5gb     Device  0: (UUID: MIG-1)\n"
    "  MIG 1g.5gb     Device  1: (UUID: MIG-2)\n"
)
NO_DRIVER = (
    "NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver. Make sure "
    "that the latest NVIDIA driver is installed and running.\n"
)


@pytest.mark.parametrize(
    ("answer", "cuda_visible_devices", "names", "reason"),
    [
        (SmiAnswer(True, 0, T4), None, ("Tesla T4",), None),
        (SmiAnswer(True, 0, EIGHT), "0,1", ("NVIDIA A100-SXM4-40GB",) * 8, None),
        (SmiAnswer(True, 0, MIG), None, ("NVIDIA A100-SXM4-40GB",), None),
        (SmiAnswer(False), None, (), "nvidia-smi not found on PATH"),
        (SmiAnswer(True, None), None, (), "nvidia-smi did not answer within 10 s"),
        (
            SmiAnswer(True, 9, NO_DRIVER),
            None,
            (),
            "nvidia-smi exited with status 9: NVIDIA-SMI has failed because it couldn't "
            "communicate with the NVIDIA driver.",
        ),
        (
            SmiAnswer(True, 0, "No devices were found\n"),
            None,
            (),
            "nvidia-smi -L listed no GPU (it printed: No devices were found)",
        ),
        (SmiAnswer(True, 0, ""), None, (), "nvidia-smi -L listed no GPU (it printed: nothing)"),
        (SmiAnswer(True, 0, T4), "-1", (), "CUDA_VISIBLE_DEVICES='-1' hides nvidia-smi's 1 GPU"),
        (SmiAnswer(True, 0, EIGHT), " ", (), "CUDA_VISIBLE_DEVICES=' ' hides nvidia-smi's 8 GPUs"),
    ],
)
def test_which_gpus_are_visible_or_why_none_from_what_nvidia_smi_said(
    answer, cuda_visible_devices, names, reason
):
    found, why = visible_gpus(answer, cuda_visible_devices)
    assert found == names
    if reason is None:
        assert why is None
    else:
        assert why.startswith(f"no NVIDIA GPU visible: {reason}")


def _program(folder, body: str):
    path = folder / "nvidia-smi"
    path.write_text(f"#!{sys.executable}\n{body}\n")
    path.chmod(path.stat().st_mode | stat.S_IEXEC)
    return str(path)


def test_nvidia_smi_is_asked_once_and_never_raises(tmp_path):
    listing = _program(tmp_path, f"print({T4!r}, end='')")
    assert ask_nvidia_smi((listing, "-L")) == SmiAnswer(True, 0, T4)
    broken = _program(tmp_path, "import sys; print('Failed to initialize NVML'); sys.exit(9)")
    assert ask_nvidia_smi((broken,)) == SmiAnswer(True, 9, "Failed to initialize NVML\n")
    hung = _program(tmp_path, "import time; time.sleep(30)")
    assert ask_nvidia_smi((hung,), timeout=0.5) == SmiAnswer(True, None)
    assert ask_nvidia_smi(("mirrorbook-no-nvidia-smi",)) == SmiAnswer(False)


def test_the_job_is_not_run_by_name_with_the_reason_where_no_gpu_is_visible():
    job = gpu_job(book_env(), SmiAnswer(True, 9, NO_DRIVER))
    assert (job.name, job.result, job.stages) == ("gpu", "NOT RUN", None)
    assert job.detail.startswith("no NVIDIA GPU visible: nvidia-smi exited with status 9")


def test_where_gpus_are_visible_the_job_sets_up_its_cuda_environment_then_runs_its_checks(
    monkeypatch,
):
    monkeypatch.delenv("CUDA_VISIBLE_DEVICES", raising=False)
    book = book_env()
    job = gpu_job(book, SmiAnswer(True, 0, EIGHT))
    assert [(s.name, s.after) for s in job.stages] == [
        ("set-up", ()),
        ("gpu checks", ("set-up",)),
    ]
    assert job.env.lock == GPU_LOCK and job.env.interpreter == book.interpreter
    assert job.env.packages == (*book.packages, CUDA)
    assert job.env.path != book.path and "8 GPU(s)" in job.what
    started = []
    monkeypatch.setattr(type(job.env), "dev", lambda env, *args, **kw: started.append(args))
    job.stages[1].action()
    assert started == [("_gpu", "--report", REPORT)]


def test_dev_py_test_lists_the_gpu_job_and_only_the_quick_run_leaves_it_out():
    jobs = {job.name: job for job in testrun.test_jobs(book_env())}
    assert list(jobs)[-1] == "gpu"
    if shutil.which("nvidia-smi") is None:  # CI and every machine of this project
        assert jobs["gpu"].detail == "no NVIDIA GPU visible: nvidia-smi not found on PATH"
        (asked,) = [j for j in testrun.test_jobs(book_env(), {"gpu"}) if j.name == "gpu"]
        assert asked.detail == jobs["gpu"].detail
    assert "gpu" not in {job.name for job in testrun.test_jobs(book_env(), quick=True)}


@pytest.mark.parametrize(
    ("gpus", "cases"),
    [
        (1, [(1, "gpus"), (2, "logical_gpus"), (4, "logical_gpus")]),  # Colab: one GPU, split
        (2, [(2, "gpus"), (4, "logical_gpus")]),
        (3, [(2, "gpus"), (3, "gpus"), (4, "logical_gpus")]),
        (4, [(2, "gpus"), (4, "gpus")]),
        (8, [(2, "gpus"), (4, "gpus"), (8, "gpus")]),  # several whole GPUs, the others hidden
    ],
)
def test_which_device_decisions_are_checked_for_a_number_of_gpus(gpus, cases):
    assert replica_cases(gpus, book_replicas=4) == tuple(ReplicaCase(*c) for c in cases)


def test_nccl_runs_on_two_or_more_whole_gpus_and_is_skipped_with_its_reason_on_one():
    algorithms = ("collective", "one_device", "hierarchical_copy", "nccl")
    assert all_reduce_replicas(1, book_replicas=4) == 4  # one GPU split, as on Colab
    assert all_reduce_replicas(8, book_replicas=4) == 8  # every GPU whole
    assert [skip_reason(a, 2) for a in algorithms] == [None] * 4
    one = [skip_reason(a, 1) for a in algorithms]
    assert one[:3] == [None] * 3 and "one replica on each; this machine has 1" in one[3]
    assert benchmark_replicas(1, book_replicas=4) == (2, 4)
    assert benchmark_replicas(8, book_replicas=4) == (2, 8)
    assert expected_sum(8) == 36
    for gpus, error in [(0, ValueError), (-1, ValueError), (True, TypeError), ("2", TypeError)]:
        with pytest.raises(error, match=r"gpus must be an int.*write gpus=1 \(the physical GPUs"):
            replica_cases(gpus, book_replicas=4)


def _devices(kind, planned, given, logical):
    return {
        "kind": kind,
        "message": "m",
        "planned": planned,
        "devices": given,
        "logical_gpus": logical,
    }


def test_a_device_decision_passes_only_with_its_kind_and_as_many_devices_as_planned():
    two = ["/device:GPU:0", "/device:GPU:1"]
    case = ReplicaCase(2, "gpus")
    assert verdicts.device_verdict(case, _devices("gpus", two, two, two)) == Verdict(
        "2 replicas: gpus", True, "m"
    )
    assert "planned 'cpus'" in verdicts.device_verdict(case, _devices("cpus", two, two, [])).detail
    assert (
        "simulate_replicas gave"
        in verdicts.device_verdict(case, _devices("gpus", two, two[:1], two)).detail
    )
    assert (
        "lists 1 logical GPUs"
        in verdicts.device_verdict(case, _devices("gpus", two, two, two[:1])).detail
    )
    assert not verdicts.device_verdict(case, {"error": "exit status 1: boom"}).passed


def _all_reduce(nccl: dict) -> dict:
    ran = {"unavailable": None, "passed": True, "message": "all 2 replicas hold 3"}
    return {"replicas": 2, "algorithms": {"collective": ran, "nccl": nccl}}


def test_each_all_reduce_is_checked_and_nccl_is_skipped_only_where_mirrorkit_agrees():
    refused = {"unavailable": "NCCL all-reduce cannot run here: shared GPU"}
    ran = {"unavailable": None, "passed": True, "message": "all 2 replicas hold 3"}
    wrong = {"unavailable": None, "passed": False, "message": "replica 1 holds 2"}
    assert [v.passed for v in verdicts.all_reduce_verdicts(1, _all_reduce(refused))] == [True, True]
    assert [v.passed for v in verdicts.all_reduce_verdicts(2, _all_reduce(ran))] == [True, True]
    assert verdicts.all_reduce_verdicts(2, _all_reduce(wrong))[1] == Verdict(
        "nccl on 2 replicas", False, "replica 1 holds 2"
    )
    assert "mirrorkit refuses it" in verdicts.all_reduce_verdicts(2, _all_reduce(refused))[1].detail
    assert "mirrorkit would run it" in verdicts.all_reduce_verdicts(1, _all_reduce(ran))[1].detail
    assert [v.passed for v in verdicts.all_reduce_verdicts(1, {"error": "x"})] == [False]


def _policies(float16, bfloat16, skipped=()):
    def policy(losses, tflops):
        return {"losses": losses, "skipped_steps": list(skipped), "matmul_tflops": tflops}

    return {
        "policies": {
            "float32": policy([1.0, 0.8], 20.0),
            "mixed_float16": policy(float16, 80.0),
            "mixed_bfloat16": policy(bfloat16, 60.0),
        }
    }


def test_mixed_precision_is_measured_against_float32():
    close = verdicts.precision_verdicts(_policies([1.001, 0.801], [1.02, 0.79]))
    assert [(v.check, v.passed) for v in close] == [
        ("mixed_float16", True),
        ("mixed_bfloat16", True),
    ]
    assert "4.0x float32's speed" in close[0].detail and "3.0x" in close[1].detail
    far = verdicts.precision_verdicts(_policies([1.05, 0.8], [1.0, float("inf")]))
    assert [v.passed for v in far] == [False, False]
    assert "losses within 5.00% of float32's (at most 1%)" in far[0].detail
    skipped = verdicts.precision_verdicts(_policies([1.0, 0.8], [1.0, 0.8], skipped=[1]))
    assert not skipped[0].passed and "skipped steps [1]" in skipped[0].detail


def test_the_benchmark_reads_busbw_against_the_gpu_copy_bandwidth():
    records = [{"algorithm": "nccl", "replicas": 8, "bytes": 64 << 20, "busbw": 1.5e11}]
    rows = verdicts.benchmark_verdicts(
        {"records": records, "skipped": {"x": "why"}}, {"bytes_per_second": 1.5e12}
    )
    assert rows[0].passed is None and "10% of the GPU copy bandwidth (1500 GB/s)" in rows[0].detail
    assert rows[0].check == "nccl, 8 replicas, 64 MiB"
    assert rows[1] == Verdict("x (skipped)", None, "why")
    copy = {"bytes_per_second": 1e12}
    assert verdicts.benchmark_verdicts({"records": [], "skipped": {}}, copy)[0].passed is False
    broken = verdicts.benchmark_verdicts({"records": records, "skipped": {}}, {"error": "OOM"})
    assert broken == [Verdict("GPU copy", False, "the probe failed: OOM")]


def _chapter(*cells):
    return v4.new_notebook(cells=list(cells))


def test_a_chapter_runs_through_and_keeps_its_claims_read_from_claim_changes():
    claim = {"tags": ["claim"]}
    stored = _chapter(
        v4.new_code_cell("setup()", outputs=[v4.new_output("stream", text="ok\n")]),
        v4.new_code_cell("print(x)", metadata=claim, outputs=[v4.new_output("stream", text="1\n")]),
    )
    same = claim_changes(stored, stored, "01.ipynb")
    assert [v.passed for v in verdicts.chapter_verdicts("01.ipynb", same, "4 replicas")] == [
        True,
        True,
    ]
    changed = _chapter(
        stored.cells[0],
        v4.new_code_cell("print(x)", metadata=claim, outputs=[v4.new_output("stream", text="2\n")]),
    )
    ran, claims = verdicts.chapter_verdicts(
        "01.ipynb", claim_changes(stored, changed, "01.ipynb"), "-"
    )
    assert ran.passed and not claims.passed and "printed '2'" in claims.detail
    error = v4.new_output("error", ename="ValueError", evalue="no GPU", traceback=[])
    broke = _chapter(v4.new_code_cell("setup()", outputs=[error]), stored.cells[1])
    ran, _ = verdicts.chapter_verdicts("01.ipynb", claim_changes(stored, broke, "01.ipynb"), "-")
    assert not ran.passed and "ValueError: no GPU" in ran.detail


def test_the_replica_line_is_what_plan_replicas_says():
    import mirrorkit as mk

    for n, gpus in ((4, [("Tesla T4", 15360)]), (2, [("A100", 40960)] * 8), (4, [])):
        message = mk.plan_replicas(n, gpus).message
        assert verdicts.replica_line(["print(devices)\n", f"{message}\nmore\n"]) == message


def test_one_report_holds_every_row_and_the_raw_results():
    sections = {
        "all-reduce": [Verdict("nccl on 4 replicas", True, "skipped: a | b")],
        "chapter 5 benchmark": [Verdict("collective, 2 replicas", None, "busbw 1 GB/s")],
    }
    text = render({"GPUs": "0: Tesla T4"}, sections, raw={"precision": {"error": "x"}})
    assert text.startswith("# GPU job: passed\n\n- GPUs: 0: Tesla T4\n")
    assert "| nccl on 4 replicas | passed | skipped: a \\| b |" in text
    assert "| collective, 2 replicas | measured | busbw 1 GB/s |" in text
    raw = re.search(r"```json\n(.*)\n```", text, re.S).group(1)
    assert json.loads(raw) == {"precision": {"error": "x"}}
    assert failures({"x": [Verdict("a", False, "b")]}) == ["x: a: b"]
    assert REPORT.relative_to(ROOT).as_posix() == "test-artifacts/gpu-report.md"


def test_every_probe_section_the_job_starts_exists():
    source = (ROOT / "bookbuild" / "gpujob" / "run.py").read_text()
    assert set(re.findall(r'_probe\("([a-z-]+)"', source)) == set(SECTIONS)


def _pins(path) -> dict[str, str]:
    found = re.findall(r"^([A-Za-z0-9_.\-]+)==(\S+?)(?:\s|;|$)", path.read_text(), re.M)
    return {name.lower(): version for name, version in found}


def test_the_gpu_lock_is_the_lock_plus_the_cuda_extra():
    lock, gpu = _pins(LOCK), _pins(GPU_LOCK)
    moved = {name: (lock[name], gpu[name]) for name in lock if gpu.get(name) != lock[name]}
    assert not moved, (
        f"requirements/gpu.txt differs from lock.txt at {moved}: compile it again with the "
        "command in requirements/gpu.in"
    )
    added = set(gpu) - set(lock)
    assert added and all(name.startswith("nvidia-") for name in added), added
    assert {"nvidia-nccl-cu12", "nvidia-cudnn-cu12"} <= added and gpu["tensorflow"] == "2.21.0"
    source = (ROOT / "requirements" / "gpu.in").read_text()
    assert "tensorflow[and-cuda]==2.21.0" in source.splitlines() and "-c lock.txt" in source
