"""Build the browser lab site into the HTML book's folder, and link the chapters to it.

The site is JupyterLite's notebook app with its Pyodide kernel, and its console, which runs a
chapter's TensorFlow-free cells in the chapter's page (:mod:`bookbuild.lite.live_cells`).
Everything it loads is in its own folder: Pyodide's runtime, the wheels its kernel needs, and
a package index of the wheels the labs install (ipywidgets 8, and the TensorFlow-free
mirrorkit and mirrorbook-widgets).
Fetching from PyPI in the browser is switched off, so a package the site lacks fails at once
instead of reaching for the network. ``jupyter lite build`` itself downloads nothing.

Example:
    >>> CONFIG["jupyter-config-data"]["litePluginSettings"][KERNEL_PLUGIN]["disablePyPIFallback"]
    True
"""

from __future__ import annotations

import json
import shutil
import sys
import tempfile
from pathlib import Path

from bookbuild.lite.bytecode import compile_startup
from bookbuild.lite.contents import SITE_FOLDER, data_files, write_contents
from bookbuild.lite.downloads import (
    KERNEL_WHEELS,
    LABEXTENSIONS,
    SITE_WHEELS,
    pyodide_runtime,
    wheels,
)
from bookbuild.lite.kernel_start import (
    ADDED_TO_LOCK,
    KERNEL_PRELOAD,
    kernel_wheels,
    lab_files_wheel,
)
from bookbuild.lite.launcher import write_launcher
from bookbuild.lite.links import link_chapter_pages
from bookbuild.lite.live_cells import add_live_cells
from bookbuild.lite.pyodide_lock import rewrite_lock
from bookbuild.lite.wheels import build_wheels
from bookbuild.manifest import load_manifest
from bookbuild.shell import run, say

KERNEL_PLUGIN = "@jupyterlite/pyodide-kernel-extension:kernel"
# JupyterLite's service worker carries the kernel's view of the site's files (its drive). With
# it, the kernel works in that drive, and each of the ~120 imports of its start asked the page
# for a file there before looking in its own folders; every fetch went through the worker too.
# Without it the kernel works in its own memory, so the labs' data files come in a wheel
# (bookbuild.lite.kernel_start). Lab 05's kernel was idle 1.2 to 1.7 s sooner without it (medians
# of 6 and 8 fresh loads, the two sites side by side, 2026-12-01, docs/design/browser-labs.md).
SERVICE_WORKER = "@jupyterlite/application-extension:service-worker-manager"
CONFIG = {
    "jupyter-lite-schema-version": 0,
    "jupyter-config-data": {
        "appName": "mirrorbook browser labs",
        # The site's own address opens the list of labs: the lab app is not built.
        "appUrl": "./tree",
        "faviconUrl": "./tree/favicon.ico",
        "litePluginSettings": {
            KERNEL_PLUGIN: {
                "disablePyPIFallback": True,
                "loadPyodideOptions": {"packages": list(KERNEL_PRELOAD)},
            }
        },
        "disabledExtensions": [SERVICE_WORKER],
        # A saved lab keeps its widgets' state, so a copy reopened shows them, not "Loading
        # widget...", until its cells run again.
        "settingsOverrides": {"@jupyter-widgets/jupyterlab-manager:plugin": {"saveState": True}},
        # window.jupyterapp: the browser tests read the notebook and its kernel through it.
        "exposeAppInBrowser": True,
    },
}
# One notebook per page, the list of labs, and the console the chapter pages' live cells open.
APPS = ("notebooks", "tree", "repl")
# The front-end extensions the site carries, from this environment's JupyterLab extensions:
# the widgets' manager (jupyterlab_widgets, at the version the site's ipywidgets needs) and
# the Pyodide kernel. Only these: whatever else the environment holds stays out.
EXTENSIONS = ("@jupyter-widgets/jupyterlab-manager", "@jupyterlite/pyodide-kernel-extension")


