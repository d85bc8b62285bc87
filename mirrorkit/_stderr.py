"""Silence the process's file descriptor 2, where TensorFlow's C++ start-up lines go."""

from __future__ import annotations

import contextlib
import os
import sys


@contextlib.contextmanager
def silenced_stderr(enabled: bool = True):
    """Point fd 2 at /dev/null for the duration (a Jupyter kernel forwards fd 2 to the cell)."""
    if not enabled:
        yield
        return
    sys.stderr.flush()
    saved = os.dup(2)
    try:
        with open(os.devnull, "w") as devnull:
            os.dup2(devnull.fileno(), 2)
            yield
    finally:
        sys.stderr.flush()
        os.dup2(saved, 2)
        os.close(saved)
