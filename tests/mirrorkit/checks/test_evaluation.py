"""mk.check_evaluation: the mean loss over every example, full batches and a short last one."""

import re

import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk

GLOBAL_BATCH = 16


@pytest.fixture(scope="module")
def setup(strategy):
    rng = np.random.default_rng(0)
    x = rng.normal(size=(64, 3)).astype("float32")
    y = rng.normal(size=(64, 1)).astype("float32")
    with strategy.scope():
        keras.utils.set_random_seed(0)
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
    return model, (x, y)


def _per_batch(strategy, replica_value, reduce="SUM"):
    """An evaluation that averages one reduced number per batch."""

    def evaluate(model, dataset):
        @tf.function
        def step(batch):
            def on_replica(x, y):
                return replica_value(keras.losses.mean_squared_error(y, model(x)), y, model(x))

            return strategy.reduce(reduce, strategy.run(on_replica, args=batch), axis=None)

        batches = strategy.experimental_distribute_dataset(dataset)
        return float(np.mean([float(step(batch)) for batch in batches]))

    return evaluate


def _sums_and_counts(strategy):
    def evaluate(model, dataset):
        @tf.function
        def step(batch):
            def on_replica(x, y):
                per_example = keras.losses.mean_squared_error(y, model(x))
                return tf.reduce_sum(per_example), tf.cast(tf.size(per_example), tf.float32)

            total, count = strategy.run(on_replica, args=batch)
            return strategy.reduce("SUM", total, None), strategy.reduce("SUM", count, None)

        total = count = 0.0
        for batch in strategy.experimental_distribute_dataset(dataset):
            t, c = step(batch)
            total, count = total + float(t), count + float(c)
        return total / count

    return evaluate


def test_sums_and_counts_pass(strategy, setup):
    model, data = setup
    result = mk.check_evaluation(
        _sums_and_counts(strategy), strategy, model, data, global_batch=GLOBAL_BATCH
    )
    assert result.passed, result
    assert "short last batch of 5 examples" in result.message


def test_a_metric_made_under_the_scope_passes(strategy, setup):
    def evaluate(model, dataset):
        with strategy.scope():
            mean = keras.metrics.Mean()

        @tf.function
        def step(batch):
            strategy.run(
                lambda x, y: mean.update_state(keras.losses.mean_squared_error(y, model(x))),
                args=batch,
            )

        for batch in strategy.experimental_distribute_dataset(dataset):
            step(batch)
        return mean.result()  # a tensor: one number is enough

    model, data = setup
    assert mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)


MISTAKES = [
    pytest.param(
        lambda per, y, p: tf.nn.compute_average_loss(per, global_batch_size=GLOBAL_BATCH),
        "SUM",
        r"every batch is divided by the global batch of 16, the short one too",
        id="fixed-global-batch",
    ),
    pytest.param(
        lambda per, y, p: tf.reduce_mean(per),
        "SUM",
        r"the loss is 4 times too large.*each replica's own mean was summed",
        id="local-means-summed",
    ),
    pytest.param(
        lambda per, y, p: keras.losses.MeanSquaredError()(y, p),
        "MEAN",
        r"1/4 of the mean.*divided by the replicas twice",
        id="loss-object-averaged",
    ),
    pytest.param(
        lambda per, y, p: tf.reduce_mean(per),
        "MEAN",
        r"a replica with no examples took the mean of nothing",
        id="local-means-averaged",
    ),
    pytest.param(
        lambda per, y, p: keras.losses.MeanSquaredError()(y, p),
        "SUM",
        r"evaluate raised ValueError: Shapes must be equal rank.*same shape even when its share",
        id="loss-object-on-an-empty-share",
    ),
    pytest.param(
        lambda per, y, p: tf.nn.compute_average_loss(per, global_batch_size=GLOBAL_BATCH) + 1.0,
        "SUM",
        r"on 32 examples in full batches, evaluate gives .*, but the mean loss is",
        id="something-else",
    ),
]


