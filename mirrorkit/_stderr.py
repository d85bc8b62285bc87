"""Silence the process's file descriptor 2, where TensorFlow's C++ start-up lines go."""

from __future__ import annotations

import contextlib
import os
import re
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


# TensorFlow's C++ INFO and WARNING lines ("I0000 00:00:1795427009.422366   28804
# grpc_server_lib.cc:466] Started server ..."), and absl's notice before its logging starts.
# TF_CPP_MIN_LOG_LEVEL=3 asks TensorFlow to hide them, yet TensorFlow 2.20 still prints some
# through absl (its gRPC server's start). Errors (E, F) are never noise.
_LOG_NOISE = re.compile(
    r"[IW]\d{4} \d\d:\d\d:\d+\.\d+\s+\d+ [\w./-]+:\d+\] "
    r"|WARNING: All log messages before absl::InitializeLog\(\) is called are written to STDERR$"
)


def is_log_noise(line: str) -> bool:
    """Whether a line a TensorFlow process printed is C++ INFO/WARNING log noise."""
    return _LOG_NOISE.match(line) is not None
