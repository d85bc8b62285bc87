import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from tests.conftest import REPLICAS


def replica_id():
    return tf.distribute.get_replica_context().replica_id_in_sync_group


def test_not_attempted_placeholders(strategy):
    for result in (
        mk.check_mirrored(..., strategy),
        mk.check_per_replica(..., strategy, expected=[0] * REPLICAS),
        mk.check_all_reduced(..., strategy, expected=1.0),
    ):
        assert not result
        assert repr(result).startswith("NOT YET: not attempted")


def test_check_mirrored(strategy):
    with strategy.scope():
        good = tf.Variable(0.0)
        on_read = tf.Variable(
            0.0,
            synchronization=tf.VariableSynchronization.ON_READ,
            aggregation=tf.VariableAggregation.SUM,
        )
    assert mk.check_mirrored(good, strategy)
    assert repr(mk.check_mirrored(good, strategy)) == (
        f"PASS: a MirroredVariable with {REPLICAS} identical copies."
    )
    outside = mk.check_mirrored(tf.Variable(0.0), strategy)
    assert not outside and "with strategy.scope()" in outside.message
    assert "SyncOnReadVariable" in mk.check_mirrored(on_read, strategy).message
    assert "value has type int, not a variable" in mk.check_mirrored(3, strategy).message
    two = mk.make_strategy(devices=mk.replica_devices(strategy)[:2])
    wrong_strategy = mk.check_mirrored(good, two)
    assert f"it has {REPLICAS} copies but the strategy has 2 replicas" in wrong_strategy.message
    with tf.distribute.MirroredStrategy(mk.replica_devices(strategy)).scope():
        same_devices = tf.Variable(0.0)  # as many copies, but another strategy's
    elsewhere = mk.check_mirrored(same_devices, strategy)
    assert not elsewhere and "another strategy's scope" in elsewhere.message


def test_check_mirrored_diverged(strategy):
    with strategy.scope():
        variable = tf.Variable(0.0)
    strategy.run(lambda: variable.assign_add(tf.cast(replica_id(), tf.float32)))
    result = mk.check_mirrored(variable, strategy)
    assert not result and "copies differ" in result.message


def test_check_per_replica(strategy):
    squares = strategy.run(lambda: tf.cast(replica_id() * replica_id(), tf.float32))
    expected = [i * i for i in range(REPLICAS)]
    assert mk.check_per_replica(squares, strategy, expected=expected)
    wrong = mk.check_per_replica(squares, strategy, expected=[i for i in range(REPLICAS)])
    assert not wrong and wrong.message == (
        f"the values do not follow the replica number at {REPLICAS} replicas: "
        "replica 2 holds 4, expected 2."
    )
    not_distributed = mk.check_per_replica(tf.constant(1.0), strategy, expected=expected)
    assert "compute it with strategy.run" in not_distributed.message
    assert "has type str" in mk.check_per_replica("x", strategy, expected=expected).message


def test_check_per_replica_wrong_expected_length(strategy):
    with pytest.raises(ValueError, match="expected has 1 values for"):
        mk.check_per_replica(tf.constant(1.0), strategy, expected=[1])


def total_of_ids_plus_one():
    context = tf.distribute.get_replica_context()
    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)
    return context.all_reduce(tf.distribute.ReduceOp.SUM, mine)


def test_check_all_reduced_runs_the_function_and_finds_the_all_reduce(strategy):
    n = REPLICAS
    result = mk.check_all_reduced(total_of_ids_plus_one, strategy, n * (n + 1) / 2)
    assert repr(result) == f"PASS: all {n} replicas hold the all-reduced value {n * (n + 1) // 2}."

    def computed_alone():
        m = tf.distribute.get_replica_context().num_replicas_in_sync
        return tf.constant(m * (m + 1) / 2, tf.float32)

    def reduced_but_not_returned():
        total_of_ids_plus_one()
        return computed_alone()

    for answer in (computed_alone, reduced_but_not_returned):
        verdict = mk.check_all_reduced(answer, strategy, n * (n + 1) / 2)
        assert not verdict and "no all-reduce produced it" in verdict.message

    def mean_of_ids_plus_one():
        context = tf.distribute.get_replica_context()
        mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)
        return context.all_reduce("mean", mine)

    mean = mk.check_all_reduced(mean_of_ids_plus_one, strategy, n * (n + 1) / 2)
    assert not mean and "the mean of the replicas' values" in mean.message
    as_value = mk.check_all_reduced(strategy.run(total_of_ids_plus_one), strategy, 10.0)
    assert not as_value and "not a function" in as_value.message
    broken = mk.check_all_reduced(lambda: 1 / 0, strategy, 10.0)
    assert not broken and "strategy.run(replica_fn) failed: ZeroDivisionError" in broken.message
    in_a_dict = mk.check_all_reduced(lambda: {"total": total_of_ids_plus_one()}, strategy, 10.0)
    assert not in_a_dict and "value has type dict" in in_a_dict.message  # a verdict, not a crash
    text = mk.check_all_reduced(lambda: tf.constant("10"), strategy, 10.0)
    assert not text and "of dtype string, not a number" in text.message


