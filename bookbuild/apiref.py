"""The book's API reference, generated from the code, and the chapters' links to it.

Every public name of ``mirrorkit`` and ``mirrorwidgets`` (their ``__init__.pyi`` lists) gets
an entry on the page ``api_reference.md``, grouped as the packages are; the page holds one
``{mirrorbook-api}`` directive, which this module, a Sphinx extension, fills when the book is
built: the signature and docstring of each function and class by ``sphinx.ext.autodoc``
(``napoleon`` reads the Google-style sections), each constant from :data:`CONSTANTS`. When the
build ends, the first ``mk.X`` of each chapter page links to X's entry.

Only the standard library is imported at the top (as everywhere in ``bookbuild``); Sphinx is
imported by :func:`setup`, in the book's build.

Example:
    >>> names = public_names("mirrorkit")
    >>> ("check_loss_step", "checks.loss_step") in names
    True
    >>> group_of("mirrorkit", "check_loss_step", "checks.loss_step")
    'own'
"""

from __future__ import annotations

import ast
import html
import re
from pathlib import Path

from bookbuild import ROOT

PAGE = "api_reference"  # the page's file name in the book, without its suffix
PACKAGES = {"mirrorkit": ROOT / "mirrorkit", "mirrorwidgets": ROOT / "widgets" / "mirrorwidgets"}

#: The groups, in page order: key, title, what the group is for.
GROUPS = (
    (
        "own",
        "Checks for your own loop",
        "Run your code (a loss, a step, an input pipeline, an evaluation, a restore) under a "
        "real strategy and on one device, and say what differs and why. They need no expected "
        "answer: use them on code the book did not write.",
    ),
    (
        "exercises",
        "Checks for the exercises",
        "Each compares an exercise's answer with the one the chapter asks for: they need the "
        "expected value, ranking or task of their exercise, so they do not apply to other code.",
    ),
    (
        "devices",
        "Devices, strategies and values",
        "Simulated replicas on one machine, the strategy over them, reproducible seeds, and "
        "what each replica holds.",
    ),
    (
        "measure",
        "Measure",
        "Time the real all-reduce and the steps of a training loop; model and replay them.",
    ),
    (
        "cluster",
        "Local clusters",
        "Several real worker processes on this machine, their events, faults and errors.",
    ),
    (
        "training",
        "Training",
        "Keras fit under MultiWorkerMirroredStrategy, mixed precision, checkpoints and "
        "scaling the batch.",
    ),
    (
        "widgets",
        "Widgets (mirrorwidgets)",
        "Views of the same values in a notebook; each also renders a static snapshot.",
    ),
)

# The checks whose answer is an exercise's: everything else under checks/ runs your own code.
_EXERCISE_CHECKS = {
    "check_mirrored",
    "check_per_replica",
    "check_all_reduced",
    "check_all_reduce_ranking",
    "check_all_reduce_growth",
    "check_cluster_spec",
    "check_partitioner",
    "check_partitioner_for",
    "check_run_steps",
    "check_resume",
}
# Where a module that is no subpackage belongs; errors go where they are raised.
_TOP_MODULES = {
    "devices": "devices",
    "strategy": "devices",
    "inspection": "devices",
    "reproducibility": "devices",
    "_algorithms": "measure",
}
_ERRORS = {
    "ReplicaSetupError": "devices",
    "AllReduceUnavailableError": "measure",
    "CheckpointDamagedError": "training",
    "CheckpointMismatchError": "training",
    "CheckpointSkippedWarning": "training",
}

