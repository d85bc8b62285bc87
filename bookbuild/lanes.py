"""Stages of the test jobs run side by side, a few at a time, each into its own log.

A stage is one timed piece of a job (its set-up, lint, a part of the test suite, nbval...).
:func:`run_stages` starts every stage whose predecessors passed, longest expected first, on
at most ``lanes`` threads; each stage's commands write to its log file, which is printed
whole when the stage ends, so the jobs' outputs never interleave.

Example:
    >>> import tempfile
    >>> stages = [
    ...     Stage("demo", "set-up", lambda: None),
    ...     Stage("demo", "unit tests", lambda: say("testing"), after=("set-up",)),
    ... ]
    >>> with tempfile.TemporaryDirectory() as logs:
    ...     done = run_stages(stages, lanes=2, logs=Path(logs), echo=False)
    >>> [(s.name, s.result) for s in done]
    [('set-up', 'passed'), ('unit tests', 'passed')]
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from bookbuild.idle import IdleMeter
from bookbuild.shell import cpu_counted, output_to, say

INSTALLS = "set-up"  # the kind of stage that runs one at a time, outside the lanes
# ... but while no other stage runs or can start (a run's beginning: every stage waits for a
# set-up), this many: one install alone left a core idle for the first one's 1.5 minutes.
INSTALLS_ALONE = 2
# A spare lane opens while this many cores, on average over SPARE_WINDOW seconds after the
# last stage started, stood idle: the stages' waits (cluster bounds, TensorFlow's threads)
# leave a core free for another stage, and a busy machine gets none.
SPARE_IDLE = 1.0
SPARE_WINDOW = 20.0
POLL = 5.0  # seconds between looks at the idle cores while a spare lane may open


@dataclass
class Stage:
    """One timed piece of a job: what it runs, what it waits for, and how it went.

    Attributes:
        job: The job's name (``reference``, ``python3.13``, ``hosted``).
        name: The stage's name within its job, unique there (``unit tests 1/2``).
        action: Runs the stage; raises ``SystemExit`` with a message when it fails.
        after: Names of stages of the same job that must pass first.
        needs: Keys (``job/name``) of stages of other jobs that must pass first: the one
            stage that builds what several jobs read (:mod:`bookbuild.built`).
        kind: What the stage tables add up (``unit tests`` for both halves); ``name``
            without its ``n/k`` suffix by default.
        weight: Expected seconds. Among the stages ready at once, the one that heads the
            longest chain of expected seconds starts first.
        seconds: Its wall seconds, once it ran.
        cpu: The CPU seconds of the commands it ran (:func:`bookbuild.shell.cpu_counted`),
            which hardly change with what runs beside it.
    """

    job: str
    name: str
    action: Callable[[], None]
    after: tuple[str, ...] = ()
    needs: tuple[str, ...] = ()
    kind: str = ""
    weight: float = 0.0
    result: str = "not run"
    detail: str = ""
    seconds: float = 0.0
    cpu: float = 0.0
    started: float = 0.0
    log: Path | None = None

    def __post_init__(self) -> None:
        self.kind = self.kind or re.sub(r" \d+/\d+$", "", self.name)

    @property
    def key(self) -> str:
        """``job/name``, unique among every job's stages."""
        return f"{self.job}/{self.name}"

    @property
    def waits_for(self) -> tuple[str, ...]:
        """The keys of every stage it waits for: its job's (``after``) and others' (``needs``)."""
        return (*(f"{self.job}/{name}" for name in self.after), *self.needs)

    @property
    def stem(self) -> str:
        """The stem of its files (log, JUnit report): ``reference--unit-tests-1-of-2``."""
        return f"{self.job}--{self.name}".replace("/", "-of-").replace(" ", "-")


