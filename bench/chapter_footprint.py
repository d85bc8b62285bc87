"""How long does each chapter take to run, and how much memory does its kernel need at its peak?

Usage: python bench/chapter_footprint.py [--chapters 01_strategy_scope.ipynb ...]
                                         [--interval 0.05] [--smaps-interval 0.5]
                                         [--passes 1] [--save DIR]

Executes every chapter listed in jupyter_book.toml (or those named), each in a fresh
kernel, top to bottom, as a learner's "Run All", ``--passes`` times in the same kernel
(a learner who runs everything again; each pass is reported on its own). The book's
notebooks are not changed: the kernel works in a temporary folder, and the executed
copies are written only with ``--save DIR``, to read what this machine printed.

While a chapter runs, a thread samples the kernel's process tree (the kernel and every
process it started: chapter 1's script, chapter 6's cluster supervisor and its workers)
and sums, over the processes alive at that moment, every ``--interval`` seconds:

- RSS (resident set size): every page the process has in memory, so a page shared by
  two processes (TensorFlow's libraries, mapped by every process that imports it) counts
  twice in the sum;
- PSS (proportional set size, from /proc/PID/smaps_rollup): each shared page divided
  among all the processes on the machine that map it, so the sum over the tree does not
  double-count, and falls when other processes (other kernels) map the same files;
- anonymous memory (``Anonymous`` in smaps_rollup): pages no file backs (the heap,
  tensors, Python objects). Unlike the file pages of TensorFlow's libraries, which
  every process that maps the same installed files shares, these belong to one
  process only, whatever else runs: the least each further kernel adds to a machine.
  Forked processes share their parent's anonymous pages until one writes to them, and
  each of them counts the shared ones again (RSS too); only PSS divides them.

Beside the tree, the whole machine: how far its ``MemAvailable`` (/proc/meminfo) fell below
what it was just before the kernel started, at the lowest sample. That is the memory the
chapter took from the machine, each page once whoever maps it, page tables included, and
without the page cache of TensorFlow's library files, which the kernel can drop and which
every kernel on the machine shares; on a hub, the memory each further learner costs.
Other work on the machine moves it too: read it on a quiet machine.

PSS and anonymous memory are read every ``--smaps-interval`` seconds only: the Linux
kernel walks the whole page table of a process to write its smaps_rollup, about 10 ms
for a kernel that has imported TensorFlow, and the sampler shares the cores with the
chapter it measures (its own CPU time is printed).

It prints one line per pass as it finishes and a table at the end: the wall time of
the cells (kernel start apart), the peak of each sum, the most processes seen at once,
the load average (other work on the machine stretches the times, not the memory),
and the kernel's own peak RSS read from the Linux kernel's high-water mark (VmHWM in
/proc/PID/status), which no sampling can miss; when it is above the kernel's sampled
peak, the sampling missed a short spike by that much. A spike of the whole tree shorter
than the interval can be missed the same way.
"""

from __future__ import annotations

import argparse
import contextlib
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

import nbformat
import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))  # bookbuild/ is not installed
from bookbuild.execute import notebook_client  # noqa: E402
from bookbuild.manifest import load_manifest  # noqa: E402

MIB = 1024 * 1024


def _status_kib(pid: int, key: str) -> int | None:
    """A ``kB`` line of /proc/PID/status (``VmHWM``, ``VmRSS``), in KiB; None if unreadable."""
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            if line.startswith(key + ":"):
                return int(line.split()[1])
    return None


