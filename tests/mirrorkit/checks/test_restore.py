"""mk.check_restore: weights and optimizer state back bit for bit, where they were asked for."""

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk

X = np.random.default_rng(0).normal(size=(32, 3)).astype("float32")
Y = X[:, :1] * 2.0


def build(optimizer="adam"):
    keras.utils.set_random_seed(0)
    model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
    model.compile(optimizer=optimizer, loss="mse")
    return model


@pytest.fixture(scope="module")
def saved(strategy, tmp_path_factory):
    """A model trained under the strategy, and its checkpoint."""
    with strategy.scope():
        model = build()
    model.fit(X, Y, batch_size=8, epochs=1, shuffle=False, verbose=0)
    path = tf.train.Checkpoint(model=model).save(tmp_path_factory.mktemp("ckpt") / "ckpt")
    return model, path


def restore_plainly(path):
    model = build()
    tf.train.Checkpoint(model=model, optimizer=model.optimizer).restore(path)
    return model


def test_restoring_on_one_device_passes(saved):
    model, path = saved
    result = mk.check_restore(restore_plainly, path, model)
    assert result.passed, result
    assert "4 weight tensors" in result.message and "(step 4), on one device" in result.message


def test_restoring_under_the_strategy_passes_when_asked_for(strategy, saved):
    def restore(path):
        with strategy.scope():
            model = build()
        tf.train.Checkpoint(model=model).restore(path)
        return model

    model, path = saved
    assert mk.check_restore(restore, path, model, strategy=strategy)
    result = mk.check_restore(restore, path, model)
    assert not result.passed and "MirroredVariables: it was restored under a strategy's" in (
        result.message
    )
    result = mk.check_restore(restore_plainly, path, model, strategy=strategy)
    assert not result.passed and "made outside this MirroredStrategy's scope" in result.message


def test_compiling_after_restoring_still_restores_the_optimizer(saved):
    # TensorFlow keeps a restore pending until the object it names appears.
    def restore(path):
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(4), keras.layers.Dense(1)])
        tf.train.Checkpoint(model=model).restore(path).expect_partial()
        model.compile(optimizer="adam", loss="mse")
        return model

    model, path = saved
    assert mk.check_restore(restore, path, model)


MISTAKES = [
    pytest.param(lambda path: build(), "4 of 4 weight tensors are not the saved ones", id="none"),
    pytest.param(
        lambda path: _restored(build(), path, name="net"),
        "with the same names",
        id="another-name",
    ),
    pytest.param(
        lambda path: _restored(build("sgd"), path),
        "the optimizer holds 2 variables, the saved one 10",
        id="another-optimizer",
    ),
    pytest.param(
        lambda path: build().load_weights(path),
        "restore raised ValueError: File format not supported",
        id="load-weights",
    ),
    pytest.param(
        lambda path: _restored(build("adam"), path, with_optimizer=False, compiled_fresh=True),
        "the optimizer's step count is 0, not 4",
        id="optimizer-not-restored",
    ),
    pytest.param(
        lambda path: _restored(build(keras.optimizers.Adam(beta_1=0.5)), path, moments=True),
        "its moments",
        id="moments-differ",
    ),
]


def _restored(model, path, name="model", with_optimizer=True, compiled_fresh=False, moments=False):
    tf.train.Checkpoint(**{name: model}).restore(path).expect_partial()
    if compiled_fresh:
        model.compile(optimizer="adam", loss="mse")  # a new optimizer, after restoring
    if moments:
        model.optimizer.build(model.trainable_variables)
        model.optimizer.variables[2].assign(model.optimizer.variables[2] + 1.0)
    return model


@pytest.mark.parametrize(("restore", "match"), MISTAKES)
def test_each_mistake_is_named(saved, restore, match):
    model, path = saved
    result = mk.check_restore(restore, path, model)
    assert not result.passed
    assert match in result.message, result.message


def test_not_attempted(saved):
    model, path = saved
    assert "not attempted" in mk.check_restore(..., path, model).message


WRONG_RESTORES = [
    pytest.param(
        lambda model, path: mk.check_restore("restore", path, model),
        None,
        "restore",
        r"not a function: define def restore\(path\)",
        id="restore-a-string",
    ),
    pytest.param(
        lambda model, path: mk.check_restore(lambda p: None, path, model),
        None,
        "restore",
        r"restore returned NoneType, not a Keras model: return the model",
        id="returns-nothing",
    ),
    pytest.param(
        lambda model, path: mk.check_restore(restore_plainly, path, model.weights),
        TypeError,
        "reference",
        r"must be the compiled Keras model that was saved",
        id="reference-weights",
    ),
    pytest.param(
        lambda model, path: mk.check_restore(restore_plainly, path, build()),
        ValueError,
        "reference",
        r"train at least one step, save, then check",
        id="reference-untrained",
    ),
    pytest.param(
        lambda model, path: mk.check_restore(restore_plainly, path, model, strategy="mirrored"),
        TypeError,
        "strategy",
        r"None \(restore on one device\) or the tf\.distribute\.Strategy",
        id="strategy-a-name",
    ),
    pytest.param(
        lambda model, path: mk.check_restore(
            lambda p: keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)]), path, model
        ),
        None,
        "architecture",
        r"build it with the same function that built the saved model",
        id="another-architecture",
    ),
]


@pytest.mark.wrong_inputs("mk.check_restore")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_RESTORES)
def test_check_restore_wrong_inputs(judged, saved, call, error, argument, match):
    model, path = saved
    judged(lambda: call(model, path), error, argument, match)


def test_a_restore_that_ignores_its_path_is_named(saved):
    model, path = saved
    before = restore_plainly(path)  # right values, restored before the check calls restore
    result = mk.check_restore(lambda path: before, path, model)
    assert not result.passed
    assert "does not read the checkpoint at its path" in result.message, result.message


def test_returning_the_saved_model_itself_is_named(saved):
    model, path = saved
    result = mk.check_restore(lambda path: model, path, model)
    assert not result.passed
    assert "returned the model that was saved" in result.message, result.message


def test_an_error_in_restore_names_the_real_error(saved):
    model, path = saved

    def restore(path):
        @tf.function
        def broken():
            return tf.reshape(tf.ones([4]), [7, 3])

        return broken()

    result = mk.check_restore(restore, path, model)
    assert not result.passed
    assert "restore raised ValueError: Cannot reshape a tensor" in result.message, result.message
    assert "in user code" not in result.message
