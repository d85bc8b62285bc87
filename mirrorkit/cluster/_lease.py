"""One writer per checkpoint folder: a lease file naming the run that writes it, kept fresh.

How a lease is taken, judged stale and given back: docs/design/cluster.md ("One writer per
checkpoint folder"). Its refusal and its takeover are public: ``mirrorkit.FolderInUseError``,
``mirrorkit.FolderTakenOverWarning``.

Example:
    >>> import os, tempfile
    >>> from mirrorkit.cluster import _lease
    >>> folder = tempfile.mkdtemp()
    >>> _lease.take(folder)["pid"] == os.getpid()
    True
    >>> _lease.holder_elsewhere(folder) is None  # this process holds it
    True
"""

from __future__ import annotations

import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import tempfile
import threading
import time
import warnings
from collections.abc import Iterator
from pathlib import Path

from mirrorkit._validate import require_path
from mirrorkit.cluster import protocol

LEASE_FILE = ".mirrorkit-writer"
LOCK_FILE = ".mirrorkit-writer.lock"
#: Seconds between two heartbeats of a holder (a touch of the lease file).
HEARTBEAT_SECONDS = 5.0
#: A lease whose heartbeat is older than this is stale wherever it was taken.
STALE_SECONDS = 60.0
#: Set by the launcher for its workers: the owner's identity, so a run is one writer.
OWNER_VARIABLE = protocol.RUN_OWNER
#: The file in a run's folder listing the leases its workers took (the owner frees them).
RUN_LEASES = "leases"
_LOCK_SECONDS = 10.0


class FolderInUseError(RuntimeError):
    """Another live run writes the folder; the message names it (host, process, since when).

    Raised before a local cluster's processes start when one of the run's arguments is such a
    folder, at :meth:`mirrorkit.WorkerContext.write_dir` on a worker, and by
    :func:`mirrorkit.restore_latest`, which does not read a folder while another run writes
    it. The workers of one run, and their private copies below the folder, are one writer.
    A folder whose run died is taken over instead, with a :class:`FolderTakenOverWarning`.

    Example:
        >>> import tempfile
        >>> import mirrorkit as mk
        >>> issubclass(mk.FolderInUseError, RuntimeError)
        True
        >>> try:  # nobody else writes a new folder: no error
        ...     mk.FolderInUseError.check(tempfile.mkdtemp())
        ... except mk.FolderInUseError as error:
        ...     print(error)  # who writes it, since when, and what to do
    """

    @classmethod
    def check(cls, folder: str | os.PathLike, *, reading: bool = False) -> None:
        """Raise this error if another live run writes ``folder`` (it holds its lease).

        Args:
            folder: The checkpoint folder.
            reading: Word the message for a run that would read the folder, not write it.

        Raises:
            FolderInUseError: Another live run holds the folder; the message names it and
                says what to do.
            TypeError: ``folder`` is not a path.

        Example:
            >>> import tempfile
            >>> import mirrorkit as mk
            >>> mk.FolderInUseError.check(tempfile.mkdtemp(), reading=True) is None
            True
        """
        folder = require_path("folder", folder, write='FolderInUseError.check("checkpoints")')
        message = holder_elsewhere(folder, reading=bool(reading))
        if message is not None:
            raise cls(message)


class FolderTakenOverWarning(UserWarning):
    """A checkpoint folder's lease was left by a run that is gone, and this run took it over.

    The run is gone when its process has ended on this machine, its run folder was deleted,
    or its lease had no heartbeat for a minute (``STALE_SECONDS``, on any machine). Its last
    checkpoint may be half written; :func:`mirrorkit.restore_latest` passes over one that
    cannot be read.

    Example:
        >>> import warnings
        >>> import mirrorkit as mk
        >>> with warnings.catch_warnings(record=True) as seen:
        ...     warnings.simplefilter("always")
        ...     warnings.warn("the folder /x was held by a run that is gone",
        ...                   mk.FolderTakenOverWarning)
        >>> seen[0].category.__name__, issubclass(seen[0].category, UserWarning)
        ('FolderTakenOverWarning', True)
    """


def _read(path: str) -> str:
    with contextlib.suppress(OSError):
        return Path(path).read_text().strip()
    return ""


