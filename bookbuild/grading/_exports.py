"""Answers that cross from the student's process to the judge as data, by kind.

Where an exercise's check is one of :data:`EXPORTED_CHECKS`, the student's process (the
runner in ``export`` mode) serializes its answer and the judge (``judge`` mode, which runs
no code from the submission) rebuilds it and runs the chapter's check on it. A ``dataset``
crosses as its graph and element structure, a dataset function as one graph per
``tf.distribute.InputContext`` the check asks for (:func:`contexts`), rebuilt with
``DatasetFromGraph`` only when every operation, its function library's included, is in
:data:`ALLOWED_OPS` (no ``PyFunc``, ``EagerPyFunc``, ``ReadFile``, ``WriteFile``,
``SaveV2``, ``RestoreV2``, ``MatchingFiles``, file-reading datasets). ``state`` crosses as
each replica's values (:mod:`._states`), a ``replica_fn`` as its traced graph
(:mod:`._replica_fns`), ``values`` as data (:mod:`._values`).

Example:
    >>> check_function("x = 1\\nmk.check_input_pipeline(train, strategy)")
    'check_input_pipeline'
    >>> contexts(4)[:3]
    [(1, 0, 1), (1, 0, 2), (1, 0, 4)]
"""

from __future__ import annotations

import ast
import inspect

from bookbuild.grading import (
    _accumulations,
    _clips,
    _graph_filters,
    _losses,
    _replica_fns,
    _states,
    _values,
)
from bookbuild.grading._wire import (
    ELEMENT_OPS,
    MAX_GRAPH_BYTES,
    ExportError,
    decode,
    encode,
    graph_ops,
    refused,
    stand_in,
    type_name,
)

EXPORTED_CHECKS = {  # each check judged on exported answers, and the kind its answer crosses as
    "check_input_pipeline": "dataset",
    "check_mirrored": "state",
    "check_per_replica": "state",
    "check_all_reduced": "replica_fn",
    "check_all_reduce_ranking": "values",
    "check_all_reduce_growth": "values",
    "check_loss_step": "loss",
    "check_clipping": "clip",
    "check_accumulation": "accumulate",
    "check_evaluation": "evaluate",  # asked on drawn inputs at the check (_asked)
    "check_restore": "restore",
}
AT_CHECK = frozenset(
    {"loss", "clip", "accumulate", "evaluate", "restore"}
)  # kinds exported at the check, with its arguments
PARAMETERS = ("REPLICAS", "SEED")  # names the runner sets in every process

_DATASETS = {
    "AssertCardinalityDataset", "BatchDatasetV2", "CacheDatasetV2?", "ConcatenateDataset",
    "DirectedInterleaveDataset", "FilterDataset", "FinalizeDataset", "FlatMapDataset",
    "InterleaveDataset", "MapDataset", "MaxIntraOpParallelismDataset", "ModelDataset",
    "OptionsDataset", "PaddedBatchDatasetV2", "ParallelBatchDataset", "ParallelFilterDataset",
    "ParallelInterleaveDatasetV4", "ParallelMapDatasetV2", "PrefetchDataset",
    "PrivateThreadPoolDataset", "RangeDataset", "RebatchDatasetV2", "RepeatDataset",
    "ScanDataset", "ShardDataset", "ShuffleAndRepeatDatasetV2", "ShuffleDatasetV2",
    "ShuffleDatasetV3", "SkipDataset", "SlidingWindowDataset", "TakeDataset",
    "TakeWhileDataset", "TensorDataset", "TensorSliceDataset", "UnbatchDataset",
    "WindowDataset", "ZipDataset", "DummySeedGenerator", "AnonymousSeedGenerator",
    "DummyMemoryCache",
}  # fmt: skip
ALLOWED_OPS = frozenset(op for op in _DATASETS if not op.endswith("?")) | ELEMENT_OPS


def check_function(source: str) -> str | None:
    """The ``mk.check_...`` function a check cell calls last, or None."""
    calls = [
        node.func.attr
        for node in ast.walk(ast.parse(source))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    ]
    return next((name for name in reversed(calls) if name.startswith("check_")), None)


