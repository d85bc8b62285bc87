"""What a run needs from the owner's filesystem, checked before any process starts.

The run's folder (in the temporary folder: ``TMPDIR``), the owner's working folder (the
workers start in it), and the folders the run's arguments name that another run writes.
A filesystem error is told with the path, the cause in plain words and what to do.

Example:
    >>> import errno
    >>> from mirrorkit.cluster._run_folder import explained
    >>> print(explained(OSError(errno.ENOSPC, "No space left on device"), "/tmp/x",
    ...                 "the run's folder", "free some space."))
    [Errno 28] the run's folder /tmp/x: its filesystem is full (no space left on device). free some space.
"""  # noqa: E501

from __future__ import annotations

import errno
import os
import tempfile
from pathlib import Path

from mirrorkit.cluster import _lease, protocol

_CAUSES = {
    errno.ENOSPC: "its filesystem is full (no space left on device)",
    errno.EDQUOT: "your disk quota there is used up",
    errno.EROFS: "its filesystem is read-only",
    errno.EACCES: "you may not write there (permission denied)",
    errno.EPERM: "you may not write there (operation not permitted)",
    errno.ENOENT: "it does not exist (deleted, or never made)",
}
_TMP_ELSEWHERE = (
    'import tempfile; tempfile.tempdir = "/a/folder/with/room" (or set TMPDIR before '
    "starting Python)."
)
TMP_FIX = {
    errno.ENOENT: "Something deleted it during the run (a cleaner of the temporary folder?): "
    "run again, or give the runs a temporary folder of their own before the run: " + _TMP_ELSEWHERE,
    None: "Free space there, or give the runs a temporary folder on a disk with room before the "
    "run: " + _TMP_ELSEWHERE,
}
CHECKPOINT_FIX = {
    errno.ENOSPC: "Free space there (or delete old checkpoints), or give the run a folder on a "
    "disk with room.",
    errno.EDQUOT: "Free space there (or delete old checkpoints), or give the run a folder on a "
    "disk with room.",
    None: "Give the run a folder you can write, e.g. one under your home folder.",
}


def explained(error: OSError, path, role: str, fix: str | dict) -> OSError:
    """``error`` again (same type and errno), saying which path, why in plain words, what to do.

    ``fix`` is what to do, or ``{errno: what to do, None: otherwise}``.
    """
    cause = _CAUSES.get(error.errno, error.strerror or str(error))
    if isinstance(fix, dict):
        fix = fix.get(error.errno, fix[None])
    return type(error)(error.errno, f"{role} {path}: {cause}. {fix}")


def working_folder() -> str:
    """The owner's working folder, where the workers start; a clear error if it was deleted."""
    try:
        return os.getcwd()
    except FileNotFoundError:
        raise FileNotFoundError(
            errno.ENOENT,
            "this notebook's working folder was deleted (os.getcwd() fails), and the workers "
            "would start in it. Change to a folder that exists, then run again: "
            'import os; os.chdir(os.path.expanduser("~")) (or %cd ~ in a notebook).',
        ) from None


def make(payload: bytes, write_spec) -> Path:
    """A new run folder holding the payload and the spec (``write_spec(run_dir)``)."""
    base = tempfile.gettempdir()
    try:
        run_dir = Path(tempfile.mkdtemp(prefix=f"{protocol.RUN_PREFIX}{os.getpid()}-", dir=base))
    except OSError as error:
        fix = {**TMP_FIX, errno.ENOENT: "Make it, or give the runs another: " + _TMP_ELSEWHERE}
        raise explained(error, base, "the temporary folder for the run's files", fix) from None
    try:
        (run_dir / protocol.PAYLOAD_FILE).write_bytes(payload)
        write_spec(run_dir)
    except OSError as error:
        remove(run_dir)
        raise explained(error, run_dir, "the run's folder", TMP_FIX) from None
    return run_dir


def remove(run_dir: Path) -> None:
    """Give back the run's leases, then delete its folder."""
    import shutil

    _lease.release_run(run_dir)
    shutil.rmtree(run_dir, ignore_errors=True)


def refuse_folders_in_use(values) -> None:
    """Refuse a run whose arguments name a folder another live run writes (its lease)."""
    mine = {"run": None}
    for value in values:
        if isinstance(value, str | os.PathLike) and len(os.fspath(value)) < 4096:
            path = Path(os.fspath(value))
            try:
                leased = (path / _lease.LEASE_FILE).is_file()
            except (OSError, ValueError):  # not a path after all
                continue
            if leased:
                message = _lease.holder_elsewhere(path, mine)
                if message is not None:
                    raise _lease.FolderInUseError(f"this run was not started: {message}")
