"""Keras 3 ``fit`` under ``MultiWorkerMirroredStrategy``: the working path, as a tested function.

Why ``model.fit`` fails under MWMS in TensorFlow 2.21 with Keras 3.15, and how
:func:`fit_ready` avoids it: docs/design/core.md, "Keras fit under MultiWorkerMirroredStrategy".

Example:
    >>> import keras
    >>> import mirrorkit as mk
    >>> with mk.make_strategy().scope():
    ...     model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
    >>> mk.fit_ready(model).inner is model
    True
"""

from __future__ import annotations

from typing import Any

import keras
import tensorflow as tf

from mirrorkit._validate import require_flag
from mirrorkit.errors import fit_error_hint


def explain_fit_error(error: BaseException) -> BaseException:
    """``error`` with a note naming :func:`fit_ready` if it is Keras fit's MWMS failure.

    The note shows under the traceback (Python 3.11+ ``add_note``).

    Example:
        >>> error = explain_fit_error(ValueError(
        ...     "Invalid reduction dimension 0 for input with 0 dimensions"))
        >>> "mk.fit_ready(model)" in error.__notes__[0]
        True
    """
    hint = fit_error_hint(error)
    if hint is not None and hint not in getattr(error, "__notes__", ()):
        error.add_note(hint)
    return error


def _rank_one(logs: dict) -> dict:
    return {name: tf.reshape(tf.convert_to_tensor(value), [1]) for name, value in logs.items()}


class FitReadyModel(keras.Model):
    """A model whose ``fit`` and ``evaluate`` work under ``MultiWorkerMirroredStrategy``.

    Made by :func:`fit_ready`; it calls the wrapped model, whose weights it shares
    (``inner``). Compile and fit it inside ``strategy.scope()``.

    Example:
        >>> import keras
        >>> from mirrorkit import fit_ready
        >>> inner = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        >>> wrapped = fit_ready(inner, require_distributed=False)
        >>> wrapped.inner is inner, len(wrapped.weights)
        (True, 2)
    """

    def __init__(self, inner: keras.Model, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.inner = inner
        self.built = True

    def call(self, inputs, training=None):
        """Run the wrapped model.

        Example:
            >>> import keras, numpy as np
            >>> from mirrorkit import fit_ready
            >>> inner = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
            >>> fit_ready(inner, require_distributed=False)(np.ones((3, 2))).shape
            TensorShape([3, 1])
        """
        return self.inner(inputs, training=training)

    def train_step(self, data):
        """Keras's train step, with each log value as a one-element vector.

        Example:
            >>> from mirrorkit.training.keras_fit import FitReadyModel
            >>> FitReadyModel.train_step.__name__
            'train_step'
        """
        return _rank_one(super().train_step(data))

    def test_step(self, data):
        """Keras's test step, with each log value as a one-element vector.

        Example:
            >>> from mirrorkit.training.keras_fit import FitReadyModel
            >>> FitReadyModel.test_step.__name__
            'test_step'
        """
        return _rank_one(super().test_step(data))


def fit_ready(model: keras.Model, *, require_distributed: bool = True) -> FitReadyModel:
    """Wrap a model built in ``strategy.scope()`` so that ``fit`` works under MWMS.

    Build the model in the scope as usual, call this **outside** the scope, then
    compile and fit the result **inside** the scope::

        with strategy.scope():
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        trainable = mk.fit_ready(model)
        with strategy.scope():
            trainable.compile(optimizer="sgd", loss="mse")
            trainable.fit(dataset, epochs=2)

    ``trainable.inner`` is ``model``: they share their weights.

    Args:
        model: A built Keras model.
        require_distributed: Check that every variable was made in a strategy's scope
            (leave on; off only to try the wrapper without a strategy).

    Returns:
        A :class:`FitReadyModel`.

    Raises:
        RuntimeError: If called inside a strategy's scope.
        TypeError: If ``model`` is not a Keras model, or ``require_distributed`` not a bool.
        ValueError: If the model has no weights yet, or (``require_distributed``) some
            were made outside ``strategy.scope()``.

    Example:
        >>> import keras
        >>> from mirrorkit import fit_ready
        >>> layers = [keras.Input((4,)), keras.layers.Dense(1, name="out")]
        >>> fit_ready(keras.Sequential(layers, name="plain"))
        Traceback (most recent call last):
        ...
        ValueError: 2 of the model's 2 variables were made outside strategy.scope() (first: plain/out/kernel): build the model inside `with strategy.scope():` and call fit_ready outside it.
    """  # noqa: E501
    if tf.distribute.has_strategy():
        raise RuntimeError(
            "call fit_ready outside strategy.scope(): a model object made inside the scope "
            "takes Keras's symbolic-build path that fails under MultiWorkerMirroredStrategy. "
            "Build the model in the scope, wrap it after the `with` block, then compile and "
            "fit the wrapper in the scope."
        )
    if not isinstance(model, keras.Model):
        if isinstance(model, keras.layers.Layer):
            advice = (
                "put the layer in a model inside strategy.scope(), e.g. "
                "keras.Sequential([keras.Input(shape), layer]), and wrap that"
            )
        elif callable(model) and not isinstance(model, type):
            advice = (
                "call the function that builds it in strategy.scope() first, then pass the "
                "model: fit_ready(build_model())"
            )
        else:
            advice = "pass the Keras model you built in strategy.scope()"
        raise TypeError(f"model must be a keras.Model, got {type(model).__name__}: {advice}.")
    require_flag("require_distributed", require_distributed, effect="to try it without a strategy")
    if not model.weights:
        raise ValueError(
            "the model has no weights yet: build it inside strategy.scope() first "
            "(start it with keras.Input(shape), or call model.build(input_shape) there)."
        )
    if require_distributed:
        local = [
            v for v in model.weights if not isinstance(v.value, tf.distribute.DistributedValues)
        ]
        if local:
            raise ValueError(
                f"{len(local)} of the model's {len(model.weights)} variables were made outside "
                f"strategy.scope() (first: {local[0].path}): build the model inside "
                "`with strategy.scope():` and call fit_ready outside it."
            )
    return FitReadyModel(model)
