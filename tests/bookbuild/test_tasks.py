"""bookbuild.tasks: the internal `dev.py _...` commands and their arguments."""

import pytest

from bookbuild import tasks


@pytest.fixture
def executed(monkeypatch):
    calls = []
    monkeypatch.setattr(
        tasks, "execute_chapters", lambda *files, into=None: calls.append((files, into))
    )
    return calls


def test_execute_runs_every_chapter_in_place_by_default(executed):
    tasks.run_task("_execute")
    assert executed == [((), None)]


def test_execute_into_a_folder_runs_the_named_chapters_as_copies(executed, tmp_path):
    tasks.run_task("_execute", ["--into", str(tmp_path), "01_a.ipynb", "02_b.ipynb"])
    assert executed == [(("01_a.ipynb", "02_b.ipynb"), tmp_path)]


def test_checks_run_their_commands_in_order_and_stop_at_the_first_failure(monkeypatch):
    ran = []

    def run(*command):
        ran.append(command)
        raise SystemExit("[dev] failed (1): doctests")

    monkeypatch.setattr(tasks, "run", run)
    with pytest.raises(SystemExit, match="doctests"):
        tasks.run_task("_unit")
    assert len(ran) == 1 and "--doctest-modules" in ran[0]


def test_an_unknown_task_is_refused_by_name():
    with pytest.raises(SystemExit, match="no task '_deploy'"):
        tasks.run_task("_deploy", [])