#: The constants' entries: what each holds, and an example run as a doctest by the tests.
CONSTANTS = {
    "ALL_REDUCE_ALGORITHMS": (
        "The all-reduce algorithms by their readable names, each with what it does; the "
        "names ``benchmark_all_reduce`` and ``make_strategy`` accept.",
        '>>> import mirrorkit as mk\n>>> "collective" in mk.ALL_REDUCE_ALGORITHMS\nTrue',
    ),
    "AUTO_SHARD_POLICIES": (
        "The ``tf.data`` auto-shard policies by name, each with what it does to the input of "
        "several workers.",
        ">>> import mirrorkit as mk\n>>> sorted(mk.AUTO_SHARD_POLICIES)[:2]\n['AUTO', 'DATA']",
    ),
    "EVENT_KINDS": (
        "The kinds of event a local cluster's worker sends, in the order a run meets them.",
        '>>> import mirrorkit as mk\n>>> mk.EVENT_KINDS[0], "step" in mk.EVENT_KINDS\n'
        "('starting', True)",
    ),
    "WORKER_STATES": (
        "The states of a local cluster's worker, in order; ``failed`` and ``stopped`` can "
        "follow any of them.",
        ">>> import mirrorkit as mk\n>>> mk.WORKER_STATES[-2:]\n('failed', 'stopped')",
    ),
    "NETWORKS": (
        "The networks a ``LocalCluster`` can put its workers on (its ``network`` argument).",
        '>>> import mirrorkit as mk\n>>> "private" in mk.NETWORKS\nTrue',
    ),
    "LINKS": (
        "Published one-direction bandwidths of interconnects (bytes per second), each with "
        "what the figure counts and its source; print it for the table.",
        ">>> import mirrorkit as mk\n"
        ">>> all(isinstance(link, mk.Link) for link in mk.LINKS.values())\nTrue",
    ),
    "MIXED_PRECISION_POLICIES": (
        "The Keras dtype policies ``run_loss_scale`` accepts, each with what it does.",
        '>>> import mirrorkit as mk\n>>> "mixed_bfloat16" in mk.MIXED_PRECISION_POLICIES\nTrue',
    ),
}


def public_names(package: str) -> list[tuple[str, str]]:
    """``(name, module)`` for each public name the package's ``__init__.pyi`` lists, in order.

    Example:
        >>> public_names("mirrorwidgets")[0]
        ('hierarchical_groups', '_routes')
    """
    tree = ast.parse((PACKAGES[package] / "__init__.pyi").read_text())
    return [
        (alias.asname or alias.name, node.module or "")
        for node in tree.body
        if isinstance(node, ast.ImportFrom)
        for alias in node.names
    ]


def group_of(package: str, name: str, module: str) -> str | None:
    """The key of the group ``name`` belongs in, or None when no rule places it.

    Example:
        >>> group_of("mirrorkit", "WorkerFailedError", "errors")
        'cluster'
        >>> group_of("mirrorkit", "NewThing", "somewhere_new") is None
        True
    """
    if package == "mirrorwidgets":
        return "widgets"
    top = module.split(".")[0]
    if top == "checks":
        return "exercises" if name in _EXERCISE_CHECKS else "own"
    if top in ("measure", "cluster", "training"):
        return top
    if top == "errors":
        return _ERRORS.get(name) or ("cluster" if name.startswith(("Cluster", "Worker")) else None)
    return _TOP_MODULES.get(top)


def entries() -> dict[str, list[tuple[str, str]]]:
    """Each group's ``(package, name)`` entries, in page order.

    A name no rule places is left out (the tests fail on it).

    Example:
        >>> ("mirrorkit", "check_step_equivalence") in entries()["own"]
        True
    """
    found: dict[str, list[tuple[str, str]]] = {key: [] for key, _, _ in GROUPS}
    for package in PACKAGES:
        for name, module in public_names(package):
            group = group_of(package, name, module)
            if group is not None:
                found[group].append((package, name))
    return found


def anchor(package: str, name: str) -> str:
    """The HTML id of a name's entry (autodoc's: its dotted path).

    Example:
        >>> anchor("mirrorkit", "inspect")
        'mirrorkit.inspect'
    """
    return f"{package}.{name}"


def reference_text(kinds: dict[str, str]) -> str:
    """The reference in MyST Markdown: a section per group, an entry per name.

    Each entry is a reStructuredText block (``{eval-rst}``), the language of the docstrings
    and of autodoc. ``kinds`` maps ``package.name`` to ``"function"``, ``"class"`` or
    ``"data"``.

    Example:
        >>> text = reference_text({"mirrorkit.check_loss_step": "function"})
        >>> ".. autofunction:: mirrorkit.check_loss_step" in text
        True
    """
    lines = []
    for key, title, intro in GROUPS:
        lines += [f"## {title}", "", intro, ""]
        for package, name in entries()[key]:
            entry = _entry(package, name, kinds.get(anchor(package, name), "data"))
            lines += ["```{eval-rst}", *entry, "```", ""]
    return "\n".join(lines)


def _entry(package: str, name: str, kind: str) -> list[str]:
    path = anchor(package, name)
    if kind == "function":
        return [f".. autofunction:: {path}"]
    if kind == "class":
        members = ["   :members:"] if package == "mirrorkit" else []
        return [f".. autoclass:: {path}", *members]
    text, example = CONSTANTS.get(name, ("", ""))
    body = ["", f"   {text}", "", "   Example:", ""]
    body += [f"   {line}" for line in example.splitlines()]
    return [f".. py:data:: {path}", *(body if text else [])]


