import keras
import numpy as np
import pytest
import tensorflow as tf

from mirrorkit.training.scaling import linear_scaling_schedule, run_scaling_sweep


def _model_fn():
    keras.utils.set_random_seed(0)
    return keras.Sequential([keras.Input((4,)), keras.layers.Dense(1)])


def _data(n=64):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (x @ np.array([[1.0], [-1.0], [0.5], [2.0]], "float32"))


def test_same_rate_takes_fewer_steps_and_ends_higher(devices):
    sweep = run_scaling_sweep(devices, _model_fn, _data(), loss="mse", replica_counts=(1, 2, 4))
    assert [c.steps for c in sweep.curves] == [16, 8, 4]
    assert [c.global_batch for c in sweep.curves] == [8, 16, 32]
    assert all(c.examples == (32, 64, 96, 128) for c in sweep.curves)
    finals = [c.final_loss for c in sweep.curves]
    assert finals == sorted(finals)  # fewer steps of the same size: less progress
    text = str(sweep)
    assert text.startswith("same learning rate 0.1") and "final loss" in text.splitlines()[1]
    assert "<table" in sweep._repr_html_()


def test_scaled_rate_closes_the_gap(devices):
    same = run_scaling_sweep(devices, _model_fn, _data(), loss="mse", replica_counts=(1, 4))
    scaled = run_scaling_sweep(
        devices, _model_fn, _data(), loss="mse", replica_counts=(1, 4), scale_learning_rate=True
    )
    assert [c.learning_rate for c in scaled.curves] == [0.1, pytest.approx(0.4)]
    assert scaled.curves[0].final_loss == same.curves[0].final_loss
    gap_same = same.curves[1].final_loss - same.curves[0].final_loss
    gap_scaled = abs(scaled.curves[1].final_loss - scaled.curves[0].final_loss)
    assert gap_scaled < gap_same


def test_one_replica_matches_a_plain_loop(devices):
    sweep = run_scaling_sweep(devices, _model_fn, _data(), loss="mse", replica_counts=(1,))
    final = _plain_loop_final_loss(keras.optimizers.SGD(0.1))
    assert sweep.curves[0].final_loss == pytest.approx(final, rel=1e-5)


def _plain_loop_final_loss(optimizer):
    """One device, two epochs of batches of 8 in order: the final mean loss over the data."""
    x, y = _data()
    model = _model_fn()
    for _ in range(2):
        for start in range(0, 64, 8):
            with tf.GradientTape() as tape:
                loss = tf.reduce_mean(
                    keras.losses.mean_squared_error(
                        y[start : start + 8], model(x[start : start + 8])
                    )
                )
            grads = tape.gradient(loss, model.trainable_variables)
            optimizer.apply_gradients(zip(grads, model.trainable_variables, strict=True))
    final = float(np.mean(keras.losses.mean_squared_error(y, model(x))))
    return final


def test_schedule_warms_up_linearly_then_stays():
    schedule = linear_scaling_schedule(0.1, 8, warmup_steps=4)
    assert [round(float(schedule(s)), 4) for s in (0, 2, 4, 100)] == [0.1, 0.45, 0.8, 0.8]
    assert linear_scaling_schedule(0.1, 8) == pytest.approx(0.8)


def test_warmup_is_recorded(devices):
    sweep = run_scaling_sweep(
        devices,
        _model_fn,
        _data(),
        loss="mse",
        replica_counts=(2,),
        scale_learning_rate=True,
        warmup_steps=3,
    )
    assert sweep.curves[0].warmup_steps == 3 and "x replicas" in str(sweep)


WRONG_SCHEDULES = [
    pytest.param(
        {"base_learning_rate": "0.1"},
        TypeError,
        "base_learning_rate",
        r"got str '0\.1': write base_learning_rate=0\.1",
        id="rate as text",
    ),
    pytest.param(
        {"base_learning_rate": 0.0},
        ValueError,
        "base_learning_rate",
        r"above 0, got 0\.0",
        id="zero rate",
    ),
    pytest.param({"replicas": 0}, ValueError, "replicas", r"1 or more, got 0", id="no replicas"),
    pytest.param(
        {"replicas": 2.0},
        TypeError,
        "replicas",
        r"whole number, got float 2\.0",
        id="replicas as float",
    ),
    pytest.param(
        {"warmup_steps": -1},
        ValueError,
        "warmup_steps",
        r"0 or more, got -1",
        id="negative warm-up",
    ),
    pytest.param(
        {"warmup_steps": 0.5}, TypeError, "warmup_steps", r"whole number", id="warm-up in epochs"
    ),
]


@pytest.mark.wrong_inputs("mk.linear_scaling_schedule")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_SCHEDULES)
def test_linear_scaling_schedule_wrong_inputs(refuses, kwargs, error, argument, match):
    arguments = {"base_learning_rate": 0.1, "replicas": 4} | kwargs
    refuses(lambda: linear_scaling_schedule(**arguments), error, argument, match)


