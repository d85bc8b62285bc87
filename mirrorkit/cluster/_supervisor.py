"""The supervisor: one process per cluster run that owns the workers.

It is started by :class:`mirrorkit.LocalCluster` with pipes for stdin and stdout. It
moves into a private network namespace (unless told to share the machine's network),
picks the ports, starts one worker process per task and forwards, as JSON lines on
stdout, every line a worker prints, every event a worker reports and every exit.

It never outlives its owner: the kernel signals it when the owner ends (PDEATHSIG), and
end-of-file on stdin (the owner closed the pipe or died) stops every worker. Each worker
is tied to the supervisor the same way. Whatever the workers start, at any depth, ends
with the run: the supervisor adopts their orphans and sweeps its descendants once the
workers have ended (:mod:`mirrorkit.cluster._reaper`).

Started by the owner as a new Python process, it starts each worker as a new Python process
too (``python -m mirrorkit.cluster._worker_main``), which imports TensorFlow again. Forked
from the warm process (:mod:`mirrorkit.cluster._zygote`), its parent is that process and it
forks its workers, which start with TensorFlow imported: every fork happens before this
process starts its first thread.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from functools import partial

from mirrorkit.cluster import _forked, _procs, _reaper, protocol
from mirrorkit.reproducibility import is_log_noise

# Reentrant: SIGTERM's handler (stop) may run in the main thread while it holds either.
_write_lock = threading.RLock()
_ending = threading.RLock()  # one way out at a time: stop, or the owner found gone
_current: Supervisor | None = None


def send(message: protocol.SupervisorMessage) -> None:
    line = protocol.encode(message) + "\n"
    with _write_lock:
        try:
            sys.stdout.write(line)
            sys.stdout.flush()
            return
        except (BrokenPipeError, ValueError):
            pass
    _abandoned()  # not holding the write lock: a stop under way may be writing


def _abandoned() -> None:
    """The owner is gone: end the workers and whatever they started, then leave."""
    with _ending:
        workers = list(_current.workers.values()) if _current else []
        for process in workers:
            with contextlib.suppress(OSError):
                process.kill()
        for process in workers:
            process.wait()
        _reaper.sweep()
        os._exit(0)


class Supervisor:
    def __init__(self, spec: protocol.LaunchSpec, *, fork_workers: bool = False) -> None:
        self.spec = spec
        self.fork_workers = fork_workers
        self.workers: dict[int, subprocess.Popen | _forked.ForkedProcess] = {}
        self.ready: set[int] = set()
        self.finished: set[int] = set()
        self.pumps: dict[int, list[threading.Thread]] = {}
        self.stopping = threading.Event()
        self.lock = threading.Lock()

    def network(self) -> tuple[str, str]:
        """(mode, how it was made or why the network is shared)."""
        if self.spec.network == "private":
            try:
                from mirrorkit.cluster import _netns

                return "private", _netns.enter_private_network()
            except OSError as error:
                return "shared", str(error)
        return "shared", "asked for network='shared'"

    def start(self) -> None:
        mode, note = self.network()
        host = self.spec.host
        tasks = self.spec.tasks
        ports = _procs.free_ports(len(tasks), host)
        addresses = tuple(f"{host}:{port}" for port in ports)
        send(protocol.Network(mode, note, addresses, tuple(_procs.interfaces())))
        configs = protocol.cluster_tf_configs(addresses, self.spec.num_ps)
        # With parameter servers the chief starts last and is told the servers' process ids
        # (for fault injection); it waits for them to listen before it makes its strategy.
        order = list(range(1, len(tasks))) + [0] if self.spec.num_ps else range(len(tasks))
        for index in order:
            if index in self.spec.absent:
                continue
            extra = {}
            if self.spec.num_ps and index == 0:
                pids = {i: process.pid for i, process in self.workers.items()}
                extra[protocol.SERVER_PIDS] = json.dumps(pids)
            self.workers[index] = self.spawn(index, configs[index], addresses[index], extra)
        # Threads only now: a fork must find this process with one thread.
        for pumps in self.pumps.values():
            for pump in pumps:
                pump.start()

    def spawn(
        self, index: int, tf_config: dict, address: str, extra: dict[str, str] | None = None
    ) -> subprocess.Popen | _forked.ForkedProcess:
        read_fd, write_fd = os.pipe()
        env = dict(os.environ)
        env.update(self.spec.env)
        env.update(
            {
                "TF_CONFIG": json.dumps(tf_config),
                protocol.EVENT_FD: str(write_fd),
                protocol.SUPERVISOR_PID: str(os.getpid()),
                "PYTHONUNBUFFERED": "1",
                **(extra or {}),
            }
        )
        start = self.fork_worker if self.fork_workers else self.start_worker
        process = start(index, env, write_fd)
        os.close(write_fd)
        send(protocol.Spawned(index, process.pid, address))
        self.pumps[index] = [
            threading.Thread(target=self.pump_output, args=(index, process), daemon=True),
            threading.Thread(target=self.pump_events, args=(index, read_fd), daemon=True),
        ]
        return process

    def start_worker(self, index: int, env: dict[str, str], event_fd: int) -> subprocess.Popen:
        """A new Python process, which imports everything itself."""
        return subprocess.Popen(
            [
                sys.executable,
                "-m",
                "mirrorkit.cluster._worker_main",
                self.spec.run_dir,
                str(index),
            ],
            stdin=subprocess.PIPE,  # closed when every worker has finished: time to leave
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            pass_fds=(event_fd,),
            env=env,
            cwd=self.spec.cwd,
        )

    def fork_worker(self, index: int, env: dict[str, str], event_fd: int) -> _forked.ForkedProcess:
        """A fork of this process, with TensorFlow imported and its runtime not started."""
        stdin_read, stdin_write = os.pipe()
        output_read, output_write = os.pipe()
        run_dir, cwd = self.spec.run_dir, self.spec.cwd

        def become_worker() -> None:
            os.environ.clear()
            os.environ.update(env)
            os.chdir(cwd)
            sys.path[0] = cwd  # where `python -m` in cwd would look first
            from mirrorkit.cluster import _worker_main

            _worker_main.main(run_dir, str(index))

        pid = _forked.fork(
            become_worker,
            f"mirrorkit-w{index}",
            stdio=(stdin_read, output_write, output_write),
            keep=(event_fd,),
        )
        for fd in (stdin_read, output_write):
            os.close(fd)
        return _forked.ForkedProcess(
            pid, stdin=os.fdopen(stdin_write, "wb"), stdout=os.fdopen(output_read, "rb")
        )

    def pump_output(self, index: int, process: subprocess.Popen) -> None:
        for raw in iter(process.stdout.readline, b""):
            text = raw.decode("utf-8", errors="replace").rstrip("\n")
            if not is_log_noise(text):  # the workers' own output only, as in a notebook
                send(protocol.Output(index, text))

    def pump_events(self, index: int, read_fd: int) -> None:
        with os.fdopen(read_fd, "rb") as stream:
            for event in protocol.read_events(stream, index):
                if isinstance(event, protocol.Flight):
                    send(event)
                    continue
                send(protocol.Event(event))
                if event.kind == "ready":
                    self.note_ready(index)
                elif event.kind == "finished":
                    self.note_finished(index)

    def note_ready(self, index: int) -> None:
        with self.lock:
            self.ready.add(index)
            complete = len(self.ready) == len(self.spec.tasks)
        if complete:  # what the workers listen on, seen from inside their namespace
            send(protocol.Listening(tuple(_procs.listening_sockets())))

    def note_finished(self, index: int) -> None:
        with self.lock:
            self.finished.add(index)
            complete = len(self.finished) == len(self.workers)
            # Parameter servers and their workers serve until the chief, who runs the
            # training, has finished.
            complete = complete or (self.spec.num_ps > 0 and index == 0)
        if complete:
            for process in self.workers.values():
                with contextlib.suppress(OSError):
                    process.stdin.close()

    def watch_owner(self) -> None:
        for line in sys.stdin:
            if line.strip() == protocol.STOP:
                break
        self.stop()

    def stop(self) -> None:
        with _ending:
            self._stop()

    def _stop(self) -> None:
        self.stopping.set()
        for process in self.workers.values():
            if process.poll() is None:
                process.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + self.spec.grace_seconds
        for process in self.workers.values():
            try:
                process.wait(max(0.0, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                process.kill()
        codes = {index: process.wait() for index, process in self.workers.items()}
        swept = _reaper.sweep()  # before any message: the owner may be gone
        for index, code in codes.items():
            send(protocol.Exit(index, code))
        if swept:
            send(protocol.Swept(tuple(swept)))
        send(protocol.Stopped())
        os._exit(0)

    def wait(self) -> None:
        remaining = dict(self.workers)
        workers = {process.pid for process in remaining.values()}
        next_reap = time.monotonic() + 1.0
        while remaining:
            for index, process in list(remaining.items()):
                code = process.poll()
                if code is not None:
                    del remaining[index]
                    for pump in self.pumps[index]:  # its last lines go out before its exit
                        pump.join(timeout=2.0)
                    send(protocol.Exit(index, code))
            if time.monotonic() > next_reap:  # orphans that ended on their own
                _reaper.reap(keep=workers)
                next_reap = time.monotonic() + 1.0
            time.sleep(0.02)
        swept = _reaper.sweep()
        if swept:
            send(protocol.Swept(tuple(swept)))
        send(protocol.Done())


def stop_elsewhere(supervisor: Supervisor, *_) -> threading.Thread:
    """SIGTERM's handler: stop on a thread of its own, never in the signal's frame.

    The handler runs in the main thread between two of its bytecodes, perhaps inside a
    worker's reaping lock; a stop begun there would wait for that lock, or for a stop
    already under way (the owner's end closes stdin as its death signal arrives) which
    waits for it in turn.
    """
    thread = threading.Thread(target=supervisor.stop, name="stop", daemon=True)
    thread.start()
    return thread


def main(run_dir: str, owner_pid: str, *, fork_workers: bool = False) -> None:
    """Run one cluster until the owner has read everything; ``owner_pid`` is the parent."""
    global _current
    supervisor = _current = Supervisor(protocol.LaunchSpec.read(run_dir), fork_workers=fork_workers)
    signal.signal(signal.SIGTERM, partial(stop_elsewhere, supervisor))
    # The owner's end stops the workers and sweeps what they started, as a stop does.
    _procs.die_with_parent(int(owner_pid), signal.SIGTERM)
    _reaper.become_subreaper()
    try:
        supervisor.start()
    except Exception as error:  # report, then end: the owner raises it with context
        for process in supervisor.workers.values():
            process.kill()
        _reaper.sweep()
        send(protocol.Fatal(f"{type(error).__name__}: {error}"))
        os._exit(2)
    threading.Thread(target=supervisor.watch_owner, daemon=True).start()
    supervisor.wait()
    # Stay until the owner has read everything and closes our stdin (or says stop).
    supervisor.stopping.wait()


if __name__ == "__main__":
    main(*sys.argv[1:3])
