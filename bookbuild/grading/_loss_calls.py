"""The executor's side of a per-replica loss: each call the check makes, answered from its record.

:mod:`._losses` says what crosses; here the executor checks each recorded call (:class:`Call`:
an error, a value that is no loss, or one replica's graph cut to its loss and gradient, every
operation from :data:`ALLOWED_OPS`, every placeholder an input, a captured value or an
ordering token) and answers the check's calls with it (:class:`Loss`): the graph imported
into the check's own step with the check's model's weights and data as its inputs, its
all-reduces keyed from a range of the executor's per step and ordered by tokens of the executor's,
and the loss given, through ``tf.custom_gradient``, the gradient that crossed with it.

Example:
    >>> sorted(ALLOWED_OPS - _replica_fns.ALLOWED_OPS)[:3]
    ['BiasAdd', 'BiasAddGrad', 'BroadcastGradientArgs']
"""

from __future__ import annotations

import inspect
import math

from bookbuild.grading import _replica_fns, _traced_graphs, _wire

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


LOSS = _traced_graphs.Words("loss", "compute_loss", "the model's predictions")


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
        self.traced = _traced_graphs.Traced(record, wanted, LOSS, ALLOWED_OPS)


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
            return returned(call.returned)
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
        base = _traced_graphs.step_keys(self.made, tf)
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


def returned(name: str, length: int | None = None):
    """A value of the type (and, for a list or tuple, the length) an answer returned.

    The check's own sentence then names it as it names the learner's value.
    """
    if name in ("list", "tuple") and length:
        return [None] * length if name == "list" else (None,) * length
    made = {"NoneType": None, "tuple": (), "list": [], "dict": {}}
    return made[name] if name in made else _wire.stand_in(name)