def _start_time(pid: int | str) -> str:
    """Field 22 of /proc/PID/stat (start time in clock ticks since boot), "" if gone."""
    stat = _read(f"/proc/{pid}/stat")
    fields = stat.rsplit(")", 1)[-1].split()
    return fields[19] if len(fields) > 19 else ""


def identity() -> dict:
    """Who this process is, in terms another process can check: host, boot, pid namespace.

    ``proc_pid`` is the pid as this machine's ``/proc`` shows it (the one checked), ``pid``
    the one the process knows itself by (they differ inside a pid namespace without its own
    ``/proc``).

    Example:
        >>> from mirrorkit.cluster._lease import identity
        >>> sorted(identity())[:4]
        ['boot', 'command', 'host', 'pid']
    """
    proc_pid = os.path.basename(os.path.realpath("/proc/self"))
    namespace = ""
    with contextlib.suppress(OSError):
        namespace = os.readlink("/proc/self/ns/pid")
    command = _read("/proc/self/cmdline").replace("\0", " ").strip()
    return {
        "host": socket.gethostname(),
        "boot": _read("/proc/sys/kernel/random/boot_id"),
        "pidns": namespace,
        "pid": os.getpid(),
        "proc_pid": int(proc_pid) if proc_pid.isdigit() else os.getpid(),
        "start": _start_time("self"),
        "command": command[:80],
    }


def run_holder() -> dict:
    """The holder a lease taken here names: the launcher's owner and run, else this process.

    A worker of a ``LocalCluster`` run names its owner (the notebook) and its run folder. A
    worker started otherwise (``python -m mirrorkit.worker``) names itself; its run is its
    cluster (TF_CONFIG's cluster), which every worker of the job shares, on any host.
    """
    owner = os.environ.get(OWNER_VARIABLE)
    if owner and os.environ.get(protocol.RUN_MARKER):
        return {**json.loads(owner), "run": os.environ[protocol.RUN_MARKER]}
    holder = identity()
    cluster = json.loads(os.environ.get("TF_CONFIG") or "{}").get("cluster")
    if cluster:
        digest = hashlib.sha256(json.dumps(cluster, sort_keys=True).encode()).hexdigest()
        return {**holder, "run": f"cluster {digest[:16]}"}
    return {**holder, "run": f"process {holder['host']}:{holder['proc_pid']}:{holder['start']}"}


def why_stale(lease: dict, heartbeat_age: float) -> str | None:
    """Why a lease no longer holds (its process ended, no heartbeat), or None if it holds."""
    here = identity()
    if all(lease.get(k) == here[k] for k in ("host", "boot", "pidns")):
        if _start_time(lease.get("proc_pid", "")) != lease.get("start"):
            return f"its process {lease.get('pid')} on this machine has ended"
        run = lease.get("run", "")
        if os.path.isabs(run) and not os.path.isdir(run):
            return f"its run has ended (its run folder {run} is gone)"
    if heartbeat_age > STALE_SECONDS:
        return f"its last heartbeat was {heartbeat_age:.0f} s ago (stale after {STALE_SECONDS:g} s)"
    return None


def _current(folder: Path) -> tuple[dict | None, float]:
    """The lease in ``folder`` and its heartbeat's age in seconds, or (None, 0)."""
    path = folder / LEASE_FILE
    try:
        return json.loads(path.read_text()), time.time() - path.stat().st_mtime
    except (OSError, ValueError):
        return None, 0.0


def describe(lease: dict, age: float) -> str:
    """``"process 1234 (python ...) on host h, since 10:03:15 UTC (heartbeat 2 s ago)"``."""
    since = time.strftime("%Y-%m-%d %H:%M:%S UTC", time.gmtime(lease.get("since", 0)))
    command = f" ({lease['command']})" if lease.get("command") else ""
    return (
        f"process {lease.get('pid')}{command} on host {lease.get('host')}, since {since} "
        f"(last heartbeat {age:.0f} s ago)"
    )


