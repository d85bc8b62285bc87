"""Shared fixtures. The whole session runs on REPLICAS simulated replicas (or real GPUs)."""

from __future__ import annotations

import os
import re
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))  # for dev.py (the task runner) and bookbuild/ (the book's logic)

import mirrorkit as mk  # noqa: E402

REPLICAS = 4

# Before anything starts TensorFlow: a process picks its devices once.
mk.make_reproducible(0)
DEVICES = mk.simulate_replicas(REPLICAS)


@pytest.fixture(scope="session")
def devices() -> tuple[str, ...]:
    """The REPLICAS device names of this test session."""
    return DEVICES


@pytest.fixture(scope="session")
def strategy():
    """The session's MirroredStrategy (collective all-reduce) over every replica."""
    return mk.make_strategy()


@pytest.fixture
def seeded():
    """Re-seed Python, NumPy and TensorFlow before a test that draws random numbers."""
    mk.make_reproducible(0)


# Local clusters. Every process of an owner's runs has "mirrorkit-cluster-<owner pid>-" in its
# command line (forked ones: their warm process's). The owners are this test process and the
# owner scripts tests start (they add their pids); other test runs on the machine are not ours.
CLUSTER_MARKER = "mirrorkit-cluster-"
CLUSTER_OWNERS = {os.getpid()}


def our_cluster_processes() -> set[int]:
    """Supervisors and workers of our owners' runs, and warm processes of ended owners."""
    from mirrorkit.cluster import _procs, _warm

    found = {
        pid
        for owner in CLUSTER_OWNERS
        for pid in _procs.processes_with(f"{CLUSTER_MARKER}{owner}-")
    }
    return found - {_warm.current_pid()}  # this process's warm process outlives its runs


def wait_gone(pids, within: float = 15.0) -> list[int]:
    """The processes among ``pids`` still running after ``within`` seconds (at best none)."""
    from mirrorkit.cluster import _procs

    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        alive = [pid for pid in pids if _procs.is_running(pid)]
        if not alive:
            return []
        time.sleep(0.1)
    return alive


@pytest.fixture
def no_orphans():
    """The test leaves no supervisor or worker of its clusters behind."""
    before = our_cluster_processes()
    yield
    left = wait_gone(sorted(our_cluster_processes() - before), within=10.0)
    from mirrorkit.cluster import _procs, _reaper

    named = [f"{_reaper.describe(pid)} named {_procs.name_of(pid)!r}" for pid in left]
    assert left == [], f"processes left behind: {named}"


@pytest.fixture(scope="session")
def manifest() -> dict:
    """The book manifest jupyter_book.toml, as the build reads it."""
    from bookbuild.manifest import load_manifest

    return load_manifest()


@pytest.fixture(scope="session")
def book_html(tmp_path_factory) -> Path:
    """The HTML book: this test run's shared build (bookbuild.built, with its lab site), or,
    in a pytest run alone, built once per session into a temporary folder (without it)."""
    from bookbuild import built
    from bookbuild.jupyterbook import build_html

    return built.shared("html") or build_html(tmp_path_factory.mktemp("book"))


# Text from Python's or TensorFlow's insides: never part of a message written for a learner.
INTERNAL_TEXT = (
    "Traceback",
    "in user code",
    'File "',
    "site-packages",
    "tensorflow/python",
    "keras/src",
    "Unknown attribute",
    "inspect._empty",
    "\x1b[",
)


def assert_clear_message(message: str, argument: str, match: str) -> None:
    """A message for a learner: names ``argument``, says what to do (``match``), no internals."""
    assert argument in message, f"the message does not name {argument!r}: {message}"
    assert re.search(match, message, re.S), f"{match!r} not in: {message}"
    leaked = [text for text in INTERNAL_TEXT if text in message]
    assert not leaked, f"internal text {leaked} in: {message}"


@pytest.fixture(scope="session")
def refuses():
    """``refuses(call, error, argument, match)``: ``call()`` raises ``error`` with a clear message.

    Clear means :func:`assert_clear_message`: it names ``argument``, matches ``match`` (the
    part that says what to do) and carries no traceback or TensorFlow-internal text. Returns
    the message. Tables of wrong inputs marked ``wrong_inputs(entry)`` use it.
    """

    def check(call, error: type[BaseException], argument: str, match: str) -> str:
        with pytest.raises(error) as raised:
            call()
        message = str(raised.value)
        assert_clear_message(message, argument, match)
        return message

    return check


@pytest.fixture(scope="session")
def clear_message():
    """:func:`assert_clear_message`, for a table whose messages come from a command's output."""
    return assert_clear_message


@pytest.fixture(scope="session")
def judged(refuses, clear_message):
    """``judged(call, error, argument, match)``, for the tables of a learner check's wrong inputs.

    A check answers most mistakes with a failed result instead of an exception: with ``error``
    None, ``call()`` must return a failed result whose message is clear (see ``refuses``);
    otherwise it must raise ``error`` with a clear message.
    """

    def check(call, error, argument: str, match: str) -> None:
        if error is None:
            result = call()
            assert not result.passed, result
            clear_message(result.message, argument, match)
        else:
            refuses(call, error, argument, match)

    return check
