"""bookbuild.tasks: the internal `dev.py _...` commands and their arguments."""

from pathlib import Path

import pytest

from bookbuild import tasks


@pytest.fixture
def executed(monkeypatch):
    calls = []
    monkeypatch.setattr(
        tasks,
        "execute_chapters",
        lambda *files, into=None, solutions=False: calls.append((files, into, solutions)),
    )
    return calls


def test_execute_runs_every_chapter_in_place_by_default(executed):
    tasks.run_task("_execute")
    assert executed == [((), None, False)]


def test_execute_into_a_folder_runs_the_named_chapters_as_copies(executed, tmp_path):
    tasks.run_task("_execute", ["--into", str(tmp_path), "01_a.ipynb", "02_b.ipynb"])
    assert executed == [(("01_a.ipynb", "02_b.ipynb"), tmp_path, False)]


def test_execute_with_solutions_runs_them_after_each_chapter(executed, tmp_path):
    tasks.run_task("_execute", ["--into", str(tmp_path), "--solutions"])
    assert executed == [((), tmp_path, True)]


def test_checks_run_their_commands_in_order_and_stop_at_the_first_failure(monkeypatch):
    ran = []

    def run(*command):
        ran.append(command)
        raise SystemExit("[dev] failed (1): ruff check")

    monkeypatch.setattr(tasks, "run", run)
    with pytest.raises(SystemExit, match="ruff check"):
        tasks.run_task("_lint")
    assert len(ran) == 1 and ran[0][-2:] == ("check", ".")


@pytest.fixture
def ran(monkeypatch):
    calls = []
    monkeypatch.setattr(tasks, "run", lambda *command: calls.append(command))
    return calls


def test_a_suite_part_runs_its_shard_with_the_markers_and_arguments_given(ran):
    tasks.run_task("_suite", ["chapters", "--skip", "grading", "--junitxml=x.xml"])
    (command,) = ran
    assert command[5:] == (
        "tests",
        "-m",
        "(book and not (grading or browser)) and not (grading)",
        "--junitxml=x.xml",
    )
    ran.clear()
    tasks.run_task("_suite", ["unit tests", "--shard", "2/2"])
    assert "tests" not in ran[0] and all(a.startswith("tests/") for a in ran[0][5:-2])
    assert ran[0][-2:] == ("-m", "not (book or grading or browser)")


def test_the_shards_of_a_part_together_collect_every_test_file_once(ran):
    for index in (1, 2, 3):
        tasks.run_task("_suite", ["unit tests", "--shard", f"{index}/3"])
    files = [a for command in ran for a in command[5:-2]]
    assert len(files) == len(set(files)) == len(list(tasks.ROOT.glob("tests/**/test_*.py")))


def test_nbval_runs_copies_of_the_chapters_outside_the_book_folder(ran, manifest):
    tasks.run_task("_nbval", ["--junitxml=n.xml"])
    (command,) = ran
    chapters = [a for a in command if a.endswith(".ipynb")]
    assert [Path(c).name for c in chapters] == [c["file"] for c in manifest["chapters"]]
    assert not any(c.startswith(str(manifest["source"])) for c in chapters)
    assert "--junitxml=n.xml" in command


def test_an_unknown_task_is_refused_by_name():
    with pytest.raises(SystemExit, match="no task '_deploy'"):
        tasks.run_task("_deploy", [])
