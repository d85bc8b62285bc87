#!/usr/bin/env python3
"""mirrorbook's task runner: it dispatches each command to bookbuild/ (docs/design/build.md).

Needs only Python (3.11, 3.12 or 3.13) and pip to start: it makes the environments.

Example:
    python3 dev.py help     # the commands, as USAGE says them
"""

from __future__ import annotations

import sys
import time

# Standard-library-only imports at the top, like this file: docs/design/build.md.
from bookbuild.environments import setup
from bookbuild.locks import lock, test_latest
from bookbuild.nextrelease import test_next
from bookbuild.shell import say
from bookbuild.system import CHROMIUM, DOT
from bookbuild.tasks import TASKS, run_task
from bookbuild.testrun import run_tests

USAGE = """mirrorbook's task runner. Needs only Python (3.11, 3.12 or 3.13) and pip to start.

    python3 dev.py book         set up, execute every chapter, build the HTML book and its
                                browser labs (JupyterLite, build/_build/html/lite/), and
                                write the labs (student editions and autograders, build/labs/)
    python3 dev.py labs [CH..]  set up and write only the labs
    python3 dev.py grade CH PATH..  grade a class's notebooks of chapter CH (e.g. 3): PATH is
                                a folder of them or the notebooks, one per student (the file
                                name is the student); several at once (--jobs N, default the
                                cores), each in a sandbox within --timeout SECONDS (900);
                                prints a table, merges build/labs/<chapter>/grades.csv and
                                writes feedback/<student>.md (--out FOLDER); --seed N repeats
                                a grading's draws; exit status 1 if any was not graded
    python3 dev.py test         set up, then lint, doctests, unit and browser tests and nbval;
                                then the same tests on the other supported Pythons and at
                                the oldest supported TensorFlow (Colab's), and a summary
    python3 dev.py lock         refresh requirements/*.txt (uv pip compile), not part of CI
    python3 dev.py release V    set the book's version V everywhere: a release (0.2.0) points
                                every chapter's set-up cell and Colab link at its tag v0.2.0,
                                a development version (0.3.0.dev0) at the branch
                                (docs/releasing.md)
    python3 dev.py test-latest  run the tests against the newest releases on the package
                                index, ignoring the lock, and report what broke (not CI)
    python3 dev.py test-next    the same against the next TensorFlow above the supported
                                range (its keras-nightly and the keras release; not CI)

`python3 dev.py test --jobs reference` runs only the first job, `--quick` only its lint,
doctests and unit tests; the jobs' stages run side by side, `--lanes N` at once (default 3)
and `--spare N` more while a core stands idle (default 1).
Set-up makes virtual environments (.venv for the book, .venvs/ for the other test jobs)
pinned by requirements/*.txt, reused until a lock or pyproject file changes, and installs
graphviz's `dot` (and, for the tests, Chromium) with apt-get when run as root. Everything
the book needs is read from jupyter_book.toml. This file only dispatches the commands; the
set-up, the test jobs and the book's own logic are in bookbuild/ (docs/developing.md).
"""


def main(argv: list[str]) -> None:
    """Run the command ``argv[1]`` (``help`` if none) with the arguments after it."""
    command, args = (argv[1] if len(argv) > 1 else "help"), argv[2:]
    start = time.perf_counter()
    if command in TASKS:  # internal: run inside an environment by the commands below
        run_task(command, args)
        return
    status = 0
    if command == "book":
        book = setup(DOT)
        book.dev("_execute")
        book.dev("_built")  # the HTML book, its browser labs, the classroom labs
    elif command == "labs":
        setup().dev("_labs", *args)
    elif command == "grade":
        setup().dev("_grade", *args)
    elif command == "test":
        status = run_tests(args, start)
    elif command == "lock":
        lock()
    elif command == "release":
        setup().dev("_release", *args)
    elif command == "test-latest":
        status = test_latest(setup(DOT, CHROMIUM))
    elif command == "test-next":
        status = test_next(args)
    else:
        print(USAGE)
        raise SystemExit(0 if command in ("help", "-h", "--help") else 2)
    say(f"{command}: done in {time.perf_counter() - start:.0f} s")
    raise SystemExit(status)


if __name__ == "__main__":
    main(sys.argv)
