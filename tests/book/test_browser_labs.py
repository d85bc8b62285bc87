"""Each browser lab (book/browser/) in CPython, as the reader's browser (Pyodide) runs it.

* In a kernel with TensorFlow, Keras and NumPy refused, top to bottom.
* Its bad-input table: every value the lab invites the reader to change, set to zero, a
  negative, a float, text, a huge number and one past the lab's range, either runs or is
  refused in the lab's own words (the variable's name and range) by the cell that sets it;
  its largest accepted values run and print a bounded amount.
* Any code cell run first, in a new namespace, runs or says which cells to run.
* Each exercise's check passes the right answer, names each usual mistake, and never shows
  the answer; an answer cell defines the function its check names.
* Where the chapter shows a chart, its lab draws it as SVG (mirrorwidgets.lab_charts), with
  the numbers of its table twin.

The browser itself runs them in tests/browser/test_lite_site.py.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import inspect
import io
import math
import re

import nbformat
import pytest

from bookbuild.execute import notebook_client
from mirrorkit.checks.lab_answers import EXERCISES, check, check_answer, draw_inputs
from mirrorkit.checks.lab_settings import SETTINGS
from mirrorwidgets.lab_charts import LabChart, loss_scale_chart, rates_chart, times_chart
from tests.conftest import ROOT
from tests.refuse_heavy import REFUSE  # run first in the lab's kernel, as in the browser

LABS = sorted((ROOT / "book" / "browser").glob("*.ipynb"))
# Seconds a lab's cell may take (each takes under 5 here, under load). Small on purpose: now and
# then a cell's reply reaches nbclient only when its wait for the reply times out (seen with the
# labs' ipywidgets `interact` cells on a loaded machine: the lab still passes, a timeout later).
CELL_TIMEOUT = 30
PRINTED_AT_MOST = 60_000  # characters a lab prints at its largest accepted values
RUN_FIRST = "run the cells above this one first"
CHARTED = {
    "04_loss_scaling",
    "05_ring_all_reduce",
    "08_scaling_rule",
}  # the labs that draw a chart (docs/labs.md)


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.name)
def test_a_browser_lab_runs_without_tensorflow_keras_or_numpy(lab, tmp_path):
    nb = nbformat.read(lab, as_version=4)
    assert not any(cell.get("outputs") for cell in nb.cells), "store browser labs without outputs"
    nb.cells.insert(0, nbformat.v4.new_code_cell(REFUSE))
    with notebook_client(nb, timeout=CELL_TIMEOUT, cwd=lab.parent) as client:
        client.execute()
    printed = [o for cell in nb.cells for o in cell.get("outputs", ())]
    assert printed, "a lab shows the reader something"
    html = [o["data"]["text/html"] for o in printed if "text/html" in o.get("data", {})]
    drawn = [h for h in html if "<svg" in h and '<details class="mw-twin">' in h]
    assert len(drawn) == (lab.stem in CHARTED), "a lab draws its chapter's chart, with its twin"


def test_there_are_browser_labs():
    assert LABS, "book/browser/ holds the browser labs"
    assert {lab.stem for lab in LABS} == set(SETTINGS), "each lab has its settings table"


def _code(lab) -> list[str]:
    return [c.source for c in nbformat.read(lab, as_version=4).cells if c.cell_type == "code"]


def _run(source: str, namespace: dict):
    """One cell, as IPython runs it: top-level await allowed, the last expression's value."""
    tree = ast.parse(source)
    last = tree.body.pop() if tree.body and isinstance(tree.body[-1], ast.Expr) else None
    result = None
    for node, mode in ((ast.Module(tree.body, []), "exec"), (last, "eval")):
        if node is not None:
            node = ast.Expression(node.value) if mode == "eval" else node
            flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
            result = eval(compile(node, "<cell>", mode, flags=flags), namespace)
            result = asyncio.run(result) if inspect.iscoroutine(result) else result
    return result


