"""Session: the owner loop of one local cluster run, fed by its supervisor's messages."""

from __future__ import annotations

import atexit
import contextlib
import dataclasses
import os
import queue
import subprocess
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

from mirrorkit.cluster import _culprits, _flight, _output, _procs, _reaper, _warm, protocol
from mirrorkit.cluster._session_text import LAST_LINES, SessionText
from mirrorkit.cluster.cluster_run import ClusterRun
from mirrorkit.cluster.events import ClusterStatus, WorkerEvent
from mirrorkit.cluster.worker import calling_on_event
from mirrorkit.errors import (
    ClusterError,
    ClusterSecurityWarning,
    ClusterStartError,
    ClusterTimeoutError,
    WorkerFailedError,
)

_live_supervisors: weakref.WeakSet = weakref.WeakSet()


@atexit.register
def _stop_live_supervisors() -> None:  # the kernel is shutting down: take the workers along
    for process in list(_live_supervisors):
        if process.poll() is None:
            process.terminate()  # it stops its workers and sweeps what they started


class Session(SessionText):
    """One launch: the supervisor process and everything heard from it.

    ``worker_env`` is what every worker needs from this process (its import path, quiet
    logs); the supervisor gets it too.
    """

    def __init__(
        self,
        cluster: protocol.ClusterSettings,
        run_dir: Path,
        on_event: Callable[[WorkerEvent], Any] | None,
        timeout: float | None,
        absent: list[int],
        worker_env: dict[str, str],
        tolerates_server_loss: bool = True,
    ) -> None:
        self.cluster = cluster
        self.tolerates_server_loss = tolerates_server_loss  # False: a plain script's servers
        self.worker_env = worker_env
        self.run_dir = run_dir
        self.on_event = on_event
        self.timeout = timeout
        self.absent = absent
        n = cluster.num_processes
        self.record = ClusterRun(
            num_workers=cluster.num_workers, num_ps=cluster.num_ps, status=ClusterStatus(n)
        )
        self.names = self.record.tasks
        self.keeper = _output.OutputKeeper(self.names, cluster.echo, _output.new_log_dir())
        self.record.output = self.keeper.lines  # lists again once the run has ended
        self.messages: queue.Queue = queue.Queue()
        self.finished: set[int] = set()
        self.ready: set[int] = set()
        self.failures: list[tuple[int, str, bool]] = []  # (worker, why, killed by a signal)
        self.server_losses: list[tuple[int, str, float]] = []  # (process, how, when)
        self.flights: dict[int, _flight.Record] = {}  # each worker's last flight record
        self.stderr: list[str] = []
        self.readers: list[threading.Thread] = []
        self.closed = False

    def emit(self, worker: int, kind: str, **fields: Any) -> None:
        self._publish(WorkerEvent(worker, kind, time=round(self.elapsed(), 3), **fields))

    def _publish(self, event: WorkerEvent) -> None:
        self.record.events.append(event)
        self.record.status.apply(event)
        if self.on_event is not None:
            with calling_on_event():
                self.on_event(event)

    def elapsed(self) -> float:
        return time.monotonic() - self.started

    def run(self) -> ClusterRun:
        self.started = time.monotonic()
        self.process, self.record.launch = self._start_supervisor()
        self.readers = [
            threading.Thread(target=self._read, args=(self.process.stdout, "out"), daemon=True),
            threading.Thread(target=self._read, args=(self.process.stderr, "err"), daemon=True),
        ]
        for reader in self.readers:
            reader.start()
        try:
            self._loop()
        except BaseException:
            self._shutdown()
            raise
        self._shutdown()
        self.record.wall_seconds = round(self.elapsed(), 3)
        self.record.results = [self._result(i) for i in range(self.cluster.num_processes)]
        return self.record

    def _start_supervisor(self) -> tuple[Any, str]:
        """The run's supervisor: forked by the warm process if it can, else a new process."""
        env = {**os.environ, **self.worker_env}
        why = "asked for with warm=False"
        if self.cluster.warm:
            try:
                return _warm.start_supervisor(
                    str(self.run_dir), {**env, **self.cluster.env}, self.cluster.start_timeout
                )
            except _warm.WarmUnavailable as error:
                why = str(error)
            except TimeoutError as error:
                raise ClusterStartError(
                    f"the cluster could not start: {error}. Raise start_timeout if this "
                    "machine is just slow, or start new processes with warm=False.",
                    self.record,
                ) from error
        process = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorkit.cluster._supervisor",
                str(self.run_dir),
                str(os.getpid()),
            ],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env={**env, protocol.RUN_MARKER: str(self.run_dir)},
            text=True,
        )
        _live_supervisors.add(process)
        return process, f"new processes ({why})"

    def _read(self, stream, channel: str) -> None:
        for line in stream:
            self.messages.put((channel, line))
        self.messages.put((channel, None))

    def _loop(self) -> None:
        self.open_streams = 2
        while self.open_streams:
            try:
                channel, line = self.messages.get(timeout=0.1)
            except queue.Empty:
                if self._watch_deadlines():
                    return
                continue
            if self._take(channel, line) or self._watch_deadlines():
                return
        raise ClusterError(
            "the cluster's supervisor process ended unexpectedly"
            + (": " + " | ".join(self.stderr[-LAST_LINES:]) if self.stderr else "."),
            self.record,
        )

    def _take(self, channel: str, line: str | None) -> bool:
        """Apply one line the readers queued; True when the run is over."""
        if line is None:
            self.open_streams -= 1
            return False
        if channel == "err":
            self.stderr.append(line.rstrip("\n"))
            return False
        return self._handle(protocol.decode(line))

    def _caught_up(self) -> bool:
        """Apply what the supervisor sent while this process looked away; True if it ended.

        An owner frozen, swapped out or busy in ``on_event`` finds a deadline passed with
        its queue full: the workers may have finished meanwhile (then the run returns their
        results), and the steps it reports must be the latest.
        """
        quiet_since = started = time.monotonic()
        while self.open_streams and time.monotonic() - quiet_since < 0.3:
            finished = len(self.finished) == self.cluster.num_processes
            if time.monotonic() - started > (10.0 if finished else 2.0):
                break  # a worker that never stops printing: judge now
            try:
                channel, line = self.messages.get(timeout=0.1)
            except queue.Empty:
                continue
            quiet_since = time.monotonic()
            if self._take(channel, line):
                return True
        return False

    def _handle(self, message: protocol.SupervisorMessage) -> bool:
        """Apply one supervisor message; True when the run is over."""
        return bool(_HANDLERS[type(message)](self, message))

    def _spawned(self, message: protocol.Spawned) -> None:
        self.emit(message.worker, "starting", address=message.address, pid=message.pid)

    def _output(self, message: protocol.Output) -> None:
        if self.keeper.add(message.worker, message.text):  # echoed: not over the rate
            self.emit(message.worker, "output", text=message.text)

    def _listening(self, message: protocol.Listening) -> None:
        self.record.listening = list(message.sockets)

    def _exit(self, message: protocol.Exit) -> None:
        if self._tolerated(message):
            return
        if self._note_exit(message.worker, message.returncode):
            self._fail()

    def _tolerated(self, message: protocol.Exit) -> bool:
        """Record a parameter-server cluster's server that died after the cluster formed.

        Its chief carries on (a ParameterServerStrategy's coordinator runs the steps on the
        workers left) or fails by itself (a parameter server is gone): the chief decides.
        The death may be heard after the chief finished: the supervisor reports exits in
        its own time. A plain script's server must serve until the chief is done: its end is
        the run's failure.
        """
        worker = message.worker
        if not self.cluster.num_ps or worker == 0 or worker in self.finished:
            return False
        if not self.tolerates_server_loss:
            return False
        if worker not in self.ready and 0 not in self.ready:  # the cluster never formed
            return False
        how = _procs.describe_exit(message.returncode)
        self.record.exits[worker] = how
        self.server_losses.append((worker, how, self.elapsed()))
        self.emit(worker, "failed", text=how)
        return True

    def _flight(self, message: protocol.Flight) -> None:
        with contextlib.suppress(TypeError):
            self.flights[message.worker] = _flight.Record(**message.record)

    def _holdups(self) -> tuple[list[int], str]:
        """Who holds the others up, from the workers' last flight records."""
        if not self.flights:
            return [], ""
        records = [
            (self.names[i], self.flights.get(i))
            for i in range(self.cluster.num_processes)
            if i not in self.absent and i not in self.finished
        ]
        culprits, text = _flight.holdups(records, time.time())
        return [self.names.index(name) for name in culprits], text

    def _fatal(self, message: protocol.Fatal) -> None:
        raise ClusterError(f"the cluster could not be set up: {message.text}", self.record)

    def _done(self, message: protocol.Done | protocol.Stopped) -> bool:
        return True

    def _swept(self, message: protocol.Swept) -> None:
        self._note_left_running(message.processes)

    def _note_left_running(self, processes: Sequence[str]) -> None:
        new = [p for p in processes if p not in self.record.left_running]
        self.record.left_running += new
        if new and self.cluster.echo:
            print(
                f"[cluster] the run ended; {len(new)} process{'es' if len(new) > 1 else ''} "
                f"the workers started {'were' if len(new) > 1 else 'was'} still running and "
                f"{'were' if len(new) > 1 else 'was'} ended: {', '.join(new)}",
                flush=True,
            )

    def _network(self, message: protocol.Network) -> None:
        record = self.record
        record.network = message.mode
        record.network_note = message.note
        record.addresses = list(message.addresses)
        record.interfaces = list(message.interfaces)
        if record.network == "shared":
            warnings.warn(
                "the workers use the machine's network: TensorFlow's gRPC servers listen on "
                "every interface, without authentication, so anyone who can reach this machine "
                f"can reach them ({record.network_note}). Use network='private' on a machine "
                "that allows network namespaces, or keep this machine off shared networks.",
                ClusterSecurityWarning,
                stacklevel=7,
            )

    def _worker_event(self, message: protocol.Event) -> None:
        event = dataclasses.replace(message.event, time=round(self.elapsed(), 3))
        if event.kind == "ready":
            self.ready.add(event.worker)
            if len(self.ready) == self.cluster.num_processes:
                self.record.start_seconds = round(self.elapsed(), 3)
        elif event.kind == "finished":
            self.finished.add(event.worker)
        elif event.kind == "failed":
            self.failures.append((event.worker, event.text, False))
        self._publish(event)

    def _note_exit(self, worker: int, returncode: int) -> bool:
        """Record a worker's exit; True if it ended before finishing (a failure)."""
        how = _procs.describe_exit(returncode)
        self.record.exits[worker] = how
        if worker in self.finished:
            return False
        if not any(f[0] == worker for f in self.failures):
            self.failures.append((worker, how, returncode < 0))
            self.emit(worker, "failed", text=how)
        return True

    def _settle(self, seconds: float) -> None:
        """Hear what else ended at the same moment before naming the cause of a failure.

        A killed worker's peer often fails within milliseconds, and the supervisor may
        report the peer's exit first.
        """
        deadline = time.monotonic() + seconds
        for message in self._messages_until(lambda: deadline - time.monotonic()):
            if isinstance(message, protocol.Exit):
                if not self._tolerated(message):
                    self._note_exit(message.worker, message.returncode)
            elif not isinstance(message, protocol.Done | protocol.Fatal):
                self._handle(message)

    def _fail(self) -> None:
        """A worker failed: stop the rest and raise, naming the cause, not a victim."""
        self._settle(0.3)
        if _culprits.rank(_culprits.first_cause(self.failures)) == 3:
            self._settle(2.0)  # a victim's error: hear a little longer who else ended
        worker, why, signalled = _culprits.first_cause(self.failures)
        culprit, cause = _culprits.blame(
            (worker, why),
            names=self.names,
            addresses=self.record.addresses,
            server_losses=self.server_losses,
            holdups=self._holdups,
            evidence=self.record.output.get(worker, ()),
        )
        self._shutdown()
        exit_note = self.record.exits.get(worker, "")
        detail = why if why == exit_note or not exit_note else f"{why} ({exit_note})"
        last = self._last_lines(culprit)
        if culprit != worker:
            last += f"\n{self._last_lines(worker, who=self.names[worker]).strip()}"
        others = [
            i
            for i in range(self.cluster.num_processes)
            if i not in (worker, culprit) and i not in self.absent
        ]
        name = self.names[worker]
        if worker not in self.ready:
            raise ClusterStartError(
                f"{name} failed before the cluster formed: {detail}.{last}",
                self.record,
            )
        stopped = (
            f"the other processes ({', '.join(self.names[i] for i in others)})"
            if self.cluster.num_ps
            else f"the other workers ({_names(others)})"
        )
        stopped = f"; {stopped} were stopped" if others else ""
        if why == "exit status 0":
            detail = "it ended with exit status 0 before it finished, reporting no error"
        if culprit == worker and _culprits.rank((worker, why, signalled)) <= 1:
            step = self.record.status.workers[worker].step  # no traceback says where it was
            detail += f" after step {step}" if step is not None else " before its first step"
        raise WorkerFailedError(
            f"{cause}{name} failed: {detail}{stopped}."
            f"{_culprits.heartbeat_hint(why, *self.record.output[worker])}{last}",
            self.record,
            worker=culprit,
        )

    def _watch_deadlines(self) -> bool:
        """Raise if the start or the run took too long; True if catching up ended the run."""
        elapsed = self.elapsed()
        n = self.cluster.num_processes
        late = len(self.ready) < n and elapsed > self.cluster.start_timeout
        if (late or (self.timeout is not None and elapsed > self.timeout)) and self._caught_up():
            return True
        if len(self.ready) < n and elapsed > self.cluster.start_timeout:
            waiting = [i for i in range(n) if i not in self.ready]
            self._shutdown()
            parts = [self._not_joined(i) for i in waiting]
            raise ClusterStartError(
                f"the cluster did not form within {self.cluster.start_timeout:g} s: "
                + "; ".join(parts)
                + ". TensorFlow would wait up to an hour for a missing worker (its coordination "
                "service's default); the launcher stopped every worker. Raise start_timeout if "
                "your workers are just slow to start.",
                self.record,
            )
        if self.timeout is not None and elapsed > self.timeout:
            _, holdup = self._holdups()
            self._shutdown()
            raise ClusterTimeoutError(
                f"the run took longer than timeout={self.timeout:g} s; every worker was "
                f"stopped. Steps reached: {self._steps()}."
                + (f" Who waited for whom: {holdup}" if holdup else ""),
                self.record,
            )
        return False

    def _shutdown(self) -> None:
        """Stop every process of this run, within grace_seconds plus a little."""
        if self.closed:
            return
        self.closed = True
        self._keep_output()
        process = self.process
        if process.poll() is None:
            try:
                process.stdin.write(protocol.STOP + "\n")
                process.stdin.flush()
                process.stdin.close()
            except (BrokenPipeError, ValueError, OSError):
                pass
            try:
                process.wait(self.cluster.grace_seconds + 3.0)
            except subprocess.TimeoutExpired:
                process.kill()  # its workers die with it (parent-death signal)
                process.wait()
        self._drain_exits()
        # The last sweep: anything of this run still running (its supervisor was killed
        # before it could sweep, say) carries the run's variable.
        self._note_left_running(_reaper.end_marked(protocol.RUN_MARKER, str(self.run_dir)))
        for reader in self.readers:  # they end at the pipes' end of file
            reader.join(timeout=2.0)
        for stream in (process.stdin, process.stdout, process.stderr):
            with contextlib.suppress(OSError, ValueError):
                stream.close()
        for worker in self.record.status.workers:
            if worker.state in ("starting", "ready", "training") and worker.worker not in (
                self.absent
            ):
                self.emit(worker.worker, "stopped", text="stopped by the launcher")
                self.record.exits.setdefault(worker.worker, "stopped by the launcher")

    def _drain_exits(self) -> None:
        """Record how the workers stopped during shutdown ended (their last messages)."""
        for message in self._messages_until(lambda: 0.5):
            if isinstance(message, protocol.Exit):
                how = _procs.describe_exit(message.returncode)
                self.record.exits.setdefault(message.worker, how)
            elif isinstance(message, protocol.Swept):
                self._note_left_running(message.processes)
            elif isinstance(message, protocol.Stopped):
                return

    def _messages_until(self, wait: Callable[[], float]) -> Iterator[protocol.SupervisorMessage]:
        """The supervisor's next messages, until none comes within ``wait()`` seconds."""
        while (left := wait()) > 0:
            try:
                channel, line = self.messages.get(timeout=left)
            except queue.Empty:
                return
            if line is not None and channel == "out":
                yield protocol.decode(line)

    def _result(self, worker: int) -> Any:
        path = self.run_dir / protocol.result_file(worker)
        if not path.exists():
            return None
        import cloudpickle

        return cloudpickle.loads(path.read_bytes())


# What the owner does with each supervisor message: the one dispatch table.
_HANDLERS = {
    protocol.Network: Session._network,
    protocol.Spawned: Session._spawned,
    protocol.Output: Session._output,
    protocol.Event: Session._worker_event,
    protocol.Flight: Session._flight,
    protocol.Listening: Session._listening,
    protocol.Exit: Session._exit,
    protocol.Swept: Session._swept,
    protocol.Fatal: Session._fatal,
    protocol.Done: Session._done,
    protocol.Stopped: Session._done,
}


def _names(workers: Sequence[int]) -> str:
    return ", ".join(str(w) for w in workers) if workers else "none"
