#!/usr/bin/env python3
"""mirrorbook's task runner. Needs only Python 3.11 and pip to start.

    python3 dev.py book    set up, execute every chapter, build the HTML book
    python3 dev.py test    set up, then lint, doctests, unit tests, browser tests and nbval

Set-up makes a virtual environment in .venv (reused while the pyproject files are
unchanged) and installs graphviz's `dot` with apt-get when run as root. Everything
the book needs is read from jupyter_book.toml.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent
VENV = ROOT / ".venv"
MANIFEST = ROOT / "jupyter_book.toml"
SANITIZE = ROOT / "tests" / "book" / "nbval_sanitize.cfg"
PYPROJECTS = (ROOT / "pyproject.toml", ROOT / "widgets" / "pyproject.toml")
REQUIREMENTS = ["-e", f"{ROOT}[book,test]", "-e", f"{ROOT / 'widgets'}[test]"]
NBVAL_MODES = {"strict": "--nbval", "lax": "--nbval-lax"}

# Kernels started from here use this environment's kernel spec, not a user-wide one.
CHILD_ENV = {"JUPYTER_PREFER_ENV_PATH": "1", "PYDEVD_DISABLE_FILE_VALIDATION": "1"}


# ---------------------------------------------------------------- the manifest


def load_manifest(path: Path = MANIFEST) -> dict:
    """Read jupyter_book.toml; each chapter gets [defaults] merged under its own keys."""
    with open(path, "rb") as f:
        data = tomllib.load(f)
    book, defaults = data["book"], data.get("defaults", {})
    source = ROOT / book.get("source", "book")
    chapters = []
    for entry in data.get("chapters", []):
        chapter = {**defaults, **entry}
        chapter["path"] = source / chapter["file"]
        if chapter["nbval"] not in NBVAL_MODES:
            raise SystemExit(
                f"{path}: chapter {chapter['file']}: nbval must be one of {list(NBVAL_MODES)}"
            )
        chapters.append(chapter)
    if not chapters:
        raise SystemExit(f"{path}: no [[chapters]] listed")
    return {
        "book": book,
        "source": source,
        "chapters": chapters,
        "output": ROOT / book.get("output", "build"),
    }


def jupyter_book_files(manifest: dict) -> tuple[dict, dict]:
    """The _config.yml and _toc.yml contents that Jupyter Book 1 wants (JSON is valid YAML)."""
    book = manifest["book"]
    config = {
        "title": book["title"],
        "author": book["author"],
        "copyright": str(book.get("copyright", "")),
        "only_build_toc_files": True,
        # Chapters are executed by `dev.py book` and stored with their outputs.
        "execute": {"execute_notebooks": "off"},
        "html": {"use_repository_button": False, "use_issues_button": False},
        "sphinx": {
            "config": {
                "html_show_sourcelink": False,
                # Show each widget's static snapshot (its text/html) instead of the live
                # view, and load no widget JavaScript: the live view needs RequireJS and
                # the widget manager from a CDN, which a classroom offline cannot reach.
                "nb_mime_priority_overrides": [
                    ["*", "application/vnd.jupyter.widget-view+json", None]
                ],
                "nb_ipywidgets_js": {},
            }
        },
    }
    toc = {
        "format": "jb-book",
        "root": Path(book["root"]).with_suffix("").as_posix(),
        "chapters": [
            {"file": Path(c["file"]).with_suffix("").as_posix()} for c in manifest["chapters"]
        ],
    }
    return config, toc


def parameters_source(chapter: dict) -> str:
    """The source of a chapter's `parameters` cell, written from the manifest."""
    return (
        "# Set from jupyter_book.toml when the book is built: change them there.\n"
        f"REPLICAS = {chapter['replicas']}\n"
        f"SEED = {chapter['seed']}"
    )


# ---------------------------------------------------------------- set-up (stdlib only)


def say(message: str) -> None:
    print(f"[dev] {message}", flush=True)


