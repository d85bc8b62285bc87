"""What a worker's failure means, where TensorFlow's or Keras's own words mislead.

Three kinds so far: Keras 3's ``fit`` under MultiWorkerMirroredStrategy with several workers
(its PerReplica conversion error: :func:`mirrorkit.fit_ready` is the way); every worker
running Keras's ``BackupAndRestore`` on one folder (they write the same files:
``FileExistsError``, then HDF5's lock error on the next run); and a checkpoint save that
failed on its folder (TensorFlow says ``ResourceExhaustedError`` for a full disk, which reads
like memory, and names its hidden ``ckpt-N_temp`` folder, which it leaves behind: removed
here).

Example:
    >>> from mirrorkit.cluster._worker_hints import hint
    >>> hint(ValueError("not about files"), num_workers=2) is None
    True
    >>> hint(TypeError("Attempt to convert a value (PerReplica:{}) with an unsupported type"),
    ...      num_workers=2).split(" Cause: ")[1]
    'TypeError: Attempt to convert a value (PerReplica:{}) with an unsupported type'
"""

from __future__ import annotations

import re
import shutil
import traceback
from pathlib import Path

from mirrorkit.errors import fit_error_hint

_SAVE_CAUSES = {
    "ResourceExhaustedError": "its filesystem is full (TensorFlow's ResourceExhaustedError "
    "here means the disk, not memory)",
    "PermissionDeniedError": "it cannot be written (read-only, or not yours)",
    "NotFoundError": "it was deleted during the run",
    "FailedPreconditionError": "it cannot be written",
    "UnknownError": "the filesystem refused the write",
}
_TEMP = re.compile(r"(/[^\s'\"]*?)/([\w.-]+_temp)\b")


def hint(error: BaseException, num_workers: int) -> str | None:
    """A sentence saying what went wrong and what to do, or None when the error says it."""
    if num_workers > 1 and (fit := fit_error_hint(error)) is not None:
        return f"{fit} Cause: {type(error).__name__}: {_ends(error)}"
    files = [frame.filename for frame in traceback.extract_tb(error.__traceback__)]
    if num_workers > 1 and any(f.endswith("backup_and_restore.py") for f in files):
        return (
            "every worker runs keras.callbacks.BackupAndRestore on the same folder, so they "
            'write the same files. Give each its own: BackupAndRestore(f"{backup_dir}/worker-'
            '{context.task_id}") (context.write_dir(backup_dir) gives each a folder too). '
            f"Cause: {type(error).__name__}: {_first_line(error)}"
        )
    cause = _SAVE_CAUSES.get(type(error).__name__)
    found = _TEMP.search(str(error)) if cause else None
    if found is None:
        return None
    folder = Path(found.group(1))
    removed = _remove_unfinished(folder)
    shown = folder.parent if folder.name.startswith(".worker-") else folder
    copy = f" (this worker's copy in {folder.name})" if shown != folder else ""
    left = f" Removed the unfinished {', '.join(removed)}." if removed else ""
    return (
        f"saving a checkpoint in {shown}{copy} failed: {cause}. The checkpoints saved before "
        f"are kept.{left} Free space there, or give the run a folder you can write on a disk "
        "with room, then run again: it resumes from the last checkpoint."
    )


def _ends(error: BaseException) -> str:
    """The first and the last line of an error's text (a PerReplica's repr spans many)."""
    lines = [line.strip() for line in str(error).splitlines() if line.strip()]
    text = f"{lines[0]} ... {lines[-1]}" if len(lines) > 1 else "".join(lines)
    return text if len(text) <= 300 else f"{text[:150]} ... {text[-140:]}"


def _first_line(error: BaseException) -> str:
    text = str(error).strip().splitlines()
    line = text[0] if text else ""
    return line if len(line) <= 120 else line[:117] + "..."


def _remove_unfinished(folder: Path) -> list[str]:
    """Delete the ``*_temp`` folders a failed save left in ``folder``; their names."""
    removed = []
    try:
        temps = sorted(p for p in folder.glob("*_temp") if p.is_dir())
    except OSError:
        return removed
    for path in temps:
        shutil.rmtree(path, ignore_errors=True)
        if not path.exists():
            removed.append(path.name)
    return removed
