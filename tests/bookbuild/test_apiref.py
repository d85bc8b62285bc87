"""The API reference: an entry for every public name, each with a signature, a docstring and an
example; the chapters' first ``mk.X`` links to it (bookbuild/apiref.py)."""

from __future__ import annotations

import ast
import doctest
import json
import re

import pytest

from bookbuild import ROOT, apiref


def _definitions(package: str) -> dict[str, ast.AST]:
    """Each public name's ``def`` or ``class`` in its module's source, read without importing."""
    found = {}
    for name, module in apiref.public_names(package):
        path = apiref.PACKAGES[package].joinpath(*module.split(".")).with_suffix(".py")
        tree = ast.parse(path.read_text())
        for node in tree.body:
            if isinstance(node, ast.FunctionDef | ast.ClassDef) and node.name == name:
                found[name] = node
    return found


@pytest.mark.parametrize("package", list(apiref.PACKAGES))
def test_every_public_name_has_an_entry_with_a_docstring_and_an_example(package):
    names = apiref.public_names(package)
    assert len(names) > 10
    placed = {name for group in apiref.entries().values() for pkg, name in group if pkg == package}
    missing = [name for name, _ in names if name not in placed]
    assert not missing, f"no group places {missing}: add a rule in bookbuild/apiref.py"
    definitions = _definitions(package)
    for name, _ in names:
        if name in apiref.CONSTANTS:
            text, example = apiref.CONSTANTS[name]
            assert text and example.startswith(">>> "), name
            continue
        node = definitions.get(name)
        assert node is not None, f"{package}.{name}: no def or class, so no entry: add CONSTANTS"
        docstring = ast.get_docstring(node) or ""
        assert docstring.strip() and ">>> " in docstring, f"{package}.{name}: no example"


def test_the_groups_separate_the_exercises_from_your_own_code():
    groups = apiref.entries()
    own = {name for _, name in groups["own"]}
    assert {"check_step_equivalence", "check_loss_step", "preview_input"} <= own
    assert {"check_per_replica", "check_cluster_spec"} <= {n for _, n in groups["exercises"]}
    assert ("mirrorwidgets", "LiveTrainingCallback") in groups["widgets"]
    assert [key for key, _, _ in apiref.GROUPS] == list(groups)


def test_the_constants_examples_run():
    for name, (_, example) in apiref.CONSTANTS.items():
        test = doctest.DocTestParser().get_doctest(example, {}, name, None, 0)
        runner = doctest.DocTestRunner()
        runner.run(test)
        assert runner.failures == 0, name


def test_the_first_use_of_a_name_is_linked_once():
    code = '<span class="n">mk</span><span class="o">.</span><span class="n">{}</span>'
    page = code.format("inspect") + " text " + code.format("inspect")
    linked = apiref.link_first_uses(page, {"inspect"}, "api_reference.html")
    assert linked.count('href="api_reference.html#mirrorkit.inspect"') == 1
    assert linked.index("mk-api") < linked.index(" text ")


def _chapter_names(chapter) -> list[str]:
    """The public ``mk.X`` a chapter's cells use (its source, not the HTML)."""
    cells = json.loads(chapter["path"].read_text())["cells"]
    text = "\n".join("".join(cell["source"]) for cell in cells)
    public = {name for name, _ in apiref.public_names("mirrorkit")}
    return sorted({name for name in re.findall(r"\bmk\.(\w+)", text) if name in public})


def _first_use(html: str, name: str):
    """The first use of ``mk.name`` in a built page's code or inline code, linked or not."""
    code = (
        r'<span class="n">mk</span><span class="o">\.</span>(<a [^>]*>)?'
        rf'<span class="n">{name}</span>'
    )
    prose = (
        rf'<code class="docutils literal notranslate"><span class="pre">(<a [^>]*>)?mk\.{name}\b'
    )
    return re.search(f"{code}|{prose}", html)


@pytest.mark.book
def test_the_built_reference_has_every_entry_and_each_chapter_links_its_first_uses(
    book_html, manifest
):
    page = (book_html / f"{apiref.PAGE}.html").read_text()
    for package in apiref.PACKAGES:
        for name, _ in apiref.public_names(package):
            assert f'id="{apiref.anchor(package, name)}"' in page, name
    assert page.count("&gt;&gt;&gt;") >= 100  # the examples are shown
    for chapter in manifest["chapters"]:
        html = (book_html / f"{chapter['path'].stem}.html").read_text()
        linked = 0
        for name in _chapter_names(chapter):
            use = _first_use(html, name)
            if use is None:
                continue  # only in an output or a comment: nothing to link
            link = use.group(1) or use.group(2)
            assert link, f"{chapter['file']}: the first mk.{name} has no link"
            assert f'href="{apiref.PAGE}.html#mirrorkit.{name}"' in link, link
            linked += 1
        assert linked or not _chapter_names(chapter), chapter["file"]
    assert (ROOT / "book" / f"{apiref.PAGE}.md").read_text().count("{mirrorbook-api}") == 1
