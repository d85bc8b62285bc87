"""What the lab site is made of, fetched from the package registries and checked.

Pyodide's runtime comes from the npm registry (``npm pack``: the runtime only, no packages);
every wheel from PyPI (``pip download``), by the pins and sums of ``requirements/lite-*.txt``.
Both are kept in :data:`CACHE` and fetched again only when missing; nothing is fetched while
the site is built or read. The front-end extensions, and the kernel's own wheels inside one,
come from this environment's :data:`LABEXTENSIONS`.

Example:
    >>> PYODIDE_VERSION
    '314.0.6'
"""

from __future__ import annotations

import base64
import hashlib
import shutil
import sys
import tarfile
from pathlib import Path

from bookbuild import ROOT
from bookbuild.shell import run

CACHE = ROOT / "build" / "lite-downloads"
LABEXTENSIONS = Path(sys.prefix) / "share" / "jupyter" / "labextensions"
PYODIDE_VERSION = "314.0.6"  # Python 3.14.2; jupyterlite-pyodide-kernel 0.8.6's own choice
# The npm registry's `dist.integrity` of pyodide@PYODIDE_VERSION.
PYODIDE_INTEGRITY = (
    "sha512-BKDTJyIqFxC4BExLqeRS3f5xvXZIjOt8C3zGLN/Cc7tFxSwvKVhVkchQQ2AGLOtR4YrVOIFxbV8poyDOOmWwxQ"
    "=="
)
# The files of the npm package the kernel loads; the rest (type declarations, Node's entry
# points) stay out of the site.
PYODIDE_FILES = (
    "pyodide.mjs",
    "pyodide.js",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
    "pyodide-lock.json",
    "package.json",
)
KERNEL_WHEELS = ROOT / "requirements" / "lite-kernel.txt"
SITE_WHEELS = ROOT / "requirements" / "lite-site.txt"


def pyodide_runtime(into: Path) -> Path:
    """Copy Pyodide's runtime files into a folder, from the checked npm package.

    Args:
        into: The folder (made if missing).

    Returns:
        The folder.

    Raises:
        SystemExit: If the package's sum is not the pinned one, or ``npm`` is missing.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:  # doctest: +SKIP
        ...     sorted(p.name for p in pyodide_runtime(Path(folder)).iterdir())[:2]
        ['package.json', 'pyodide-lock.json']
    """
    tarball = CACHE / f"pyodide-{PYODIDE_VERSION}.tgz"
    if not tarball.is_file():
        npm = shutil.which("npm")
        if npm is None:
            raise SystemExit(
                "[dev] the browser lab site needs npm to fetch Pyodide from the npm registry: "
                "install Node.js (Debian: apt-get install npm)"
            )
        CACHE.mkdir(parents=True, exist_ok=True)
        run(npm, "pack", "--silent", f"pyodide@{PYODIDE_VERSION}", "--pack-destination", CACHE)
    digest = "sha512-" + base64.b64encode(hashlib.sha512(tarball.read_bytes()).digest()).decode()
    if digest != PYODIDE_INTEGRITY:
        tarball.unlink()
        raise SystemExit(
            f"[dev] {tarball.name} is not the npm registry's pyodide@{PYODIDE_VERSION} (its sum "
            "differs); it was removed: run the command again to fetch it anew"
        )
    into.mkdir(parents=True, exist_ok=True)
    with tarfile.open(tarball) as archive:
        for name in PYODIDE_FILES:
            source = archive.extractfile(f"package/{name}")
            (into / name).write_bytes(source.read())
    return into


def wheels(requirements: Path, into: Path) -> list[Path]:
    """The pure-Python wheels a requirements file pins, checked against its sums.

    Args:
        requirements: ``requirements/lite-kernel.txt`` or ``lite-site.txt``.
        into: Where to copy them (made if missing).

    Returns:
        The wheels, copied into ``into``.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:  # doctest: +SKIP
        ...     [p.name for p in wheels(SITE_WHEELS, Path(folder))][0]
        'comm-0.2.3-py3-none-any.whl'
    """
    folder = CACHE / "wheels"
    pins = [line.split()[0] for line in requirements.read_text().splitlines() if "==" in line]
    expected = {_wheel_key(pin) for pin in pins}
    have = {_wheel_key(p.name): p for p in folder.glob("*.whl")} if folder.is_dir() else {}
    if not expected <= set(have):
        run(
            sys.executable,  # the book's environment's pip
            "-m",
            "pip",
            "download",
            "--quiet",
            "--disable-pip-version-check",
            "--no-deps",
            "--require-hashes",
            "--only-binary=:all:",
            "--implementation=py",
            "--abi=none",
            "--platform=any",
            "--python-version=3.14",  # Pyodide's
            "--dest",
            folder,
            "--requirement",
            requirements,
        )
        have = {_wheel_key(p.name): p for p in folder.glob("*.whl")}
    into.mkdir(parents=True, exist_ok=True)
    return [Path(shutil.copy2(have[key], into)) for key in sorted(expected)]


def _wheel_key(name: str) -> tuple[str, str]:
    """``("jupyterlab-widgets", "3.0.17")`` from a pin or a wheel's file name."""
    project, version = name.split("==") if "==" in name else name.split("-")[:2]
    return project.lower().replace("_", "-").replace(".", "-"), version
