"""What every answer that crosses as data is made of: its error, its bounds, its encoding.

The student's process writes an exported answer as JSON (:mod:`._exports`); bytes cross
as base64 text, a graph is at most :data:`MAX_GRAPH_BYTES`, and the operations a judge runs
are drawn from :data:`ELEMENT_OPS` plus what each kind adds. A record the judge cannot read
raises :class:`ExportError`, whose sentence is the exercise's feedback.

Example:
    >>> decode(encode(b"graph")), unpack(pack(b"graph" * 100))[:5]
    (b'graph', b'graph')
    >>> type(stand_in(type_name(len))).__name__, plain(2**70, 10)
    ('builtin_function_or_method', None)
    >>> sorted(refused({"Const", "PyFunc", "WriteFile"}, ELEMENT_OPS))
    ['PyFunc', 'WriteFile']
"""

from __future__ import annotations

import base64
import zlib

MAX_GRAPH_BYTES = 1 << 20  # one exported graph; the results channel caps the whole run
PLAIN = (bool, int, float, str, type(None))  # Python values that cross as themselves
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


NO_RESULTS = "no results came back for this exercise"
FEEDBACK_LIMIT = 2000  # characters of an answer's own feedback sentence kept


class ExportError(Exception):
    """An answer that cannot cross, with the sentence its feedback shows."""


def opened(line, key: str = "names") -> tuple[dict | None, str]:
    """What an untrusted line carries under ``key``, or the feedback that fails it.

    Returns ``(found, "")`` when ``line[key]`` is a dict, else ``(None, why)``: the line's
    own ``failed`` sentence, or :data:`NO_RESULTS`.

    Example:
        >>> opened({"failed": "your answer raised NameError: x"})
        (None, 'your answer raised NameError: x')
        >>> opened(["names"])
        (None, 'no results came back for this exercise')
    """
    if not isinstance(line, dict):
        return None, NO_RESULTS
    if "failed" in line:
        return None, str(line["failed"])[:FEEDBACK_LIMIT]
    found = line.get(key)
    return (found, "") if isinstance(found, dict) else (None, NO_RESULTS)


def encode(data: bytes) -> str:
    """Bytes as the text a JSON line carries."""
    return base64.b64encode(data).decode()


def decode(text: str) -> bytes:
    """The bytes of :func:`encode`'s text; ``ValueError`` if it is not base64."""
    return base64.b64decode(text.encode(), validate=True)


def pack(data: bytes) -> str:
    """Bytes compressed, as the text a JSON line carries (a graph repeats itself a lot)."""
    return encode(zlib.compress(data, 6))


def unpack(text: str, limit: int = MAX_GRAPH_BYTES) -> bytes:
    """The bytes of :func:`pack`'s text; ``ValueError`` if they would be over ``limit``."""
    inflate = zlib.decompressobj()
    data = inflate.decompress(decode(text), limit)
    if inflate.unconsumed_tail or not inflate.eof:
        raise ValueError(f"the data is over {limit} bytes, or cut short")
    return data


def plain(value, max_text: int) -> dict | None:
    """The record of a value that crosses as itself, or None for any other value.

    That is a value of :data:`PLAIN` (an int only if it fits 64 bits); its text is cut to
    ``max_text`` characters.
    """
    if type(value) not in PLAIN or (type(value) is int and abs(value) >= 2**63):
        return None
    return {"kind": "python", "value": value[:max_text] if type(value) is str else value}


def type_name(value) -> str:
    """The name of ``value``'s type as feedback may show it (else ``object``).

    Only an identifier of at most 80 characters is shown.
    """
    name = type(value).__name__
    return name if name.isidentifier() and len(name) <= 80 else "object"


def stand_in(name, bases: tuple = (), *args):
    """An object of a new type called ``name``, checked as :func:`type_name` checks it.

    The judge hands it to a check where the answer crossed as its type's name alone;
    ``args`` are given to the first base's constructor (an error's message).
    """
    safe = name if isinstance(name, str) and name.isidentifier() and len(name) <= 80 else "object"
    return type(safe, bases, {})(*args)


def graph_ops(graph) -> set[str]:
    """The operations of a ``GraphDef``, its function library's (control flow, maps) too."""
    ops = {node.op for node in graph.node}
    return ops | {node.op for f in graph.library.function for node in f.node_def}


def refused(ops: set[str], allowed: frozenset) -> list[str]:
    """The operations of ``ops`` a judge does not run, sorted."""
    return sorted(set(ops) - allowed)