def in_use_message(folder: Path, lease: dict, age: float, reading: bool = False) -> str:
    """What a run refused a folder is told: who holds it, why it matters, what to do."""
    held = f"the folder {folder} is being written by another run: {describe(lease, age)}."
    if reading:
        return (
            f"{held} Nothing was read: a checkpoint read now can be half written (TensorFlow "
            "writes ckpt-N.index in place, under its final name) or deleted while it is read "
            "(the run keeps only its newest few). Wait for that run to end (or stop it), then "
            "restore; to look at its progress now, copy its newest checkpoint (the "
            "ckpt-N.index and ckpt-N.data-* files its `checkpoint` file names) into a folder "
            "of your own and restore from there."
        )
    return (
        f"{held} Two runs writing one checkpoint folder overwrite each other's files, and a "
        "later run could resume from the other's checkpoint. Wait for that run to end (or "
        f"stop it), or give this run a folder of its own, e.g. {str(folder).rstrip('/')}-2. "
        "A lease whose run died is taken over by itself: at once on this machine, elsewhere "
        f"after {STALE_SECONDS:g} s without a heartbeat."
    )


def holder_elsewhere(
    folder: str | os.PathLike, mine: dict | None = None, reading: bool = False
) -> str | None:
    """The refusal's message if another live run holds ``folder``'s lease, else None."""
    folder = Path(folder)
    lease, age = _current(folder)
    if lease is None or lease.get("run") == (mine or run_holder()).get("run"):
        return None
    if why_stale(lease, age) is not None:
        return None
    return in_use_message(folder, lease, age, reading)