def run(*cmd, **kwargs) -> None:
    env = {**os.environ, **CHILD_ENV, **kwargs.pop("env", {})}
    result = subprocess.run([str(c) for c in cmd], cwd=kwargs.pop("cwd", ROOT), env=env, **kwargs)
    if result.returncode:
        raise SystemExit(f"[dev] failed ({result.returncode}): {' '.join(map(str, cmd))}")


# Programs the project needs from the system: (program, Debian package, what it is for).
DOT = ("dot", "graphviz", "graphviz's `dot` draws the topology diagrams")
CHROMIUM = ("chromium", "chromium", "Chromium runs the widgets' browser tests")


def ensure_system_tools(*tools: tuple[str, str, str]) -> None:
    """Install missing programs with apt-get when we can; otherwise say which package to get."""
    missing = [tool for tool in tools if not shutil.which(tool[0])]
    if not missing:
        return
    packages = [package for _, package, _ in missing]
    if os.name == "posix" and os.geteuid() == 0 and shutil.which("apt-get"):
        say(f"installing the Debian package(s) {', '.join(packages)} (apt-get)")
        run("apt-get", "update", "-q")
        run("apt-get", "install", "-y", "-q", "--no-install-recommends", *packages)
        return
    reasons = "; ".join(f"`{program}` is missing ({why})" for program, _, why in missing)
    names = " ".join(packages)
    raise SystemExit(
        f"[dev] {reasons}. Install the package(s) named {names} "
        f"(Debian/Ubuntu: sudo apt-get install {names}; macOS: brew install {names}; "
        f"conda: conda install -c conda-forge {names}), then run this command again."
    )


def venv_python() -> Path:
    return VENV / ("Scripts/python.exe" if os.name == "nt" else "bin/python")


def ensure_venv() -> None:
    """Create .venv and install both distributions, unless it is already up to date."""
    if sys.version_info[:2] != (3, 11):
        raise SystemExit(
            "[dev] mirrorbook needs Python 3.11 (TensorFlow 2.21 supports no other here); "
            f"this is {sys.version.split()[0]}. Run the command with python3.11."
        )
    stamp = VENV / ".mirrorbook-installed"
    digest = hashlib.sha256(b"".join(p.read_bytes() for p in PYPROJECTS)).hexdigest()
    if stamp.exists() and stamp.read_text() == digest and venv_python().exists():
        return
    if not venv_python().exists():
        say(f"creating the virtual environment {VENV.relative_to(ROOT)}")
        run(sys.executable, "-m", "venv", VENV)
    say("installing mirrorkit, mirrorwidgets and the book/test tools (first run: a few minutes)")
    run(venv_python(), "-m", "pip", "install", "--disable-pip-version-check", "-q", *REQUIREMENTS)
    stamp.write_text(digest)


def setup(*tools: tuple[str, str, str]) -> None:
    ensure_system_tools(*tools)
    ensure_venv()


def in_venv(*args) -> None:
    run(venv_python(), ROOT / "dev.py", *args)


# ---------------------------------------------------------------- tasks (inside .venv)


@contextlib.contextmanager
def notebook_client(nb, *, timeout: int, cwd: Path):
    """An nbclient client whose kernel talks over local sockets in a private temp dir.

    IPC sockets keep the kernel off the network entirely (the default is TCP on
    loopback, unencrypted); the folder and its sockets go away afterwards.
    """
    from nbclient import NotebookClient
    from traitlets.config import Config

    with tempfile.TemporaryDirectory(prefix="mirrorbook-kernel-") as sockets:
        config = Config()
        config.KernelManager.transport = "ipc"
        config.KernelManager.ip = str(Path(sockets) / "kernel")
        yield NotebookClient(
            nb,
            config=config,
            kernel_name="python3",
            timeout=timeout,
            record_timing=False,
            resources={"metadata": {"path": str(cwd)}},
        )


