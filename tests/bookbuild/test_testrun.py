"""bookbuild.testrun: the jobs of `dev.py test`, their stages and the summary."""

from bookbuild import hosted, tasks, testrun
from bookbuild.checks import SUITE_PARTS
from bookbuild.environments import HOSTED_PYTHON, Env, book_env
from bookbuild.jobs import BOOK_ENV_DOCTESTS, Job
from bookbuild.lanes import Stage, run_stages
from bookbuild.system import interpreter_version
from bookbuild.timing import EXPECTED


def test_every_task_the_jobs_start_exists(monkeypatch):
    started = set()
    monkeypatch.setattr(Env, "dev", lambda self, task, *args, **kw: started.add(task))
    monkeypatch.setattr("bookbuild.jobs.ensure_env", lambda env, **kw: None)
    monkeypatch.setattr(hosted, "ensure_env", lambda env, **kw: None)
    monkeypatch.setattr("bookbuild.gpujob.ensure_env", lambda env, **kw: None)  # 3 GB of CUDA
    monkeypatch.setattr(hosted, "clone_of_this_tree", lambda target: "git+file:///x@0")
    monkeypatch.setattr(hosted, "check_hosted_setup", lambda folder: None)
    monkeypatch.setattr(Env, "pip", lambda self, *args, **kw: None)
    monkeypatch.setattr(Env, "install", lambda self, *args, **kw: None)
    jobs = testrun.test_jobs(book_env())
    for stage in [s for job in jobs for s in job.stages or ()]:
        stage.action()
    assert {"_lint", "_doctests", "_suite", "_nbval", "_execute"} <= started <= set(tasks.TASKS)
    assert "_versions" in tasks.TASKS


def test_every_job_runs_every_part_of_the_suite_it_can_and_quick_only_the_unit_tests():
    jobs = {job.name: job for job in testrun.test_jobs(book_env())}
    kinds = {name: {s.kind for s in job.stages or ()} for name, job in jobs.items()}
    assert kinds["reference"] == {"set-up", "lint", "build", "doctests", *SUITE_PARTS, "nbval"}
    # What is built once (the book, its lab site, the labs) is read by every job after it.
    for job in jobs.values():
        for stage in job.stages or ():
            reads = stage.kind in ("chapters", "grading", "browser")
            assert stage.needs == (("reference/build",) if reads else ()), stage.key
    # Its chapters part would read what the python3.13 job reads on the same Python.
    assert kinds["hosted"] == {"set-up", "hosted execution", "doctests", "unit tests"}
    full = {"set-up", "doctests", "unit tests", "chapters"}
    # The gpu job runs its own checks where a GPU is visible (tests/bookbuild/test_gpu_job.py).
    assert jobs["gpu"].stages is None or kinds["gpu"] == {"set-up", "gpu checks"}
    for name in set(jobs) - {"reference", "hosted", "gpu"}:
        # On the hosted job's Python the unit tests are the hosted job's (Colab's TensorFlow).
        want = full - {"unit tests"} if name == f"python{HOSTED_PYTHON}" else full
        assert jobs[name].stages is None or kinds[name] == want, name
    if interpreter_version(book_env().interpreter) != HOSTED_PYTHON:
        assert f"python{HOSTED_PYTHON}" in jobs  # the lock's TensorFlow on every Python
    (quick,) = testrun.test_jobs(book_env(), quick=True)
    assert {s.kind for s in quick.stages} == {"set-up", "lint", "doctests", "unit tests"}
    only = testrun.test_jobs(book_env(), {"hosted"})
    assert [job.name for job in only if job.stages] == ["hosted"]
    assert not any(s.needs for job in only for s in job.stages or ())  # it builds its own


def test_a_job_that_cannot_run_is_reported_by_name(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(testrun, "TIMES", tmp_path / "times.json")
    monkeypatch.setattr("bookbuild.jobs.LOGS", tmp_path)
    jobs = [
        Job("reference", "lint", [Stage("reference", "lint", lambda: None)]),
        Job("python3.13", "tests", None, detail="Python 3.13: no interpreter: looked at x"),
    ]
    run_stages(jobs[0].stages, lanes=1, logs=tmp_path, echo=False)
    assert testrun.summarize(jobs, wall=1.0) == 0
    out = capsys.readouterr().out
    assert "python3.13: NOT RUN: Python 3.13: no interpreter" in out
    assert "where the time went" in out and "the ten slowest tests" in out
    assert (tmp_path / "times.json").is_file()

    def boom():
        raise SystemExit("[dev] boom")

    failing = Job("hosted", "x", [Stage("hosted", "set-up", boom)])
    run_stages(failing.stages, lanes=1, logs=tmp_path, echo=False)
    assert testrun.summarize([failing], wall=1.0) == 1
    assert "hosted/set-up: FAILED: [dev] boom" in capsys.readouterr().out


def test_only_the_reference_job_runs_the_doctests_of_what_the_books_environment_alone_runs(
    monkeypatch,
):
    asked = {}
    monkeypatch.setattr(Env, "dev", lambda self, task, *args, **kw: asked.update({task: args}))
    jobs = testrun.test_jobs(book_env())
    doctests = [s for job in jobs for s in job.stages or () if s.kind == "doctests"]
    for stage in doctests:
        stage.action()
        args = asked["_doctests"]
        deselected = {args[i + 1] for i, arg in enumerate(args) if arg == "--deselect"}
        want = set() if stage.job == "reference" else set(BOOK_ENV_DOCTESTS)
        assert deselected == want, stage.key
    assert [s.job for s in doctests][0] == "reference"


def test_the_stages_are_ordered_by_what_they_took_in_the_last_measured_run():
    stages = [s for job in testrun.test_jobs(book_env()) for s in job.stages or ()]
    unit = [s for s in stages if (s.job, s.kind) == ("hosted", "unit tests")]
    assert unit and all(s.weight == EXPECTED["hosted", "unit tests"] / len(unit) for s in unit)
    lint = next(s for s in stages if s.key == "reference/lint")
    assert lint.weight == EXPECTED["reference", "lint"]
