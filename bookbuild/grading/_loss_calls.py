"""The judge's side of a per-replica loss: each call the check makes, answered from its record.

:mod:`._losses` says what crosses; here the judge checks each recorded call (:class:`Call`:
an error, a value that is no loss, or one replica's graph cut to its loss and gradient, every
operation from :data:`ALLOWED_OPS`, every placeholder an input, a captured value or an
ordering token) and answers the check's calls with it (:class:`Loss`): the graph imported
into the check's own step with the check's model's weights and data as its inputs, its
all-reduces keyed from a range of the judge's per step and ordered by tokens of the judge's,
and the loss given, through ``tf.custom_gradient``, the gradient that crossed with it.

Example:
    >>> sorted(ALLOWED_OPS - _replica_fns.ALLOWED_OPS)[:3]
    ['BiasAdd', 'BiasAddGrad', 'BroadcastGradientArgs']
"""

from __future__ import annotations

import inspect
import itertools
import math
from typing import NamedTuple

from bookbuild.grading import _replica_fns, _states, _wire

GRADIENT_OPS = frozenset({  # a Keras model's forward pass and its gradient's operations
    "BiasAdd", "BiasAddGrad", "BroadcastGradientArgs", "ClipByValue", "ConcatOffset",
    "DynamicStitch", "Elu", "EluGrad", "EnsureShape", "Erf", "Erfc", "Exp",
    "InvertPermutation", "IsFinite", "L2Loss", "LeakyRelu", "LeakyReluGrad", "Log", "Log1p",
    "LogSoftmax", "Reciprocal", "ReciprocalGrad", "Relu", "Relu6", "Relu6Grad", "ReluGrad",
    "Rsqrt", "RsqrtGrad", "Selu", "SeluGrad", "Sigmoid", "SigmoidGrad", "Softmax",
    "SoftmaxCrossEntropyWithLogits", "Softplus", "SoftplusGrad",
    "SparseSoftmaxCrossEntropyWithLogits", "SqrtGrad", "SquaredDifference", "Tanh",
    "TanhGrad", "UnsortedSegmentSum", "Xdivy", "Xlogy",
})  # fmt: skip
ALLOWED_OPS = _replica_fns.ALLOWED_OPS | GRADIENT_OPS
MAX_NUMBERS = 64  # numbers written in the loss (literal_numbers): a few
_STEPS = itertools.count()  # each check's step gets all-reduce keys of its own
_KEY = 3  # a collective's inputs: input, group size, group key, instance key, ordering tokens
_KEYS = "mirrorbook_key_"  # the judge's instance-key constants, one per all-reduce


def real(value) -> bool:
    return type(value) in (int, float) and math.isfinite(value) and abs(value) < 1e300


def shapes(tf, structure) -> list:
    """The static shape of each tensor of ``structure``, as a call's key holds it."""
    return [list(getattr(t, "shape", ())) for t in tf.nest.flatten(structure)]


def key_of(where, x_shapes: list, y_shapes: list) -> str:
    """The key a call is recorded and found under: where it ran, and its inputs' shapes."""
    return repr((where, x_shapes, y_shapes))


def call_key(call: dict) -> str:
    """:func:`key_of` a recorded call, its parts checked."""
    where = call["where"]
    if where != "eager" and type(where) is not int:
        raise ValueError("a call's replica is not a number")
    return key_of(where, shape_list(call["x"]), shape_list(call["y"]))


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


def shape_list(shapes) -> list:
    if not isinstance(shapes, list) or len(shapes) > 16:
        raise ValueError("not a list of shapes")
    return [checked_shape(s) for s in shapes]


def checked_shape(shape) -> list:
    if not isinstance(shape, list) or len(shape) > 8:
        raise ValueError("not a shape")
    if not all(d is None or (type(d) is int and 0 <= d < 1 << 31) for d in shape):
        raise ValueError("not a shape")
    return shape


def checked_weight(path, shape, dtype, trainable) -> tuple:
    if not (isinstance(path, str) and isinstance(dtype, str) and type(trainable) is bool):
        raise ValueError("not a weight")
    return (tuple(checked_shape(shape)), dtype[:20], trainable)  # paths differ by model: not read


