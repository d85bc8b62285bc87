"""The TensorFlow-free part of mirrorkit: imports with TensorFlow, Keras and NumPy refused.

The browser labs (docs/design/browser-labs.md) run these modules where none of the three
exists; the chapters use the same modules beside TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

import numpy as np

from bookbuild.lite.modules import BROWSER_MODULES
from tests.conftest import ROOT
from tests.refuse_heavy import REFUSE

PROBE = REFUSE + textwrap.dedent(
    """
    import importlib

    for name in sys.argv[1:]:
        importlib.import_module(name)
    from array import array
    from mirrorkit.checks.batch_split import replica_batch_sizes
    from mirrorkit.checks.input_preview import preview_split
    from mirrorkit.measure.replay import AllReduceReplay
    from mirrorkit.measure.schedules import schedule
    from mirrorwidgets import AllReduceStepper, BatchSplitView
    print(replica_batch_sizes(10, 4), schedule("collective", 4).chunk_bounds(10))
    inputs = tuple(array("f", [0.1 * (r + 1)] * 5) for r in range(4))
    replay = AllReduceReplay(schedule("collective", 4), ("a", "b", "c", "d"), inputs, inputs)
    print(replay.buffers(6)[0].tolist()[:1], replay.comparison.verdict, replay.size)
    stepper, view = AllReduceStepper(replay, step=3), BatchSplitView(preview_split(10, 4, 4))
    print(stepper.snapshot_html().count('class="mws-frame"'), view.num_empty,
          'data-status="EMPTY"' in view.snapshot_html())
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "numpy")))
    """
)


# Chunk 0 of the ring on 4 replicas: replica 0 sends it to 1, 1 adds and sends to 2, then 3.
_x = [np.float32(0.1 * (r + 1)) for r in range(4)]
RING_CHUNK_0 = float(((_x[0] + _x[1]) + _x[2]) + _x[3])


def test_the_tensorflow_free_modules_import_and_run_without_tensorflow_keras_or_numpy():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *BROWSER_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[3, 3, 3, 1] [(0, 3), (3, 6), (6, 8), (8, 10)]",
        f"[{RING_CHUNK_0}] different 5",  # the ring's float32 sum, not the inputs themselves
        "7 2 True",
        "[]",
    ]


def test_the_probe_refuses_what_it_says():  # the test above could not pass by accident
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "mirrorkit.measure.replay", "numpy"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "numpy is refused here" in done.stderr