def test_check_all_reduced_refuses_what_it_cannot_see(strategy):
    devices = mk.replica_devices(strategy)
    one = mk.make_strategy(devices=devices[:1])
    alone = mk.check_all_reduced(total_of_ids_plus_one, one, 1.0)
    assert not alone and alone.message.startswith("cannot check an all-reduce with one replica")


def ones_then_arithmetic():
    context = tf.distribute.get_replica_context()
    count = context.all_reduce("sum", tf.constant(1.0))
    return count * (count + 1) / 2


def test_check_all_reduced_sees_an_all_reduce_made_of_addn(strategy):
    n = REPLICAS

    def in_int32():
        context = tf.distribute.get_replica_context()
        return context.all_reduce("sum", context.replica_id_in_sync_group + 1)

    assert mk.check_all_reduced(in_int32, strategy, n * (n + 1) / 2)  # AddN, not a collective
    to_one = tf.distribute.MirroredStrategy(
        mk.replica_devices(strategy), cross_device_ops=tf.distribute.ReductionToOneDevice()
    )
    assert mk.check_all_reduced(total_of_ids_plus_one, to_one, n * (n + 1) / 2)
    counted = mk.check_all_reduced(ones_then_arithmetic, to_one, n * (n + 1) / 2)
    assert not counted and "all-reduce of a constant" in counted.message


def test_check_all_reduced_refuses_an_all_reduce_of_a_constant(strategy):
    n = REPLICAS
    counted = mk.check_all_reduced(ones_then_arithmetic, strategy, n * (n + 1) / 2)
    assert not counted and "computed from an all-reduce of a constant" in counted.message


def test_checks_refuse_one_replica(strategy):
    one = mk.make_strategy(devices=mk.replica_devices(strategy)[:1])
    ids_one = one.run(lambda: tf.cast(replica_id(), tf.float32))
    batch = (np.ones((4, 3), "float32"), np.zeros((4, 1), "float32"))
    for verdict in (
        mk.check_per_replica(ids_one, one, expected=[0.0]),
        mk.check_input_pipeline(tf.data.Dataset.range(8).batch(4, drop_remainder=True), one),
        mk.check_loss_step(lambda model, x, y: tf.reduce_mean(model(x)), one, _model_fn, batch),
    ):
        assert not verdict and verdict.message.startswith("cannot check ")
        assert (
            "with one replica" in verdict.message and "mk.simulate_replicas(4)" in verdict.message
        )
    assert repr(mk.check_per_replica(..., one, expected=[0.0])).startswith("NOT YET: not attempted")


def test_check_mirrored_dtype_and_value(strategy):
    with strategy.scope():
        integer, one, zero = tf.Variable(0), tf.Variable(1.0), tf.Variable(0.0)
    wrong_type = mk.check_mirrored(integer, strategy, dtype=tf.float32, expected=0.0)
    assert not wrong_type and "dtype is int32, expected float32" in wrong_type.message
    wrong_value = mk.check_mirrored(one, strategy, dtype="float32", expected=0.0)
    assert not wrong_value and "its copies hold 1, expected 0" in wrong_value.message
    assert mk.check_mirrored(zero, strategy, dtype=tf.float32, expected=0.0)
    with pytest.raises(TypeError, match="dtype must be a dtype such as tf.float32"):
        mk.check_mirrored(zero, strategy, dtype="floaty")


