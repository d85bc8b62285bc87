"""The TensorFlow-free part of mirrorkit: imports with TensorFlow, Keras and NumPy refused.

The browser labs (docs/design/browser-labs.md) run these modules where none of the three
exists; the chapters use the same modules beside TensorFlow.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from bookbuild.lite.modules import BROWSER_MODULES
from tests.conftest import ROOT

PROBE = textwrap.dedent(
    """
    import importlib, sys

    class Refuse:
        def find_spec(self, name, path=None, target=None):
            if name.split(".")[0] in ("tensorflow", "keras", "numpy"):
                raise ImportError(f"{name} is refused here")

    sys.meta_path.insert(0, Refuse())
    for name in sys.argv[1:]:
        importlib.import_module(name)
    from mirrorkit.checks.batch_split import replica_batch_sizes
    from mirrorkit.measure.schedules import schedule
    print(replica_batch_sizes(10, 4), schedule("collective", 4).chunk_bounds(10))
    print(sorted(m for m in sys.modules if m.split(".")[0] in ("tensorflow", "keras", "numpy")))
    """
)


def test_the_tensorflow_free_modules_import_and_run_without_tensorflow_keras_or_numpy():
    done = subprocess.run(
        [sys.executable, "-c", PROBE, *BROWSER_MODULES],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == ["[3, 3, 3, 1] [(0, 3), (3, 6), (6, 8), (8, 10)]", "[]"]


def test_the_probe_refuses_what_it_says():  # the test above could not pass by accident
    done = subprocess.run(
        [sys.executable, "-c", PROBE, "mirrorkit.measure.replay"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode != 0
    assert "numpy is refused here" in done.stderr