def _available_bytes() -> int:
    """The machine's MemAvailable (/proc/meminfo), in bytes."""
    for line in Path("/proc/meminfo").read_text().splitlines():
        if line.startswith("MemAvailable:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError("/proc/meminfo has no MemAvailable line")


def _pss_anon_kib(pid: int) -> tuple[int, int] | None:
    """The process's (PSS, anonymous memory) in KiB from /proc/PID/smaps_rollup.

    Returns None when the process has ended or is ending (ESRCH, or a file without
    the fields: an exiting process has released its memory). Raises PermissionError
    when this user may not read it.
    """
    fields = {}
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except (ProcessLookupError, FileNotFoundError):
        return None
    for line in text.splitlines():
        key, _, rest = line.partition(":")
        if key in ("Pss", "Anonymous"):
            fields[key] = int(rest.split()[0])
    if len(fields) != 2:
        return None
    return fields["Pss"], fields["Anonymous"]


@dataclass
class Footprint:
    """Peaks of one process tree, filled in by :class:`TreeSampler`."""

    samples: int = 0  # RSS samples
    smaps_samples: int = 0  # PSS/anon samples (reading smaps_rollup costs ~10 ms a process)
    rss_peak: int = 0  # bytes, the sum over the tree at its largest sample
    pss_peak: int = 0  # bytes; PSS and anon leave out processes whose smaps_rollup was
    anon_peak: int = 0  # unreadable, named in pss_unreadable
    pss_unreadable: set[str] = field(default_factory=set)
    kernel_rss_peak: int = 0  # bytes, the kernel process alone, sampled
    processes_peak: int = 0
    available_low: int = 0  # bytes: the machine's lowest MemAvailable while sampling
    sampler_cpu: float = 0.0  # CPU seconds the sampling itself took (it shares the cores)
    commands: set[str] = field(default_factory=set)  # names of the descendants seen


class TreeSampler(threading.Thread):
    """Samples a process and its descendants until :meth:`stop`; peaks land in ``footprint``.

    RSS every ``interval`` seconds; PSS and anonymous memory at most every
    ``smaps_interval`` seconds, because the kernel walks a process's whole page table to
    write its smaps_rollup.
    """

    def __init__(self, pid: int, interval: float, smaps_interval: float) -> None:
        super().__init__(daemon=True)
        self.root = psutil.Process(pid)
        self.interval = interval
        self.smaps_interval = smaps_interval
        self.footprint = Footprint()
        self._stopped = threading.Event()
        self._last_smaps = float("-inf")

    def stop(self) -> Footprint:
        self._stopped.set()
        self.join(timeout=10)
        return self.footprint

    def run(self) -> None:
        while not self._stopped.is_set():
            self.sample()
            self._stopped.wait(self.interval)
        self.sample(smaps=True)
        self.footprint.sampler_cpu = time.thread_time()  # this thread's own CPU seconds

    def sample(self, smaps: bool = False) -> None:
        fp = self.footprint
        try:
            tree = [self.root, *self.root.children(recursive=True)]
        except psutil.NoSuchProcess:
            return
        now = time.monotonic()
        smaps = smaps or now - self._last_smaps >= self.smaps_interval
        rss = pss = anon = alive = 0
        for process in tree:
            try:
                rss_one = process.memory_info().rss
            except psutil.NoSuchProcess:
                continue  # ended between listing and reading
            alive += 1
            rss += rss_one
            if process is self.root:
                fp.kernel_rss_peak = max(fp.kernel_rss_peak, rss_one)
            else:
                with contextlib.suppress(psutil.Error):
                    fp.commands.add(process.name())
            if not smaps:
                continue
            try:
                shares = _pss_anon_kib(process.pid)
            except PermissionError:
                with contextlib.suppress(psutil.Error):
                    fp.pss_unreadable.add(process.name())
                continue
            if shares is not None:
                pss += shares[0] * 1024
                anon += shares[1] * 1024
        fp.samples += 1
        available = _available_bytes()
        fp.available_low = min(fp.available_low or available, available)
        fp.rss_peak = max(fp.rss_peak, rss)
        fp.processes_peak = max(fp.processes_peak, alive)
        if smaps:
            self._last_smaps = now
            fp.smaps_samples += 1
            fp.pss_peak = max(fp.pss_peak, pss)
            fp.anon_peak = max(fp.anon_peak, anon)


@dataclass
class Pass:
    """One "Run All" of a chapter: its wall time and the peaks sampled meanwhile."""

    file: str
    number: int  # 1 for the first Run All in the kernel, 2 for the second, ...
    kernel_start: float  # seconds from starting the kernel until it answered
    cells: float  # seconds from the start of the first cell to the end of the last
    footprint: Footprint
    kernel_hwm: int | None  # bytes: the kernel's VmHWM at the end of the pass (since it started)
    load: float  # the machine's 1-minute load average at the end of the pass
    available_before: int  # bytes: the machine's MemAvailable before the kernel started

    @property
    def machine_drop(self) -> int:
        """Bytes: how far MemAvailable fell below its value before the kernel started."""
        return max(0, self.available_before - self.footprint.available_low)


def run_chapter(
    chapter: dict, intervals: tuple[float, float], passes: int, save: Path | None
) -> list[Pass]:
    """Run one chapter ``passes`` times in one fresh kernel, sampling its process tree.

    With ``save``, the executed notebook (outputs of the last pass) is written into it.
    """
    nb = nbformat.read(chapter["path"], as_version=4)
    results = []
    with (
        tempfile.TemporaryDirectory(prefix="mirrorbook-footprint-") as cwd,
        notebook_client(nb, timeout=chapter["cell_timeout"], cwd=Path(cwd)) as client,
    ):
        available_before = _available_bytes()
        started = time.perf_counter()
        with client.setup_kernel():
            kernel_start = time.perf_counter() - started
            pid = client.km.provisioner.pid
            for number in range(1, passes + 1):
                sampler = TreeSampler(pid, *intervals)
                sampler.start()
                started = time.perf_counter()
                try:
                    for index, cell in enumerate(nb.cells):
                        if cell.cell_type == "code":
                            client.execute_cell(cell, index)  # raises on a failing cell
                    cells = time.perf_counter() - started
                finally:
                    footprint = sampler.stop()
                hwm = _status_kib(pid, "VmHWM")
                results.append(
                    Pass(
                        chapter["file"],
                        number,
                        kernel_start,
                        cells,
                        footprint,
                        hwm * 1024 if hwm is not None else None,
                        psutil.getloadavg()[0],
                        available_before,
                    )
                )
    if save is not None:
        nbformat.write(nb, save / chapter["path"].name)
    return results


def mib(value: int | None) -> str:
    return "n/a" if not value else f"{value / MIB:.0f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chapters", nargs="+", metavar="FILE", help="default: every chapter")
    parser.add_argument("--interval", type=float, default=0.05, help="seconds between samples")
    parser.add_argument(
        "--smaps-interval", type=float, default=0.5, help="seconds between PSS/anon samples"
    )
    parser.add_argument(
        "--passes", type=int, default=1, help='"Run All"s per kernel (a learner re-running)'
    )
    parser.add_argument(
        "--save", type=Path, metavar="DIR", help="write the executed notebooks into DIR"
    )
    args = parser.parse_args()
    if args.passes < 1 or args.interval <= 0 or args.smaps_interval <= 0:
        parser.error("--passes must be at least 1 and both intervals above 0")
    if args.save is not None:
        args.save.mkdir(parents=True, exist_ok=True)

    chapters = load_manifest()["chapters"]
    if args.chapters:
        unknown = set(args.chapters) - {c["file"] for c in chapters}
        if unknown:
            parser.error(f"not chapters in jupyter_book.toml: {sorted(unknown)}")
        chapters = [c for c in chapters if c["file"] in args.chapters]

    runs = []
    intervals = (args.interval, args.smaps_interval)
    for chapter in chapters:
        for run in run_chapter(chapter, intervals, args.passes, args.save):
            fp = run.footprint
            print(
                f"{run.file} pass {run.number}: cells {run.cells:.1f} s "
                f"(kernel start {run.kernel_start:.1f} s), "
                f"peak RSS of the tree {mib(fp.rss_peak)} MiB, PSS {mib(fp.pss_peak)} MiB, "
                f"anonymous {mib(fp.anon_peak)} MiB, machine {mib(run.machine_drop)} MiB, "
                f"kernel alone {mib(fp.kernel_rss_peak)} MiB sampled / "
                f"{mib(run.kernel_hwm)} MiB VmHWM, up to {fp.processes_peak} processes "
                f"({fp.samples} RSS samples, one per {run.cells / fp.samples * 1000:.0f} ms; "
                f"{fp.smaps_samples} PSS/anon samples; "
                f"sampler CPU {fp.sampler_cpu:.1f} s; load average {run.load:.1f}; "
                f"descendants: {', '.join(sorted(fp.commands)) or 'none'})",
                flush=True,
            )
            runs.append(run)

    print()
    print(
        "| chapter | pass | cells (s) | kernel start (s) | peak RSS, tree (MiB) "
        "| peak PSS, tree (MiB) | peak anonymous, tree (MiB) | machine, MemAvailable drop (MiB) "
        "| kernel peak RSS, sampled / VmHWM (MiB) | processes at most | load average |"
    )
    print("| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |")
    for run in runs:
        fp = run.footprint
        missing = ""
        if fp.pss_unreadable:
            missing = f" (without {', '.join(sorted(fp.pss_unreadable))}: unreadable)"
        print(
            f"| {run.file} | {run.number} | {run.cells:.1f} | {run.kernel_start:.1f} "
            f"| {mib(fp.rss_peak)} | {mib(fp.pss_peak)}{missing} | {mib(fp.anon_peak)}{missing} "
            f"| {mib(run.machine_drop)} "
            f"| {mib(fp.kernel_rss_peak)} / {mib(run.kernel_hwm)} | {fp.processes_peak} "
            f"| {run.load:.1f} |"
        )
    print(
        f"\nRSS sampled every {args.interval * 1000:.0f} ms, PSS and anonymous every "
        f"{args.smaps_interval * 1000:.0f} ms, each plus the time a sample takes; "
        f"1 MiB = 1024 * 1024 bytes; {psutil.cpu_count()} logical CPUs; load average: the "
        "machine's 1-minute load average at the end of each pass."
    )


if __name__ == "__main__":
    main()
