"""One warm process for a whole pytest session's local clusters (a fixture, and a plugin).

``tests/conftest.py`` imports the fixture for the test suite; the doctests of ``dev.py
test`` load this module as a plugin (``-p tests.one_warm_process``,
:func:`bookbuild.checks.doctest_command`), since they collect no ``tests/`` folder.
"""

from __future__ import annotations

import pytest

PER_TEST = "PYTEST_CURRENT_TEST"  # set by pytest for each test, read by no worker


@pytest.fixture(scope="session", autouse=True)
def one_warm_process_across_tests():
    """The session's local clusters fork from one warm process, not one per test.

    A warm process (``mirrorkit.cluster._warm``) serves the runs whose workers get the same
    environment; pytest gives ``PYTEST_CURRENT_TEST`` a new value for every test, which no
    worker reads, and with it every test's first run started a warm process that imported
    TensorFlow again (about 7 CPU s each; tests/mirrorkit/cluster/test_launcher.py alone
    started 15, now 1). Its key leaves that variable out here; any other change of the
    environment still gets a warm process of its own, as it must. Once
    ``_warm.environment_key`` leaves it out itself, this fixture has nothing left to do.
    """
    from mirrorkit.cluster import _warm

    keyed = _warm.environment_key

    def key(env: dict[str, str]) -> str:
        return keyed({name: value for name, value in env.items() if name != PER_TEST})

    patch = pytest.MonkeyPatch()
    patch.setattr(_warm, "environment_key", key)
    yield
    patch.undo()
