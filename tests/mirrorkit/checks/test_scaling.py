import keras
import numpy as np
import pytest
import tensorflow as tf

from mirrorkit.checks.accumulation import check_accumulation
from mirrorkit.checks.clipping import check_clipping

K = 3


def _model_fn():
    keras.utils.set_random_seed(0)
    return keras.Sequential(
        [keras.Input((4,)), keras.layers.Dense(3, activation="relu"), keras.layers.Dense(1)]
    )


def _data(strategy, steps=2 * K):
    rng = np.random.default_rng(0)
    n = steps * 2 * strategy.num_replicas_in_sync
    x = rng.normal(size=(n, 4)).astype("float32")
    return x, (3.0 * x @ rng.normal(size=(4, 1))).astype("float32")


MSE = keras.losses.MeanSquaredError(reduction="none")


def _accumulate(divide_by, assign=False):
    def accumulate(model, accumulators, x, y):
        with tf.GradientTape() as tape:
            loss = tf.reduce_sum(MSE(y, model(x, training=True))) / divide_by(x)
        for accumulator, gradient in zip(
            accumulators, tape.gradient(loss, model.trainable_variables), strict=True
        ):
            (accumulator.assign if assign else accumulator.assign_add)(gradient)

    return accumulate


def _apply(reset=True):
    def apply(model, optimizer, accumulators):
        optimizer.apply_gradients(
            zip([a.read_value() for a in accumulators], model.trainable_variables, strict=True)
        )
        if reset:
            for accumulator in accumulators:
                accumulator.assign(tf.zeros_like(accumulator))

    return apply


def _big(strategy):
    return lambda x: float(K * 2 * strategy.num_replicas_in_sync)


def _micro(strategy):
    return lambda x: float(2 * strategy.num_replicas_in_sync)


@pytest.mark.parametrize(
    ("make", "word"),
    [
        (lambda s: (_accumulate(_big(s)), _apply()), None),
        (lambda s: (_accumulate(_micro(s)), _apply()), "micro-batch's global batch"),
        (lambda s: (_accumulate(lambda x: K * _big(s)(x)), _apply()), "twice"),
        (lambda s: (_accumulate(_big(s)), _apply(reset=False)), "never reset"),
        (lambda s: (_accumulate(_big(s), assign=True), _apply()), "assign_add"),
        (lambda s: (_accumulate(lambda x: 7.0), _apply()), "share of the whole step"),
    ],
    ids=["right", "micro", "k-twice", "no-reset", "assign", "other"],
)
def test_check_accumulation_names_the_mistake(strategy, make, word):
    accumulate, apply = make(strategy)
    result = check_accumulation(
        accumulate, apply, strategy, _model_fn, _data(strategy), micro_steps=K
    )
    if word is None:
        assert result.passed, result
    else:
        assert not result.passed and word in result.message, result