def execute_chapters(*files: str) -> None:
    """Run chapters top to bottom (all, or those named) and store their outputs in the .ipynb."""
    import nbformat

    manifest = load_manifest()
    chosen = [c for c in manifest["chapters"] if not files or c["file"] in files]
    if files and len(chosen) != len(set(files)):
        raise SystemExit(f"[dev] not all of {files} are chapters in {MANIFEST.name}")
    for chapter in chosen:
        path = chapter["path"]
        nb = nbformat.read(path, as_version=4)
        cells = [c for c in nb.cells if "parameters" in c.metadata.get("tags", [])]
        if len(cells) != 1:
            raise SystemExit(f"[dev] {path.name} needs exactly one cell tagged 'parameters'")
        cells[0].source = parameters_source(chapter)
        start = time.perf_counter()
        with notebook_client(nb, timeout=chapter["cell_timeout"], cwd=path.parent) as client:
            client.execute()
        nbformat.write(nb, path)
        say(f"executed {path.relative_to(ROOT)} in {time.perf_counter() - start:.1f} s")


def build_html(out: Path | None = None) -> Path:
    """Write _config.yml/_toc.yml from the manifest and build the HTML with Jupyter Book 1."""
    manifest = load_manifest()
    out = Path(out or manifest["output"])
    generated = out / "jupyter-book"
    generated.mkdir(parents=True, exist_ok=True)
    config, toc = jupyter_book_files(manifest)
    (generated / "_config.yml").write_text(json.dumps(config, indent=2))
    (generated / "_toc.yml").write_text(json.dumps(toc, indent=2))
    jb = Path(sys.executable).with_name("jupyter-book")  # the venv's, next to its python
    run(
        jb,
        "build",
        manifest["source"],
        "--config",
        generated / "_config.yml",
        "--toc",
        generated / "_toc.yml",
        "--path-output",
        out,
        "--warningiserror",
        "--quiet",
    )
    html = out / "_build" / "html"
    say(f"book built: {html / 'index.html'}")
    return html


def nbval(rounds: int = 2) -> None:
    """Compare every chapter's stored outputs with a fresh run, twice: re-runs must pass too."""
    manifest = load_manifest()
    for mode, flag in NBVAL_MODES.items():
        paths = [c["path"] for c in manifest["chapters"] if c["nbval"] == mode]
        if not paths:
            continue
        timeout = max(c["cell_timeout"] for c in manifest["chapters"] if c["nbval"] == mode)
        for _ in range(rounds):
            pytest(
                flag,
                "--nbval-current-env",
                "--nbval-sanitize-with",
                SANITIZE,
                f"--nbval-cell-timeout={timeout}",
                *paths,
            )


def pytest(*args) -> None:
    run(sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args)


def lint() -> None:
    run(sys.executable, "-m", "ruff", "check", ".")
    run(sys.executable, "-m", "ruff", "format", "--check", ".")


def unit_tests() -> None:
    # Doctests see TensorFlow's default single device; the suite simulates several
    # replicas, and a process cannot have both, so they run as two processes.
    pytest("--doctest-modules", "mirrorkit", "widgets/mirrorwidgets")
    pytest("tests")


TASKS = {
    "_execute": execute_chapters,
    "_html": build_html,
    "_lint": lint,
    "_unit": unit_tests,
    "_nbval": nbval,
}


def main(argv: list[str]) -> None:
    command = argv[1] if len(argv) > 1 else "help"
    start = time.perf_counter()
    if command == "_execute":  # internal; accepts chapter file names
        execute_chapters(*argv[2:])
        return
    if command in TASKS:
        TASKS[command]()
        return
    if command == "book":
        setup(DOT)
        in_venv("_execute")
        in_venv("_html")
    elif command == "test":
        setup(DOT, CHROMIUM)
        for task in ("_lint", "_unit", "_nbval"):
            in_venv(task)
    else:
        print(__doc__)
        raise SystemExit(0 if command in ("help", "-h", "--help") else 2)
    say(f"{command}: done in {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main(sys.argv)