@pytest.mark.parametrize(("replica_value", "reduce", "match"), MISTAKES)
def test_each_mistake_is_named(strategy, setup, replica_value, reduce, match):
    model, data = setup
    evaluate = _per_batch(strategy, replica_value, reduce)
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed
    assert re.search(match, result.message), result.message


def test_averaging_batch_means_is_named(strategy, setup):
    def evaluate(model, dataset):  # right per batch, but each batch weighs the same
        means = [
            float(_sums_and_counts(strategy)(model, tf.data.Dataset.from_tensors(batch)))
            for batch in dataset
        ]
        return float(np.mean(means))

    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed and "averages the batches' means" in result.message


def test_an_evaluation_that_trains_is_refused(strategy, setup):
    rng = np.random.default_rng(1)
    x = rng.normal(size=(64, 3)).astype("float32")
    with strategy.scope():
        model = keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])
        model.compile(optimizer="sgd", loss="mse")

    def evaluate(model, dataset):
        return model.fit(dataset, shuffle=False, verbose=0).history["loss"][-1]

    result = mk.check_evaluation(evaluate, strategy, model, (x, x[:, :1]), global_batch=16)
    assert not result.passed and "changed the model's weights" in result.message


def test_not_attempted(strategy, setup):
    model, data = setup
    result = mk.check_evaluation(..., strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed and "not attempted" in result.message


def _model_outside_the_scope():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1)])  # no strategy


WRONG_EVALUATIONS = [
    pytest.param(
        lambda s, m, d: mk.check_evaluation(42, s, m, d, global_batch=16),
        None,
        "evaluate",
        r"not a function: define def evaluate\(model, dataset\)",
        id="evaluate-a-number",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(_sums_and_counts(s), s, "model", d, global_batch=16),
        TypeError,
        "model",
        r"not a Keras model: pass the model to evaluate",
        id="model-a-string",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(
            _sums_and_counts(s), s, _model_outside_the_scope(), d, global_batch=16
        ),
        ValueError,
        "model",
        r"not built under this strategy's scope: build it inside `with strategy\.scope\(\):`",
        id="model-outside-the-scope",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(_sums_and_counts(s), s, m, d, global_batch=4),
        ValueError,
        "global_batch",
        r"too small to check with 4 replicas: use at least 8",
        id="global-batch-too-small",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(_sums_and_counts(s), s, m, d[0], global_batch=16),
        TypeError,
        "data",
        r"must be a pair \(x, y\)",
        id="data-x-only",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(
            _sums_and_counts(s), s, m, (d[0][:20], d[1][:20]), global_batch=16
        ),
        ValueError,
        "data",
        r"the check needs at least 32 \(two global batches of 16\)",
        id="data-too-short",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(
            _sums_and_counts(s), s, m, d, global_batch=16, loss="msee"
        ),
        ValueError,
        "loss",
        r"loss='msee' is not a Keras loss name",
        id="loss-misspelt",
    ),
    pytest.param(
        lambda s, m, d: mk.check_evaluation(_sums_and_counts(s), m, s, d, global_batch=16),
        TypeError,
        "strategy",
        r"mk\.check_evaluation\(evaluate, strategy, model, data, global_batch=\.\.\.\)",
        id="model-and-strategy-swapped",
    ),
]


@pytest.mark.wrong_inputs("mk.check_evaluation")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_EVALUATIONS)
def test_check_evaluation_wrong_inputs(judged, strategy, setup, call, error, argument, match):
    model, data = setup
    judged(lambda: call(strategy, model, data), error, argument, match)


def _one_device(model, dataset):
    total = count = 0.0
    for x, y in dataset:
        per_example = keras.losses.mean_squared_error(y, model(x))
        total, count = total + float(tf.reduce_sum(per_example)), count + float(tf.size(x[:, 0]))
    return total / count