def _after_sum(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    norm = tf.linalg.global_norm(context.all_reduce("SUM", gradients))
    return [g * tf.minimum(1.0, clip_norm / norm) for g in gradients]


def _sum_not_divided(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    return tf.clip_by_global_norm(context.all_reduce("SUM", gradients), clip_norm)[0]


def _mean_clipped(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    return tf.clip_by_global_norm(context.all_reduce("MEAN", gradients), clip_norm)[0]


def _normalized(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    norm = tf.linalg.global_norm(context.all_reduce("SUM", gradients))
    return [g * clip_norm / norm for g in gradients]


@pytest.mark.parametrize(
    ("clip", "word"),
    [
        (_after_sum, None),
        (lambda g, c: tf.clip_by_global_norm(g, c)[0], "before the sum"),
        (_sum_not_divided, "sums the"),
        (_mean_clipped, "MEAN of the"),
        (lambda g, c: g, "nothing was clipped"),
        (_normalized, "under the bound"),
        (lambda g, c: tf.clip_by_global_norm(g, c), "keep the first"),
        (lambda g, c: undefined_name, "NameError"),  # noqa: F821
    ],
    ids=["right", "per-replica", "summed-twice", "mean", "none", "normalized", "pair", "error"],
)
def test_check_clipping_names_the_mistake(strategy, clip, word):
    x, y = _data(strategy)
    result = check_clipping(clip, strategy, _model_fn, (x[:16], y[:16]), clip_norm=0.5)
    if word is None:
        assert result.passed, result
    else:
        assert not result.passed and word in result.message, result


def _divided_by_four(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    clipped = tf.clip_by_global_norm(context.all_reduce("SUM", gradients), clip_norm)[0]
    return [g / 4 for g in clipped]  # the book's replica count, hard-coded


def _local_norm_times_n(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    norm = tf.linalg.global_norm(gradients) * context.num_replicas_in_sync
    return [g * tf.minimum(1.0, clip_norm / norm) for g in gradients]


def _summed_norms(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    norm = context.all_reduce("SUM", tf.linalg.global_norm(gradients))
    return [g * tf.minimum(1.0, clip_norm / norm) for g in gradients]


def _own_factor(gradients, clip_norm):
    context = tf.distribute.get_replica_context()
    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)
    return [g * 0.1 * mine for g in gradients]


@pytest.fixture(scope="module")
def three(devices):
    import mirrorkit as mk

    return mk.make_strategy(devices=devices[:3])


@pytest.mark.parametrize(
    ("k", "make", "word"),
    [
        (K, lambda: (_accumulate(lambda x: float(K * 2 * 4)), _apply()), "hard-coded 4 for the"),
        (2, lambda: (_accumulate(lambda x: float(3 * 2 * 3)), _apply()), "hard-coded 3 for k"),
    ],
    ids=["four-replicas", "k-three"],
)
def test_check_accumulation_names_a_number_hard_coded_for_another_run(three, k, make, word):
    accumulate, apply = make()
    data = _data(three, steps=2 * k)
    result = check_accumulation(accumulate, apply, three, _model_fn, data, micro_steps=k)
    assert not result.passed and word in result.message.lower(), result


@pytest.mark.parametrize(
    ("clip", "word"),
    [
        (_divided_by_four, "hard-coded 4"),
        (_local_norm_times_n, "local norm"),
        (_summed_norms, "sum of the replicas' local norms"),
        (_own_factor, "a factor of its own"),
    ],
    ids=["four-replicas", "local-norm", "summed-norms", "own-factor"],
)
def test_check_clipping_names_local_norms_and_hard_coded_counts(three, clip, word):
    x, y = _data(three)
    result = check_clipping(clip, three, _model_fn, (x[:12], y[:12]), clip_norm=0.5)
    assert not result.passed and word in result.message, result


def test_unattempted_and_one_replica(devices):
    import mirrorkit as mk

    one = mk.make_strategy(devices=devices[:1])
    assert check_clipping(..., one, _model_fn, None, clip_norm=1.0).message.startswith(
        "not attempted"
    )
    result = check_clipping(_after_sum, one, _model_fn, None, clip_norm=1.0)
    assert not result.passed and "with one replica" in result.message


WRONG_ACCUMULATIONS = [
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), _apply(), None, _model_fn, _data(s), micro_steps=K
        ),
        TypeError,
        "strategy",
        r"mk\.make_strategy\(\)",
        id="no strategy",
    ),
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), "apply", s, _model_fn, _data(s), micro_steps=K
        ),
        None,
        "apply",
        r"apply\(model, optimizer, accumulators\)",
        id="apply as text",
    ),
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), _apply(), s, _model_fn, _data(s), micro_steps=1
        ),
        ValueError,
        "micro_steps",
        r"2 or more",
        id="one micro-step",
    ),
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), _apply(), s, _model_fn(), _data(s), micro_steps=K
        ),
        TypeError,
        "model_fn",
        r"model_fn=make_model",
        id="a model",
    ),
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), _apply(), s, _model_fn, _data(s, 5), micro_steps=K
        ),
        ValueError,
        "data",
        r"multiple of 2 \* micro_steps",
        id="uneven data",
    ),
    pytest.param(
        lambda s: check_accumulation(
            _accumulate(_big(s)), _apply(), s, _model_fn, _data(s)[0], micro_steps=K
        ),
        TypeError,
        "data",
        r"pair \(x, y\)",
        id="x only",
    ),
]


@pytest.mark.wrong_inputs("mk.check_accumulation")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_ACCUMULATIONS)
def test_check_accumulation_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)


WRONG_CLIPPINGS = [
    pytest.param(
        lambda s, b: check_clipping(_after_sum, _model_fn, s, b, clip_norm=0.5),
        TypeError,
        "strategy",
        r"mk\.make_strategy\(\)",
        id="arguments swapped",
    ),
    pytest.param(
        lambda s, b: check_clipping(_after_sum, s, _model_fn, b, clip_norm="0.5"),
        TypeError,
        "clip_norm",
        r"number above 0",
        id="bound as text",
    ),
    pytest.param(
        lambda s, b: check_clipping(_after_sum, s, _model_fn, b, clip_norm=1e6),
        ValueError,
        "clip_norm",
        r"Pass a smaller clip_norm",
        id="bound never reached",
    ),
    pytest.param(
        lambda s, b: check_clipping(
            tf.clip_by_global_norm([tf.ones(2)], 1.0)[0], s, _model_fn, b, clip_norm=0.5
        ),
        None,
        "clip",
        r"clip must be a function clip\(gradients, clip_norm\)",
        id="a result",
    ),
    pytest.param(
        lambda s, b: check_clipping(_after_sum, s, _model_fn, b[0], clip_norm=0.5),
        TypeError,
        "batch",
        r"pair \(x, y\)",
        id="x only",
    ),
    pytest.param(
        lambda s, b: check_clipping(_after_sum, s, _model_fn(), b, clip_norm=0.5),
        TypeError,
        "model_fn",
        r"model_fn=make_model",
        id="a model",
    ),
]


@pytest.mark.wrong_inputs("mk.check_clipping")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_CLIPPINGS)
def test_check_clipping_wrong_inputs(judged, strategy, call, error, argument, match):
    x, y = _data(strategy)
    judged(lambda: call(strategy, (x[:16], y[:16])), error, argument, match)
