"""The hosted test job: each chapter opened alone where only TensorFlow is installed (Colab).

The job's environment holds what Colab preinstalls (:data:`HOSTED_BASE`, at the versions of
``requirements/colab.txt``) and not mirrorkit: each chapter's set-up cell must install it,
from a clone of this working tree, and change nothing that was there. Then the job installs the test
tools and runs the doctests and tests like the other Pythons' jobs.

Example:
    >>> "tensorflow" in HOSTED_BASE and "mirrorkit" not in HOSTED_BASE
    True
"""

from __future__ import annotations

import json
import shutil
import subprocess
import tempfile
from pathlib import Path

from bookbuild import ROOT
from bookbuild.environments import (
    HOSTED_LOCK,
    HOSTED_PYTHON,
    PYPROJECTS,
    VENVS,
    Env,
    ensure_env,
    find_python,
    optional_requirements,
)
from bookbuild.jobs import (
    OTHER_JOBS_SKIP,
    RUN_ALL_ELSEWHERE,
    Job,
    doctest_stage,
    suite_stages,
    weight,
)
from bookbuild.lanes import Stage
from bookbuild.manifest import load_manifest
from bookbuild.shell import say

# What the hosted environment holds before any chapter runs, as Colab has it (versions from
# HOSTED_LOCK): TensorFlow and Keras at the low end of mirrorkit's range, the libraries the
# widgets draw with, and a kernel to run notebooks. mirrorkit is not there: each chapter's
# set-up cell must install it, and change none of these (Colab's ipywidgets 7.7.1 included).
HOSTED_BASE = (
    *("tensorflow", "keras", "numpy", "matplotlib", "traitlets", "cloudpickle", "graphviz"),
    *("protobuf", "h5py", "lazy-loader", "ipykernel", "nbclient", "nbformat"),
    *("ipywidgets", "widgetsnbextension", "jupyterlab-widgets", "ipython-genutils", "notebook"),
)


# The unit tests only. Of the chapters part, what executes a chapter (test_rerun.py) the hosted
# execution has just done; the rest reads what the reference job built once (the HTML book and
# the lab site's wheels: tests/book/test_build.py, tests/bookbuild/test_lite_wheels.py), which
# no TensorFlow, Keras or ipywidgets version changes, and the python3.13 job reads it with this
# job's Python. A stage of its own here cost a process, its TensorFlow and its collection.
HOSTED_PARTS = ("unit tests",)


def hosted_job() -> Job:
    """The hosted job: set-up, each chapter alone and its solutions, test tools, doctests, tests.

    It reads nothing the reference job builds (:data:`HOSTED_PARTS`), so it never waits for it.

    Example:
        >>> hosted_job().stages[1].name  # doctest: +SKIP
        'hosted execution'
    """
    what = (
        f"Python {HOSTED_PYTHON}, colab.txt (Colab's TensorFlow, Keras, ipywidgets 7.7.1): each "
        "chapter alone, its set-up cell installing mirrorkit from a clone of this tree; "
        "doctests, unit tests"
    )
    interpreter, how = find_python(HOSTED_PYTHON)
    if interpreter is None:
        return Job(name="hosted", what=what, detail=f"Python {HOSTED_PYTHON}: {how}")
    env = Env(
        path=VENVS / "hosted", interpreter=interpreter, lock=HOSTED_LOCK, packages=HOSTED_BASE
    )

    def set_up() -> None:
        ensure_env(env, fresh=True)  # fresh: the set-up cell must find mirrorkit missing

    def test_tools() -> None:  # after the chapters: their set-up cells must find none of it
        env.install(*(r for p in PYPROJECTS for r in optional_requirements(p, "book", "test")))

    tools = "set-up of the test tools"
    stages = [
        Stage("hosted", "set-up", set_up, weight=weight("hosted", "set-up")),
        Stage(
            "hosted",
            "hosted execution",
            lambda: execute_alone(env),
            after=("set-up",),
            weight=weight("hosted", "hosted execution"),
        ),
        Stage("hosted", tools, test_tools, after=("hosted execution",), kind="set-up", weight=60),
        doctest_stage("hosted", env, after=tools),
        *suite_stages(
            "hosted",
            env,
            HOSTED_PARTS,
            after=tools,
            skip=f"{OTHER_JOBS_SKIP} or {RUN_ALL_ELSEWHERE}",  # execute_alone ran them
        ),
    ]
    return Job(name="hosted", what=what, stages=stages, env=env)


