"""Full, read-only and deleted folders: the run folder, the owner's working folder, checkpoints.

Tried on real size-limited filesystems: tmpfs mounts in a private mount namespace
(``unshare -m`` as root, else ``unshare -r -m``: root of a user namespace of its own), which only
the owner process run there and its workers see. One
owner process tries every case (one warm process, two cluster launches).
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
HOW = "tmpfs mounts of limited size in a private mount namespace (unshare -m)"
NAMESPACES = (
    ["unshare", "-m", "--propagation", "private"],
    ["unshare", "-r", "-m", "--propagation", "private"],
)


@pytest.fixture(scope="module")
def told(tmp_path_factory) -> dict:
    folder = tmp_path_factory.mktemp("disks")
    for unshare in NAMESPACES:  # as root; else as root of a user namespace of our own
        probe = subprocess.run([*unshare, "true"], check=False, capture_output=True)
        if probe.returncode == 0:
            break
    else:
        pytest.skip(f"these faults need {HOW}, which this machine refuses")
    done = subprocess.run(
        [
            *unshare,
            sys.executable,
            "-m",
            "tests.mirrorkit.cluster.disk_owner",
            str(folder),
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    cases = {}
    for line in done.stdout.splitlines():
        if line.startswith("{"):
            case = json.loads(line)
            cases[case["case"]] = case["told"]
    assert done.returncode == 0 and len(cases) == 5, done.stdout + done.stderr
    return {"folder": folder, **cases}


def test_a_full_run_folder_is_named_with_what_to_do(told):
    said = told["tmp full"]
    assert said.startswith("OSError: [Errno 28] the ") and f"{told['folder']}/tmp" in said, said
    assert (
        ": its filesystem is full (no space left on device). Free space there, or give the " in said
    )
    assert 'tempfile.tempdir = "/a/folder/with/room"' in said


def test_a_deleted_working_folder_is_named_with_what_to_do(told):
    assert told["cwd deleted"] == (
        "FileNotFoundError: [Errno 2] this notebook's working folder was deleted (os.getcwd() "
        "fails), and the workers would start in it. Change to a folder that exists, then run "
        'again: import os; os.chdir(os.path.expanduser("~")) (or %cd ~ in a notebook).'
    )


def test_checkpoint_folders_read_only_or_full_are_found_at_the_start(told):
    (line,) = set(told["checkpoint folders at the start"])  # both workers were told the same
    folder = told["folder"]
    assert (
        f"'read_only': '[Errno 30] the checkpoint folder {folder}/ro/ckpt: its filesystem is "
        "read-only. Give the run a folder you can write, e.g. one under your home folder.'"
    ) in line, line
    assert (
        f"'full': '[Errno 28] the checkpoint folder {folder}/full: its filesystem is full (no "
        "space left on device). Free space there (or delete old checkpoints), or give the run a "
        "folder on a disk with room.'"
    ) in line, line


def test_a_checkpoint_folder_that_fills_during_training_is_named_not_memory(told):
    said, folder = told["checkpoint folder full during training"], told["folder"]
    assert said.startswith("WorkerFailedError: "), said
    assert f"failed: saving a checkpoint in {folder}/small/ckpt" in said
    assert (
        "failed: its filesystem is full (TensorFlow's ResourceExhaustedError here means the "
        "disk, not memory). The checkpoints saved before are kept."
    ) in said
    assert "Removed the unfinished ckpt-2_temp. Free space there, or give the run a folder" in said
    left = told["left in the checkpoint folder"]
    assert not [name for name in left if name.endswith("_temp")], left  # no unfinished saves
    assert "ckpt-1.index" in left  # the checkpoint before is kept


def test_a_missing_temporary_folder_is_named_with_what_to_do(tmp_path, monkeypatch):
    import tempfile

    import mirrorkit as mk
    from tests.mirrorkit.cluster.faults import faulty

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "gone"))  # as TMPDIR=/gone would
    with pytest.raises(FileNotFoundError) as error:
        mk.LocalCluster(2).run(faulty, args=("none", 1, 0, 1))
    assert str(error.value) == (
        f"[Errno 2] the temporary folder for the run's files {tmp_path / 'gone'}: it does not "
        "exist (deleted, or never made). Make it, or give the runs another: import tempfile; "
        'tempfile.tempdir = "/a/folder/with/room" (or set TMPDIR before starting Python).'
    )
