"""The owner of the disk-fault runs, in a private mount namespace with tmpfs folders.

Run as ``unshare -m --propagation private python -m tests.mirrorkit.cluster.disk_owner DIR``
(root): it mounts its filesystems under DIR, which only it and its workers see, tries each
fault, and prints one JSON line per case: its name and what the user was told.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

import mirrorkit as mk
from tests.mirrorkit.cluster.faults import fill, save_on_a_full_disk


def mount(path: Path, options: str) -> str:
    path.mkdir(parents=True)
    subprocess.run(["mount", "-t", "tmpfs", "-o", options, "tmpfs", str(path)], check=True)
    return str(path)


def told(case: str, run) -> None:
    try:
        run()
        text = "nothing: it went on"
    except Exception as error:  # noqa: BLE001 - what the user reads is the point
        text = f"{type(error).__name__}: {error}"
    print(json.dumps({"case": case, "told": text}), flush=True)


def main(folder: str) -> None:
    root = Path(folder)
    cluster = mk.LocalCluster(2, echo=False)
    # The run folder's filesystem (TMPDIR) full.
    full_tmp = mount(root / "tmp", "size=64k")
    fill(full_tmp)
    tempfile.tempdir = full_tmp
    told("tmp full", lambda: cluster.run(save_on_a_full_disk, args=("x", "y", "z")))
    tempfile.tempdir = None
    # The owner's working folder deleted.
    gone = root / "gone"
    gone.mkdir()
    os.chdir(gone)
    gone.rmdir()
    told("cwd deleted", lambda: cluster.run(save_on_a_full_disk, args=("x", "y", "z")))
    os.chdir(root)
    # Checkpoint folders: read-only, full from the start, full after one checkpoint.
    read_only = mount(root / "ro", "size=64k,ro")
    full = mount(root / "full", "size=64k")
    fill(full)
    small = mount(root / "small", "size=1m")
    outcome = {}

    def training():
        try:
            cluster.run(save_on_a_full_disk, args=(small + "/ckpt", read_only + "/ckpt", full))
        except mk.WorkerFailedError as error:
            outcome["output"] = [line for lines in error.run.output.values() for line in lines]
            raise

    told("checkpoint folder full during training", training)
    said = [line for line in outcome.get("output", ()) if line.startswith("told: ")]
    print(json.dumps({"case": "checkpoint folders at the start", "told": said}), flush=True)
    left = sorted(p.name for p in Path(small, "ckpt").rglob("*"))
    print(json.dumps({"case": "left in the checkpoint folder", "told": left}), flush=True)


if __name__ == "__main__":
    sys.path.insert(0, os.getcwd())
    main(sys.argv[1])