def test_check_per_replica_dtype(strategy):
    squares = strategy.run(lambda: replica_id() * replica_id())
    expected = [i * i for i in range(REPLICAS)]
    assert mk.check_per_replica(squares, strategy, expected=expected)  # no dtype asked
    typed = mk.check_per_replica(squares, strategy, expected=expected, dtype=tf.float32)
    assert not typed and "dtype is int32, expected float32" in typed.message


def test_check_loss_step_with_several_batches(strategy):
    rng = np.random.default_rng(0)

    def batch(size):
        return (
            rng.normal(size=(size, 3)).astype("float32"),
            rng.normal(size=(size, 1)).astype("float32"),
        )

    def any_batch(model, x, y):
        context = tf.distribute.get_replica_context()
        total = context.all_reduce("sum", tf.shape(x)[0])
        per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=total)

    def fixed(model, x, y):
        per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=10)

    both = [batch(10), batch(8)]
    passed = mk.check_loss_step(any_batch, strategy, _model_fn, both)
    assert passed and "(checked with global batches of 10 and 8; splits tried: " in passed.message
    # 10 examples on 4 replicas is uneven already, so no other split of it is added.
    assert passed.message.endswith("splits tried: 3, 3, 3, 1; 2, 2, 2, 2).")
    assert mk.check_loss_step(fixed, strategy, _model_fn, both[:1])
    wrong = mk.check_loss_step(fixed, strategy, _model_fn, both)
    assert not wrong and wrong.message.startswith("with a global batch of 8 examples: ")
    assert "empty list" in mk.check_loss_step(fixed, strategy, _model_fn, []).message


def test_html_of_a_result():
    assert "<strong>PASS</strong>" in mk.CheckResult(True, "x")._repr_html_()
    assert "&lt;b&gt;" in mk.CheckResult(False, "<b>")._repr_html_()


def _model_fn():
    return keras.Sequential([keras.Input((3,)), keras.layers.Dense(1, name="check_loss_dense")])


def test_check_loss_step_passes_the_right_loss_and_names_the_wrong_one(strategy):
    rng = np.random.default_rng(0)
    batch = (rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 1)).astype("float32"))

    def right(model, x, y):
        per_example = keras.losses.mean_squared_error(y, model(x, training=True))
        return tf.nn.compute_average_loss(per_example, global_batch_size=8)

    def local_mean(model, x, y):
        return tf.reduce_mean(tf.square(y - model(x, training=True)))

    assert mk.check_loss_step(right, strategy, _model_fn, batch)
    wrong = mk.check_loss_step(local_mean, strategy, _model_fn, batch)
    assert not wrong and f"{REPLICAS}" in wrong.message
    assert repr(mk.check_loss_step(..., strategy, _model_fn, batch)).startswith("NOT YET")
    broken = mk.check_loss_step(lambda model, x, y: None, strategy, _model_fn, batch)
    assert not broken and "compute_loss" in broken.message


# ----------------------------------------------------------------------------- wrong inputs
# Each case is a call given the session's strategy. A mistake in the learner's answer is a
# NOT YET verdict (error None); a mistake in how the check is called raises.


def ids(strategy):
    return strategy.run(lambda: tf.cast(replica_id(), tf.float32))


def mirrored(strategy):
    with strategy.scope():
        return tf.Variable(0.0)


WRONG_MIRRORED = [
    pytest.param(
        lambda s: mk.check_mirrored(tf.constant(1.0), s),
        None,
        "value",
        r"not a variable: create it with tf\.Variable\(\.\.\.\) inside `with strategy\.scope",
        id="a-tensor",
    ),
    pytest.param(
        lambda s: mk.check_mirrored(tf.Variable(1.0), s),
        None,
        "value",
        r"plain variable with one copy: create it inside `with strategy\.scope",
        id="made-outside-scope",
    ),
    pytest.param(
        lambda s: mk.check_mirrored(_model_fn(), s),
        None,
        "value",
        r"Keras model or layer \(Sequential\).*model\.trainable_variables\[0\]",
        id="a-model",
    ),
    pytest.param(
        lambda s: mk.check_mirrored([mirrored(s)], s),
        None,
        "value",
        r"has type list, not a variable: pass one value",
        id="a-list-of-variables",
    ),
    pytest.param(
        lambda s: mk.check_mirrored(s, mirrored(s)),
        TypeError,
        "strategy",
        r"got MirroredVariable: create one with strategy = mk\.make_strategy\(\) and call "
        r"mk\.check_mirrored\(variable, strategy\)",
        id="arguments-swapped",
    ),
    pytest.param(
        lambda s: mk.check_mirrored(mirrored(s), tf.distribute.MirroredStrategy),
        TypeError,
        "strategy",
        r"the class MirroredStrategy, not a strategy",
        id="strategy-the-class",
    ),
]