def build_lite(html_folder: Path | None = None, manifest: dict | None = None) -> Path:
    """Build the site into ``html_folder/lite`` and link each chapter's page to its lab.

    Runs the ``jupyter`` of this Python's environment (jupyterlite-core, its Pyodide kernel,
    and jupyterlab_widgets, whose front end the site carries).

    Args:
        html_folder: The built HTML book; the manifest's (``build/_build/html``) by default.
        manifest: What :func:`~bookbuild.manifest.load_manifest` returns; this project's by
            default.

    Returns:
        The site's folder.

    Raises:
        SystemExit: If a piece cannot be fetched or checked, or the build fails.

    Example:
        >>> build_lite()  # doctest: +SKIP
        [dev] browser labs built: build/_build/html/lite (5 labs, 39 MB)
    """
    manifest = manifest or load_manifest()
    html_folder = Path(html_folder or manifest["output"] / "_build" / "html")
    out = html_folder / SITE_FOLDER
    # In a fresh folder each time: `jupyter lite build` keeps a task cache beside its inputs,
    # and with one left from an earlier build it skips steps and drops settings silently.
    with tempfile.TemporaryDirectory(prefix="mirrorbook-lite-") as folder:
        source = Path(folder)
        runtime = pyodide_runtime(source / "static" / "pyodide")
        wheels(KERNEL_WHEELS, runtime)
        kernel_wheels(runtime)
        lab_files = data_files(manifest)
        lab_files_wheel(lab_files, runtime)
        rewrite_lock(runtime, added=ADDED_TO_LOCK)
        compile_startup(runtime, [path.name for path in lab_files])
        rewrite_lock(runtime)  # the compiled wheels' sums
        wheels(SITE_WHEELS, source / "pypi")
        build_wheels(source / "pypi")
        labs = write_contents(manifest, source / "files")
        (source / "jupyter-lite.json").write_text(json.dumps(CONFIG, indent=2))
        (source / "jupyter_lite_config.json").write_text(json.dumps(_build_config(), indent=2))
        shutil.rmtree(out, ignore_errors=True)
        jupyter = Path(sys.executable).with_name("jupyter")
        apps = [arg for app in APPS for arg in ("--apps", app)]
        run(
            jupyter,
            "lite",
            "build",
            "--lite-dir",
            source,
            "--contents",
            source / "files",
            "--output-dir",
            out,
            "--no-sourcemaps",
            *apps,
            cwd=source,
        )
    _favicons(out)
    _without_old_fonts(out)
    write_launcher(out)
    link_chapter_pages(html_folder, manifest)
    add_live_cells(html_folder, manifest["chapters"])
    size = sum(p.stat().st_size for p in out.rglob("*") if p.is_file())
    say(f"browser labs built: {out} ({len(labs)} labs, {size / 1e6:.0f} MB)")
    return out


# The notebook app shows these while its kernel is idle and busy; JupyterLite ships neither, so
# every lab asked for two files that were not there. Both are the app's own Jupyter icon.
FAVICONS = ("static/favicons/favicon-notebook.ico", "static/favicons/favicon-busy-1.ico")


def _favicons(site: Path) -> None:
    """Put the icon the site holds (``notebooks/favicon.ico``) where the notebook app asks."""
    for name in FAVICONS:
        (site / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(site / "notebooks" / "favicon.ico", site / name)


# Font Awesome's fonts in the formats that no browser running JupyterLab 4 asks for: each of
# its @font-face rules lists woff2, then woff, each with its format, before these. 2.5 MB of the
# site, which would be over its 40 MB with the compiled kernel start (bookbuild.lite.bytecode).
OLD_FONTS = ("fa-*.eot", "fa-*.ttf", "fa-*.svg")


def _without_old_fonts(site: Path) -> None:
    for pattern in OLD_FONTS:
        for path in (site / "build").glob(pattern):
            path.unlink()


def _build_config() -> dict:
    """``jupyter_lite_config.json``: exactly :data:`EXTENSIONS`, nothing else of sys.prefix."""
    return {
        "LiteBuildConfig": {
            "ignore_sys_prefix": True,
            "federated_extensions": [str(LABEXTENSIONS / name) for name in EXTENSIONS],
        }
    }
