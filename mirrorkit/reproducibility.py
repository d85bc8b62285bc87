"""One call that makes a notebook repeatable and keeps TensorFlow's log noise out of it.

The noise itself is recognised here too: :func:`silenced_stderr` hides the C++ lines
TensorFlow prints on file descriptor 2 while it starts, and :func:`is_log_noise` tells such
a line apart from a program's own output (the cluster's workers print both).

Example:
    >>> import mirrorkit as mk
    >>> mk.make_reproducible(7)
    7
    >>> from mirrorkit.reproducibility import is_log_noise
    >>> is_log_noise("W0000 00:00:17.5 1 cpu.cc:1] slow"), is_log_noise("step 1: loss 0.5")
    (True, False)
"""

from __future__ import annotations

import contextlib
import logging
import os
import random
import re
import sys

from mirrorkit._validate import require_flag

# TensorFlow reads these once, when it is first imported. The log level hides the
# C++ log lines up to ERROR (real failures still reach you as Python exceptions), and
# turning oneDNN's custom ops off removes its start-up notice and the run-to-run float
# differences it can cause.
QUIET_ENVIRONMENT = {"TF_CPP_MIN_LOG_LEVEL": "3", "TF_ENABLE_ONEDNN_OPTS": "0"}

_MAX_SEED = 2**32 - 1


def make_reproducible(seed: int = 0, *, quiet: bool = True) -> int:
    """Seed Python, NumPy and TensorFlow, make TF ops deterministic, and quiet its logs.

    Call it first in a notebook, before anything imports TensorFlow: the C++ log
    settings only take effect at TensorFlow's first import. It does not start
    TensorFlow's runtime, so :func:`mirrorkit.simulate_replicas` can still be
    called afterwards. Calling it again (a re-run cell) simply re-seeds.

    Args:
        seed: A whole number in ``[0, 2**32 - 1]``.
        quiet: Also hide TensorFlow's log noise: its C++ log lines below errors (start-up
            messages included) and its Python INFO lines. Its Python warnings stay: they
            say something about the code you run.

    Returns:
        The seed that was applied.

    Raises:
        TypeError: If ``seed`` is not an ``int``, or ``quiet`` is not a bool.
        ValueError: If ``seed`` is outside ``[0, 2**32 - 1]``.

    Example:
        >>> import numpy as np
        >>> import mirrorkit as mk
        >>> mk.make_reproducible(7)
        7
        >>> first = np.random.rand()
        >>> _ = mk.make_reproducible(7)
        >>> bool(np.random.rand() == first)
        True
    """
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(
            f"seed must be an int, got {type(seed).__name__} {seed!r}: pass a whole number, "
            "e.g. make_reproducible(42)."
        )
    if not 0 <= seed <= _MAX_SEED:
        raise ValueError(
            f"seed must be between 0 and {_MAX_SEED}, got {seed}: pick a number in that range, "
            "e.g. make_reproducible(42)."
        )
    require_flag("quiet", quiet, effect="to keep TensorFlow's log lines")
    if quiet:
        os.environ.update(QUIET_ENVIRONMENT)  # whatever the shell had: outputs must repeat

    # Some start-up lines (CUDA probing) print before TensorFlow reads its log level.
    with silenced_stderr(enabled=quiet and "tensorflow" not in sys.modules):
        import keras
        import tensorflow as tf

        tf.config.list_physical_devices()  # probes for GPUs once, quietly

    keras.utils.set_random_seed(seed)  # Python, NumPy and TensorFlow in one call.
    random.seed(seed)
    tf.config.experimental.enable_op_determinism()
    if quiet:
        _quiet_python_loggers()
    return seed


def _quiet_python_loggers() -> None:
    """Hide TensorFlow's Python INFO lines ("Using MirroredStrategy with devices ...")."""
    import absl.logging  # a TensorFlow dependency

    logging.getLogger("tensorflow").setLevel(logging.WARNING)
    absl.logging.set_verbosity(absl.logging.WARNING)


@contextlib.contextmanager
def silenced_stderr(enabled: bool = True):
    """Point fd 2 at /dev/null for the duration (a Jupyter kernel forwards fd 2 to the cell).

    Example:
        >>> import os
        >>> with silenced_stderr():
        ...     _ = os.write(2, b"hidden")
    """
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
    """Whether a line a TensorFlow process printed is C++ INFO/WARNING log noise.

    Example:
        >>> is_log_noise("E0000 00:00:17.5 1 cpu.cc:1] failed")  # an error is never noise
        False
    """
    return _LOG_NOISE.match(line) is not None
