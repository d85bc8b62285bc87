"""Shared fixtures. The whole session runs on REPLICAS simulated replicas (or real GPUs)."""

from __future__ import annotations

import sys
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


@pytest.fixture(scope="session")
def manifest() -> dict:
    """The book manifest jupyter_book.toml, as the build reads it."""
    from bookbuild.manifest import load_manifest

    return load_manifest()


@pytest.fixture(scope="session")
def book_html(tmp_path_factory) -> Path:
    """The HTML book, built once per session from jupyter_book.toml into a temporary folder."""
    from bookbuild.jupyterbook import build_html

    return build_html(tmp_path_factory.mktemp("book"))