class _Shown:
    """A default value shown by the text the student's process wrote for it."""

    def __init__(self, text: str) -> None:
        self.text = text

    def __repr__(self) -> str:
        return self.text


def face_of(name, signature) -> tuple[str, inspect.Signature | None]:
    shown = name if isinstance(name, str) and name.isidentifier() and len(name) <= 80 else None
    if signature is None:
        return shown or "compute_loss", None
    kinds = {kind.name: kind for kind in inspect._ParameterKind}  # noqa: SLF001 - the five
    parameters = []
    for each in signature[:16]:
        p_name, kind, default = each
        if not (isinstance(p_name, str) and p_name.isidentifier() and kind in kinds):
            raise ValueError("not a parameter")
        shown_default = inspect.Parameter.empty if default is None else _Shown(str(default)[:60])
        parameters.append(inspect.Parameter(p_name, kinds[kind], default=shown_default))
    return shown or "compute_loss", inspect.Signature(parameters)


class Words(NamedTuple):
    """How refusals name the traced answer: ``what`` it is, and what it computes ``from``."""

    what: str  # "loss"
    function: str  # "compute_loss"
    source: str  # "the model's predictions"


LOSS = Words("loss", "compute_loss", "the model's predictions")


class Call:
    """One call's record, checked: an error, what it returned, or a loss's graph."""

    def __init__(self, record: dict) -> None:
        self.error = record.get("error")
        self.returned = record.get("returned")
        self.shape = record.get("shape")
        self.traced = None
        if self.error is not None:
            self.error = str(self.error)[:2000]
            return
        if self.returned is not None:
            self.returned = _wire.type_name(_wire.stand_in(self.returned))
            return
        self.shape = checked_shape(self.shape) if self.shape is not None else None
        if self.shape != [] or record["where"] == "eager":
            return
        self.gradients = [None if g is None else str(g) for g in record["gradients"]]
        wanted = [str(record["loss"]), *filter(None, self.gradients)]
        self.traced = Traced(record, wanted, LOSS)


