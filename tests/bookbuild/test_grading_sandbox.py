"""The grading sandbox: what an answer sees when it runs (user, network, folders, pipes).

The answer below passes exercise 1 only if every isolation holds, and says which one does
not otherwise. The `grading` marker keeps these to the reference job.
"""

import contextlib
import importlib.util
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from bookbuild.grading import grade

pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "grading_lab", Path(__file__).with_name("grading_lab.py")
)
lab_kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_kit)

ISOLATED = """
import os, socket, subprocess, sys
here = os.getcwd()
assert here.startswith("/tmp/") and os.environ["HOME"] == here, ("folder", here)
assert not os.path.exists("/tmp/mirrorbook-grading-host-marker"), "sees the host's /tmp"
if os.geteuid() != 0 or {root}:
    assert os.geteuid() == {uid}, ("user", os.geteuid())
try:
    socket.create_connection(("1.1.1.1", 53), timeout=2)
    raise AssertionError("network reachable")
except OSError:
    pass
child = subprocess.run(["ls", "/proc/self/fd"], capture_output=True, text=True).stdout.split()
assert sorted(child) == ["0", "1", "2", "3"], ("inherited descriptors", child)
with strategy.scope():
    counter = tf.Variable(0.0)
"""


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    return lab_kit.make_lab(tmp_path_factory.mktemp("sandbox"))


def test_an_answer_runs_as_nobody_offline_in_a_private_folder(lab, tmp_path):
    marker = Path("/tmp/mirrorbook-grading-host-marker")
    marker.write_text("host")
    try:
        root = os.geteuid() == 0
        code = ISOLATED.format(root=root, uid=65534 if root else os.geteuid())
        path = lab_kit.submission(tmp_path, "isolated", code, lab_kit.KEY[2])
        result = grade(lab, path, choices={"replicas": [2], "seed": 0}, timeout=300)
    finally:
        marker.unlink()
    assert result.status == "graded", result
    assert result.scores["ex1"].feedback == "" and result.total == (2.0, 2.0), result
    assert "no network" in result.isolation and result.seconds > 0
    assert result.choices == {"replicas": [2], "seed": 0}
    assert result.student == "isolated"


def test_an_unreadable_notebook_is_an_error_row(lab, tmp_path):
    broken = tmp_path / "broken.ipynb"
    broken.write_text("{ not a notebook")
    result = grade(lab, broken, choices={"replicas": [2], "seed": 0})
    assert result.status == "error" and "cannot be read" in result.detail
    assert result.total == (0.0, 2.0)


def test_a_chapter_cell_that_fails_at_the_drawn_seed_is_the_chapters_error(tmp_path):
    odd = lab_kit.make_lab(tmp_path, chapter_cells=("assert SEED % 2 == 0, 'an odd seed'",))
    path = lab_kit.submission(tmp_path, "student", lab_kit.KEY[1], lab_kit.KEY[2])
    result = grade(odd, path, choices={"replicas": [2], "seed": 3}, timeout=300)
    assert result.status == "error", result
    assert result.detail.startswith("chapter cell 2, the chapter's own code"), result.detail
    assert "not this submission" in result.detail and "AssertionError: an odd seed" in result.detail
    assert "at seed 3 with 2 replicas" in result.detail and "another --seed" in result.detail
    assert grade(odd, path, choices={"replicas": [2], "seed": 4}, timeout=300).total == (2.0, 2.0)


# An answer that starts a process which leaves its session and its parent (forked twice),
# then waits forever: what is left of a sandbox when its grader is killed.
LINGER = """
import subprocess, time
subprocess.Popen(["sh", "-c", "sleep {marker} &"], start_new_session=True)
while True:
    time.sleep(1)
"""
GRADER = """
import sys
from pathlib import Path
from types import SimpleNamespace

from bookbuild.grading import grade

grade(SimpleNamespace(program=Path(sys.argv[1])), Path(sys.argv[2]),
      choices={"replicas": [2], "seed": 0}, timeout=600)
"""


def test_nothing_of_a_sandbox_outlives_its_grader_killed_mid_answer(lab, tmp_path):
    from mirrorkit.cluster import _procs, _reaper
    from tests.conftest import ROOT, wait_gone

    marker = f"{os.getpid() % 1000}.{time.time_ns() % 10**6:06d}"  # sleep's own argument
    path = lab_kit.submission(tmp_path, "linger", LINGER.format(marker=marker))
    grader = subprocess.Popen(
        [sys.executable, "-c", GRADER, str(lab.program), str(path)],
        cwd=ROOT,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    tree: list[int] = []
    try:
        deadline = time.monotonic() + 240
        while not (escaped := _procs.processes_with(f"sleep {marker}")):
            assert grader.poll() is None, f"the grader ended first ({grader.returncode})"
            assert time.monotonic() < deadline, "the answer never started its process"
            time.sleep(0.5)
        tree = _reaper.descendants(grader.pid)
        assert len(tree) >= 3 and set(escaped) <= set(tree), (tree, escaped)
        grader.kill()  # no handler, no clean-up: the worst way a grader ends
        grader.wait()
        left = wait_gone(tree, within=15.0)
        named = {pid: _procs.command_line(pid) for pid in left}
        assert left == [], f"left running after the grader was killed: {named}"
    finally:
        for pid in tree + [grader.pid]:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
