"""Errors raised by mirrorkit, each saying what happened and what to do.

Example:
    >>> import mirrorkit as mk
    >>> issubclass(mk.WorkerFailedError, mk.ClusterError)
    True
"""

from __future__ import annotations


class ReplicaSetupError(RuntimeError):
    """The devices cannot be split as asked, usually because TensorFlow already started.

    Example:
        >>> from mirrorkit import ReplicaSetupError
        >>> issubclass(ReplicaSetupError, RuntimeError)
        True
    """


class AllReduceUnavailableError(RuntimeError):
    """The requested all-reduce algorithm cannot run on these devices.

    Example:
        >>> from mirrorkit import AllReduceUnavailableError
        >>> issubclass(AllReduceUnavailableError, RuntimeError)
        True
    """


class ClusterError(RuntimeError):
    """A local cluster run went wrong; ``run`` holds what was seen up to then.

    Attributes:
        run: The :class:`mirrorkit.ClusterRun` so far (events, output, exits), or ``None``.

    Example:
        >>> from mirrorkit import ClusterError
        >>> ClusterError("no cluster").run is None
        True
    """

    def __init__(self, message: str, run=None) -> None:
        super().__init__(message)
        self.run = run


class ClusterStartError(ClusterError):
    """The cluster did not form: a worker did not start, or did not join in time.

    Example:
        >>> from mirrorkit import ClusterError, ClusterStartError
        >>> issubclass(ClusterStartError, ClusterError)
        True
    """


class WorkerFailedError(ClusterError):
    """A worker failed or died while the cluster trained; the others were stopped.

    Attributes:
        worker: Task index of the worker that failed first.

    Example:
        >>> from mirrorkit import WorkerFailedError
        >>> WorkerFailedError("worker 1 was killed", worker=1).worker
        1
    """

    def __init__(self, message: str, run=None, worker: int | None = None) -> None:
        super().__init__(message, run)
        self.worker = worker


class ClusterTimeoutError(ClusterError):
    """The run took longer than the ``timeout`` it was given; every worker was stopped.

    Example:
        >>> from mirrorkit import ClusterError, ClusterTimeoutError
        >>> issubclass(ClusterTimeoutError, ClusterError)
        True
    """


class ClusterSecurityWarning(UserWarning):
    """The workers' unauthenticated gRPC servers are reachable from the machine's network.

    Example:
        >>> from mirrorkit import ClusterSecurityWarning
        >>> issubclass(ClusterSecurityWarning, UserWarning)
        True
    """


class CheckpointMismatchError(ValueError):
    """A checkpoint does not fit the objects it would be restored into; nothing was restored.

    Example:
        >>> from mirrorkit import CheckpointMismatchError
        >>> issubclass(CheckpointMismatchError, ValueError)
        True
    """


class CheckpointDamagedError(RuntimeError):
    """A folder holds checkpoint files, and none of them can be read in full.

    Example:
        >>> from mirrorkit import CheckpointDamagedError
        >>> issubclass(CheckpointDamagedError, RuntimeError)
        True
    """


class CheckpointSkippedWarning(UserWarning):
    """A newer checkpoint could not be read, so an older one was restored in its place.

    Example:
        >>> from mirrorkit import CheckpointSkippedWarning
        >>> issubclass(CheckpointSkippedWarning, UserWarning)
        True
    """


# What Keras 3's fit raises under MultiWorkerMirroredStrategy with several workers
# (docs/design/core.md, "Keras fit under MultiWorkerMirroredStrategy").
_FIT_FAILURES = (
    ("Attempt to convert a value (PerReplica", "with an unsupported type"),
    ("Invalid reduction dimension 0 for input with 0 dimensions",),
)
FIT_READY_FIX = (
    "This is Keras 3's model.fit under MultiWorkerMirroredStrategy, which fails with several "
    "workers: build the model in strategy.scope(), wrap it outside the scope with "
    "trainable = mk.fit_ready(model), then compile and fit trainable inside the scope "
    "(import mirrorkit as mk)."
)


def fit_error_hint(error: BaseException | str) -> str | None:
    """The sentence naming :func:`mirrorkit.fit_ready` when ``error`` is Keras fit's failure under MWMS.

    For whatever reports a worker's error (a text or the exception itself); None otherwise.

    Example:
        >>> text = "TypeError: Attempt to convert a value (PerReplica:{...}) with an unsupported type"
        >>> fit_error_hint(text).split(":")[0]
        "This is Keras 3's model.fit under MultiWorkerMirroredStrategy, which fails with several workers"
        >>> fit_error_hint(ValueError("shapes differ")) is None
        True
    """  # noqa: E501 - doctest lines
    text = error if isinstance(error, str) else f"{type(error).__name__}: {error}"
    if any(all(part in text for part in parts) for parts in _FIT_FAILURES):
        return FIT_READY_FIX
    return None
