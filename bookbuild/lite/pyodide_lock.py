"""Pyodide's package lock, cut down to the wheels the lab site holds, with their own sums.

Pyodide 314.0.6's ``pyodide-lock.json`` lists its own builds of 356 packages and their sha256
sums. The site serves PyPI's pure-Python wheels of the few its kernel loads instead
(``requirements/lite-kernel.txt``), whose sums differ: with the lock as shipped, Pyodide
refuses them and the kernel never starts.

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
from pathlib import Path


def rewrite_lock(folder: Path) -> list[str]:
    """Rewrite ``folder/pyodide-lock.json`` to list exactly the wheels in ``folder``.

    Args:
        folder: Pyodide's runtime files and the kernel's wheels (``static/pyodide/``).

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
    kept = {
        key: _held_entry(entry, held)
        for key, entry in lock["packages"].items()
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


def _normal(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()