@pytest.mark.wrong_inputs("mk.check_mirrored")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_MIRRORED)
def test_check_mirrored_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)


WRONG_PER_REPLICA = [
    pytest.param(
        lambda s: mk.check_per_replica(ids(s), s, expected=0.0),
        TypeError,
        "expected",
        r"a list of 4; got float 0\.0\. For one value every replica holds, call "
        r"mk\.check_all_reduced\(value, strategy, expected=0\.0\)",
        id="expected-one-number",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(ids(s), s, expected=[0, 1]),
        ValueError,
        "expected",
        r"2 values for 4 replicas: give one per replica",
        id="expected-too-short",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(ids(s), s, expected=["0", "1", "2", "3"]),
        TypeError,
        "expected[0]",
        r"must be a number or an array of numbers, got str '0'",
        id="expected-strings",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(s.experimental_local_results(ids(s)), s, [0, 1, 2, 3]),
        None,
        "value",
        r"not strategy\.experimental_local_results\(\.\.\.\) of it",
        id="local-results",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(tf.constant(0.0), s, [0, 1, 2, 3]),
        None,
        "value",
        r"not a per-replica value: compute it with strategy\.run\(fn\)",
        id="a-tensor",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(ids(s), s, [[i, i] for i in range(4)]),
        None,
        "replica 0",
        r"holds a value of shape \(\), expected shape \(2,\)",
        id="expected-of-another-shape",
    ),
    pytest.param(
        lambda s: mk.check_per_replica(ids(s), None, [0, 1, 2, 3]),
        TypeError,
        "strategy",
        r"got NoneType: create one with strategy = mk\.make_strategy\(\)",
        id="strategy-None",
    ),
]


@pytest.mark.wrong_inputs("mk.check_per_replica")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_PER_REPLICA)
def test_check_per_replica_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)


WRONG_ALL_REDUCED = [
    pytest.param(
        lambda s: mk.check_all_reduced(ids(s), s, expected="6"),
        TypeError,
        "expected",
        r"must be a number or an array of numbers, got str '6'",
        id="expected-a-string",
    ),
    pytest.param(
        lambda s: mk.check_all_reduced(ids(s), s, expected=None),
        TypeError,
        "expected",
        r"got NoneType None: write it as the value you expect",
        id="expected-None",
    ),
    pytest.param(
        lambda s: mk.check_all_reduced(total_of_ids_plus_one, s, expected=[10.0] * 4),
        None,
        "replica 0",
        r"holds a value of shape \(\), expected shape \(4,\)",
        id="expected-one-per-replica",
    ),
    pytest.param(
        lambda s: mk.check_all_reduced(s.reduce("SUM", ids(s), axis=None), s, expected=6.0),
        None,
        "replica_fn",
        r"got EagerTensor, not a function: pass the function you give strategy\.run",
        id="reduced-to-one-tensor",
    ),
    pytest.param(
        lambda s: mk.check_all_reduced(lambda: tf.cast(replica_id(), tf.float32), s, 6.0),
        None,
        "replica 0",
        r"replica 0 holds 0, expected 6",
        id="not-all-reduced",
    ),
    pytest.param(
        lambda s: mk.check_all_reduced(ids(s), "mirrored", expected=6.0),
        TypeError,
        "strategy",
        r"got the text 'mirrored': create one with strategy = mk\.make_strategy\(\)",
        id="strategy-a-string",
    ),
]


@pytest.mark.wrong_inputs("mk.check_all_reduced")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_ALL_REDUCED)
def test_check_all_reduced_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)


def dataset(n=16, batch=8):
    return tf.data.Dataset.range(n).batch(batch)