def _run_lab(lab, values: dict | None = None, *, go_on: str = "") -> tuple:
    """The lab's code cells in one namespace, the first with ``values`` put in; what they
    printed, the error that stopped them (or None), and the index of the cell that raised.
    An error whose message holds ``go_on`` (when given) does not stop them."""
    cells = _code(lab)
    for name, value in (values or {}).items():
        text = "float('nan')" if isinstance(value, float) and math.isnan(value) else repr(value)
        pattern, line = rf"^{name} = [^#\n]*", f"{name} = {text} "
        cells[0], found = re.subn(pattern, line, cells[0], count=1, flags=re.M)
        assert found, f"{lab.name}: no {name} = ... in its first code cell"
    namespace, printed = {"__name__": "__main__"}, io.StringIO()
    with contextlib.redirect_stdout(printed), contextlib.chdir(lab.parent):
        for k, source in enumerate(cells):
            try:
                _run(source, namespace)
            except Exception as error:  # what the reader would see
                if not (go_on and go_on in str(error)):
                    return printed.getvalue(), error, k
    return printed.getvalue(), None, -1


def _bad_values(setting) -> list:
    over = setting.maximum + 1 if setting.whole else setting.maximum * 2
    float_ = 2.5 if setting.whole else math.nan
    return [0, -1, float_, str(setting.example), 10**12, over]


def _bad_table():
    return [
        pytest.param(lab, setting.name, value, id=f"{lab.stem}-{setting.name}={value!r}")
        for lab in LABS
        for setting in SETTINGS[lab.stem]
        for value in _bad_values(setting)
    ]


@pytest.mark.parametrize(("lab", "name", "value"), _bad_table())
def test_a_value_the_lab_cannot_take_is_refused_in_its_own_words(lab, name, value):
    (setting,) = [s for s in SETTINGS[lab.stem] if s.name == name]
    printed, error, cell = _run_lab(lab, {name: value})
    accepted = not isinstance(value, str) and not (isinstance(value, float) and math.isnan(value))
    accepted &= setting.whole is False or isinstance(value, int)
    low = setting.minimum if setting.minimum is not None else -math.inf
    accepted = accepted and low <= value <= setting.maximum
    accepted = accepted and (setting.above is None or value > setting.above)
    if accepted:
        assert error is None, f"{name} = {value!r} is in range, yet cell {cell}: {error!r}"
        return
    assert error is not None, f"{name} = {value!r} ran: {printed[-300:]}"
    assert cell == 0, f"refused by code cell {cell}, not the one that sets {name}"
    assert isinstance(error, TypeError | ValueError), repr(error)
    message = str(error)
    assert message.startswith(f"{name} must be "), message
    assert f"write {name} = {setting.example!r}." in message, message


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.name)
def test_a_lab_at_its_largest_accepted_values_runs_and_prints_a_bounded_amount(lab):
    largest = {s.name: s.maximum for s in SETTINGS[lab.stem]}
    # A slider refuses a value it cannot show (and says what to call instead); the rest runs.
    printed, error, cell = _run_lab(lab, largest, go_on="what the slider shows")
    assert error is None, f"cell {cell}: {error!r}"
    assert len(printed) <= PRINTED_AT_MOST, len(printed)


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.name)
def test_any_cell_run_first_runs_or_says_which_cells_to_run(lab):
    for k, source in enumerate(_code(lab)):
        namespace = {"__name__": "__main__"}
        with contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(lab.parent):
            try:
                _run(source, namespace)
            except NameError as error:
                assert RUN_FIRST in str(error), f"code cell {k}: {error}"