def run_stages(
    stages: list[Stage],
    *,
    lanes: int,
    logs: Path,
    echo: bool = True,
    spare: int = 0,
    idle: Callable[[], float | None] | None = None,
) -> list[Stage]:
    """Run ``stages``, each after those it waits for, at most ``lanes`` (and spare) at once.

    While ``lanes`` stages run, up to ``spare`` more may start, one at a time, each when
    :data:`SPARE_IDLE` cores have stood idle over :data:`SPARE_WINDOW` seconds since the last
    start (``idle``: a :class:`bookbuild.idle.IdleMeter` by default).

    Installs (kind ``set-up``) run one at a time, beside the lanes, so the first environment
    is ready soonest and the next one's install overlaps the first one's tests; while nothing
    else runs or can start, :data:`INSTALLS_ALONE` of them run side by side.

    A stage whose predecessor failed does not run: its result says which one. Every stage's
    output goes to ``logs/<job>--<name>.log``; with ``echo``, the whole log is printed when
    the stage ends, after one line saying how it went.

    Args:
        stages: The stages, of any number of jobs.
        lanes: How many stages may run at once (at least 1).
        logs: The folder for the logs (made if missing).
        echo: Print each log when its stage ends.
        spare: How many spare lanes may open.
        idle: Returns the cores idle lately, or None while it cannot tell.

    Returns:
        ``stages``, each with its result, wall and CPU seconds, and log.

    Raises:
        ValueError: If ``lanes`` is below 1 or a stage waits for one that is not given.

    Example:
        >>> import tempfile
        >>> def fails():
        ...     raise SystemExit("[dev] lint failed")
        >>> stages = [Stage("j", "lint", fails), Stage("j", "nbval", print, after=("lint",))]
        >>> with tempfile.TemporaryDirectory() as logs:
        ...     done = run_stages(stages, lanes=1, logs=Path(logs), echo=False)
        >>> [(s.result, s.detail) for s in done]
        [('FAILED', '[dev] lint failed'), ('not run', 'lint did not pass')]
    """
    if lanes < 1:
        raise ValueError(f"lanes must be at least 1. Received: lanes={lanes!r}; write lanes=2.")
    by_key = {stage.key: stage for stage in stages}
    for stage in stages:
        named = zip((*stage.after, *stage.needs), stage.waits_for, strict=True)
        unknown = [name for name, key in named if key not in by_key]
        if unknown:
            raise ValueError(f"stage {stage.key} waits for {unknown}, which no stage is")
    logs.mkdir(parents=True, exist_ok=True)
    done = threading.Condition()
    waiting, running = list(stages), set()
    idle = idle or (IdleMeter(SPARE_WINDOW).idle_cores if spare else None)
    last_start = time.monotonic()
    while waiting or running:
        with done:
            for stage in list(waiting):
                before = [by_key[key] for key in stage.waits_for]
                blocked = [
                    s.name if s.job == stage.job else s.key
                    for s in before
                    if s.result == "FAILED" or s.detail
                ]
                if blocked:
                    stage.detail = f"{blocked[0]} did not pass"
                    waiting.remove(stage)
            ready = [s for s in waiting if all(by_key[k].result == "passed" for k in s.waits_for)]
            busy = [by_key[key] for key in running]
            in_lanes = sum(s.kind != INSTALLS for s in busy)
            alone = not in_lanes and all(s.kind == INSTALLS for s in ready)
            installs = (INSTALLS_ALONE if alone else 1) - sum(s.kind == INSTALLS for s in busy)
            free = lanes - in_lanes
            cores = idle() if idle else None  # sampled every round, to span the window
            calm = time.monotonic() - last_start >= SPARE_WINDOW
            opens = free <= 0 and in_lanes < lanes + spare and calm and (cores or 0) >= SPARE_IDLE
            free = 1 if opens else free
            for stage in sorted(ready, key=lambda s: -_path(s, stages)):
                if stage.kind == INSTALLS:
                    if installs <= 0:
                        continue
                    installs -= 1
                elif free > 0:
                    free -= 1
                    if opens:
                        say(f"a spare lane opens ({cores:.1f} cores idle): {stage.key}")
                else:
                    continue
                waiting.remove(stage)
                running.add(stage.key)
                stage.result = "running"
                last_start = time.monotonic()
                # Daemon: an interrupted dev.py ends (its stages' processes got the same ^C).
                threading.Thread(
                    target=_run, args=(stage, logs, done, running, echo), daemon=True
                ).start()
            if running:
                done.wait(timeout=POLL if spare else None)
            elif waiting:  # nothing runs and nothing can start: they wait for each other
                for stage in waiting:
                    stage.detail = f"waits in a cycle: {', '.join(stage.after + stage.needs)}"
                waiting.clear()
    return stages


def _path(stage: Stage, stages: list[Stage]) -> float:
    """The expected seconds from ``stage``'s start to the end of the longest chain after it."""
    after = [s for s in stages if stage.key in s.waits_for]
    return stage.weight + max((_path(s, stages) for s in after), default=0.0)


def _run(stage: Stage, logs: Path, done: threading.Condition, running: set, echo: bool) -> None:
    stage.log = logs / f"{stage.stem}.log"
    start = stage.started = time.perf_counter()
    with cpu_counted() as cpu:
        try:
            with output_to(stage.log):
                stage.action()
            result, detail = "passed", ""
        except SystemExit as error:
            result, detail = "FAILED", str(error)
        except Exception as error:  # a bug in a stage must not stop the other jobs
            result, detail = "FAILED", f"{type(error).__name__}: {error}"
    seconds = time.perf_counter() - start
    with done:
        stage.result, stage.detail, stage.seconds, stage.cpu = result, detail, seconds, cpu.seconds
        try:
            if echo:
                say(
                    f"{stage.job}: {stage.name} {result} in {seconds:.0f} s, "
                    f"{cpu.seconds:.0f} CPU s ({stage.log.name})"
                )
                print(stage.log.read_text(errors="replace"), end="", flush=True)
                if detail:
                    say(f"{stage.job}: {stage.name}: {detail}")
        finally:  # whatever printing does, the loop hears that the stage ended
            running.discard(stage.key)
            done.notify_all()
