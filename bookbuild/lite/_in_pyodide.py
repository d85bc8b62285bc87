"""Runs inside Pyodide (``bytecode.mjs``, in Node): compile what the kernel imports as it starts.

Pyodide's npm package holds the standard library as source (``python_stdlib.zip``), and PyPI's
wheels hold source, so each page load compiled every module its kernel imported. Here the
modules the kernel's start imports are compiled once, by the same Pyodide that loads them: each
one's ``.py`` in its archive becomes a ``.pyc`` at the same place, holding no source, which
Python imports as it finds it, as Pyodide's own package builds do. A traceback through one of
them names its file and line without the line's text.

Example:
    >>> import zipfile, io
    >>> buffer = io.BytesIO()
    >>> with zipfile.ZipFile(buffer, "w") as archive:
    ...     archive.writestr("a.py", "x = 1")
    ...     archive.writestr("b.py", "y = 2")
    >>> compiled = _compiled(zipfile.ZipFile(buffer), "/lib/", {"/lib/a.py"})
    >>> sorted(compiled)
    ['a.py']
"""

from __future__ import annotations

import importlib
import importlib.util
import json
import marshal
import os
import sys
import zipfile
from site import getsitepackages


def main(runtime: str, imports: list, files: list) -> str:
    """Import what the kernel imports, check the labs' files, compile; a JSON report."""
    for name in imports:
        importlib.import_module(name)
    started = {
        module.__file__
        for module in list(sys.modules.values())
        if (getattr(module, "__file__", None) or "").endswith(".py")
    }
    prefixes = {"python_stdlib.zip": next(p for p in sys.path if p.endswith(".zip")) + "/"}
    site = getsitepackages()[0] + "/"  # where Pyodide installs wheels
    report = {"cwd": os.getcwd(), "missing": [f for f in files if not os.path.isfile(f)]}
    report["imported"] = len(started)
    report["compiled"] = {}
    for name in sorted(os.listdir(runtime)):
        prefix = prefixes.get(name, site if name.endswith(".whl") else None)
        if prefix is None:
            continue
        path = f"{runtime}/{name}"
        with zipfile.ZipFile(path) as archive:
            compiled = _compiled(archive, prefix, started)
            if not compiled:
                continue
            _rewrite(archive, path + ".new", compiled)
        os.replace(path + ".new", path)
        report["compiled"][name] = len(compiled)
    return json.dumps(report)


def _compiled(archive: zipfile.ZipFile, prefix: str, started: set) -> dict:
    """Each started module of the archive: its name there, and its ``.pyc`` bytes."""
    compiled = {}
    for name in archive.namelist():
        if prefix + name in started:
            code = compile(archive.read(name), prefix + name, "exec", dont_inherit=True)
            # A timestamp .pyc with no source beside it: Python checks no date or size.
            header = importlib.util.MAGIC_NUMBER + bytes(12)
            compiled[name] = header + marshal.dumps(code)
    return compiled


def _rewrite(archive: zipfile.ZipFile, into: str, compiled: dict) -> None:
    """The archive again, each compiled module's ``.py`` replaced by its ``.pyc``."""
    with zipfile.ZipFile(into, "w", zipfile.ZIP_DEFLATED) as out:
        for info in archive.infolist():
            data = archive.read(info)
            if info.filename in compiled:
                data = compiled[info.filename]
                info.filename += "c"
            elif info.filename.endswith(".dist-info/RECORD"):
                lines = data.decode().splitlines()
                data = "\n".join(_recorded(line, compiled) for line in lines).encode()
            info.compress_type = zipfile.ZIP_DEFLATED
            out.writestr(info, data)


def _recorded(line: str, compiled: dict) -> str:
    """A RECORD line, for a compiled module its ``.pyc`` with no sum (as for RECORD itself)."""
    path = line.split(",")[0]
    return f"{path}c,," if path in compiled else line
