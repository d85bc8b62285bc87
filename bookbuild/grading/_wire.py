"""What every answer that crosses as data is made of: its error, its bounds, its encoding.

The student's process writes an exported answer as JSON (:mod:`._exports`); bytes cross
as base64 text, a graph is at most :data:`MAX_GRAPH_BYTES`, and the operations a judge runs
are drawn from :data:`ELEMENT_OPS` plus what each kind adds. A record the judge cannot read
raises :class:`ExportError`, whose sentence is the exercise's feedback.

Example:
    >>> decode(encode(b"graph"))
    b'graph'
    >>> sorted(refused({"Const", "PyFunc", "WriteFile"}, ELEMENT_OPS))
    ['PyFunc', 'WriteFile']
"""

from __future__ import annotations

import base64

MAX_GRAPH_BYTES = 1 << 20  # one exported graph; the results channel caps the whole run
ELEMENT_OPS = frozenset({
    "_Arg", "_Retval", "Abs", "Add", "AddV2", "All", "Any", "ArgMax", "ArgMin", "Assert",
    "BroadcastTo", "Cast", "Ceil", "ConcatV2", "Const", "Cumsum", "Div", "DivNoNan", "Equal",
    "ExpandDims", "Fill", "Floor", "FloorDiv", "FloorMod", "GatherV2", "Greater",
    "GreaterEqual", "Identity", "IdentityN", "If", "Less", "LessEqual", "LogicalAnd",
    "LogicalNot", "LogicalOr", "MatMul", "Max", "Maximum", "Mean", "Min", "Minimum", "Mod",
    "Mul", "Neg", "NoOp", "NotEqual", "OneHot", "OnesLike", "Pack", "Pow", "Prod", "Range",
    "Rank", "RealDiv", "Reshape", "Round", "Select", "SelectV2", "Shape", "Sign", "Size",
    "Slice", "Sqrt", "Square", "Squeeze", "StatelessIf", "StatelessRandomNormalV2",
    "StatelessRandomUniformV2", "StatelessWhile", "StopGradient", "StridedSlice", "Sub",
    "Sum", "Tile", "Transpose", "TruncateDiv", "Unpack", "Where", "While", "ZerosLike",
})  # fmt: skip


class ExportError(Exception):
    """An answer that cannot cross, with the sentence its feedback shows."""


def encode(data: bytes) -> str:
    """Bytes as the text a JSON line carries."""
    return base64.b64encode(data).decode()


def decode(text: str) -> bytes:
    """The bytes of :func:`encode`'s text; ``ValueError`` if it is not base64."""
    return base64.b64decode(text.encode(), validate=True)


def graph_ops(graph) -> set[str]:
    """The operations of a ``GraphDef``, its function library's (control flow, maps) too."""
    ops = {node.op for node in graph.node}
    return ops | {node.op for f in graph.library.function for node in f.node_def}


def refused(ops: set[str], allowed: frozenset) -> list[str]:
    """The operations of ``ops`` a judge does not run, sorted."""
    return sorted(set(ops) - allowed)
