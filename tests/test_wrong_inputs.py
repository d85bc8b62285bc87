"""Every public entry point has a table of at least five plausible wrong inputs (issue 12).

A table is a test marked ``@pytest.mark.wrong_inputs("<entry>")`` and parametrized over a
list written out in its module; each case asserts a clear message through the ``refuses`` or
``clear_message`` fixture (tests/conftest.py). This file reads the test sources, so it needs
neither TensorFlow nor a run of the tables.
"""

import ast
from collections import Counter
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
STUBS = {
    "mk": ROOT / "mirrorkit" / "__init__.pyi",
    "mirrorwidgets": ROOT / "widgets" / "mirrorwidgets" / "__init__.pyi",
}
MINIMUM = 5

# Public names a learner receives from the library and does not call with arguments of their
# own: results, records and reports. Constants (UPPER_CASE) and exceptions are not called either.
RESULTS = {
    "mk.AllReduceBenchmark",  # from benchmark_all_reduce; its from_json is an entry point
    "mk.AllReduceRecord",
    "mk.AllReduceReplay",  # from replay_all_reduce
    "mk.CheckResult",
    "mk.CostModel",  # from fit_cost_model; its predict and predict_step are entry points
    "mk.ClusterRun",
    "mk.ClusterStatus",
    "mk.FitReadyModel",
    "mk.InputPreview",
    "mk.LossScaleHistory",
    "mk.LossScaleStep",
    "mk.ReplicaBatch",
    "mk.ReplicaPlan",
    "mk.ReplicaRow",
    "mk.ReplicaTable",
    "mk.ScalingCurve",  # from run_scaling_sweep
    "mk.ScalingSweep",
    "mk.StepEquivalence",
    "mk.StepPhases",
    "mk.StepPrediction",
    "mk.StepTrace",
    "mk.WeightGradient",
    "mk.WorkerContext",  # from current_context() or its from_environment
    "mk.WorkerEvent",
    "mk.WorkerStatus",
}
# Functions that take no argument at all: nothing to get wrong (a test below checks the
# signatures, so one that gains a parameter needs its table).
NO_ARGUMENTS = {"mk.stop_warm_process"}
# Entry points that are not names in a stub: methods learners call, and commands.
MORE_ENTRY_POINTS = {
    "mk.AllReduceBenchmark.from_json",
    "mk.CostModel.predict",
    "mk.CostModel.predict_step",
    "mk.LocalCluster.run",
    "mk.LocalCluster.run_script",
    "mk.StepTrace.write_trace",
    "mk.WorkerContext.from_environment",
    "python -m mirrorkit.worker",
    "python -m mirrorkit.measure",
}


def public_names() -> set[str]:
    names = set()
    for prefix, stub in STUBS.items():
        for node in ast.parse(stub.read_text()).body:
            if isinstance(node, ast.ImportFrom):
                names |= {f"{prefix}.{alias.asname or alias.name}" for alias in node.names}
    return names


def is_called(name: str) -> bool:
    short = name.rpartition(".")[2]
    return not (
        short.isupper()
        or short.endswith(("Error", "Warning"))
        or name in RESULTS
        or name in NO_ARGUMENTS
    )


ENTRY_POINTS = sorted({n for n in public_names() if is_called(n)} | MORE_ENTRY_POINTS)


def _marker_entry(decorator: ast.expr) -> str | None:
    if (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr == "wrong_inputs"
    ):
        return ast.literal_eval(decorator.args[0])
    return None


def _cases(decorator: ast.expr, tables: dict[str, ast.expr], where: str) -> int | None:
    if not (
        isinstance(decorator, ast.Call)
        and isinstance(decorator.func, ast.Attribute)
        and decorator.func.attr == "parametrize"
    ):
        return None
    values = decorator.args[1]
    if isinstance(values, ast.Name):
        values = tables.get(values.id, values)
    assert isinstance(values, ast.List | ast.Tuple), f"{where}: write the table out as a list"
    return len(values.elts)


def tables() -> Counter:
    """Cases per entry point, over every test marked wrong_inputs."""
    counts: Counter = Counter()
    for path in sorted((ROOT / "tests").rglob("test_*.py")):
        tree = ast.parse(path.read_text())
        assigned = {
            target.id: node.value
            for node in tree.body
            if isinstance(node, ast.Assign)
            for target in node.targets
            if isinstance(target, ast.Name)
        }
        for node in ast.walk(tree):
            if not isinstance(node, ast.FunctionDef):
                continue
            entries = [e for d in node.decorator_list if (e := _marker_entry(d))]
            if not entries:
                continue
            where = f"{path.relative_to(ROOT)}::{node.name}"
            cases = [c for d in node.decorator_list if (c := _cases(d, assigned, where))]
            assert len(cases) == 1, f"{where}: a wrong_inputs test is parametrized once"
            for entry in entries:
                counts[entry] += cases[0]
    return counts


TABLES = tables()


def test_every_table_names_a_real_entry_point():
    unknown = sorted(set(TABLES) - set(ENTRY_POINTS))
    assert not unknown, f"wrong_inputs names no public entry point: {unknown}"


@pytest.mark.parametrize("entry", ENTRY_POINTS)
def test_every_public_entry_point_has_a_table_of_wrong_inputs(entry):
    assert TABLES[entry] >= MINIMUM, (
        f"{entry}: {TABLES[entry]} wrong inputs tried; write a table of at least {MINIMUM} "
        f'marked @pytest.mark.wrong_inputs("{entry}")'
    )


def test_the_results_list_holds_public_names():
    assert not RESULTS - public_names(), RESULTS - public_names()


def test_the_functions_said_to_take_no_argument_take_none():
    defined = {
        node.name: node
        for path in sorted((ROOT / "mirrorkit").rglob("*.py"))
        for node in ast.parse(path.read_text()).body
        if isinstance(node, ast.FunctionDef)
    }
    for name in NO_ARGUMENTS:
        assert name in public_names(), name
        arguments = defined[name.rpartition(".")[2]].args
        assert not (
            arguments.posonlyargs
            or arguments.args
            or arguments.vararg
            or arguments.kwonlyargs
            or arguments.kwarg
        ), f"{name} takes arguments now: write its table of wrong inputs"
