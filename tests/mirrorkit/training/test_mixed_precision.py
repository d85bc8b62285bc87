import keras
import numpy as np
import pytest

import mirrorkit as mk


def test_overflow_skips_the_step_and_halves_the_scale(strategy):
    history = mk.run_loss_scale(
        strategy, steps=6, overflow_steps=[2], initial_scale=8.0, dynamic_growth_steps=2
    )
    assert history.num_replicas == 4 and history.policy == "mixed_float16"
    rows = [(r.step, r.loss_scale, r.overflow, r.weights_changed) for r in history.records]
    assert rows == [
        (0, 8.0, False, True),
        (1, 8.0, False, True),  # 2nd good step in a row: the scale doubles after it
        (2, 16.0, True, False),  # forced overflow: update skipped, scale halved
        (3, 8.0, False, True),
        (4, 8.0, False, True),
        (5, 16.0, False, True),
    ]
    assert history.skipped_steps == (2,)
    assert [r.next_scale for r in history.records][:3] == [8.0, 16.0, 8.0]
    assert not np.isfinite(history.records[2].grad_norm)
    assert all(np.isfinite(r.grad_norm) for r in history.records if not r.overflow)
    losses = [r.loss for r in history.records if not r.overflow]
    assert losses == sorted(losses, reverse=True)  # training makes progress
    text = str(history)
    assert "YES" in text and "skipped" in text and text.splitlines()[1].startswith("step")
    assert "<table " in history._repr_html_()


def test_scale_grows_after_good_steps_on_two_replicas(devices):
    two = mk.make_strategy(devices=devices[:2])
    history = mk.run_loss_scale(
        two,
        policy="mixed_bfloat16",
        steps=4,
        overflow_steps=[],
        initial_scale=2.0,
        dynamic_growth_steps=1,
    )
    assert history.scales == (2.0, 4.0, 8.0, 16.0)
    assert history.skipped_steps == ()


def test_policy_is_restored_even_after_an_error():
    assert keras.mixed_precision.global_policy().name == "float32"
    with pytest.raises(RuntimeError, match="boom"), mk.mixed_precision_policy("mixed_float16"):
        assert keras.mixed_precision.global_policy().name == "mixed_float16"
        assert keras.layers.Dense(1).compute_dtype == "float16"
        raise RuntimeError("boom")
    assert keras.mixed_precision.global_policy().name == "float32"
    assert keras.layers.Dense(1).compute_dtype == "float32"


def test_bad_arguments(strategy):
    with (
        pytest.raises(ValueError, match="unknown mixed precision policy 'mixed_float8'"),
        mk.mixed_precision_policy("mixed_float8"),
    ):
        pass
    with pytest.raises(ValueError, match="unknown policy 'float64'.*'mixed_float16'"):
        mk.run_loss_scale(strategy, policy="float64")
    with pytest.raises(TypeError, match=r"mk\.make_strategy\(\)"):
        mk.run_loss_scale(None)
    assert keras.mixed_precision.global_policy().name == "float32"


WRONG_LOSS_SCALE_ARGUMENTS = [
    ({"global_batch": 3}, ValueError, r"global_batch=3 does not divide over 4 replicas.*4, 8, 16"),
    ({"overflow_steps": 5}, TypeError, r"overflow_steps must be a list .* overflow_steps=\[2\]"),
    ({"overflow_steps": [9]}, ValueError, r"overflow_steps holds 9, .* from 0 to 5 \(steps=6\)"),
    ({"overflow_steps": ["2"]}, ValueError, r"overflow_steps holds '2'"),
    ({"steps": 0}, ValueError, r"steps must be a positive int, got 0"),
    ({"global_batch": 2.5}, ValueError, r"global_batch must be a positive int, got 2.5"),
    ({"initial_scale": "big"}, TypeError, r"initial_scale must be a number such as 2.0\*\*15"),
    ({"initial_scale": 0}, ValueError, r"initial_scale must be positive, got 0"),
    ({"dynamic_growth_steps": -1}, ValueError, r"dynamic_growth_steps must be a positive int"),
]


@pytest.mark.parametrize(("kwargs", "error", "match"), WRONG_LOSS_SCALE_ARGUMENTS)
def test_wrong_arguments_get_a_sentence_naming_them(strategy, kwargs, error, match):
    with pytest.raises(error, match=match) as raised:
        mk.run_loss_scale(strategy, **kwargs)
    assert "Traceback" not in str(raised.value) and "tensorflow/" not in str(raised.value)
    assert keras.mixed_precision.global_policy().name == "float32"


def test_numpy_step_numbers_are_step_numbers(strategy):
    history = mk.run_loss_scale(strategy, steps=3, overflow_steps=np.array([1]))
    assert [r.overflow for r in history.records] == [False, True, False]