def execute_alone(env: Env) -> None:
    """Execute every chapter in ``env``, its set-up cell installing a clone of this tree.

    After each chapter, its kernel runs the Solutions block and the exercises' checks, which
    must pass (``_execute --solutions``): the chapter test of the other jobs, done here once.

    Args:
        env: The hosted environment.

    Raises:
        SystemExit: If a chapter fails, or the first one's set-up cell did not install cleanly.

    Example:
        >>> execute_alone(hosted_job().env)  # doctest: +SKIP
    """
    with tempfile.TemporaryDirectory(prefix="mirrorbook-hosted-") as tmp:
        source = clone_of_this_tree(Path(tmp) / "clone")
        book = Path(tmp) / "notebooks"
        book.mkdir()
        env.dev(
            "_execute",
            "--into",
            book,
            "--solutions",
            env={"MIRRORBOOK_SOURCE": source, "PIP_CONSTRAINT": str(HOSTED_LOCK)},
        )
        check_hosted_setup(book)


def clone_of_this_tree(target: Path) -> str:
    """A git clone of this working tree, uncommitted changes included; its pip source URL.

    Args:
        target: The clone's folder (made).

    Returns:
        ``git+file:///...@<commit>``.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:  # doctest: +SKIP
        ...     clone_of_this_tree(Path(folder) / "clone").startswith("git+file:")
        True
    """
    subprocess.run(["git", "clone", "-q", "--no-local", ROOT, target], check=True)
    listed = (
        subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT,
            capture_output=True,
            check=True,
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, listed):
        source, copy = ROOT / name, target / name
        if source.is_file():
            copy.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, copy)
        elif copy.exists():
            copy.unlink()  # deleted in the working tree
    git = ["git", "-c", "user.name=dev.py", "-c", "user.email=dev@localhost"]
    subprocess.run([*git, "add", "-A"], cwd=target, check=True)
    subprocess.run(
        [*git, "commit", "-q", "--allow-empty", "-m", "working tree"], cwd=target, check=True
    )
    commit = subprocess.run(
        ["git", "rev-parse", "HEAD"], cwd=target, capture_output=True, text=True, check=True
    ).stdout.strip()
    return f"git+{target.as_uri()}@{commit}"


def check_hosted_setup(folder: Path) -> None:
    """The first chapter's set-up cell installed mirrorkit and left TensorFlow alone.

    Args:
        folder: Where the executed chapters are.

    Raises:
        SystemExit: If the cell's output says otherwise; the message quotes it.

    Example:
        >>> check_hosted_setup(Path("executed-notebooks"))  # doctest: +SKIP
        [dev] the set-up cell of 01_strategy_scope.ipynb printed: ... are installed ...
    """
    first = load_manifest()["chapters"][0]
    nb = json.loads((folder / first["path"].name).read_text())
    cell = next(c for c in nb["cells"] if "hosted-setup" in c["metadata"].get("tags", []))
    text = "".join("".join(o["text"]) for o in cell["outputs"] if o.get("name") == "stdout")
    say(f"the set-up cell of {first['file']} printed: {text.strip()}")
    if "are installed" not in text or "pip changed" in text or "Restart" in text:
        raise SystemExit(
            "[dev] the hosted set-up did not install mirrorkit cleanly: a Colab learner would "
            f"have to restart or would lose Colab's TensorFlow. It printed: {text.strip()!r}"
        )