WRONG_PIPELINES = [
    pytest.param(
        lambda s: mk.check_input_pipeline(list(range(16)), s),
        None,
        "dataset_or_fn",
        r"got list: make a dataset of it first, e\.g\. tf\.data\.Dataset\.from_tensor_slices",
        id="a-list",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(s.experimental_distribute_dataset(dataset()), s),
        None,
        "dataset_or_fn",
        r"already distributed: pass the dataset itself",
        id="already-distributed",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(tf.data.Dataset.range(16), s),
        None,
        "dataset",
        r"not batched.*dataset\.batch\(global_batch\)",
        id="unbatched",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(dataset(), s, per_replica_batch="2"),
        TypeError,
        "per_replica_batch",
        r"got str '2': write the count, e\.g\. per_replica_batch=8",
        id="per_replica_batch-a-string",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(dataset(), s, per_replica_batch=0),
        ValueError,
        "per_replica_batch",
        r"at least 1, got 0",
        id="per_replica_batch-0",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(dataset(), s, auto_shard="FILES"),
        ValueError,
        "auto_shard",
        r"one of 'AUTO', 'FILE', 'DATA', 'HINT', 'OFF'; got 'FILES'",
        id="auto_shard-misspelt",
    ),
    pytest.param(
        lambda s: mk.check_input_pipeline(s, dataset()),
        TypeError,
        "strategy",
        r"got _BatchDataset: create one with strategy = mk\.make_strategy\(\) and call "
        r"mk\.check_input_pipeline\(dataset, strategy\)",
        id="arguments-swapped",
    ),
]


@pytest.mark.wrong_inputs("mk.check_input_pipeline")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_PIPELINES)
def test_check_input_pipeline_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)


def test_an_auto_shard_policy_member_is_read_as_its_name(strategy):
    full = tf.data.Dataset.range(16).batch(8, drop_remainder=True)
    result = mk.check_input_pipeline(
        full, strategy, auto_shard=tf.data.experimental.AutoShardPolicy.DATA
    )
    assert "auto-shard policy is AUTO, expected DATA" in result.message


def mean_squared(model, x, y):
    per_example = keras.losses.mean_squared_error(y, model(x, training=True))
    return tf.nn.compute_average_loss(per_example, global_batch_size=8)


def loss_batch():
    rng = np.random.default_rng(0)
    return rng.normal(size=(8, 3)).astype("float32"), rng.normal(size=(8, 1)).astype("float32")


WRONG_LOSS_STEPS = [
    pytest.param(
        lambda s: mk.check_loss_step(lambda model, x, y: None, s, _model_fn, loss_batch()),
        None,
        "compute_loss",
        r"end it with `return loss`",
        id="compute_loss-returns-None",
    ),
    pytest.param(
        lambda s: mk.check_loss_step(mean_squared, s, _model_fn(), loss_batch()),
        TypeError,
        "model_fn",
        r"not a model: both runs need their own copy, e\.g\. model_fn=build_model",
        id="model_fn-a-model",
    ),
    pytest.param(
        lambda s: mk.check_loss_step(mean_squared, s, _model_fn, tf.data.Dataset.range(8)),
        TypeError,
        "batch",
        r"one global batch \(x, y\).*e\.g\. \(x_train\[:8\], y_train\[:8\]\)",
        id="batch-a-dataset",
    ),
    pytest.param(
        lambda s: mk.check_loss_step(mean_squared, s, _model_fn, loss_batch(), loss="msee"),
        ValueError,
        "loss",
        r"loss='msee' is not a Keras loss name",
        id="loss-misspelt",
    ),
    pytest.param(
        lambda s: mk.check_loss_step(
            mean_squared, s, _model_fn, (loss_batch()[0], np.array(["a", "b"] * 4))
        ),
        TypeError,
        "y",
        r"y holds text such as 'a'.*np\.unique",
        id="string-labels",
    ),
    pytest.param(
        lambda s: mk.check_loss_step(mean_squared, _model_fn, s, loss_batch()),
        TypeError,
        "strategy",
        r"got the function _model_fn: create one with strategy = mk\.make_strategy\(\) and call "
        r"mk\.check_loss_step\(compute_loss, strategy, model_fn, batch\)",
        id="arguments-swapped",
    ),
]


@pytest.mark.wrong_inputs("mk.check_loss_step")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_LOSS_STEPS)
def test_check_loss_step_wrong_inputs(judged, strategy, call, error, argument, match):
    judged(lambda: call(strategy), error, argument, match)
