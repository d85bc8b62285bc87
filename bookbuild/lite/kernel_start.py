"""What the labs' kernel loads as it starts: all of it with Pyodide's runtime, side by side.

JupyterLite's Pyodide kernel (0.8.6: its worker's ``initPackageManager`` and ``initKernel``)
installs micropip, then piplite with micropip, then with piplite ipykernel, comm,
pyodide-kernel, jedi and ipython, one after another, skipping each one that
``loadPyodideOptions.packages`` already asks Pyodide for. The site asks for all of them
(:data:`KERNEL_PRELOAD`), so Pyodide fetches their wheels while its runtime compiles. Three are
the kernel's own wheels (jupyterlite-pyodide-kernel's ``static/pypi``): they are copied beside
the runtime, and the lock gets entries for them
(:func:`~bookbuild.lite.pyodide_lock.rewrite_lock`).

The labs' data files come too. The site runs without JupyterLite's service worker
(:mod:`bookbuild.lite.site`), so the kernel sees none of the site's files; a wheel of data
files puts them in the folder the kernel works in, where a lab opens them by name, as it does
beside the notebook in CPython. Pyodide installs a wheel's data files under ``sys.prefix``
(``/``), as pip does, and the kernel works in Pyodide's home folder, :data:`HOME`.

Example:
    >>> KERNEL_PRELOAD[:2]
    ('micropip', 'piplite')
"""

from __future__ import annotations

import shutil
from pathlib import Path

from bookbuild.lite.downloads import LABEXTENSIONS
from bookbuild.lite.wheels import write_wheel
from bookbuild.version import book_version

LAB_FILES = "mirrorbook-lab-files"
# Every package the kernel would install as it starts, and the labs' data files.
KERNEL_PRELOAD = (
    "micropip",
    "piplite",
    "comm",
    "ipykernel",
    "pyodide-kernel",
    "ipython",
    "jedi",
    LAB_FILES,
)
# The kernel's own wheels, which Pyodide's lock does not list.
OWN_WHEELS = ("piplite", "pyodide_kernel", "ipykernel")
# The packages above that Pyodide's lock does not list: the lock gets entries for them.
ADDED_TO_LOCK = ("comm", *OWN_WHEELS, LAB_FILES)
# What the kernel imports as it starts (bookbuild.lite.bytecode compiles what these import).
STARTUP_IMPORTS = ("piplite.piplite", "pyodide_kernel")
HOME = "/home/pyodide"  # Pyodide's working folder as it starts (its HOME)


def kernel_wheels(into: Path) -> list[Path]:
    """Copy the kernel's own wheels from this environment's jupyterlite-pyodide-kernel.

    Args:
        into: Pyodide's runtime folder (``static/pyodide/``).

    Returns:
        The wheels copied.

    Raises:
        SystemExit: If the extension or one of its wheels is missing.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     [p.name.split("-")[0] for p in kernel_wheels(Path(folder))]
        ['piplite', 'pyodide_kernel', 'ipykernel']
    """
    folder = LABEXTENSIONS / "@jupyterlite" / "pyodide-kernel-extension" / "static" / "pypi"
    copied = []
    for name in OWN_WHEELS:
        found = sorted(folder.glob(f"{name}-*-py3-none-any.whl"))
        if len(found) != 1:
            raise SystemExit(
                f"[dev] the browser lab site needs jupyterlite-pyodide-kernel's own {name} "
                f"wheel in {folder}, and found {len(found)}: run python3 dev.py book again (it "
                "installs requirements/lock.txt)"
            )
        copied.append(Path(shutil.copy2(found[0], into)))
    return copied


def lab_files_wheel(files: list[Path], into: Path) -> Path:
    """A wheel whose data files Pyodide installs in the kernel's working folder.

    Args:
        files: The labs' data files (``book/browser/*.json``).
        into: Pyodide's runtime folder.

    Returns:
        The wheel.

    Example:
        >>> import tempfile, zipfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     data = Path(folder) / "values.json"
        ...     _ = data.write_text("{}")
        ...     wheel = lab_files_wheel([data], Path(folder))
        ...     zipfile.ZipFile(wheel).namelist()[0].split(".data/")[1]
        'data/home/pyodide/values.json'
    """
    version = book_version()
    stem = f"{LAB_FILES.replace('-', '_')}-{version}"
    entries = [(f"{stem}.data/data{HOME}/{path.name}", path.read_bytes()) for path in files]
    summary = "The browser labs' data files, put in the folder their kernel works in."
    return write_wheel(into, LAB_FILES, version, entries, [], summary=summary)