@pytest.mark.parametrize("key", sorted(EXERCISES))
def test_an_exercise_check_passes_the_right_answer_and_names_each_mistake(key):
    exercise = EXERCISES[key]
    assert check(key, exercise.right).passed
    assert check_answer(key, exercise.right, draw_inputs(key, seed=7, count=20)).passed
    assert not check(key, None).passed and not check(key, lambda *args: ...).passed
    named = {check(key, wrong).message for wrong, _ in exercise.mistakes}
    for wrong, why in exercise.mistakes:
        verdict = check(key, wrong)
        assert not verdict.passed and verdict.message.endswith(why), (verdict, why)
    assert len(named) == len(exercise.mistakes), "each mistake is told apart"


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.name)
def test_a_lab_has_two_exercises_each_an_answer_cell_and_its_check(lab):
    cells = nbformat.read(lab, as_version=4).cells
    answers = [c for c in cells if "lab-answer" in c.metadata.get("tags", ())]
    checks = [c for c in cells if "lab-check" in c.metadata.get("tags", ())]
    keys = sorted(k for k in EXERCISES if k.startswith(lab.stem + "/"))
    assert len(keys) >= 2
    assert [c.metadata["lab_exercise"] for c in answers] == keys
    assert [c.metadata["lab_exercise"] for c in checks] == keys
    for cell, key in zip(answers, keys, strict=True):
        assert f"def {EXERCISES[key].answer}(" in cell.source
        assert "return ...  #" in cell.source, "the answer cell holds no solution"
    for cell, key in zip(checks, keys, strict=True):
        assert f'check("{key}", globals().get("{EXERCISES[key].answer}"))' in cell.source


def _charts(stem: str) -> tuple[list[LabChart], dict]:
    """The charts a lab's cells show, run top to bottom in one namespace; and the namespace."""
    lab = ROOT / "book" / "browser" / f"{stem}.ipynb"
    namespace, shown = {"__name__": "__main__"}, []
    with contextlib.redirect_stdout(io.StringIO()), contextlib.chdir(lab.parent):
        for source in _code(lab):
            shown.append(_run(source, namespace))
    return [result for result in shown if isinstance(result, LabChart)], namespace


def _stored_chart(chapter: str, css: str) -> str:
    """The HTML of the chapter's stored chart whose SVG has class ``css``."""
    nb = nbformat.read(ROOT / "book" / chapter, as_version=4)
    outputs = [o for cell in nb.cells if cell.cell_type == "code" for o in cell.outputs]
    html = [o.get("data", {}).get("text/html", "") for o in outputs]
    (chart,) = [h for h in html if f'class="{css}"' in h]
    return chart


def test_lab_4_draws_chapter_4s_loss_scale_chart_with_its_numbers():
    (chart,), _ = _charts("04_loss_scaling")
    stored = _stored_chart("04_loss_scaling.ipynb", "mw-loss-scale")
    # The chapter's twin: step, scale, overflow, loss; the lab has no loss (it trains nothing).
    cells = re.findall(r"<tr><td>(\d+)</td><td>([^<]*)</td><td>(yes|no)</td>", stored)
    assert [row[:3] for row in chart.rows] == [(int(s), scale, flag) for s, scale, flag in cells]
    assert [row[2] for row in chart.rows].count("yes") == 1  # the overflow forced at step 3
    path = re.compile(r'<path class="mw-scale" d="([^"]+)"')
    assert path.findall(chart.svg) == path.findall(stored)  # the same line, point for point
    assert "<td>6.554e+04</td><td>yes</td>" in chart.html()


def test_lab_8_draws_the_rates_of_chapter_8s_two_runs_at_0_6_x_8():
    (chart,), _ = _charts("08_scaling_rule")
    assert chart.header == ("step", "warm-up 0", "warm-up 8")
    assert [row[0] for row in chart.rows] == list(range(16))
    assert {row[1] for row in chart.rows} == {"4.8"}  # no warm-up: 0.6 x 8 from the start
    warmed = [float(row[2]) for row in chart.rows]
    assert warmed[0] == pytest.approx(0.6) and warmed[8:] == pytest.approx([4.8] * 8)
    assert all(a < b for a, b in zip(warmed[:8], warmed[1:9], strict=True))  # climbs 8 steps
    assert chart.svg.count("<polyline") == 2 and "<td>1.125</td>" in chart.html()