def test_a_one_device_loop_with_no_strategy_is_named(strategy, setup):
    model, data = setup
    result = mk.check_evaluation(_one_device, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed
    assert "on one device, outside any strategy" in result.message, result.message


def test_a_loop_under_the_scope_without_run_is_named(strategy, setup):
    def evaluate(model, dataset):
        with strategy.scope():
            return _one_device(model, dataset)

    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed and "cross-replica context" in result.message, result.message


def test_an_eager_loop_adding_local_results_passes(strategy, setup):
    def evaluate(model, dataset):
        def on_replica(x, y):
            per_example = keras.losses.mean_squared_error(y, model(x))
            return tf.reduce_sum(per_example), tf.size(per_example)

        total, count = 0.0, 0
        for batch in strategy.experimental_distribute_dataset(dataset):
            sums, counts = strategy.run(on_replica, args=batch)
            total += sum(float(v) for v in strategy.experimental_local_results(sums))
            count += sum(int(v) for v in strategy.experimental_local_results(counts))
        return total / count

    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert result.passed, result
    assert "inside strategy.run on all 4 replicas" in result.message


def test_a_mean_times_a_fixed_replica_count_is_named(strategy, setup):
    def evaluate(model, dataset):  # right with 3 replicas only; the session has 4
        @tf.function
        def step(batch):
            def on_replica(x, y):
                per_example = keras.losses.mean_squared_error(y, model(x))
                return tf.reduce_sum(per_example), tf.cast(tf.size(per_example), tf.float32)

            total, count = strategy.run(on_replica, args=batch)
            return strategy.reduce("MEAN", total, None) * 3, strategy.reduce("SUM", count, None)

        total = count = 0.0
        for batch in strategy.experimental_distribute_dataset(dataset):
            t, c = step(batch)
            total, count = total + float(t), count + float(c)
        return total / count

    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed
    assert "multiplies by a fixed 3 where there are 4 replicas" in result.message, result.message


def test_numpy_on_a_traced_tensor_is_one_sentence(strategy, setup):
    evaluate = _per_batch(strategy, lambda per, y, p: tf.constant(np.sum(per.numpy())))
    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed
    assert "turns a tensor into NumPy" in result.message, result.message
    assert "in user code" not in result.message and "File " not in result.message


def test_a_traced_loop_under_the_scope_without_run_is_named(strategy, setup):
    def evaluate(model, dataset):
        @tf.function
        def sums(x, y):
            per_example = keras.losses.mean_squared_error(y, model(x))
            return tf.reduce_sum(per_example), tf.cast(tf.size(per_example), tf.float32)

        total = count = 0.0
        with strategy.scope():
            for x, y in dataset:
                t, c = sums(x, y)
                total, count = total + float(t), count + float(c)
        return total / count

    model, data = setup
    result = mk.check_evaluation(evaluate, strategy, model, data, global_batch=GLOBAL_BATCH)
    assert not result.passed and "cross-replica context" in result.message, result.message


def test_a_mixed_policy_is_compared_at_its_precision_and_dicts_are_read(strategy):
    """A mean computed more exactly than mixed_float16's outputs passes (it failed at 1e-5)."""
    rng = np.random.default_rng(0)
    x = {"a": rng.normal(size=(16, 3)).astype("float32")}
    y = rng.normal(size=(16, 1)).astype("float32")
    keras.mixed_precision.set_global_policy("mixed_float16")
    try:
        with strategy.scope():
            keras.utils.set_random_seed(0)
            inputs = keras.Input((3,), name="a")
            model = keras.Model({"a": inputs}, keras.layers.Dense(1)(inputs))
    finally:
        keras.mixed_precision.set_global_policy("float32")

    def evaluate(model, dataset):  # the mean in float64, from the weights
        strategy.run(lambda: model(x))  # every replica calls the model, as the check wants
        w, b = (np.asarray(v, np.float64) for v in model.weights)
        errors = [(bx["a"].numpy() @ w + b - by.numpy()) ** 2 for bx, by in dataset]
        return float(np.mean(np.concatenate(errors)))

    result = mk.check_evaluation(evaluate, strategy, model, (x, y), global_batch=8)
    assert result.passed and "precision of the model's mixed policy" in result.message, result