def chapter_reads(program: dict) -> dict[int, list[str]]:
    """``{exercise: names}``: what a ``values`` check reads of the chapter beside the answer.

    A measurement the chapter made in the student's process (chapter 5's ``benchmark``) is
    what the learner's answer derives from, so it crosses with the answer: the names a
    ``values`` check's call passes that the answer does not define and the runner does not
    set.

    Example:
        >>> chapter_reads({"steps": [
        ...     {"kind": "answer", "exercise": 1, "asks": ["ranking"]},
        ...     {"kind": "check", "exercise": 1,
        ...      "source": "mk.check_all_reduce_ranking(ranking, benchmark, replicas=REPLICAS)"},
        ... ]})
        {1: ['benchmark']}
    """
    asks = {s["exercise"]: s["asks"] for s in program["steps"] if s["kind"] == "answer"}
    kinds = exported_exercises(program)
    reads = {}
    for step in program["steps"]:
        number = step.get("exercise")
        if step["kind"] != "check" or kinds.get(number) != "values":
            continue
        call = ast.parse(step["source"]).body[-1].value
        passed = [*call.args, *(k.value for k in call.keywords)]
        names = [a.id for a in passed if isinstance(a, ast.Name)]
        reads[number] = [n for n in names if n not in asks.get(number, []) + list(PARAMETERS)]
    return reads


def exported_exercises(program: dict) -> dict[int, str]:
    """``{exercise: kind}`` for the exercises whose check is judged on exported answers.

    Example:
        >>> exported_exercises({"steps": [
        ...     {"kind": "check", "exercise": 1, "source": "mk.check_mirrored(c, strategy)"},
        ...     {"kind": "check", "exercise": 2, "source": "mk.check_resume(f, seed=1)"},
        ... ]})
        {1: 'state'}
    """
    steps = [s for s in program["steps"] if s["kind"] == "check"]
    checks = {s["exercise"]: check_function(s["source"]) for s in steps}
    return {k: EXPORTED_CHECKS[c] for k, c in checks.items() if c in EXPORTED_CHECKS}


def contexts(replicas: int) -> list[tuple[int, int, int]]:
    """The ``(pipelines, pipeline id, replicas)`` a dataset function is exported for."""
    counts = sorted({1, 2, replicas, max(replicas, 2)})
    return [(p, i, r) for p in (1, 2) for r in counts for i in range(p)]


def export_value(  # noqa: PLR0913 - a kind of AT_CHECK also takes the check's arguments
    value, replicas: int, kind="dataset", strategy=None, arguments=(), keywords=None
) -> dict:
    """Serialize one asked name's value (in the student's process).

    Args:
        value: The value the answer gave the asked name.
        replicas: This run's replica count.
        kind: What the exercise's check reads: ``"dataset"``, ``"state"``,
            ``"replica_fn"``, ``"values"``, ``"loss"``, ``"clip"`` or ``"accumulate"``.
        strategy: The chapter's strategy (a ``state`` records whether a value is its).
        arguments: The check's arguments after the answer, for a kind of :data:`AT_CHECK`
            (the strategy, the model function and the data; an ``accumulate``'s ``apply``
            first).
        keywords: The check's keyword arguments, for a kind of :data:`AT_CHECK` (a
            ``clip``'s ``clip_norm``, an ``accumulate``'s ``micro_steps``).

    Raises:
        ExportError: If it cannot cross as that kind.
    """
    import tensorflow as tf

    if kind in _TRACED:
        check, describe = _TRACED[kind]
        try:
            given = check_arguments(checks_function(check), arguments, keywords or {})
        except TypeError as error:
            why = f"the check's call does not give what {check} takes: {error}"
            raise ExportError(why) from None
        wanted = list(inspect.signature(describe).parameters)[1:]
        return describe(value, **{k: v for k, v in given.items() if k in wanted})
    if kind == "state":
        return {"kind": "state", "value": _states.describe(value, strategy)}
    if kind == "replica_fn":
        return _replica_fns.describe(value, strategy)
    if kind == "values":
        return {"kind": "values", "value": _values.describe(value)}
    if value is Ellipsis:
        return {"kind": "ellipsis"}
    if isinstance(value, tf.data.Dataset):
        return {"kind": "dataset", **_graph(value)}
    if callable(value):
        return {
            "kind": "dataset_fn",
            "contexts": [[*k, _made(value, k)] for k in contexts(replicas)],
        }
    raise ExportError(
        f"it is a {type(value).__name__}, not a tf.data.Dataset or a dataset function: the "
        "exercise asks for a dataset"
    )


