"""Keras 3 fit under MultiWorkerMirroredStrategy: the failure upstream, the working path, resume."""

from __future__ import annotations

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit.errors import FIT_READY_FIX, fit_error_hint
from mirrorkit.training.keras_fit import explain_fit_error
from mirrorkit.training.recipes import compare_weights, fit_training


def small_model():
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)], name="plain")


def wrapped_in_the_scope(strategy):
    with strategy.scope():
        model = small_model()
        mk.fit_ready(model)


# Each case: call(strategy) is the learner's code.
WRONG_MODELS = [
    pytest.param(
        lambda s: mk.fit_ready(small_model()),
        ValueError,
        "model",
        r"2 of the model's 2 variables were made outside strategy\.scope\(\) \(first: "
        r"plain/dense.*/kernel\): build the model inside `with strategy\.scope\(\):`",
        id="built outside the scope",
    ),
    pytest.param(
        lambda s: mk.fit_ready(keras.Sequential([keras.layers.Dense(1)])),
        ValueError,
        "model",
        r"no weights yet: build it inside strategy\.scope\(\) first",
        id="not built",
    ),
    pytest.param(
        wrapped_in_the_scope,
        RuntimeError,
        "fit_ready",
        r"call fit_ready outside strategy\.scope\(\).*wrap it after the `with` block",
        id="called inside the scope",
    ),
    pytest.param(
        lambda s: mk.fit_ready(keras.layers.Dense(1)),
        TypeError,
        "model",
        r"got Dense: put the layer in a model.*keras\.Sequential",
        id="a layer",
    ),
    pytest.param(
        lambda s: mk.fit_ready(small_model),
        TypeError,
        "model",
        r"got function: call the function.*fit_ready\(build_model\(\)\)",
        id="the function that builds it",
    ),
    pytest.param(
        lambda s: mk.fit_ready(s),
        TypeError,
        "model",
        r"got MirroredStrategy: pass the Keras model you built in strategy\.scope\(\)",
        id="the strategy",
    ),
    pytest.param(
        lambda s: mk.fit_ready(small_model(), require_distributed="no"),
        TypeError,
        "require_distributed",
        r"write require_distributed=False",
        id="a flag as text",
    ),
]


@pytest.mark.wrong_inputs("mk.fit_ready")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_MODELS)
def test_what_would_fail_later_is_refused_with_a_clear_message(
    refuses, strategy, call, error, argument, match
):
    refuses(lambda: call(strategy), error, argument, match)


def test_fit_ready_trains_like_the_model_itself(strategy, seeded):
    """Under one process's MirroredStrategy the wrapper changes nothing but the log shapes."""
    x = np.random.default_rng(0).normal(size=(64, 4)).astype("float32")
    y = x.sum(axis=1, keepdims=True)

    def train(wrap):
        keras.utils.set_random_seed(0)
        with strategy.scope():
            model = keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])
        trainable = mk.fit_ready(model) if wrap else model
        with strategy.scope():
            trainable.compile(optimizer=keras.optimizers.SGD(0.05), loss="mse")
            history = trainable.fit(x, y, batch_size=16, epochs=2, shuffle=False, verbose=0)
        return model.get_weights(), history.history["loss"]

    wrapped_weights, wrapped_loss = train(True)
    plain_weights, plain_loss = train(False)
    assert compare_weights(wrapped_weights, plain_weights).max_abs_difference < 1e-6
    np.testing.assert_allclose(np.ravel(wrapped_loss), np.ravel(plain_loss), rtol=1e-6)


def test_plain_fit_under_mwms_still_fails_upstream(tmp_path):
    """Canary: when this fails, a Keras release fixed fit under MWMS. Simplify chapter 6."""
    with pytest.raises(mk.WorkerFailedError) as error:
        mk.LocalCluster(2, echo=False).run(
            fit_training, args=(str(tmp_path),), kwargs={"plain_fit": True, "epochs": 1}
        )
    message = error.value.run.status.workers[error.value.worker].message
    assert "ValueError: Attempt to convert a value (PerReplica" in message, message
    assert "unsupported type" in message
    assert message.startswith(FIT_READY_FIX), message  # the worker's report names fit_ready
    # The real message is recognised: the sentence that names mk.fit_ready goes with it.
    assert "trainable = mk.fit_ready(model)" in fit_error_hint(message)
    error = explain_fit_error(ValueError(message))
    assert error.__notes__ == [FIT_READY_FIX]


def test_fit_resumed_with_backup_and_restore_equals_uninterrupted(tmp_path):
    cluster = mk.LocalCluster(2, echo=False)
    reference = cluster.run(fit_training, args=(str(tmp_path / "reference"),))
    assert reference.result["epochs_run"] == [0, 1, 2]
    losses = reference.result["losses"]
    assert losses[-1] < losses[0] / 10  # it learns
    assert compare_weights(reference.results[0]["weights"], reference.results[1]["weights"]).equal

    backups = str(tmp_path / "interrupted")
    with pytest.raises(mk.WorkerFailedError, match="killed by SIGKILL"):
        cluster.run(fit_training, args=(backups,), fault=mk.KillWorker(1, 6))  # epoch 1, step 2
    resumed = cluster.run(fit_training, args=(backups,))
    assert resumed.result["epochs_run"] == [1, 2]  # from the backup made after epoch 0
    assert resumed.result["losses"] == losses[1:]
    assert compare_weights(reference.result["weights"], resumed.result["weights"]).equal
    steps = [step for step, _ in resumed.status.workers[0].losses]
    assert steps == list(range(5, 13))  # the optimizer's iteration count carried over


def test_report_callback_reads_the_optimizer_step(strategy):
    """The callback the recipes use reports optimizer.iterations, which a resume restores."""
    sent = []
    context = mk.WorkerContext(strategy, task_type="worker", task_id=0, num_workers=1, tf_config={})
    context.report = lambda step, **metrics: sent.append((step, metrics))
    with strategy.scope():
        model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")
    model.fit(
        tf.ones((8, 2)),
        tf.ones((8, 1)),
        batch_size=4,
        epochs=1,
        verbose=0,
        callbacks=[context.keras_callback()],
    )
    assert [step for step, _ in sent] == [1, 2]
    assert all(isinstance(metrics["loss"], float) for _, metrics in sent)
