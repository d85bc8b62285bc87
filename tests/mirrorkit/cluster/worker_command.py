"""The worker command started as a scheduler starts it: one worker, alone in its cluster.

Example (what the tests do):
    worker = start_alone(tmp_path)  # runs tmp_path/train.py's train(context)
    _, stderr = worker.communicate(timeout=60)
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from mirrorkit.cluster import _procs
from tests.conftest import ROOT


def start_alone(folder: Path) -> subprocess.Popen:
    """``python -m mirrorkit.worker train.py:train`` in ``folder``, the one worker of a
    ``TF_CONFIG`` cluster on a free loopback port; its output piped, as text."""
    port = _procs.free_ports(1)[0]
    config = {"cluster": {"worker": [f"127.0.0.1:{port}"]}, "task": {"type": "worker", "index": 0}}
    return subprocess.Popen(
        [sys.executable, "-m", "mirrorkit.worker", "train.py:train", "--join-timeout", "60"],
        cwd=folder,
        env={**os.environ, "TF_CONFIG": json.dumps(config), "PYTHONPATH": str(ROOT)},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
