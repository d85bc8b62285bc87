"""The grader's side of a run: the sandboxed command, its pipes, its timeout, its end.

As root a run is ``unshare --net --mount --pid --fork --kill-child --mount-proc``: loopback
comes up (TensorFlow's local clusters need it), tmpfs covers /tmp, /var/tmp, /dev/shm and
/run/lock (the only world-writable folders), the home folder of the interpreter's owner is
hidden but for the interpreter, then ``setpriv`` drops to user nobody with no new privileges
and runs ``python -I`` on :mod:`bookbuild.grading._runner`. Not root, it asks for a user
namespace instead and says what it could not isolate. The job goes in on stdin; verdicts
come back on a pipe (:mod:`bookbuild.grading._verdicts`). The sandbox dies with the grader,
however the grader ends (a parent-death signal on ``unshare``, whose ``--kill-child`` ends the
PID namespace and so everything the submission started).

Example:
    >>> isolation_note(True).startswith("user nobody")
    True
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shlex
import shutil
import signal
import subprocess
import sys
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

from bookbuild.grading import _verdicts

RUNNER = Path(__file__).with_name("_runner.py")
NOBODY = 65534
ENDED = "[sandbox] the runner ended with status "  # the sandbox's shell's last line
PRIVATE = ("/tmp", "/var/tmp", "/dev/shm", "/run/lock")  # world-writable: tmpfs in the sandbox
# The runner's modes that see the repository only for the code they run: the student's
# process, and the executor (it holds no key, on disk or in its job).
HIDDEN = frozenset({"export", "execute"})


@dataclass
class Outcome:
    """What one run gave: its records (if sealed), or why not.

    ``exercise`` is the exercise whose answer or check was running when the run ended (from
    the runner's progress lines, sealed or not: they only say whom to charge, and a forged one
    can charge only the submission's own exercises), ``exercise_timed_out`` whether that
    exercise ran over its own limit, ``returncode`` the runner's exit status (negative: the
    signal that ended it).
    """

    records: list[dict]
    problem: str  # "" when the channel was sealed
    timed_out: bool
    seconds: float
    log: str  # the end of the runner's stdout and stderr
    returncode: int | None = None
    exercise: int | None = None
    exercise_timed_out: bool = False
    lines: list[dict] = field(default_factory=list)  # every line, sealed or not: untrusted


class Progress:
    """Which exercise the runner says it is in, and since when (the grader's clock)."""

    def __init__(self) -> None:
        self.exercise: int | None = None
        self.since = 0.0

    def saw(self, line: bytes) -> None:
        """Note a ``started`` or ``finished`` line of the results channel."""
        with contextlib.suppress(ValueError, TypeError, AttributeError):
            record = json.loads(line)
            if record.get("kind") == "started" and type(record.get("exercise")) is int:
                self.exercise, self.since = record["exercise"], time.monotonic()
            elif record.get("kind") == "finished" and record.get("exercise") == self.exercise:
                self.exercise = None


def isolation_note(root: bool, user_ns: bool = True) -> str:
    """What a run isolates, in one sentence for the Grade.

    Example:
        >>> isolation_note(False, user_ns=False)[:22]
        'no sandbox: not root, '
    """
    if root:
        return (
            "user nobody, no network, private /tmp (a throw-away working folder), own PID namespace"
        )
    if user_ns:
        return (
            "no network, private /tmp, own PID namespace; runs as the grader's own user "
            "(not root: cannot switch users, so files the grader's user can write are writable)"
        )
    return (
        "no sandbox: not root, and user namespaces are not allowed here: the answer runs "
        "as the grader's user, with network, in a temporary folder"
    )


def isolation_here() -> str:
    """:func:`isolation_note` for this process: as root, or in a user namespace if allowed."""
    root = os.geteuid() == 0
    return isolation_note(root, root or user_namespaces())


def _kept() -> list[Path]:
    """The folders the runner needs (this repository, the environment, the interpreter)."""
    needed = {Path(p).resolve() for p in (RUNNER.parents[2], sys.prefix, sys.base_prefix)}
    kept: list[Path] = []
    for path in sorted(needed, key=lambda p: len(p.parts)):
        if not any(path.is_relative_to(k) for k in kept):
            kept.append(path)
    return kept


def _cover(top: str, mode: str, kept: list[Path], held: list[str]) -> list[str]:
    """Shell lines that put a tmpfs over ``top``, with the needed folders below it kept.

    Each needed folder is bound aside (under the private /run/lock, covered first), the tmpfs
    goes on, and the folder is moved back to its place in it.
    """
    q = shlex.quote
    inside = [p for p in kept if p.is_relative_to(top) and str(p) != top]
    aside = [f"/run/lock/.keep{len(held) + i}" for i in range(len(inside))]
    held += aside
    pairs = list(zip(inside, aside, strict=True))
    lines = [f"mkdir -p {a} && mount --bind {q(str(p))} {a}" for p, a in pairs]
    lines.append(f"mount -t tmpfs -o mode={mode} tmpfs {q(top)}")
    lines += [f"mkdir -p {q(str(p))} && mount --move {a} {q(str(p))}" for p, a in pairs]
    return lines


def _mounts(held: list[str]) -> list[str]:
    """The sandbox's mounts (as root): the world-writable folders and a private home hidden."""
    kept = _kept()
    lines = [f"mount -t tmpfs -o mode=1777 tmpfs {PRIVATE[-1]}"]  # /run/lock: the holding place
    prefix = Path(sys.base_prefix).resolve()
    top = Path("/", *prefix.parts[1:2])
    if len(prefix.parts) >= 3 and not os.stat(top).st_mode & 0o001:  # e.g. pyenv under /root
        lines += _cover(str(top), "755", kept, held)
    for folder in PRIVATE[:-1]:
        if Path(folder).is_dir():
            lines += _cover(folder, "1777", kept, held)
    return lines


def _hidden(student: bool, hide, held: list[str], code: bool = True) -> list[str]:
    """Mounts that hide what the run must not read.

    The folders named, and for the student's process the repository but for the code it runs
    (mirrorkit, the widgets, bookbuild and an environment inside it; with ``code`` False only
    the environment), so the labs, the answer keys and other students' files are gone. A
    folder that holds what the run needs (the repository in a folder of submissions, say) is
    covered with only that kept.
    """
    lines: list[str] = []
    root = RUNNER.parents[2]
    ours = [root / "mirrorkit", root / "bookbuild", root / "widgets"] if code else []
    prefixes = [Path(sys.prefix).resolve(), Path(sys.base_prefix).resolve()]
    needed = [p for p in (*ours, *prefixes) if p.exists()] if student else [root, *prefixes]
    tops = [root] if student else []
    for folder in sorted({Path(h).resolve() for h in hide}):
        private = any(folder.is_relative_to(p) for p in PRIVATE)
        if folder.is_dir() and not private and not any(folder.is_relative_to(t) for t in tops):
            tops.append(folder)
    for top in sorted(tops, key=lambda t: len(t.parts)):
        inside = [n for n in needed if n.is_relative_to(top) and n != top]
        if any(top.is_relative_to(n) for n in needed):
            continue  # the folder is itself needed: nothing to hide there
        lines += _cover(str(top), "755" if inside else "700", inside, held)
    return lines


def command(
    root: bool, user_ns: bool = True, *, student: bool = False, hide=(), source: str = ""
) -> list[str]:
    """The command that starts the runner in the sandbox.

    Args:
        root: Whether the grader runs as root (then the run drops to user nobody).
        user_ns: Whether an unprivileged user namespace can be made (when not root).
        student: Whether the run is the student's process or the executor (grading by
            export): the repository is hidden but for the code it runs.
        hide: Folders the run must not see (the lab's, the submissions').
        source: A program to run with ``python -c`` instead of the runner; the student's
            process then sees none of the repository, only the Python environment.

    Example:
        >>> command(True)[:3]
        ['unshare', '--net', '--mount']
    """
    python = [sys.executable, "-I", *(["-c", source] if source else [str(RUNNER)])]
    if not root and not user_ns:
        return python
    held: list[str] = []  # the places under /run/lock taken so far (_cover)
    if root:
        mounts = _mounts(held)
    else:
        mounts = [f"mount -t tmpfs -o mode=1777 tmpfs {d}" for d in PRIVATE if Path(d).is_dir()]
    mounts += _hidden(student or bool(source), hide, held, code=not source)
    drop = (
        ["setpriv", f"--reuid={NOBODY}", f"--regid={NOBODY}", "--clear-groups", "--no-new-privs"]
        if root
        else []
    )
    # The runner is not the namespace's first process (which would turn an abort into a
    # SIGSEGV: the kernel drops default-action signals an init sends itself); the shell is,
    # and it says how the runner ended (ENDED), which the grader reads as the real reason.
    run = shlex.join([*drop, *python])
    report = f'status=$?; echo "{ENDED}$status" >&2; exit $status'
    script = " && ".join(["ip link set lo up", *mounts, f"{{ {run}; {report}; }}"])
    space = [] if root else ["--user", "--map-root-user"]
    return [
        "unshare",
        *space,
        "--net",
        "--mount",
        "--pid",
        "--fork",
        "--kill-child",
        "--mount-proc",
        "sh",
        "-c",
        script,
    ]


def user_namespaces() -> bool:
    """Whether this user may make a user namespace (for the sandbox when not root)."""
    if not shutil.which("unshare"):
        return False
    done = subprocess.run(
        ["unshare", "--user", "--map-root-user", "--net", "true"], capture_output=True
    )
    return done.returncode == 0


def _environment() -> dict:
    return {
        "PATH": f"{Path(sys.executable).parent}:/usr/local/bin:/usr/bin:/bin",
        "MPLBACKEND": "Agg",
        "TF_CPP_MIN_LOG_LEVEL": "3",
        "PYTHONHASHSEED": "0",
        "LANG": "C.UTF-8",
    }


def run_sandboxed(
    job: dict, timeout: float, exercise_limit: float | None = None, hide=(), source: str = ""
) -> Outcome:
    """Run the runner on one job in the sandbox and read its sealed records.

    Args:
        job: The runner's job (program, replicas, seed, run, cases); the pipes are added.
        timeout: Seconds before the whole sandbox is killed.
        exercise_limit: Seconds one exercise (its answer and its check) may take before the
            sandbox is killed and that exercise charged; None for no limit of its own.
        hide: Folders the run must not see (see :func:`command`).
        source: A program to run instead of the runner (see :func:`command`).

    Returns:
        The :class:`Outcome`.
    """
    # Here, not at the top: dev.py imports bookbuild with the standard library alone; grading
    # runs in the book's environment, where mirrorkit is.
    from mirrorkit.cluster._procs import dies_with_this_process

    root = os.geteuid() == 0
    result_read, result_write = os.pipe()
    token_read, token_write = os.pipe()
    isolated = root or user_namespaces()
    job = dict(job, result_fd=result_write, token_fd=token_read, own_namespace=isolated)
    started = time.monotonic()
    process = subprocess.Popen(
        command(root, isolated, student=job.get("mode") in HIDDEN, hide=hide, source=source),
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        pass_fds=(result_write, token_read),
        env=_environment(),
        cwd="/",
        start_new_session=True,  # out of the terminal's reach: Ctrl+C ends the grader first
        # ... and it ends with the thread that started it, however that ends (a SIGKILL
        # included): the kernel kills unshare, whose --kill-child kills the namespace's
        # first process, which takes every process of the namespace along.
        preexec_fn=dies_with_this_process(),  # noqa: PLW1509
    )
    os.close(result_write)
    os.close(token_read)
    token = secrets.token_bytes(32)
    lines: list[bytes] = []
    log = bytearray()
    progress = Progress()
    reading = (result_read, lines, token_write, token, progress)
    readers = [
        threading.Thread(target=_read_lines, args=reading),
        threading.Thread(target=_tail, args=(process.stdout, log)),
    ]
    for reader in readers:
        reader.daemon = True
        reader.start()
    try:
        process.stdin.write(json.dumps(job).encode())
        process.stdin.close()
    except BrokenPipeError:
        pass
    timed_out, over = _wait(process, started + timeout, progress, exercise_limit)
    returncode = process.returncode
    _kill(process)
    for reader in readers:
        reader.join(timeout=10)
    records, problem = _verdicts.verify(lines, token)
    text = bytes(log[-4000:]).decode(errors="replace")
    seconds = time.monotonic() - started
    every = [record for record in map(_parsed, lines) if isinstance(record, dict)]
    return Outcome(
        records,
        problem,
        timed_out or over,
        seconds,
        text,
        returncode,
        progress.exercise,
        over,
        every,
    )


def _parsed(line: bytes):
    try:
        return json.loads(line)
    except ValueError:
        return None


def _wait(process, deadline: float, progress: Progress, limit: float | None):
    """Wait for the run to end: (ran past the deadline, an exercise ran past its limit)."""
    while True:
        now = time.monotonic()
        if limit is not None and progress.exercise is not None and now - progress.since > limit:
            return False, True
        if now >= deadline:
            return True, False
        try:
            process.wait(timeout=min(0.5, deadline - now))
            return False, False
        except subprocess.TimeoutExpired:
            continue


def _kill(process: subprocess.Popen) -> None:
    """End the sandbox: its session, then the process (its PID namespace dies with it)."""
    for target in (lambda: os.killpg(process.pid, signal.SIGKILL), process.kill):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            target()
    process.wait()


def _read_lines(fd: int, lines: list, token_fd: int, token: bytes, progress: Progress) -> None:
    """Read the results channel; send the token at the first request, and only once."""
    buffer, total, sent = b"", 0, False
    with open(fd, "rb", buffering=0) as pipe:
        while chunk := pipe.read(65536):
            total += len(chunk)
            if total > _verdicts.MAX_BYTES:
                lines.append(b"{too much}")
                break
            buffer += chunk
            *complete, buffer = buffer.split(b"\n")
            for line in complete:
                lines.append(line + b"\n")
                progress.saw(line)
                if not sent and line.strip() == json.dumps(_verdicts.TOKEN_REQUEST).encode():
                    sent = True
                    _send(token_fd, token)
    if buffer:
        lines.append(buffer)
    if not sent:
        os.close(token_fd)


def _send(fd: int, token: bytes) -> None:
    with contextlib.suppress(OSError):
        os.write(fd, token)
    os.close(fd)


def _tail(stream, log: bytearray) -> None:
    """Keep the last 64 KiB of the runner's output."""
    while chunk := stream.read1(65536):
        log += chunk
        del log[:-65536]
