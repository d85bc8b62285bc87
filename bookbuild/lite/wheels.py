"""Wheels of mirrorkit and mirrorbook-widgets holding only their TensorFlow-free modules.

The distributions on PyPI's model require TensorFlow and Keras, which Pyodide cannot install.
The lab site gets wheels of the same names and version, built from the same sources, holding
:data:`~bookbuild.lite.modules.BROWSER_MODULES`, the project modules they import at module
level, and their packages' ``__init__`` files, and requiring only pure-Python packages that
the site serves. An import of anything else at module level stops the build with the line
that does it.

Example:
    >>> sorted(shipped_files())[:2]
    ['mirrorkit/__init__.py', 'mirrorkit/__init__.pyi']
"""

from __future__ import annotations

import ast
import base64
import hashlib
import sys
import zipfile
from pathlib import Path

from bookbuild import ROOT
from bookbuild.lite.modules import BROWSER_MODULES
from bookbuild.version import book_version

# Each distribution: its import package, the folder that holds it, and what it requires in
# the browser (each served by the site: requirements/lite-*.txt, or the other wheel).
DISTRIBUTIONS = {
    "mirrorkit": ("mirrorkit", ROOT, ("lazy_loader>=0.4",)),
    "mirrorbook-widgets": (
        "mirrorwidgets",
        ROOT / "widgets",
        ("mirrorkit=={version}", "lazy_loader>=0.4", "traitlets>=5.7", "ipywidgets>=8,<9"),
    ),
}
# Imports the browser has besides the standard library: what the requirements above install.
BROWSER_PACKAGES = {"mirrorkit", "mirrorwidgets", "lazy_loader", "traitlets", "ipywidgets"}


def shipped_files(modules=BROWSER_MODULES) -> set[str]:
    """The source files the wheels hold, as paths inside their package's folder.

    Args:
        modules: The modules the labs import.

    Returns:
        ``{"mirrorkit/checks/batch_split.py", ...}``.

    Raises:
        SystemExit: If one of them imports, at module level, a package the browser lacks.

    Example:
        >>> "mirrorkit/measure/schedules.py" in shipped_files()
        True
    """
    files: set[str] = set()
    todo = ["mirrorkit", "mirrorwidgets", *modules]  # both packages, whatever the labs import
    while todo:
        name = todo.pop()
        path = _source(name)
        if path is None or _inside(path) in files:
            continue
        files.add(_inside(path))
        package = name if path.name == "__init__.py" else name.rpartition(".")[0]
        todo.extend(_parents(package))
        stub = path.with_name("__init__.pyi")
        if path.name == "__init__.py" and stub.is_file():
            files.add(_inside(stub))
        todo.extend(_project_imports(path, package))
    return files


def build_wheels(into: Path) -> list[Path]:
    """Write both wheels into a folder.

    Args:
        into: The folder (made if missing).

    Returns:
        The two wheel files.

    Example:
        >>> import tempfile, zipfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     kit, widgets = build_wheels(Path(folder))
        ...     names = zipfile.ZipFile(kit).namelist()
        >>> kit.name, "mirrorkit/checks/batch_split.py" in names, "mirrorkit/strategy.py" in names
        ('mirrorkit-0.1.0.dev0-py3-none-any.whl', True, False)
    """
    into.mkdir(parents=True, exist_ok=True)
    version = book_version()
    files = shipped_files()
    wheels = []
    for distribution, (package, folder, requires) in DISTRIBUTIONS.items():
        ours = sorted(f for f in files if f.split("/")[0] == package)
        requires = [r.format(version=version) for r in requires]
        entries = [(f, (folder / f).read_bytes()) for f in ours]
        wheels.append(write_wheel(into, distribution, version, entries, requires))
    return wheels


