"""Traced graphs the executor runs: checked on the way in, imported into the check's own step.

Every kind whose answer crosses as a graph traced under ``strategy.run`` (a replica
function, a loss, a clipping function, an accumulation step) is run through :class:`Traced`:
its operations from the kind's allow-list, the function library's included; its
placeholders only its inputs, the values it captured and the all-reduces' ordering tokens;
each all-reduce given an instance key of the executor's (the k-th on each device shares
``base + k``, one range per traced step), the executor's ordering token for its device, its
device's earlier all-reduces to wait for, and a time limit.

Example:
    >>> Words("loss", "compute_loss", "the model's predictions").function
    'compute_loss'
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

from bookbuild.grading import _states, _wire

COLLECTIVES = frozenset({"CollectiveReduceV2", "CollectiveGatherV2"})
INSTANCE_KEYS = 1 << 30  # the executor's all-reduces take keys from here, far above TensorFlow's
COLLECTIVE_SECONDS = 60.0  # an all-reduce waiting longer for its group fails, never hangs
_STEPS = itertools.count()  # each traced step gets all-reduce keys of its own
_KEY = 3  # a collective's inputs: input, group size, group key, instance key, ordering tokens
_KEYS = "mirrorbook_key_"  # the executor's instance-key constants, one per all-reduce


class Words(NamedTuple):
    """How refusals name the traced answer: ``what`` it is, and what it computes ``from``."""

    what: str  # "loss"
    function: str  # "compute_loss"
    source: str  # "the model's predictions"


class Traced:
    """One replica's part of a traced step, checked: what it reads and every operation.

    Its placeholders are the ``inputs`` it was traced with, the values it captured and the
    all-reduces' ordering tokens; :meth:`imported` runs it in the executor's step.
    """

    def __init__(self, record: dict, outputs: list[str], words: Words, allowed) -> None:
        from tensorflow.core.framework import graph_pb2

        graph = graph_pb2.GraphDef()
        graph.ParseFromString(_wire.unpack(record["graph"]))
        self.outputs, self.words, self.allowed = outputs, words, allowed
        self.inputs = [str(i) for i in record["inputs"]]
        self.captures = {str(k): v for k, v in dict(record.get("captures", {})).items()}
        self.graph = self._runnable(graph)

    def _runnable(self, graph):
        """The graph, its all-reduces rewired, cut to its outputs, every operation allowed."""
        import tensorflow as tf

        what = self.words.what
        if any(node.name.startswith(_KEYS) for node in graph.node):
            raise _wire.ExportError(f"the exported {what}'s graph is not one the grader reads")
        self.tokens: dict[str, str] = {}
        collectives: dict[str, list] = {}  # per device, in order: the k-th of each device
        for node in graph.node:  # make one all-reduce, sharing key base + k
            if node.op not in COLLECTIVES:
                continue
            mine = collectives.setdefault(node.device, [])
            if len(mine) >= 1024:
                raise _wire.ExportError(f"your {what} all-reduces more than 1024 times")
            count = int(node.attr["Nordering_token"].i)
            inputs = [i for i in node.input if not i.startswith("^")]
            if count > 4 or len(inputs) != _KEY + 1 + count:
                raise _wire.ExportError(
                    f"the exported {what}'s all-reduce is not one the grader reads"
                )
            for token in inputs[_KEY + 1 :]:  # each device's ordering token: the executor's own
                self.tokens[token.split(":")[0]] = device(node.device)
            del node.input[:]
            key = f"{_KEYS}{len(mine)}_{sum(map(len, collectives.values()))}"
            node.input.extend([*inputs[:_KEY], key, *inputs[_KEY + 1 :]])
            if mine:  # one device's all-reduces run in the order they were traced
                node.input.append(f"^{mine[-1].name}")
            node.attr["timeout_seconds"].f = COLLECTIVE_SECONDS
            mine.append(node)
        for node in [n for mine in collectives.values() for n in mine]:
            key = graph.node.add(name=node.input[_KEY], op="Const", device=node.device)
            key.attr["dtype"].type = tf.int32.as_datatype_enum
            key.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(0, tf.int32))
        made = cut(graph, self.outputs)
        refusals = _wire.refused(_wire.graph_ops(made), self.allowed)
        nested = {node.op for f in made.library.function for node in f.node_def}
        function, source = self.words.function, self.words.source
        if refusals:
            raise _wire.ExportError(
                f"your {what} uses operations the grader does not run: "
                f"{', '.join(refusals[:5])} (a Python function, a variable it was not given, or "
                f"reading or writing files): compute it from {source} with TensorFlow "
                "operations"
            )
        if nested & COLLECTIVES:
            raise _wire.ExportError(
                f"your {what} all-reduces inside a tf.function of its own: call "
                f"ctx.all_reduce(...) in {function} itself"
            )
        self.nodes = {node.name for node in made.node}
        self.tokens = {k: v for k, v in self.tokens.items() if k in self.nodes}
        self.captures = {k: v for k, v in self.captures.items() if k.split(":")[0] in self.nodes}
        placeholders = {node.name for node in made.node if node.op == "Placeholder"}
        expected = (
            {i.split(":")[0] for i in self.inputs}
            | {c.split(":")[0] for c in self.captures}
            | set(self.tokens)
        )
        if placeholders - expected:
            raise _wire.ExportError(
                f"your {what} reads a variable or a tensor made outside it: compute it inside "
                f"{function}, from {source}"
            )
        return made

    def imported(self, tf, values: list, tokens: dict, base: int) -> list:
        """Its outputs, computed in the executor's current graph from ``values`` (its inputs).

        ``tokens``: the executor's ordering-token variable per device; ``base``: the first of
        the all-reduce keys this step's imports share.
        """
        here = tf.compat.v1.get_default_graph()
        given = zip(self.inputs, values, strict=True)
        feeds = {name: value for name, value in given if name.split(":")[0] in self.nodes}
        for name, where in self.tokens.items():
            if where not in tokens:
                raise _wire.ExportError(
                    f"your {self.words.what} all-reduces on a device the grader lacks"
                )
            feeds[f"{name}:0"] = here.capture(tokens[where].handle)
        for name, value in self.captures.items():
            feeds[name] = tf.convert_to_tensor(_states.rebuild(value, None))
        with here.device(None):
            return tf.graph_util.import_graph_def(
                _keyed(self.graph, base),
                input_map=feeds,
                return_elements=self.outputs,
                name="answer",
            )


def step_keys(made: dict, tf) -> int:
    """The first all-reduce key of the step being traced: one range per traced step."""
    here = tf.compat.v1.get_default_graph()
    return made.setdefault(id(here), INSTANCE_KEYS + 1024 * next(_STEPS))


def rebuilt(record, strategy, what: str, build):
    """``build(record)`` for a record the student's process wrote of ``what``, or its state.

    A value that is not a function crossed as state (the check names its type).

    Raises:
        _wire.ExportError: If the record is malformed (any error of ``build`` but this one).
    """
    if not isinstance(record, dict):
        raise _wire.ExportError("the exported answer is not one the grader reads")
    if record.get("kind") == "state":
        return _states.rebuild(record.get("value"), strategy)
    try:
        return build(record)
    except _wire.ExportError:
        raise
    except Exception as error:  # noqa: BLE001 - malformed data from the student's side
        raise _wire.ExportError(f"the exported {what} is not one the grader reads") from error


def ordering_tokens(strategy, traced: list) -> dict:
    """The executor's ordering-token variable per device, if any of ``traced`` all-reduces.

    Made before the check traces its step: one made while tracing retraces it.
    """
    import tensorflow as tf

    tokens = {}
    if any(t is not None and t.tokens for t in traced):
        for name in strategy.extended.worker_devices:
            with tf.device(name):
                tokens[device(name)] = tf.Variable(0.0, name="ordering_token")
    return tokens


def device(name: str) -> str:
    import tensorflow as tf

    return tf.DeviceSpec.from_string(name).to_string()


def _keyed(graph, base: int):
    """A copy of ``graph`` whose all-reduce keys start at ``base`` (the k-th: ``base + k``)."""
    import tensorflow as tf

    keyed = type(graph)()
    keyed.CopyFrom(graph)
    for node in keyed.node:
        if node.name.startswith(_KEYS):
            rank = int(node.name.removeprefix(_KEYS).split("_")[0])
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(base + rank, tf.int32))
    return keyed


def cut(graph, outputs: list[str], stop=frozenset()):
    """A new ``GraphDef`` of the nodes ``outputs`` need, not looking past ``stop``'s nodes.

    Raises:
        _wire.ExportError: If a needed node is missing.
    """
    nodes = {node.name: node for node in graph.node}
    keep, stack = set(), [name.split(":")[0] for name in outputs]
    while stack:
        name = stack.pop()
        if name in keep:
            continue
        if name not in nodes:
            raise _wire.ExportError("the exported loss's graph is incomplete")
        keep.add(name)
        if name not in stop:
            stack += [i.lstrip("^").split(":")[0] for i in nodes[name].input]
    made = type(graph)()
    made.versions.CopyFrom(graph.versions)
    made.library.CopyFrom(graph.library)
    for node in graph.node:
        if node.name in keep:
            made.node.add().CopyFrom(node)
    return made
