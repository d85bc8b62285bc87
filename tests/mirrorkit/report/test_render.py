import ast
import re
from pathlib import Path

import pytest

import mirrorkit as mk
from mirrorkit.report import style
from mirrorkit.report.render import Html, Line, Report, Reported, html_table, text_table

PACKAGE = Path(mk.__file__).parent


def test_every_cell_is_padded_so_columns_never_run_together():
    page = html_table([("shape", ["(3,)"]), ("value", ["[4, 5, 6]"]), ("in sync", ["NO"])])
    cells = re.findall(r"<t[hd] style=\"([^\"]*)\">", page)
    assert len(cells) == 6
    assert all("padding:2px 10px" in css for css in cells)


def test_text_and_html_say_the_same_things():
    report = Report(
        headline=("a headline", "a second line"),
        columns=(("name", ("x", "y")), ("value", ("1", "2"))),
        lines=(Line("careful", tone="warn", label="WARNING"), Line("a note")),
        tone="good",
    )
    text, page = report.text(), report.html()
    assert text.splitlines() == [
        "a headline",
        "a second line",
        "name  value",
        "x     1",
        "y     2",
        "WARNING: careful",
        "a note",
    ]
    for phrase in ("a headline", "a second line", "careful", "a note", ">y<", ">2<"):
        assert phrase in page
    assert page.startswith('<div class="mirrorkit-report"')


def test_tones_come_from_the_one_palette():
    page = Report(
        headline=("ok",),
        tone="good",
        columns=(("in sync", ("NO",)),),
        cell_tones={"in sync": {"NO": "bad"}},
        lines=(Line("hm", tone="warn"),),
    ).html()
    assert f"color:{style.GOOD}" in page and f"color:{style.BAD}" in page
    assert f"color:{style.WARN}" in page
    palette = {v for v in vars(style).values() if isinstance(v, str) and v.startswith("#")}
    assert set(re.findall(r"#[0-9a-f]{6}", page)) <= palette


def test_text_is_escaped_but_html_cells_are_not():
    page = html_table([("a", ["<b>", Html("<i>ok</i>")])])
    assert "&lt;b&gt;" in page and "<i>ok</i>" in page
    assert "&lt;script&gt;" in Line("<script>").html()


def test_an_unknown_tone_is_refused():
    with pytest.raises(ValueError, match="tone must be None or one of"):
        Line("x", tone="red")


def test_row_attributes_must_match_the_rows():
    with pytest.raises(ValueError, match="row_attributes has 1 entries for 2 rows"):
        html_table([("a", ["1", "2"])], row_attributes=[{"data-x": 1}])
    page = html_table([("a", ["1"])], row_attributes=[{"class": "mw-row", "data-x": '"q"'}])
    assert '<tr class="mw-row" data-x="&quot;q&quot;">' in page


def test_an_empty_table_prints_its_headings_only():
    assert text_table([("step", []), ("replica", [])]) == ["step  replica"]
    assert text_table([]) == []


def test_reported_objects_print_and_draw_from_their_report():
    table = mk.CheckResult(False, "not yet")
    assert isinstance(table, Reported)
    assert str(table) == repr(table) == table.report().text()
    assert table._repr_html_() == table.report().html()


def test_no_module_but_the_renderer_builds_reprs():
    # One renderer: every other class gets its print and HTML from Reported.
    builders = []
    for path in PACKAGE.rglob("*.py"):
        if path.name == "render.py" and path.parent.name == "report":
            continue
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.FunctionDef) and node.name in ("_repr_html_", "__str__"):
                builders.append(f"{path.relative_to(PACKAGE)}:{node.lineno} {node.name}")
    assert builders == []
