"""Chapter 5's exercises judged by export: plain values and measurements cross as data.

No sandbox here: for every wrong and right answer of the chapter's variants, the grader
calls the chapter's own check cell on the values rebuilt from their JSON record (the
answer's names, and the chapter's benchmark that the answer derives from) and gives the
verdict and the words the check gives the values themselves.
Each distinct benchmark a variant asks for is measured once, for real, and reused. The
sandboxed runs are `tests/book/test_labs.py`'s.
"""

import functools
import importlib.util
import json
from types import SimpleNamespace

import pytest

import mirrorkit as mk
from bookbuild import ROOT
from bookbuild.grading._exports import ExportError, chapter_reads, export_value, import_value
from bookbuild.grading._valued import judge, judges

# Grading runs only in the book's environment (dev.py grade): these run in the reference job.
pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "variants_05", ROOT / "tests" / "book" / "variants" / "05_where_the_time_goes.py"
)
variants = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(variants)
REPLICAS = 4
ASKS = {
    1: ["predicted_ranking", "ranking"],
    2: ["predicted_growth", "measurement", "measured_growth"],
}
CASES = [
    (number, code)
    for number in ASKS
    for code in [
        "\n".join(f"{name} = ..." for name in ASKS[number]),
        *(c for _, c, _ in variants.WRONG[number]),
        *variants.RIGHT[number],
    ]
]


def _frozen(value):
    return tuple(value) if isinstance(value, list) else value


@functools.cache
def _measured(algorithms, sizes, replicas, repeats):
    return mk.benchmark_all_reduce(algorithms, sizes=list(sizes), replicas=list(replicas),
                                   repeats=repeats)  # fmt: skip


def _benchmark(algorithms, *, sizes, replicas, repeats):
    """mk.benchmark_all_reduce, measured once for each distinct request of this module."""
    return _measured(_frozen(algorithms), _frozen(sizes), _frozen(replicas), repeats)


@pytest.fixture(scope="module")
def chapter():
    kit = SimpleNamespace(**{n: getattr(mk, n) for n in mk.__all__})
    kit.benchmark_all_reduce = _benchmark
    benchmark = _benchmark(None, sizes=["1MiB", "8MiB"], replicas=[2, REPLICAS], repeats=3)
    return {"mk": kit, "benchmark": benchmark, "REPLICAS": REPLICAS}


def _check(number: int, values: dict):
    if number == 1:
        return mk.check_all_reduce_ranking(
            values["predicted_ranking"], values["ranking"], values["benchmark"],
            size="8MiB", replicas=REPLICAS,
        )  # fmt: skip
    return mk.check_all_reduce_growth(
        values["predicted_growth"], values["measured_growth"], values["measurement"],
        small="256KiB", large="4MiB", replicas=REPLICAS,
    )  # fmt: skip


@pytest.fixture(scope="module")
def sources(tmp_path_factory) -> dict[int, str]:
    """Chapter 5's check cells, as the grader calls them on the rebuilt values."""
    program = json.loads(_program(tmp_path_factory.mktemp("program")).read_text())
    checks = [s for s in program["steps"] if s["kind"] == "check"]
    assert all(judges(s["source"]) for s in checks)  # none needs a judge process
    return {s["exercise"]: s["source"] for s in checks}


def _program(folder):
    from bookbuild.grading.program import write_program
    from bookbuild.labs import chapters_with_exercises
    from bookbuild.manifest import load_manifest

    (chapter,) = chapters_with_exercises(load_manifest(), ["5"])
    return write_program(chapter, folder / "program.json")


@pytest.mark.parametrize(("number", "code"), CASES, ids=range(len(CASES)))
def test_the_grader_gives_the_rebuilt_values_the_verdict_the_values_get(
    number, code, chapter, sources
):
    namespace = dict(chapter)
    exec(code, namespace)
    names = [*ASKS[number], *(["benchmark"] if number == 1 else [])]
    values = {name: namespace[name] for name in names}
    try:
        records = {
            n: json.loads(json.dumps(export_value(v, 4, "values"))) for n, v in values.items()
        }
    except ExportError as error:
        pytest.fail(f"a variant's values could not cross: {error}")
    verdict = _check(number, values)
    passed, feedback = judge({"names": records}, sources[number], REPLICAS, 1)
    assert (passed, feedback) == (verdict.passed, "" if verdict.passed else verdict.message)


BROKEN = {
    "a benchmark of another format": {"kind": "benchmark", "data": {"format": "other"}},
    "a record with a field of its own": {"kind": "record", "data": {"algorithm": "ring"}},
    "a list nested too deep": functools.reduce(
        lambda inner, _: {"kind": "list", "items": [inner]}, range(9), {"kind": "ellipsis"}
    ),
    "a dict keyed by a list": {
        "kind": "dict",
        "items": [[{"kind": "list", "items": []}, {"kind": "python", "value": 1}]],
    },
    "a python value that is a dict": {"kind": "python", "value": {"a": 1}},
    "a kind of its own": {"kind": "pickle", "data": "gASV"},
}


@pytest.mark.parametrize("how", BROKEN)
def test_a_record_no_student_process_writes_is_refused(how):
    with pytest.raises(ExportError):
        import_value({"kind": "values", "value": BROKEN[how]}, "values")


def test_too_many_items_do_not_cross():
    with pytest.raises(ExportError, match="more than"):
        export_value(list(range(5000)), 4, "values")


def test_chapter_5_sends_the_benchmark_its_ranking_derives_from(tmp_path):
    program = json.loads(_program(tmp_path).read_text())
    assert chapter_reads(program) == {1: ["benchmark"], 2: []}


@pytest.mark.parametrize(
    "line",
    [None, {"names": []}, {"names": {"ranking": {"kind": "pickle"}}}, {"names": {"x": 1}}],
    ids=["nothing", "a list", "a kind of its own", "a number"],
)
def test_a_garbled_line_fails_and_raises_nothing(line, sources):
    passed, feedback = judge(line, sources[1], REPLICAS, 1)
    assert not passed and feedback


def test_a_check_cell_with_lines_of_its_own_is_left_to_a_judge_process():
    assert not judges("x = 1\nmk.check_all_reduce_growth(p, g, m, replicas=x)")
    assert not judges("mk.check_all_reduce_growth(p, g, m, replicas=int('4'))")
    assert not judges("mk.check_mirrored(counter, strategy)")