@contextlib.contextmanager
def _locked(folder: Path):
    with open(folder / LOCK_FILE, "a") as handle:
        deadline = time.monotonic() + _LOCK_SECONDS
        while True:
            try:
                fcntl.flock(handle, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() > deadline:
                    raise TimeoutError(
                        f"{folder / LOCK_FILE} stayed locked for {_LOCK_SECONDS:g} s"
                    ) from None
                time.sleep(0.05)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def take(folder: str | os.PathLike, chief: bool = True) -> dict:
    """Take (or join, for this run) the lease of ``folder``; the lease written.

    The lease names the process that wrote it; the chief of a run writes it again under its
    own name when another worker of the run took it first (the chief's copy is the one kept,
    so its end is the run's end for the folder).

    Raises:
        FolderInUseError: Another live run holds it.
    """
    folder = Path(folder)
    mine, since = run_holder(), time.time()
    with _locked(folder):
        lease, age = _current(folder)
        if lease is not None and lease.get("run") == mine["run"]:
            if not chief or _same_process(lease, mine):
                os.utime(folder / LEASE_FILE)
                _keep_fresh(folder, lease)
                return lease
            since = lease.get("since", since)  # the chief names itself, since the run began
        elif lease is not None:
            stale = why_stale(lease, age)
            if stale is None:
                raise FolderInUseError(in_use_message(folder, lease, age))
            warnings.warn(
                f"the folder {folder} was held by a run that is gone ({describe(lease, age)}: "
                f"{stale}); this run takes it over. Its last checkpoint may be half written: "
                "restore_latest skips one that cannot be read.",
                FolderTakenOverWarning,
                stacklevel=3,
            )
        lease = {**mine, "since": since}
        partial = folder / f"{LEASE_FILE}.{os.getpid()}"
        partial.write_text(json.dumps(lease))
        partial.replace(folder / LEASE_FILE)
    _note_in_run(folder)
    _note_in_listing(folder)
    _keep_fresh(folder, lease)
    return lease


def _same_process(lease: dict, other: dict) -> bool:
    return all(lease.get(k) == other.get(k) for k in ("host", "boot", "pidns", "proc_pid", "start"))


def _note_in_run(folder: Path) -> None:
    """List the lease in the run's folder, so that the owner frees it when the run ends."""
    run = os.environ.get(protocol.RUN_MARKER)
    if run and os.environ.get(OWNER_VARIABLE) and os.path.isdir(run):
        _append(Path(run) / RUN_LEASES, folder)


def _append(listing: Path, folder: Path) -> None:
    with open(listing, "a") as file:
        file.write(str(folder.resolve() / LEASE_FILE) + "\n")


def release_run(run_dir: str | os.PathLike) -> list[str]:
    """Delete the leases the run in ``run_dir`` took and still holds; their paths.

    What its stopped workers' unfinished saves left (TensorFlow's ``<prefix>_temp`` folders
    of ``part-*`` shards, in the folder and the workers' copies) goes too.
    """
    return _free(Path(run_dir) / RUN_LEASES, lambda lease: lease.get("run") == str(run_dir))


def _free(listing: Path, still_ours) -> list[str]:
    """Delete each lease ``listing`` names that ``still_ours(lease)``, with its unfinished saves."""
    freed = []
    for line in set(_read(str(listing)).splitlines()):
        folder = Path(line).parent
        lease, _ = _current(folder)
        if lease is not None and still_ours(lease):
            _remove_unfinished_saves(folder)
            with contextlib.suppress(OSError):
                os.unlink(line)
                freed.append(line)
            with contextlib.suppress(OSError):  # the folder as the run found it
                os.unlink(folder / LOCK_FILE)
    return freed


_listing: Path | None = None  # where this process lists the leases it writes, if anywhere


def _note_in_listing(folder: Path) -> None:
    if _listing is not None:
        with contextlib.suppress(OSError):
            _append(_listing, folder)


@contextlib.contextmanager
def listed_in(path: str | None) -> Iterator[None]:
    """While inside, each lease this process writes is listed in ``path`` (None: nowhere).

    The worker command's child lists its leases for its parent, which frees them
    (:func:`freed_after`).
    """
    global _listing
    _listing = Path(path) if path else None
    try:
        yield
    finally:
        _listing = None


@contextlib.contextmanager
def freed_after(signals=(signal.SIGTERM, signal.SIGINT, signal.SIGHUP)) -> Iterator[dict]:
    """The worker command's parent: its child's leases freed at every end, once the child is.

    Yields ``{"listing": path or None, "child": None}``: give the child the listing
    (:func:`listed_in`) and set ``"child"`` to its ``Popen`` once started. However the block
    ends (a return, an exception, a ``SystemExit`` raised by a signal handler), ``signals``
    are held off, the child is killed if it still runs and waited for, and each lease it
    listed that still names it is deleted, with its unfinished saves.
    """
    state: dict = {"listing": None, "child": None}
    with contextlib.suppress(OSError):  # no listing (a full temporary folder): nothing freed
        handle, state["listing"] = tempfile.mkstemp(prefix="mirrorkit-leases-", suffix=".txt")
        os.close(handle)
    try:
        yield state
    finally:
        mask = signal.pthread_sigmask(signal.SIG_BLOCK, signals)  # a second signal waits
        child = state["child"]
        if child is not None:
            if child.poll() is None:
                child.kill()
            child.wait()
            here = identity()
            if state["listing"]:
                _free(
                    Path(state["listing"]),
                    lambda lease: (
                        lease.get("proc_pid") == child.pid
                        and all(lease.get(k) == here[k] for k in ("host", "boot", "pidns"))
                    ),
                )
        if state["listing"]:
            with contextlib.suppress(OSError):
                os.unlink(state["listing"])
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)


def _remove_unfinished_saves(folder: Path) -> None:
    import shutil

    with contextlib.suppress(OSError):
        for temp in [*folder.glob("*_temp"), *folder.glob(".worker-*/*_temp")]:
            if temp.is_dir() and any(temp.glob("part-*")):
                shutil.rmtree(temp, ignore_errors=True)


_held: dict[Path, str] = {}  # folder -> run, the leases this process keeps fresh
_heartbeat: threading.Thread | None = None


def _keep_fresh(folder: Path, lease: dict) -> None:
    global _heartbeat
    _held[folder] = lease["run"]
    if _heartbeat is None or not _heartbeat.is_alive():
        _heartbeat = threading.Thread(target=_beat, name="mirrorkit-lease", daemon=True)
        _heartbeat.start()


def _beat() -> None:
    while True:
        time.sleep(HEARTBEAT_SECONDS)
        beat_once()


def beat_once() -> list[Path]:
    """Renew the heartbeat of every lease this process holds; the folders still held."""
    for folder, run in list(_held.items()):
        lease, _ = _current(folder)
        if lease is None or lease.get("run") != run:
            _held.pop(folder, None)  # given back, or taken over: no longer ours
            continue
        with contextlib.suppress(OSError):
            os.utime(folder / LEASE_FILE)
    return sorted(_held)