_TRACED = {  # kinds traced at the check: the check, and what describes the answer for it
    "loss": ("loss_step.check_loss_step", _losses.describe),
    "clip": ("clipping.check_clipping", _clips.describe),
    "accumulate": ("accumulation.check_accumulation", _accumulations.describe),
}


def check_arguments(check, arguments, keywords: dict) -> dict:
    """A check call's arguments after the answer, by the check's own parameter names
    (defaults included), however the chapter's cell passes them.

    Raises:
        TypeError: If they do not bind to the check's signature.

    Example:
        >>> def check_x(answer, strategy, *, size=8):
        ...     pass
        >>> check_arguments(check_x, ["s"], {})
        {'strategy': 's', 'size': 8}
    """
    bound = inspect.signature(check).bind(None, *arguments, **keywords)
    bound.apply_defaults()
    first = next(iter(bound.arguments))
    return {k: v for k, v in bound.arguments.items() if k != first}


def checks_function(where: str):
    """The function ``module.name`` of ``mirrorkit.checks`` (imported when first asked for).

    Example:
        >>> checks_function("replica_values.check_mirrored").__name__
        'check_mirrored'
    """
    import importlib

    module, name = where.split(".")
    return getattr(importlib.import_module(f"mirrorkit.checks.{module}"), name)


def _made(fn, key: tuple) -> dict:
    """What a dataset function made for one input context: its dataset's graph, the error
    it raised (its type's name and message), the type of what it returned instead, or why
    the dataset cannot cross (``error``)."""
    import tensorflow as tf

    try:
        dataset = fn(tf.distribute.InputContext(*key))
    except Exception as error:  # noqa: BLE001 - the learner's function: its feedback
        return {"raised": type_name(error), "message": str(error)[:500]}
    if not isinstance(dataset, tf.data.Dataset):
        return {"returned": type_name(dataset)}
    try:
        return _graph(dataset)
    except Exception as error:  # noqa: BLE001 - a graph that cannot cross: the row says why
        return {"error": f"{type(error).__name__}: {error}"[:500]}


def _graph(dataset) -> dict:
    import tensorflow as tf
    from tensorflow.python.saved_model import nested_structure_coder

    if not isinstance(dataset, tf.data.Dataset):
        raise TypeError(f"the function returned a {type(dataset).__name__}, not a dataset")
    policy = tf.data.experimental.ExternalStatePolicy.FAIL
    graph = dataset._as_serialized_graph(external_state_policy=policy).numpy()
    if len(graph) > MAX_GRAPH_BYTES:
        raise ExportError(f"its graph takes {len(graph)} bytes, over {MAX_GRAPH_BYTES}")
    spec = nested_structure_coder.encode_structure(dataset.element_spec).SerializeToString()
    return {"graph": encode(graph), "spec": encode(spec)}


def refused_ops(graph: bytes) -> list[str]:
    """The operations of a serialized ``GraphDef`` (its function library too) not allowed.

    Example:
        >>> from tensorflow.core.framework import graph_pb2
        >>> g = graph_pb2.GraphDef()
        >>> g.node.add(name="a", op="Const").CopyFrom(g.node[0])
        >>> g.library.function.add().node_def.add(name="w", op="WriteFile")
        name: "w"
        op: "WriteFile"
        <BLANKLINE>
        >>> refused_ops(g.SerializeToString())
        ['WriteFile']
    """
    from tensorflow.core.framework import graph_pb2

    parsed = graph_pb2.GraphDef()
    parsed.ParseFromString(graph)
    return refused(graph_ops(parsed), ALLOWED_OPS)


