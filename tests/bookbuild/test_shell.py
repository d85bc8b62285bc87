"""bookbuild.shell: commands run from the top folder, and the CPU seconds they use."""

import os
import signal
import subprocess
import sys
import threading
import time

import pytest

from bookbuild import ROOT
from bookbuild.shell import cpu_counted, run

# About 0.3 CPU seconds of work, however loaded the machine is.
BUSY = "import time\nt = time.process_time()\nwhile time.process_time() - t < 0.3: pass"


def test_a_busy_command_counts_its_cpu_seconds_and_a_sleeping_one_almost_none():
    with cpu_counted() as busy:
        run(sys.executable, "-c", BUSY)
    with cpu_counted() as idle:
        run("sleep", "0.3")
    assert busy.seconds >= 0.2
    assert idle.seconds < 0.1


def test_the_processes_a_command_waits_for_are_counted_too():
    spawns = f"import subprocess, sys\nsubprocess.run([sys.executable, '-c', {BUSY!r}])"
    started = time.process_time()
    with cpu_counted() as cpu:
        run(sys.executable, "-c", spawns)
    assert cpu.seconds >= 0.2
    assert time.process_time() - started < 0.2  # not this process's own seconds


def test_nested_counts_both_grow_and_a_failing_command_is_counted():
    with cpu_counted() as outer:
        with cpu_counted() as inner, pytest.raises(SystemExit, match=r"failed \(4\)"):
            run(sys.executable, "-c", f"{BUSY}\nraise SystemExit(4)")
        run("true")
    assert inner.seconds >= 0.2
    assert outer.seconds >= inner.seconds


def test_a_count_sees_only_the_commands_of_its_own_thread():
    other = []

    def busy_elsewhere():
        with cpu_counted() as cpu:
            run(sys.executable, "-c", BUSY)
        other.append(cpu.seconds)

    with cpu_counted() as mine:
        thread = threading.Thread(target=busy_elsewhere)
        thread.start()
        run("sleep", "0.3")
        thread.join()
    assert other[0] >= 0.2
    assert mine.seconds < 0.1


def test_the_command_runs_in_the_top_folder_with_the_variables_given(tmp_path):
    out = tmp_path / "out.txt"
    run(
        sys.executable,
        "-c",
        "import os; print(os.getcwd(), os.environ['X'])",
        cwd=tmp_path,
        env={"X": "given"},
        stdout=out.open("w"),
    )
    assert out.read_text().split() == [str(tmp_path), "given"]


def test_an_interrupt_kills_the_command(tmp_path):
    # In a process of its own: a ^C sent to this test session would reach whatever it runs.
    # It handles ^C as a terminal's Python does, even when started from a background job,
    # which inherits SIGINT ignored (a shell's `&`, and so maybe CI).
    pid_file = tmp_path / "pid"
    script = (
        "import signal, sys\nsignal.signal(signal.SIGINT, signal.default_int_handler)\n"
        f"sys.path.insert(0, {str(ROOT)!r})\nfrom bookbuild.shell import run\n"
        f"try:\n    run('sh', '-c', 'echo $$ > {pid_file}; exec sleep 60')\n"
        "except KeyboardInterrupt:\n    print('interrupted')\n"
    )
    owner = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 60
    while not (pid_file.exists() and pid_file.read_text().strip()):
        assert time.monotonic() < deadline and owner.poll() is None, "the command never started"
        time.sleep(0.05)
    started = time.monotonic()
    owner.send_signal(signal.SIGINT)
    out, _ = owner.communicate(timeout=30)
    assert out.strip() == "interrupted" and time.monotonic() - started < 10
    with pytest.raises(ProcessLookupError):  # killed and reaped
        os.kill(int(pid_file.read_text()), 0)
