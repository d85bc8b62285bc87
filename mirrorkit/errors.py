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