def import_value(record: dict, kind: str = "dataset", strategy=None):
    """Rebuild one exported value (in the judge): graphs from allowed operations, or state.

    Args:
        record: What the student's process exported (untrusted data).
        kind: What the exercise's check reads (the judge's own program says).
        strategy: The judge's strategy, which rebuilt state belongs to.

    Raises:
        ExportError: If the record is malformed, of another kind, or a graph uses a refused
            operation.
    """
    found = record.get("kind") if isinstance(record, dict) else None
    if kind == "state" and found == "state":
        return _states.rebuild(record.get("value"), strategy)
    if kind == "replica_fn" and found in ("replica_fn", "state"):
        return _replica_fns.rebuild(record, strategy)
    if kind == "loss" and found in ("loss", "state"):
        return _losses.rebuild(record, strategy)
    if kind == "clip" and found in ("clip", "state"):
        return _clips.rebuild(record, strategy)
    if kind == "accumulate" and found in ("accumulate", "state"):
        return _accumulations.rebuild(record, strategy)
    if kind == "values" and found == "values":
        return _values.rebuild(record.get("value"))
    if kind == "dataset" and found == "ellipsis":
        return Ellipsis
    if kind == "dataset" and found == "dataset":
        return _dataset(record)
    if kind == "dataset" and found == "dataset_fn" and isinstance(record.get("contexts"), list):
        table = {}
        for entry in record["contexts"]:
            key, made = tuple(entry[:3]), entry[3]
            table[key] = made if made.keys() & {"error", "raised", "returned"} else _dataset(made)
        return _ExportedFunction(table)
    raise ExportError("the exported answer is not one the grader reads")


def _dataset(record: dict):
    import tensorflow as tf
    from tensorflow.core.protobuf import struct_pb2
    from tensorflow.python.saved_model import nested_structure_coder

    try:
        graph, spec = decode(record["graph"]), decode(record["spec"])
    except (KeyError, TypeError, ValueError) as error:
        raise ExportError("the exported dataset is incomplete") from error
    refused = refused_ops(graph)
    if refused:
        raise ExportError(
            f"your dataset uses operations the grader does not run: {', '.join(refused[:5])} "
            "(a Python function, or reading or writing files): build it from tf.data and "
            "TensorFlow operations on the examples given"
        )
    proto = struct_pb2.StructuredValue()
    proto.ParseFromString(spec)
    structure = nested_structure_coder.decode_proto(proto)
    variant = tf.raw_ops.DatasetFromGraph(graph_def=graph)
    dataset = tf.data.experimental.from_variant(variant, structure=structure)
    return _graph_filters.with_filter_probe(dataset, graph, structure)


class _ExportedFunction:
    """A dataset function rebuilt from its exported contexts: it runs no learner code."""

    def __init__(self, table: dict) -> None:
        self._table = table

    def __call__(self, context):
        key = (context.num_input_pipelines, context.input_pipeline_id)
        made = self._table.get((*key, context.num_replicas_in_sync))
        if made is None:
            raise ValueError(f"no dataset was exported for the input context {key}")
        if not isinstance(made, dict):
            return made
        if "raised" in made:  # the learner's error, as the check would have met it
            raise _raised(made["raised"], str(made.get("message", ""))[:500])
        if "returned" in made:
            return stand_in(made["returned"])
        raise RuntimeError(str(made.get("error", ""))[:500])  # its graph could not cross


def _raised(name, message: str) -> Exception:
    """An error of a type named as the learner's, caught as the check catches that type:
    a ``TypeError`` or ``ValueError`` (or a built-in kind of one) as one, else as any."""
    import builtins

    found = getattr(builtins, name, None) if isinstance(name, str) else None
    known = isinstance(found, type) and issubclass(found, Exception)
    base = next((b for b in (TypeError, ValueError) if known and issubclass(found, b)), None)
    return stand_in(name, (base or RuntimeError,), message)