def write_wheel(
    into: Path,
    distribution: str,
    version: str,
    entries: list,
    requires: list[str],
    summary: str = "The TensorFlow-free part, for the book's browser labs (Pyodide).",
) -> Path:
    """A pure-Python wheel of the given files, the same bytes for the same files.

    Args:
        into: The folder to write it in.
        distribution: Its name.
        version: Its version.
        entries: ``(path inside the wheel, bytes)`` for each file.
        requires: Its ``Requires-Dist`` lines.
        summary: Its one-line description.

    Returns:
        The wheel's path.

    Example:
        >>> import tempfile, zipfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     wheel = write_wheel(Path(folder), "a-b", "1.0", [("a_b/x.py", b"")], [])
        ...     names = zipfile.ZipFile(wheel).namelist()
        >>> wheel.name, names[0], names[-1]
        ('a_b-1.0-py3-none-any.whl', 'a_b/x.py', 'a_b-1.0.dist-info/RECORD')
    """
    stem = f"{distribution.replace('-', '_')}-{version}"
    info = f"{stem}.dist-info"
    metadata = "\n".join(
        [
            "Metadata-Version: 2.1",
            f"Name: {distribution}",
            f"Version: {version}",
            f"Summary: {summary}",
            *(f"Requires-Dist: {r}" for r in requires),
            "",
        ]
    )
    wheel = "Wheel-Version: 1.0\nGenerator: mirrorbook\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
    entries = [*entries, (f"{info}/METADATA", metadata.encode()), (f"{info}/WHEEL", wheel.encode())]
    record = [f"{name},sha256={_digest(data)},{len(data)}" for name, data in entries]
    entries.append((f"{info}/RECORD", "\n".join([*record, f"{info}/RECORD,,", ""]).encode()))
    path = into / f"{stem}-py3-none-any.whl"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as archive:
        for name, data in entries:
            # A fixed date: the same sources give the same wheel, byte for byte.
            archive.writestr(zipfile.ZipInfo(name, date_time=(2020, 1, 1, 0, 0, 0)), data)
    return path


def _digest(data: bytes) -> str:
    return base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()


def _source(name: str) -> Path | None:
    """The file of a project module (``mirrorkit.x``), or None for a name inside a module."""
    top, *rest = name.split(".")
    folder = DISTRIBUTIONS["mirrorbook-widgets"][1] if top == "mirrorwidgets" else ROOT
    base = folder.joinpath(top, *rest)
    for path in (base / "__init__.py", base.with_suffix(".py")):
        if path.is_file():
            return path
    return None


def _inside(path: Path) -> str:
    folder = ROOT / "widgets" if path.is_relative_to(ROOT / "widgets") else ROOT
    return path.relative_to(folder).as_posix()


def _parents(package: str) -> list[str]:
    parts = package.split(".")
    return [".".join(parts[: k + 1]) for k in range(len(parts))]


def _project_imports(path: Path, package: str) -> list[str]:
    """The project modules ``path`` imports at module level; refuse anything the browser lacks."""
    names = []
    for node in _module_level(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found = [alias.name for alias in node.names]
        elif node.level:  # from . import x
            base = package.rsplit(".", node.level - 1)[0] if node.level > 1 else package
            found = [f"{base}.{node.module}" if node.module else base]
            found += [f"{found[0]}.{alias.name}" for alias in node.names]
        else:
            found = [node.module, *(f"{node.module}.{alias.name}" for alias in node.names)]
        for name in found:
            top = name.split(".")[0]
            if top in ("mirrorkit", "mirrorwidgets"):
                names.append(name)
            elif top not in sys.stdlib_module_names and top not in BROWSER_PACKAGES:
                raise SystemExit(
                    f"[dev] {_inside(path)} line {node.lineno} imports {name}, which the browser "
                    "labs' Python (Pyodide) does not have: import it inside the function that "
                    "needs it, or leave the module out of bookbuild/lite/modules.py"
                )
    return names


def _module_level(tree: ast.Module):
    """The imports that run when the module is imported: not those inside functions."""
    todo = list(tree.body)
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Import | ast.ImportFrom):
            yield node
        elif not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and not _guarded(node):
            todo.extend(ast.iter_child_nodes(node))


def _guarded(node) -> bool:
    """Whether a block's imports never run, or may fail without harm.

    That is ``if TYPE_CHECKING:`` (type checkers only), ``with suppress(ImportError):`` and
    ``try: ... except ImportError``.
    """
    if isinstance(node, ast.If):
        return "TYPE_CHECKING" in ast.unparse(node.test)
    if isinstance(node, ast.With):
        return any("ImportError" in ast.unparse(item.context_expr) for item in node.items)
    if isinstance(node, ast.Try):
        caught = [ast.unparse(h.type) for h in node.handlers if h.type is not None]
        return any("ImportError" in c or "ModuleNotFoundError" in c for c in caught)
    return False