def test_lab_5_draws_the_cost_models_times_as_the_synthetic_benchmark_computes_them():
    (chart,), lab = _charts("05_ring_all_reduce")
    from mirrorkit.measure.links import LINKS
    from mirrorkit.measure.synthetic import synthetic_benchmark
    from mirrorkit.report.units import format_seconds

    columns = []
    for algorithm in ("collective", "one_device"):
        for name in ("nvlink4_h100", "ethernet_25g"):
            link = LINKS[name]
            model = synthetic_benchmark(
                lab["LAUNCH"],
                lab["ALPHA"],
                link.bandwidth,
                algorithms=[algorithm],
                replicas=[lab["REPLICAS"]],
                sizes=lab["SIZES"],
                repeats=1,
            )
            columns.append((f"{algorithm}, {link.name}", [r.median_s for r in model.records]))
    assert chart.header == ("size per replica", *(label for label, _ in columns))
    for k, row in enumerate(chart.rows):
        assert row[1:] == tuple(format_seconds(times[k]) for _, times in columns)
    assert chart.svg.count("<polyline") == 4 and "64 replicas" in chart.heading


def test_lab_5_draws_chapter_5s_step_timeline_bar_for_bar():
    _, lab = _charts("05_ring_all_reduce")
    shown = lab["timeline"]._repr_mimebundle_()["text/html"]
    nb = nbformat.read(ROOT / "book" / "05_where_the_time_goes.ipynb", as_version=4)
    html = [o.get("data", {}).get("text/html", "") for c in nb.cells for o in c.get("outputs", ())]
    (stored,) = [h for h in html if 'class="mw-seg"' in h]  # the chapter's StepTimeline
    svg = re.compile(r"<svg.*?</svg>", re.S)
    assert svg.findall(shown) == svg.findall(stored), (  # the same bars, point for point
        "05_step_phases.json is not the run chapter 5 stores: after executing the chapter in "
        "place, run tests/book/test_lab_step_phases.py with MIRRORBOOK_WRITE_STEP_PHASES=1"
    )


_TIMES = {"ring": [0.001, 0.002]}


@pytest.mark.parametrize(
    ("call", "error", "argument", "match"),
    [
        (lambda: loss_scale_chart([], []), ValueError, "scales", "write scales="),
        (lambda: loss_scale_chart([0.0], [False]), ValueError, "scales[0]", "above 0"),
        (lambda: loss_scale_chart([1.0, 2.0], [False]), ValueError, "overflows", "per scale"),
        (lambda: loss_scale_chart([1.0], [2]), ValueError, "overflows", "True or False"),
        (lambda: loss_scale_chart("8", [False]), TypeError, "scales", "must be a list"),
        (lambda: rates_chart({}), ValueError, "series", "at least one label"),
        (lambda: rates_chart([0.1]), TypeError, "series", "a dict"),
        (lambda: rates_chart({"a": [math.inf]}), ValueError, "series['a'][0]", "finite"),
        (lambda: times_chart([8, 4], _TIMES, heading=""), ValueError, "sizes", "increasing"),
        (lambda: times_chart([4], _TIMES, heading=""), ValueError, "series['ring']", "per size"),
        (lambda: times_chart([4.0, 8], _TIMES, heading=""), TypeError, "sizes[0]", "an int"),
    ],
)
def test_a_lab_chart_refuses_what_it_cannot_draw(refuses, call, error, argument, match):
    refuses(call, error, argument, match)


def _live_cells():
    from bookbuild.lite.live_cells import TAG
    from bookbuild.manifest import load_manifest

    for chapter in load_manifest()["chapters"]:
        notebook = nbformat.read(chapter["path"], as_version=4)
        for index, cell in enumerate(notebook.cells):
            if cell.cell_type == "code" and TAG in cell.metadata.get("tags", []):
                yield pytest.param(cell, id=f"{chapter['path'].stem} cell {index}")


@pytest.mark.parametrize("cell", list(_live_cells()))
def test_a_chapter_cell_that_runs_in_the_page_needs_no_tensorflow_and_prints_its_output(cell):
    """What the page's console runs (bookbuild/lite/live_cells.py) prints what the chapter shows."""
    import subprocess
    import sys

    ran = subprocess.run(
        [sys.executable, "-c", REFUSE + "\n" + cell.source],
        capture_output=True,
        text=True,
        timeout=60,
        cwd=ROOT,
    )
    assert ran.returncode == 0, ran.stderr
    stored = "".join(o["text"] for o in cell.outputs if o.get("name") == "stdout")
    assert ran.stdout == stored and stored, (ran.stdout, stored)
