"""The tree is the architecture: rules on imports between the modules of both packages.

No module of them, of bookbuild or dev.py imports itself back through others (issue 46).

Run this file as a script to print the map (files and lines per subpackage, and the imports
between subpackages) that the rules below keep true.
"""

import ast
import functools
import os
import subprocess
import sys
from collections import Counter, defaultdict
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = {"mirrorkit": ROOT / "mirrorkit", "mirrorwidgets": ROOT / "widgets" / "mirrorwidgets"}
# The subpackages and the top-level modules of mirrorkit that other parts may import.
CORE = {"devices", "errors", "hosted", "inspection", "reproducibility", "strategy", "worker"}


def module_name(path: Path, packages: dict[str, Path] = PACKAGES) -> str:
    for package, folder in packages.items():
        if path.is_relative_to(folder):
            parts = [package, *path.relative_to(folder).with_suffix("").parts]
            return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
    raise ValueError(path)


MODULES = {
    module_name(path): path
    for folder in PACKAGES.values()
    for path in sorted(folder.rglob("*.py"))
    if "__pycache__" not in path.parts
}


def is_private(dotted: str) -> bool:
    return any(part.startswith("_") and not part.startswith("__") for part in dotted.split("."))


def imports(path: Path) -> list[tuple[str, str | None, int]]:
    """(module, name or None, line) for every import of our packages in one file."""
    found = []
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.Import):
            found += [(a.name, None, node.lineno) for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            for alias in node.names:
                submodule = f"{node.module}.{alias.name}"
                if submodule in MODULES:
                    found.append((submodule, None, node.lineno))
                else:
                    found.append((node.module, alias.name, node.lineno))
    return [f for f in found if f[0].split(".")[0] in PACKAGES]


def package_of(module: str) -> str:
    """The package a module belongs to: itself if it is one, else its parent."""
    return module if MODULES[module].name == "__init__.py" else module.rpartition(".")[0]


def area(module: str) -> str:
    """mirrorkit's subpackage (or "core") a module is in; the widgets are one area."""
    parts = module.split(".")
    if parts[0] != "mirrorkit":
        return parts[0]
    if len(parts) > 2 or (len(parts) == 2 and MODULES[module].name == "__init__.py"):
        return f"mirrorkit.{parts[1]}"
    return "mirrorkit (core)"


EDGES = [
    (importer, imported, name, line)
    for importer, path in MODULES.items()
    for imported, name, line in imports(path)
]


def test_every_import_of_our_packages_resolves_to_a_module():
    unknown = [(a, b, line) for a, b, _, line in EDGES if b not in MODULES]
    assert not unknown


def test_no_private_name_crosses_a_module_boundary():
    # `from module import _name` reaches into another module's internals.
    crossing = [
        f"{importer}:{line} imports {imported}.{name}"
        for importer, imported, name, line in EDGES
        if name is not None and name.startswith("_") and importer != imported
    ]
    assert not crossing


def test_private_modules_are_used_only_inside_their_own_package():
    # A private module (`_procs.py`) is a helper of its package; others use the public ones.
    outside = [
        f"{importer}:{line} imports {imported}"
        for importer, imported, _, line in EDGES
        if is_private(imported.removeprefix(package_of(imported)))
        and not importer.startswith(package_of(imported))
        and imported != "mirrorkit._validate"  # the one home of argument checks, shared
    ]
    assert not outside


def test_no_private_attribute_of_another_module_is_read():
    # `module._name` after `import module` is the same reach as importing `_name`.
    reads = []
    for importer, path in MODULES.items():
        tree = ast.parse(path.read_text())
        aliases = {}
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                aliases |= {(a.asname or a.name): a.name for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module:
                for a in node.names:
                    if f"{node.module}.{a.name}" in MODULES:
                        aliases[a.asname or a.name] = f"{node.module}.{a.name}"
        for node in ast.walk(tree):
            if (
                isinstance(node, ast.Attribute)
                and isinstance(node.value, ast.Name)
                and aliases.get(node.value.id) in MODULES
                and node.attr.startswith("_")
                and not node.attr.startswith("__")
            ):
                reads.append(f"{importer}:{node.lineno} reads {node.value.id}.{node.attr}")
    assert not reads


def test_subpackages_meet_only_at_the_core_and_the_report():
    # The three groups of mirrorkit (cluster, checks and training, measure) do not import
    # each other; what they share sits at the top (core) or in mirrorkit.report.
    shared = {"mirrorkit (core)", "mirrorkit.report", "mirrorkit"}
    groups = {"mirrorkit.cluster": "cluster", "mirrorkit.measure": "measure"}
    groups |= {"mirrorkit.checks": "lessons", "mirrorkit.training": "lessons"}
    across = [
        f"{importer}:{line} imports {imported}"
        for importer, imported, _, line in EDGES
        if area(importer) in groups
        and area(imported) not in shared
        and groups.get(area(imported)) != groups[area(importer)]
    ]
    assert not across


def test_the_core_and_the_report_import_no_subpackage():
    upward = [
        f"{importer}:{line} imports {imported}"
        for importer, imported, _, line in EDGES
        if area(importer) in {"mirrorkit (core)", "mirrorkit.report"}
        and importer.split(".")[-1] not in {"worker"}  # the `python -m` entry point
        and area(imported) not in {"mirrorkit (core)", "mirrorkit.report", "mirrorkit"}
    ]
    assert not upward


def test_the_core_holds_at_most_12_modules():
    # mirrorkit's top level is what every lesson uses: a new helper joins the module of its
    # concept (issue 46), __init__.py included in the count.
    top = sorted(path.name for path in PACKAGES["mirrorkit"].glob("*.py"))
    assert len(top) <= 12, f"merge by concept: {top}"


def test_the_widgets_use_only_public_mirrorkit():
    private = [
        f"{importer}:{line} imports {imported}{'.' + name if name else ''}"
        for importer, imported, name, line in EDGES
        if importer.startswith("mirrorwidgets")
        and imported.startswith("mirrorkit")
        and imported != "mirrorkit._validate"  # the one home of argument checks, shared
        and (is_private(imported) or (name or "").startswith("_"))
    ]
    assert not private


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_each_public_name_is_listed_once(package):
    stubs = sorted(PACKAGES[package].rglob("__init__.pyi"))
    assert stubs, f"{package} lists its public names in __init__.pyi"
    for stub in stubs:
        names = [
            alias.name
            for node in ast.parse(stub.read_text()).body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        ]
        assert names, stub
        assert [n for n, count in Counter(names).items() if count > 1] == []
        bound = {
            target.id if isinstance(target, ast.Name) else alias.asname or alias.name
            for node in ast.walk(ast.parse(stub.with_suffix(".py").read_text()))
            for target, alias in (
                [(t, None) for t in getattr(node, "targets", [])]
                + [(None, a) for a in getattr(node, "names", [])]
                if isinstance(node, ast.Assign | ast.Import | ast.ImportFrom)
                else []
            )
            if alias is not None or isinstance(target, ast.Name)
        }
        assert not set(names) & bound, f"{stub.with_suffix('.py')} repeats a public name"


@pytest.mark.parametrize("package", sorted(PACKAGES))
def test_no_public_name_is_also_a_submodule_of_its_package(package):
    # Once `package.name` (a module) is imported, Python sets it on the package and it hides
    # the lazily loaded `name` (a function) on lazy_loader releases before 0.6.
    clashes = []
    for stub in PACKAGES[package].rglob("__init__.pyi"):
        names = {
            alias.name
            for node in ast.parse(stub.read_text()).body
            if isinstance(node, ast.ImportFrom)
            for alias in node.names
        }
        modules = {p.stem for p in stub.parent.iterdir() if p.suffix == ".py"}
        modules |= {p.name for p in stub.parent.iterdir() if (p / "__init__.py").is_file()}
        clashes += [f"{stub.parent.name}.{n}" for n in sorted(names & modules)]
    assert clashes == []


# ---- issue 46: no import circles among mirrorkit, mirrorwidgets, bookbuild and dev.py
TOOLS = {"bookbuild": ROOT / "bookbuild"}
EVERY_MODULE = {
    **MODULES,
    **{
        module_name(path, TOOLS): path
        for path in sorted(TOOLS["bookbuild"].rglob("*.py"))
        if "__pycache__" not in path.parts
    },
    "dev": ROOT / "dev.py",
}
OURS = {*PACKAGES, *TOOLS, "dev"}


@functools.cache
def lazy_names(package: str) -> dict[str, str]:
    """A lazily loaded package's public names -> the module each comes from (its stub)."""
    init = EVERY_MODULE.get(package)
    stub = init.with_suffix(".pyi") if init is not None else None
    if stub is None or init.name != "__init__.py" or "attach_stub" not in init.read_text():
        return {}
    names = {}
    for node in ast.parse(stub.read_text()).body:
        if isinstance(node, ast.ImportFrom):
            home = absolute(package, node.level, node.module, inside=True)
            for alias in node.names:
                names[alias.asname or alias.name] = home_of(home, alias.name, lazy=False)
    return names


def absolute(importer: str, level: int, module: str | None, inside: bool = False) -> str:
    """The absolute name of ``from <level dots><module> import ...`` written in ``importer``."""
    if not level:
        return module or ""
    is_package = inside or EVERY_MODULE[importer].name == "__init__.py"
    parts = importer.split(".")[: None if is_package else -1]
    parts = parts[: len(parts) - (level - 1)]
    return ".".join([*parts, module] if module else parts)


def home_of(module: str, name: str, lazy: bool = True) -> str:
    """What ``module.name`` brings in: a submodule, a lazily loaded name's module, or ``module``."""
    if f"{module}.{name}" in EVERY_MODULE:
        return f"{module}.{name}"
    return lazy_names(module).get(name, module) if lazy else module


def imported_modules(importer: str, source: str) -> set[str]:
    """Every module of ours that ``source`` (the module ``importer``) imports, at any level.

    Counted: ``import`` and ``from ... import`` anywhere (in functions and ``if TYPE_CHECKING:``
    too), ``importlib.import_module("a.literal")``, and a public name reached through a lazy
    package's stub (``from mirrorkit import make_strategy``, ``mk.make_strategy``), which is
    an import of the module that defines it. Importing ``a.b.c`` runs the ``__init__`` of
    ``a`` and ``a.b`` first: those count too, unless the importer is inside them.
    """
    tree = ast.parse(source)
    found, aliases = set(), {}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                found.add(alias.name)
                bound = alias.asname or alias.name.split(".")[0]
                aliases[bound] = alias.name if alias.asname else bound
        elif isinstance(node, ast.ImportFrom):
            base = absolute(importer, node.level, node.module)
            for alias in node.names:
                found.add(home := home_of(base, alias.name))
                if home == f"{base}.{alias.name}":  # a module, whose attributes are read below
                    aliases[alias.asname or alias.name] = home
        elif (
            isinstance(node, ast.Call)
            and getattr(node.func, "attr", getattr(node.func, "id", None))
            in ("import_module", "__import__")
            and node.args
            and isinstance(node.args[0], ast.Constant)
            and isinstance(node.args[0].value, str)
        ):
            found.add(node.args[0].value)
    for node in ast.walk(tree):  # mk.make_strategy, mirrorkit.checks.result.CheckResult
        chain = []
        while isinstance(node, ast.Attribute):
            chain.append(node.attr)
            node = node.value
        if isinstance(node, ast.Name) and (module := aliases.get(node.id)) in EVERY_MODULE:
            for attribute in reversed(chain):
                home = home_of(module, attribute)
                if home == module:
                    break
                found.add(module := home)
    modules = set()
    for name in found:
        if name.split(".")[0] not in OURS:
            continue
        while name not in EVERY_MODULE and "." in name:  # a name inside a module
            name = name.rpartition(".")[0]
        parts = name.split(".")
        packages = {".".join(parts[:i]) for i in range(1, len(parts))}
        modules |= {name} | {p for p in packages if not f"{importer}.".startswith(f"{p}.")}
    return modules - {importer}


IMPORT_GRAPH = {
    module: imported_modules(module, path.read_text()) for module, path in EVERY_MODULE.items()
}


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Circles of imports: the shortest through each module on one, if no circle found names it."""
    found, placed = [], set()
    for start in sorted(graph):
        if start in placed:
            continue
        paths, seen = {start: [start]}, {start}  # breadth first: the shortest way back
        queue = [start]
        while queue and start not in placed:
            module = queue.pop(0)
            for imported in sorted(graph.get(module, ())):
                if imported == start:
                    circle = paths[module] + [start]
                    found.append(circle)
                    placed.update(circle)
                    break
                if imported not in seen:
                    seen.add(imported)
                    paths[imported] = paths[module] + [imported]
                    queue.append(imported)
    return found


def test_the_import_graph_counts_every_way_of_importing():
    source = (
        "import importlib\n"
        "from typing import TYPE_CHECKING\n"
        "import mirrorkit as mk\n"
        "if TYPE_CHECKING:\n"
        "    from bookbuild.labs import Lab\n"
        "def run():\n"
        "    from mirrorkit import make_strategy\n"
        "    importlib.import_module('mirrorkit.report.units')\n"
        "    return mk.simulate_replicas(2)\n"
    )
    assert imported_modules("dev", source) == {
        "mirrorkit",
        "mirrorkit.strategy",  # through the stub, in a function
        "mirrorkit.devices",  # mk.simulate_replicas
        "mirrorkit.report",
        "mirrorkit.report.units",  # importlib.import_module
        "bookbuild",
        "bookbuild.labs",  # under TYPE_CHECKING
    }
    # Inside a package its own __init__ is not an import; a lazy package's __init__ imports
    # nothing of ours.
    assert "mirrorkit.training" not in IMPORT_GRAPH["mirrorkit.training.scaling"]
    assert "mirrorkit.devices" in IMPORT_GRAPH["mirrorkit.measure.command"]  # mk.simulate_...
    assert IMPORT_GRAPH["mirrorkit"] == set()


def test_circles_are_found_and_named():
    graph = {"a": {"b"}, "b": {"c", "d"}, "c": {"a"}, "d": {"e"}, "e": {"d", "a"}}
    assert circles(graph) == [["a", "b", "c", "a"], ["d", "e", "d"]]


def test_no_module_imports_itself_back():
    # A module that needs another's name sits above it; a circle means a name belongs lower.
    found = [" -> ".join(circle) for circle in circles(IMPORT_GRAPH)]
    assert not found, "move the name both need down to the module below:\n" + "\n".join(found)


# ---- the house rules of issue 30: size, one concept per module, one home for argument checks
LIBRARY = sorted(MODULES.values()) + sorted((ROOT / "bookbuild").rglob("*.py")) + [ROOT / "dev.py"]
MAX_LINES = 600  # a module's lines as ruff formats it (lint checks the format)
MAX_LINES_IN = {"measure": 500, "cluster": 500}  # mirrorkit's subpackages held tighter
MAX_FUNCTION = 80  # lines of code: neither blank, nor comment, nor docstring
MAX_RAISES = 12  # raise statements per 1,000 lines of library code, outside _validate.py
MAX_DOCSTRING = 20  # lines of a module docstring: a summary and an example
VALIDATE = ROOT / "mirrorkit" / "_validate.py"
# What computes without TensorFlow: it must run where TensorFlow cannot (a browser's Python).
TF_FREE = [
    "mirrorkit._algorithms",
    "mirrorkit._validate",
    "mirrorkit.measure.benchmark",
    "mirrorkit.measure.replay",
    "mirrorkit.measure.schedules",
    "mirrorkit.measure.step_trace",
    "mirrorkit.measure.trace_events",
    "mirrorkit.checks.batch_split",
    "mirrorkit.measure._schedule_terms",
    "mirrorkit.measure._solver",
    "mirrorkit.measure.algorithm_fit",
    "mirrorkit.measure.links",
    "mirrorkit.measure.step_prediction",
    "mirrorkit.measure.synthetic",
    "mirrorkit.report.render",
    "mirrorkit.report.style",
    "mirrorkit.report.units",
    "mirrorkit.report.values",
]
HEAVY = ("tensorflow", "keras", "ipywidgets", "matplotlib", "tf_keras")
# What the browser labs run, their exercise checks included: Pyodide has neither TensorFlow nor
# NumPy, so none of these imports either when it is imported (NumPy may wait inside a function).
BROWSER = [
    "mirrorkit.checks.batch_split",
    "mirrorkit.checks.loss_shares",
    "mirrorkit.checks.auto_shard",
    "mirrorkit.checks.lab_settings",
    "mirrorkit.checks.lab_answers",
    "mirrorkit.measure.benchmark",
    "mirrorkit.measure.links",
    "mirrorkit.measure.replay",
    "mirrorkit.measure.schedules",
    "mirrorkit.measure.synthetic",
    "mirrorkit.training.dynamic_loss_scale",
    "mirrorkit.training.float16",
    "mirrorkit.training.learning_rate_rules",
    "mirrorwidgets._plot",  # the SVG charts of the labs (issue 51): no ipywidgets either
    "mirrorwidgets.lab_charts",
    "mirrorwidgets._step_timeline_render",  # StepTimeline's bars, for a lab's timeline (issue 51)
]


def relative(path: Path) -> str:
    return str(path.relative_to(ROOT))


def code_lines(node: ast.AST, lines: list[str]) -> int:
    body = getattr(node, "body", [])
    docstring = set()
    if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
        docstring = set(range(body[0].lineno, body[0].end_lineno + 1))
    return sum(
        1
        for number in range(node.lineno, node.end_lineno + 1)
        if number not in docstring
        and lines[number - 1].strip()
        and not lines[number - 1].lstrip().startswith("#")
    )


@pytest.mark.parametrize("path", LIBRARY, ids=relative)
def test_no_module_is_over_its_size(path):
    parts = path.relative_to(ROOT).parts
    limit = MAX_LINES_IN.get(parts[1], MAX_LINES) if parts[0] == "mirrorkit" else MAX_LINES
    assert len(path.read_text().splitlines()) <= limit, "split it by concept"


def test_no_function_is_over_80_lines_of_code():
    long = []
    for path in LIBRARY:
        text = path.read_text()
        lines = text.splitlines()
        for node in ast.walk(ast.parse(text)):
            is_function = isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
            if is_function and (n := code_lines(node, lines)) > MAX_FUNCTION:
                long.append(f"{relative(path)}:{node.lineno} {node.name} ({n} lines)")
    assert long == []


def test_argument_checks_have_one_home():
    # Refusals go through mirrorkit/_validate.py's helpers (one message template); what
    # raises elsewhere is a state error, a parse error or a re-raise, and it stays rare.
    raises = lines = 0
    validators = []
    for path in LIBRARY:
        text = path.read_text()
        lines += len(text.splitlines())
        if path == VALIDATE:
            continue
        tree = ast.parse(text)
        raises += sum(isinstance(node, ast.Raise) for node in ast.walk(tree))
        validators += [
            f"{relative(path)}:{node.lineno} {node.name}"
            for node in ast.walk(tree)
            if isinstance(node, ast.FunctionDef)
            and node.name.startswith(("_check", "_validate", "_require", "_checked", "_ensure"))
        ]
    assert validators == [], "use (or add) a helper of mirrorkit/_validate.py"
    assert raises * 1000 / lines <= MAX_RAISES, f"{raises} raises in {lines} lines"


@pytest.mark.parametrize("path", LIBRARY, ids=relative)
def test_module_docstrings_are_a_summary_and_an_example(path):
    docstring = ast.get_docstring(ast.parse(path.read_text()), clean=False) or ""
    assert len(docstring.splitlines()) <= MAX_DOCSTRING, "design notes belong in docs/"
    if not path.name.startswith("_") and path != ROOT / "dev.py":
        assert ">>>" in docstring, "a public module's docstring shows an example"


def test_no_project_module_has_a_one_letter_alias():
    short = [
        f"{importer}:{node.lineno} {alias.name} as {alias.asname}"
        for importer, path in MODULES.items()
        for node in ast.walk(ast.parse(path.read_text()))
        if isinstance(node, ast.Import | ast.ImportFrom)
        for alias in node.names
        if alias.asname
        and len(alias.asname) == 1
        and (
            (isinstance(node, ast.Import) and alias.name.split(".")[0] in PACKAGES)
            or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0] in PACKAGES)
        )
    ]
    assert short == []


def heavy_imports(module: str, seen: set[str]) -> list[str]:
    """Imports of TensorFlow and friends at any level of ``module`` or what it imports of ours."""
    if module in seen:
        return []
    seen.add(module)
    found = []
    for node in ast.walk(ast.parse(MODULES[module].read_text())):
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
        found += [f"{module}:{node.lineno} {n}" for n in names if n.split(".")[0] in HEAVY]
    parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    ours = {imported for importer, imported, _, _ in EDGES if importer == module} | parents
    for imported in sorted(ours & MODULES.keys()):
        found += heavy_imports(imported, seen)
    return found


@pytest.mark.parametrize("module", TF_FREE)
def test_the_arithmetic_imports_no_tensorflow_at_any_level(module):
    assert heavy_imports(module, set()) == []


def import_time_imports(module: str, seen: set[str]) -> list[str]:
    """Imports of TensorFlow, NumPy and friends run when ``module`` is imported, its own and
    those of the project modules it imports then (an import inside a function waits)."""
    if module in seen:
        return []
    seen.add(module)
    found, ours = [], set()
    tree = ast.parse(MODULES[module].read_text())
    for node in tree.body:  # the module's own top level; functions and classes wait
        if isinstance(node, ast.If | ast.Try):
            continue  # `if TYPE_CHECKING:` and guarded imports
        names = [a.name for a in node.names] if isinstance(node, ast.Import) else []
        if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module] + [f"{node.module}.{a.name}" for a in node.names]
        found += [
            f"{module}:{node.lineno} {n}" for n in names if n.split(".")[0] in (*HEAVY, "numpy")
        ]
        ours |= {n for n in names if n in MODULES}
    parents = {".".join(module.split(".")[:i]) for i in range(1, module.count(".") + 1)}
    for imported in sorted((ours | parents) & MODULES.keys()):
        found += import_time_imports(imported, seen)
    return found


@pytest.mark.parametrize("module", BROWSER)
def test_the_browser_code_imports_neither_tensorflow_nor_numpy_when_imported(module):
    assert import_time_imports(module, set()) == []


def test_the_arithmetic_runs_without_tensorflow(tmp_path):
    # Each heavy package is made unimportable, as in a browser's Python: importing and
    # running the doctests of every TensorFlow-free module must still work.
    blocker = tmp_path / "sitecustomize.py"
    blocker.write_text(
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        f"        if name.split('.')[0] in {HEAVY!r}:\n"
        "            raise ImportError(f'{name} is blocked: this module must not need it')\n"
        "sys.meta_path.insert(0, Block())\n"
    )
    code = "import doctest, importlib, sys\n" + "".join(
        f"failed, _ = doctest.testmod(importlib.import_module({m!r}))\nassert not failed, {m!r}\n"
        for m in TF_FREE
    )
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(tmp_path), str(ROOT), str(ROOT / "widgets")]),
    }
    done = subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr[-3000:]


def module_map() -> str:
    """Files and lines per area, then the imports between areas (for the closing note)."""
    files, lines = Counter(), Counter()
    for module, path in MODULES.items():
        files[area(module)] += 1
        lines[area(module)] += len(path.read_text().splitlines())
    between = defaultdict(set)
    for importer, imported, _, _ in EDGES:
        if area(importer) != area(imported) and area(imported) != "mirrorkit":
            between[area(importer)].add(area(imported))
    out = [f"{a:24} {files[a]:3} files {lines[a]:6} lines" for a in sorted(files)]
    out += [f"{a} -> {', '.join(sorted(b))}" for a, b in sorted(between.items())]
    return "\n".join(out)


if __name__ == "__main__":
    sys.stdout.write(module_map() + "\n")