# ------------------------------------------------------------------- the chapters' links

_CODE_USE = re.compile(
    r'(<span class="n">mk</span><span class="o">\.</span>)<span class="n">(\w+)</span>'
)
_PROSE_USE = re.compile(r'(<code class="docutils literal notranslate"><span class="pre">)mk\.(\w+)')


def first_uses(page: str) -> dict[str, int]:
    """Where each ``mk.X`` is first used in a built page: code cells and inline code.

    Example:
        >>> page = '<span class="n">mk</span><span class="o">.</span><span class="n">inspect</span>'
        >>> first_uses(page)
        {'inspect': 0}
    """
    found: dict[str, int] = {}
    for pattern in (_CODE_USE, _PROSE_USE):
        for match in pattern.finditer(page):
            name = match.group(2)
            found[name] = min(found.get(name, match.start()), match.start())
    return found


def link_first_uses(page: str, names: set[str], target: str) -> str:
    """``page`` with the first use of each of ``names`` linked to its entry on ``target``.

    Example:
        >>> page = '<span class="n">mk</span><span class="o">.</span><span class="n">inspect</span>'
        >>> link_first_uses(page, {"inspect"}, "api_reference.html").count('href="api_ref')
        1
    """
    starts = {start: name for name, start in first_uses(page).items() if name in names}
    out, last = [], 0
    for start in sorted(starts):
        name = starts[start]
        match = _CODE_USE.match(page, start) or _PROSE_USE.match(page, start)
        href = f"{target}#{html.escape(anchor('mirrorkit', name))}"
        link = f'<a class="reference internal mk-api" href="{href}" title="mk.{name}">'
        if match.re is _CODE_USE:
            linked = f'{match.group(1)}{link}<span class="n">{name}</span></a>'
        else:
            linked = f"{match.group(1)}{link}mk.{name}</a>"
        out += [page[last:start], linked]
        last = match.end()
    return "".join(out + [page[last:]])


def link_chapters(html_dir: Path, chapters: list[str]) -> int:
    """Link each chapter page's first ``mk.X`` of every public X; the number of links made.

    Example:
        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as folder:
        ...     page = Path(folder) / "one.html"
        ...     _ = page.write_text('<code class="docutils literal notranslate">'
        ...         '<span class="pre">mk.inspect(x)</span></code>')
        ...     link_chapters(Path(folder), ["one"])
        1
    """
    names = {name for name, _ in public_names("mirrorkit")}
    made = 0
    for stem in chapters:
        page = html_dir / f"{stem}.html"
        if not page.is_file():
            continue
        text = page.read_text(encoding="utf-8")
        linked = link_first_uses(text, names, f"{PAGE}.html")
        made += linked.count("mk-api") - text.count("mk-api")
        page.write_text(linked, encoding="utf-8")
    return made


# ------------------------------------------------------------------- the Sphinx extension


def setup(app) -> dict:
    """Sphinx's entry point: the ``{mirrorbook-api}`` directive and the chapters' links."""
    from docutils import nodes
    from sphinx.util.docutils import SphinxDirective
    from sphinx.util.nodes import nested_parse_with_titles

    app.setup_extension("sphinx.ext.autodoc")
    app.setup_extension("sphinx.ext.napoleon")

    def configure(app, config):
        config.napoleon_use_ivar = True  # attributes as fields: no second object description
        config.autodoc_member_order = "bysource"

    class ApiDirective(SphinxDirective):
        has_content = False

        def run(self):
            from docutils.statemachine import StringList

            text = reference_text(_kinds())
            holder = nodes.section()
            holder.document = self.state.document
            nested_parse_with_titles(self.state, StringList(text.splitlines(), PAGE), holder)
            return holder.children

    def finished(app, error):
        if error is None and app.builder.format == "html":
            chapters = [doc for doc in app.env.found_docs if re.match(r"\d\d_", doc)]
            link_chapters(Path(app.outdir), chapters)

    app.connect("config-inited", configure)
    app.add_directive("mirrorbook-api", ApiDirective)
    app.connect("build-finished", finished)
    return {"parallel_read_safe": True, "parallel_write_safe": True}


def _kinds() -> dict[str, str]:
    """``package.name`` -> its kind, from the imported packages (in the book's build)."""
    import importlib
    import inspect

    kinds = {}
    for package in PACKAGES:
        module = importlib.import_module(package)
        for name, _ in public_names(package):
            value = getattr(module, name)
            kind = "class" if inspect.isclass(value) else "function" if callable(value) else "data"
            kinds[anchor(package, name)] = kind
    return kinds