WRONG_SWEEPS = [
    pytest.param(
        {"devices": "/cpu:0"},
        TypeError,
        "devices",
        r"mk\.simulate_replicas",
        id="one device as text",
    ),
    pytest.param(
        {"replica_counts": (1, 2, 4, 8)},
        ValueError,
        "devices",
        r"asks for 8 replicas: call mk\.simulate_replicas\(8\)",
        id="too few devices",
    ),
    pytest.param(
        {"replica_counts": 4},
        TypeError,
        "replica_counts",
        r"write e\.g\. replica_counts=\(1, 2, 4, 8\)",
        id="one count",
    ),
    pytest.param(
        {"replica_counts": (1, 1)}, ValueError, "replica_counts", r"twice", id="count twice"
    ),
    pytest.param(
        {"model_fn": _model_fn()}, TypeError, "model_fn", r"model_fn=make_model", id="a model"
    ),
    pytest.param({"data": _data()[0]}, TypeError, "data", r"data=\(x, y\)", id="x only"),
    pytest.param(
        {"data": (_data()[0], _data(32)[1])},
        ValueError,
        "data",
        r"same examples",
        id="lengths differ",
    ),
    pytest.param(
        {"data": _data(8)}, ValueError, "data", r"fewer than one step", id="too few examples"
    ),
    pytest.param(
        {"warmup_steps": 4},
        ValueError,
        "warmup_steps",
        r"scale_learning_rate=True",
        id="warm-up without scaling",
    ),
    pytest.param(
        {"scale_learning_rate": "yes"},
        TypeError,
        "scale_learning_rate",
        r"True or False",
        id="flag as text",
    ),
    pytest.param({"window": 12}, ValueError, "window", r"window=None", id="odd window"),
    pytest.param(
        {"loss": "msee"}, ValueError, "loss", r"not a Keras loss name", id="loss misspelt"
    ),
    pytest.param(
        {"optimizer": "adma"}, ValueError, "optimizer", r'optimizer="sgd"', id="optimizer misspelt"
    ),
    pytest.param(
        {"optimizer": keras.optimizers.Adam()},
        TypeError,
        "optimizer",
        r"one of its own.*write optimizer=keras\.optimizers\.Adam",
        id="an optimizer object",
    ),
    pytest.param(
        {"optimizer": lambda rate: "adam"},
        TypeError,
        "optimizer",
        r"returned str",
        id="a function returning a name",
    ),
    pytest.param({"optimizer": 0.1}, TypeError, "optimizer", r"name or class", id="a number"),
]


@pytest.mark.wrong_inputs("mk.run_scaling_sweep")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_SWEEPS)
def test_run_scaling_sweep_wrong_inputs(refuses, devices, kwargs, error, argument, match):
    arguments = {
        "devices": devices,
        "model_fn": _model_fn,
        "data": _data(),
        "loss": "mse",
        "replica_counts": (1, 2),
    } | kwargs
    refuses(lambda: run_scaling_sweep(**arguments), error, argument, match)


def test_a_reused_step_starts_like_a_new_model(devices):
    # The second call reuses the first call's traced steps and models; a copy of the
    # model function (a different object) gets new ones. Every run must match.
    def other_model_fn():
        return _model_fn()

    kwargs = {"loss": "mse", "replica_counts": (1, 2), "scale_learning_rate": True}
    first = run_scaling_sweep(devices, _model_fn, _data(), **kwargs)
    warmed = run_scaling_sweep(devices, _model_fn, _data(), warmup_steps=2, **kwargs)
    again = run_scaling_sweep(devices, _model_fn, _data(), **kwargs)
    fresh = run_scaling_sweep(devices, other_model_fn, _data(), warmup_steps=2, **kwargs)
    assert again.curves == first.curves
    assert fresh.curves == warmed.curves
    assert warmed.curves != first.curves


def test_another_optimizer_trains_as_a_plain_loop_and_starts_fresh_each_run(devices):
    # A learner's first change: Adam. Each run must start from fresh slots, as a new
    # optimizer would, although the traced step and its optimizer are reused.
    first = run_scaling_sweep(
        devices, _model_fn, _data(), loss="mse", replica_counts=(1,), optimizer="adam"
    )
    again = run_scaling_sweep(
        devices, _model_fn, _data(), loss="mse", replica_counts=(1,), optimizer="Adam"
    )
    assert again.curves == first.curves and first.optimizer == "Adam"
    assert str(first).startswith("same learning rate 0.1 at every replica count, Adam:")
    final = _plain_loop_final_loss(keras.optimizers.Adam(0.1))
    assert first.curves[0].final_loss == pytest.approx(final, rel=1e-5)
    sgd = run_scaling_sweep(devices, _model_fn, _data(), loss="mse", replica_counts=(1,))
    assert sgd.curves[0].final_loss != first.curves[0].final_loss


def test_an_optimizer_made_by_a_function_of_the_rate(devices):
    momentum = run_scaling_sweep(
        devices,
        _model_fn,
        _data(),
        loss="mse",
        replica_counts=(1, 2),
        optimizer=lambda rate: keras.optimizers.SGD(rate, momentum=0.9),
        scale_learning_rate=True,
    )
    plain = run_scaling_sweep(
        devices, _model_fn, _data(), loss="mse", replica_counts=(1, 2), scale_learning_rate=True
    )
    assert momentum.optimizer == "SGD"
    assert [c.learning_rate for c in momentum.curves] == [0.1, pytest.approx(0.2)]
    assert momentum.curves[0].final_loss != plain.curves[0].final_loss
