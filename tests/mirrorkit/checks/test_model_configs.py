"""The chapter's model and loss as Keras configuration: rebuilt exactly, Keras's classes only.

The grader's verdict of a loss step rebuilds the one-device reference from what the executor
sent; a configuration that names anything but Keras's own classes that run no code of their
own is refused before Keras reads it.
"""

import copy

import keras
import numpy as np
import pytest

from mirrorkit.checks._model_configs import config_of, loss_from, model_from


def _model(*extra):
    return keras.Sequential(
        [
            keras.Input((3,)),
            keras.layers.Dense(4, activation="relu", kernel_regularizer="l2"),
            *extra,
            keras.layers.Dense(1),
        ]
    )


def test_a_model_is_rebuilt_with_the_same_layers_and_predictions():
    model = _model(keras.layers.Activation("tanh"))
    rebuilt = model_from(config_of(model))
    rebuilt.set_weights(model.get_weights())
    x = np.random.default_rng(0).normal(size=(5, 3)).astype("float32")
    assert [type(a).__name__ for a in rebuilt.layers] == [type(a).__name__ for a in model.layers]
    assert np.array_equal(model(x), rebuilt(x))
    assert len(rebuilt.losses) == 1  # the regularizer came along


def test_a_functional_model_is_rebuilt():
    inputs = keras.Input((3,), name="features")
    model = keras.Model(inputs, keras.layers.Dense(2)(keras.layers.Dense(4)(inputs)))
    assert [w.shape for w in model_from(config_of(model)).weights] == [
        w.shape for w in model.weights
    ]


def _named(config, module, name):
    changed = copy.deepcopy(config)
    changed["config"]["layers"][1].update(module=module, class_name=name)
    return changed


@pytest.mark.parametrize(
    ("module", "name"),
    [
        ("keras.layers", "Lambda"),  # runs code of its own
        ("os", "system"),
        ("builtins", "eval"),
        ("keras.layers", "__class__"),  # a type, but no layer
        ("keras.layers", "Dense\x00"),
        ("keras.regularizers", "Regularizer"),  # not on the list
        ("keras", "Model"),
        (None, "Dense"),
    ],
)
def test_a_class_that_is_not_kerass_own_is_refused_before_keras_reads_it(module, name):
    with pytest.raises(ValueError, match="not a class it accepts"):
        model_from(_named(config_of(_model()), module, name))


def test_a_class_registered_by_a_user_is_refused():
    @keras.saving.register_keras_serializable(package="mirrorbook_test")
    class Doubled(keras.layers.Layer):
        def call(self, x):
            return 2 * x

    config = config_of(_model(Doubled()))
    with pytest.raises(ValueError, match="not a class it accepts"):
        model_from(config)


def test_a_lambda_layer_is_refused():
    config = config_of(_model(keras.layers.Lambda(lambda x: x + 1)))
    with pytest.raises(ValueError, match="Lambda"):
        model_from(config)


def test_a_loss_crosses_by_name_or_as_a_keras_loss():
    assert loss_from("mae") == "mae"
    loss = loss_from(config_of(keras.losses.BinaryCrossentropy(from_logits=True)))
    assert isinstance(loss, keras.losses.BinaryCrossentropy) and loss.get_config()["from_logits"]
    with pytest.raises(ValueError, match="not a Keras loss"):
        loss_from(config_of(_model()))
    with pytest.raises(ValueError):
        loss_from(None)


def test_a_configuration_too_large_is_refused():
    config = config_of(_model())
    config["config"]["name"] = "x" * (1 << 20)
    with pytest.raises(ValueError, match="too large"):
        model_from(config)
