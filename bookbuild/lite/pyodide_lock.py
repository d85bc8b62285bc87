"""Pyodide's package lock, cut down to the wheels the lab site holds, with their own sums.

Pyodide 314.0.6's ``pyodide-lock.json`` lists its own builds of 356 packages and their sha256
sums. The site serves PyPI's pure-Python wheels of the few its kernel loads instead
(``requirements/lite-kernel.txt``), whose sums differ: with the lock as shipped, Pyodide
refuses them and the kernel never starts. The wheels Pyodide's lock does not know (the
kernel's own, :mod:`bookbuild.lite.kernel_start`) get entries read from their metadata, so
that Pyodide can load them too as it starts.

Example:
    >>> entry = {"name": "six", "version": "1.16.0", "file_name": "six-1.16.0.whl",
    ...          "depends": [], "sha256": "0" * 64}
    >>> _held_entry(entry, {"six": Path("six-1.17.0-py2.py3-none-any.whl")})["version"]
    '1.17.0'
"""

from __future__ import annotations

import hashlib
import json
import re
import zipfile
from pathlib import Path


def rewrite_lock(folder: Path, added: tuple[str, ...] = ()) -> list[str]:
    """Rewrite ``folder/pyodide-lock.json`` to list exactly the wheels in ``folder``.

    Args:
        folder: Pyodide's runtime files and the kernel's wheels (``static/pyodide/``).
        added: Packages whose wheels are in ``folder`` but not in Pyodide's lock: each gets
            an entry from its wheel's metadata (an entry already there is kept).

    Returns:
        The packages the lock now lists, sorted.

    Raises:
        SystemExit: If a wheel is not in Pyodide's lock at all, or a package the lock keeps
            depends on one the folder does not hold.

    Example:
        >>> rewrite_lock(Path("site/static/pyodide"))  # doctest: +SKIP
        ['asttokens', 'decorator', ...]
    """
    path = folder / "pyodide-lock.json"
    lock = json.loads(path.read_text())
    held = {_normal(p.name.split("-")[0]): p for p in folder.glob("*.whl")}
    entries = {**{_normal(n): _new_entry(held[_normal(n)]) for n in added}, **lock["packages"]}
    kept = {
        key: _held_entry(entry, held)
        for key, entry in entries.items()
        if _normal(entry["name"]) in held
    }
    unknown = set(held) - {_normal(entry["name"]) for entry in kept.values()}
    needed = {_normal(d) for entry in kept.values() for d in entry["depends"]} - set(held)
    if unknown or needed:
        raise SystemExit(
            f"[dev] requirements/lite-kernel.txt and Pyodide's lock disagree: not in the lock "
            f"{sorted(unknown)}, needed but not pinned {sorted(needed)}; pin exactly the "
            "packages the kernel loads and their dependencies"
        )
    lock["packages"] = kept
    path.write_text(json.dumps(lock, indent=1, sort_keys=True))
    return sorted(kept)


def _held_entry(entry: dict, held: dict[str, Path]) -> dict:
    wheel = held[_normal(entry["name"])]
    digest = hashlib.sha256(wheel.read_bytes()).hexdigest() if wheel.is_file() else "0" * 64
    version = wheel.name.split("-")[1]
    return {**entry, "file_name": wheel.name, "version": version, "sha256": digest}


def _new_entry(wheel: Path) -> dict:
    """A lock entry for a pure-Python wheel: its name, what it imports and what it requires."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        info = next(n for n in names if n.endswith(".dist-info/METADATA"))
        metadata = archive.read(info).decode()
    name = re.search(r"^Name: (.+)$", metadata, re.M).group(1).strip()
    requires = re.findall(r"^Requires-Dist: ([A-Za-z0-9_.-]+)([^;\n]*)(;.*)?$", metadata, re.M)
    tops = {n.split("/")[0].removesuffix(".py") for n in names if "/" in n or n.endswith(".py")}
    return {
        "name": _normal(name),
        "depends": sorted(_normal(r[0]) for r in requires if not r[2]),
        "imports": sorted(t for t in tops if not t.endswith((".dist-info", ".data"))),
        "install_dir": "site",
        "package_type": "package",
        "unvendored_tests": False,
    }


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
