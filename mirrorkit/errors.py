"""Errors raised by mirrorkit, each saying what happened and what to do."""

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