class Traced:
    """One replica's part of a traced step, checked: what it reads and every operation.

    Its placeholders are the ``inputs`` it was traced with, the values it captured and the
    all-reduces' ordering tokens; :meth:`imported` runs it in the judge's step.
    """

    def __init__(self, record: dict, outputs: list[str], words: Words, allowed=None) -> None:
        from tensorflow.core.framework import graph_pb2

        graph = graph_pb2.GraphDef()
        graph.ParseFromString(_wire.unpack(record["graph"]))
        self.outputs, self.words = outputs, words
        self.allowed = ALLOWED_OPS if allowed is None else allowed
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
        collectives = []
        for node in graph.node:
            if node.op not in _replica_fns.COLLECTIVES:
                continue
            if len(collectives) >= 1024:
                raise _wire.ExportError(f"your {what} all-reduces more than 1024 times")
            count = int(node.attr["Nordering_token"].i)
            inputs = [i for i in node.input if not i.startswith("^")]
            if count > 4 or len(inputs) != _KEY + 1 + count:
                raise _wire.ExportError(
                    f"the exported {what}'s all-reduce is not one the grader reads"
                )
            for token in inputs[_KEY + 1 :]:  # each device's ordering token: the judge's own
                self.tokens[token.split(":")[0]] = device(node.device)
            del node.input[:]
            key = f"{_KEYS}{len(collectives)}"
            node.input.extend([*inputs[:_KEY], key, *inputs[_KEY + 1 :]])
            if collectives:
                node.input.append(f"^{collectives[-1].name}")
            node.attr["timeout_seconds"].f = _replica_fns.COLLECTIVE_SECONDS
            collectives.append(node)
        for rank, node in enumerate(collectives):  # each key a constant on its device
            key = graph.node.add(name=f"{_KEYS}{rank}", op="Const", device=node.device)
            key.attr["dtype"].type = tf.int32.as_datatype_enum
            key.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(0, tf.int32))
        made = cut(graph, self.outputs)
        refusals = _wire.refused(_wire.graph_ops(made), self.allowed)
        nested = {node.op for f in made.library.function for node in f.node_def}
        function, source = self.words.function, self.words.source
        if refusals:
            raise _wire.ExportError(
                f"your {what} uses operations the grader does not run: "
                f"{', '.join(refusals[:5])} (a Python function, a variable the model does not "
                f"own, or reading or writing files): compute it from {source} with "
                "TensorFlow operations"
            )
        if nested & _replica_fns.COLLECTIVES:
            raise _wire.ExportError(
                f"your {what} all-reduces inside a tf.function of its own: call "
                f"ctx.all_reduce(...) in {function} itself"
            )
        self.nodes = {node.name for node in made.node}
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
        """Its outputs, computed in the judge's current graph from ``values`` (its inputs).

        ``tokens``: the judge's ordering-token variable per device; ``base``: the first of
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
    return made.setdefault(id(here), _replica_fns.INSTANCE_KEYS + 1024 * next(_STEPS))


class Loss:
    """Stands for the learner's ``compute_loss``: each call as the student's process saw it."""

    def __init__(self, calls, weights, numbers, name, signature, tokens) -> None:  # noqa: PLR0913
        self.calls, self.weights, self.tokens, self.made = calls, weights, tokens, {}
        self.__name__ = self.__qualname__ = name
        self.__code__ = (lambda: None).__code__.replace(co_consts=(None, *numbers), co_names=())
        if signature is not None:
            self.__signature__ = signature
        self.autograph_info__ = frozenset()  # AutoGraph calls it as it is

    def __call__(self, model, x, y):
        import tensorflow as tf

        from mirrorkit.checks.result import recorded_error

        if tf.executing_eagerly():
            where = "eager"
        else:
            context = tf.distribute.get_replica_context()
            where = context and tf.get_static_value(context.replica_id_in_sync_group)
            where = None if where is None else int(where)
        call = self.calls.get(key_of(where, shapes(tf, x), shapes(tf, y)))
        if call is None:
            raise _wire.ExportError(
                "the grader has no record of your loss called on this share of the batch: "
                "grade the submission again"
            )
        if call.error is not None:
            raise recorded_error(call.error)
        if call.returned is not None:
            return _returned(call.returned)
        if call.traced is None:
            shape = call.shape or []
            concrete = [0 if d is None else d for d in shape]
            if tf.executing_eagerly():
                return tf.zeros(concrete)
            return tf.compat.v1.placeholder_with_default(tf.zeros(concrete), shape)
        return self._loss(tf, call, model, x, y)

    def _loss(self, tf, call: Call, model, x, y):
        found = [(tuple(v.shape), str(v.dtype), bool(v.trainable)) for v in model.variables]
        if found != self.weights:
            raise _wire.ExportError(
                "the model your loss was traced with is not the one the check builds: run "
                "the chapter's cells as they are, with its model_fn"
            )
        base = step_keys(self.made, tf)
        reads = [tf.convert_to_tensor(v) for v in model.variables]
        leaves = tf.nest.flatten(x) + tf.nest.flatten(y)
        trainable = [i for i, w in enumerate(self.weights) if w[2]]

        @tf.custom_gradient
        def loss(*weights):
            made = call.traced.imported(tf, [*leaves, *weights], self.tokens, base)
            value, found = made[0], iter(made[1:])
            gradients = [None if g is None else next(found) for g in call.gradients]

            def gradient(upstream):
                out = [None] * len(weights)
                for index, g in zip(trainable, gradients, strict=True):
                    out[index] = None if g is None else tf.cast(upstream, g.dtype) * g
                return out

            return value, gradient

        return loss(*reads)


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
    """The judge's ordering-token variable per device, if any of ``traced`` all-reduces.

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
    """A copy of ``graph`` whose all-reduce keys start at ``base``."""
    import tensorflow as tf

    keyed = type(graph)()
    keyed.CopyFrom(graph)
    for node in keyed.node:
        if node.name.startswith(_KEYS):
            rank = int(node.name.removeprefix(_KEYS))
            node.attr["value"].tensor.CopyFrom(tf.make_tensor_proto(base + rank, tf.int32))
    return keyed


def _returned(name: str):
    """A value of the type the learner's loss returned, as ``loss_problem`` reads it."""
    made = {"NoneType": None, "tuple": (), "list": [], "dict": {}}
    return made[name] if name in made else _wire.stand_in(name)
