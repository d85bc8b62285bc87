"""Compile, at build time, the Python the labs' kernel imports as it starts.

A lab's kernel imported 711 modules as it started (the standard library's 254 from Pyodide's
``python_stdlib.zip``, IPython's and the kernel's 457 from their wheels), each from source, and
compiling them was most of its start: in Node, the imports took 4.5 s from source and 0.9 s
compiled. This module starts the site's own Pyodide in Node as the kernel starts (the same
packages, the same imports, :mod:`bookbuild.lite.kernel_start`), and there replaces each module
imported by its bytecode, in its archive (``_in_pyodide.py``): compiled by the very runtime that
will load it, so its bytecode version is right by construction. Modules the start does not
import stay source, so the site grows by what is compiled only.

It also checks that the labs' data files are in the folder the kernel works in.

Example:
    >>> SCRIPT.name, SCRIPT.with_name("_in_pyodide.py").is_file()
    ('bytecode.mjs', True)
"""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path

from bookbuild.lite.kernel_start import HOME, KERNEL_PRELOAD, STARTUP_IMPORTS
from bookbuild.shell import run, say

SCRIPT = Path(__file__).with_name("bytecode.mjs")


def compile_startup(runtime: Path, lab_files: list[str]) -> dict:
    """Compile, in their archives in ``runtime``, the modules the kernel's start imports.

    Args:
        runtime: Pyodide's runtime folder, with the kernel's wheels and a lock that lists them.
        lab_files: The names of the labs' data files, which must be in the kernel's folder.

    Returns:
        The report: ``imported`` (modules), ``compiled`` (per archive), ``cwd``, ``missing``.

    Raises:
        SystemExit: If Node is missing, Pyodide does not start, or the kernel's folder is not
            :data:`~bookbuild.lite.kernel_start.HOME` or lacks a lab's data file.

    Example:
        >>> compile_startup(Path("static/pyodide"), ["05_ring_values.json"])  # doctest: +SKIP
        [dev] compiled the 707 modules the labs' kernel imports as it starts (17 archives)
    """
    node = shutil.which("node")
    if node is None:
        raise SystemExit(
            "[dev] the browser lab site needs Node.js to compile its kernel's start: install "
            "it (Debian: apt-get install nodejs npm)"
        )
    with tempfile.TemporaryDirectory(prefix="mirrorbook-bytecode-") as folder:
        report_file = Path(folder) / "report.json"
        arguments = [json.dumps(list(x)) for x in (KERNEL_PRELOAD, STARTUP_IMPORTS, lab_files)]
        run(node, SCRIPT, runtime.resolve(), report_file, *arguments)
        report = json.loads(report_file.read_text())
    if report["cwd"] != HOME or report["missing"]:
        raise SystemExit(
            f"[dev] the labs' kernel starts in {report['cwd']} (expected {HOME}) and does not "
            f"find {report['missing']} there: Pyodide no longer installs a wheel's data files "
            "under / or no longer starts in its home; see bookbuild/lite/kernel_start.py"
        )
    count = sum(report["compiled"].values())
    say(
        f"compiled the {count} modules the labs' kernel imports as it starts "
        f"({len(report['compiled'])} archives)"
    )
    return report
