import keras
import numpy as np
import pytest
import tensorflow as tf

import mirrorkit as mk
from tests.conftest import REPLICAS

AutoShardPolicy = tf.data.experimental.AutoShardPolicy


def ids(n, batch, **kwargs):
    """n examples whose elements are their own ids, batched by ``batch``."""
    return tf.data.Dataset.range(n).batch(batch, **kwargs)


def with_policy(dataset, policy):
    options = tf.data.Options()
    options.experimental_distribute.auto_shard_policy = policy
    return dataset.with_options(options)


def sizes(preview, step):
    return [b.size for b in preview.batches if b.step == step]


def test_even_batches_each_replica_gets_its_slice_in_order(strategy):
    preview = mk.preview_input(strategy, ids(4 * REPLICAS * 3, 4 * REPLICAS), steps=2)
    assert preview.method == "experimental_distribute_dataset"
    assert (preview.num_replicas, preview.global_batch, preview.per_replica_batch) == (
        REPLICAS,
        4 * REPLICAS,
        4,
    )
    assert preview.divisible and preview.ok and preview.warnings == ()
    assert preview.total_steps == 3
    # Steps 0 and 1, then the last step (2) read to the end of the dataset.
    assert sorted(preview.ids_by_step()) == [0, 1, 2]
    step0 = preview.ids_by_step()[0]
    assert step0 == [tuple(range(4 * r, 4 * r + 4)) for r in range(REPLICAS)]
    assert [b.device for b in preview.batches[:REPLICAS]] == [f"CPU:{r}" for r in range(REPLICAS)]
    assert {b.status for b in preview.batches} == {"full"}
    assert {b.shapes for b in preview.batches} == {((4,),)}
    text = str(preview)
    assert f"global batch {4 * REPLICAS} over {REPLICAS} replicas = 4 per replica" in text
    assert "WARNING" not in text
    assert "<table " in preview._repr_html_()


def test_every_example_arrives_exactly_once(strategy):
    preview = mk.preview_input(strategy, ids(40, 8), steps=5)
    seen = [i for b in preview.batches for i in b.ids]
    assert sorted(seen) == list(range(40))


def test_non_divisible_global_batch_is_split_unevenly_and_warned(strategy):
    global_batch = 2 * REPLICAS + 2  # 10 with four replicas
    preview = mk.preview_input(strategy, ids(2 * global_batch, global_batch))
    assert preview.divisible is False
    # TF 2.21 with the default AUTO policy: pieces of ceil(10 / 4) = 3, the rest last.
    assert sizes(preview, 0) == [3, 3, 3, 1]
    assert [b.status for b in preview.batches[:REPLICAS]] == ["full"] * 3 + ["partial"]
    assert len(preview.warnings) == 1
    warning = preview.warnings[0]
    assert f"global batch of {global_batch} examples does not divide by {REPLICAS}" in warning
    assert "(3, 3, 3, 1)" in warning and f"e.g. {3 * REPLICAS}" in warning
    assert "does NOT divide evenly" in str(preview)


def test_non_divisible_global_batch_can_leave_a_replica_empty(strategy):
    preview = mk.preview_input(strategy, ids(REPLICAS + 1, REPLICAS + 1), steps=1)
    assert sizes(preview, 0) == [2, 2, 1, 0]
    assert [b.replica for b in preview.empty] == [3]
    assert any("EMPTY per-replica batches at step 0 (replica 3)" in w for w in preview.warnings)


def test_partial_last_batch_and_empty_replicas(strategy):
    preview = mk.preview_input(strategy, ids(18, 8), steps=1)
    assert preview.total_steps == 3
    assert sorted(preview.ids_by_step()) == [0, 2]  # step 1 is skipped, the last is shown
    assert preview.ids_by_step()[2] == [(16,), (17,), (), ()]
    assert [b.status for b in preview.batches if b.step == 2] == [
        "partial",
        "partial",
        "EMPTY",
        "EMPTY",
    ]
    assert [b.shapes for b in preview.empty] == [((0,),), ((0,),)]
    partial, empty = preview.warnings
    assert "partial global batch at step 2: 2 of 8 examples" in partial
    assert "drop_remainder=True" in partial and "steps_per_epoch" in partial
    assert "EMPTY per-replica batches at step 2 (replicas 2, 3)" in empty
    assert "NaN" in empty
    assert "\n...\n" in str(preview)
    assert "color:#cf222e" in preview._repr_html_()


def test_empty_replica_batch_really_gives_nan_mean_and_zero_gradients(strategy):
    # The claims in the warning: a plain mean over a replica's empty batch is NaN, and what
    # goes wrong is the weight of the examples, not the gradients of the empty replicas.
    assert tf.math.is_nan(tf.reduce_mean(tf.zeros([0])))
    x = tf.zeros([0, 3])
    with strategy.scope():
        dense = keras.layers.Dense(1)
        dense.build((None, 3))
    with tf.GradientTape() as tape:
        loss = tf.reduce_mean(tf.square(dense(x)))
    gradient = tape.gradient(loss, dense.kernel)
    assert tf.math.is_nan(loss) and not np.any(np.isnan(gradient)) and not np.any(gradient)
    assert float(tf.nn.compute_average_loss(tf.zeros([0]), global_batch_size=8)) == 0.0


def test_drop_remainder_and_repeat_fix_the_last_batch(strategy):
    dropped = mk.preview_input(strategy, ids(18, 8, drop_remainder=True))
    assert dropped.ok and dropped.total_steps == 2
    repeated = mk.preview_input(strategy, tf.data.Dataset.range(18).repeat().batch(8), steps=4)
    assert repeated.ok and repeated.total_steps is None
    assert len(repeated.ids_by_step()) == 4
    assert "repeats forever" in str(repeated)


def test_dict_elements_with_id_key_and_features(strategy):
    dataset = (
        tf.data.Dataset.range(8)
        .map(lambda i: {"id": i * 10, "x": tf.fill([3], tf.cast(i, tf.float32))})
        .batch(8)
    )
    preview = mk.preview_input(strategy, dataset, steps=1)
    assert preview.batches[1].ids == (20, 30)
    assert preview.batches[1].shapes == ((2,), (2, 3))  # tf.nest order: "id", then "x"


def test_enumerate_adds_ids_as_first_component(strategy):
    dataset = tf.data.Dataset.from_tensor_slices(tf.zeros((8, 5))).enumerate().batch(8)
    preview = mk.preview_input(strategy, dataset, steps=1)
    assert preview.ids_by_step()[0] == [(0, 1), (2, 3), (4, 5), (6, 7)]
    assert preview.batches[0].shapes == ((2,), (2, 5))


def test_dataset_function_with_input_context(strategy):
    contexts = []

    def make(context):
        contexts.append(context)
        per_replica = context.get_per_replica_batch_size(4 * REPLICAS)
        return tf.data.Dataset.range(18).batch(per_replica)

    preview = mk.preview_input(strategy, make, steps=2)
    (context,) = contexts
    assert (context.num_input_pipelines, context.input_pipeline_id) == (1, 0)
    assert context.num_replicas_in_sync == REPLICAS
    assert preview.method == "distribute_datasets_from_function"
    assert (preview.per_replica_batch, preview.global_batch) == (4, 4 * REPLICAS)
    # Whole batches of the function's dataset go to the replicas in turn.
    assert preview.ids_by_step()[0] == [tuple(range(4 * r, 4 * r + 4)) for r in range(4)]
    assert preview.total_steps == 2
    assert preview.ids_by_step()[1] == [(16, 17), (), (), ()]
    assert "not applied to a dataset function" in str(preview)
    assert len(preview.warnings) == 2 and "drop_remainder=True" in preview.warnings[0]


def test_input_options_fetch_to_device(strategy):
    options = tf.distribute.InputOptions(experimental_fetch_to_device=False)
    preview = mk.preview_input(strategy, ids(8, 8), steps=1, input_options=options)
    assert preview.fetch_to_device is False
    assert {b.device for b in preview.batches} == {"CPU:0"}  # left on the host
    on_device = mk.preview_input(strategy, ids(8, 8), steps=1)
    assert on_device.fetch_to_device is True
    assert len({b.device for b in on_device.batches}) == REPLICAS


@pytest.mark.parametrize(
    ("policy", "split"),
    [
        (AutoShardPolicy.AUTO, [3, 3, 3, 1]),
        (AutoShardPolicy.DATA, [3, 3, 3, 1]),
        (AutoShardPolicy.OFF, [3, 3, 2, 2]),
        (AutoShardPolicy.FILE, [3, 3, 2, 2]),
    ],
)
def test_auto_shard_policy_is_reported_and_shards_nothing_on_one_worker(strategy, policy, split):
    if REPLICAS != 4:
        pytest.skip("the splits below are TF 2.21's for four replicas")
    preview = mk.preview_input(strategy, with_policy(ids(20, 10), policy))
    assert preview.auto_shard_policy == policy.name
    assert f"auto-shard policy: {policy.name}" in str(preview)
    assert policy.name in mk.AUTO_SHARD_POLICIES
    assert sorted(i for b in preview.batches for i in b.ids) == list(range(20))
    # What TF 2.21 really does on one worker: the policy changes how a global batch is
    # split among the replicas (AUTO and DATA take TF's legacy rebatch), not which
    # examples arrive.
    assert sizes(preview, 0) == split


def test_default_policy_is_auto(strategy):
    preview = mk.preview_input(strategy, ids(8, 8), steps=1)
    assert preview.auto_shard_policy == "AUTO"
    assert "on one worker, as here, every example still reaches exactly one replica" in str(preview)


def preview(source, **kwargs):
    """preview_input of ``source`` (or of a good dataset) with the session's strategy."""
    return lambda s: mk.preview_input(s, ids(8, 4) if source is None else source, **kwargs)


WRONG_PREVIEWS = [
    pytest.param(
        preview(tf.data.Dataset.range(8)),
        ValueError,
        "dataset",
        r"the dataset is not batched.*dataset\.batch\(global_batch\)",
        id="unbatched",
    ),
    pytest.param(
        preview(tf.data.Dataset.range(8).enumerate()),
        ValueError,
        "dataset",
        "first component of each element",
        id="unbatched-tuple",
    ),
    pytest.param(
        preview(tf.data.Dataset.from_tensor_slices(["a", "b"]).batch(2)),
        TypeError,
        "dataset",
        r"has no integer ids.*dtype=tf\.string.*dataset\.enumerate\(\) before \.batch",
        id="strings",
    ),
    pytest.param(
        preview(tf.data.Dataset.from_tensor_slices(tf.zeros((4, 3))).batch(2)),
        TypeError,
        "dataset",
        r"dataset\.enumerate\(\) before \.batch",
        id="float-features",
    ),
    pytest.param(
        preview(tf.data.Dataset.from_tensor_slices({"x": tf.zeros(4)}).batch(2)),
        TypeError,
        "dataset",
        "has no ids.*'id'",
        id="dict-without-id",
    ),
    pytest.param(
        preview(tf.data.Dataset.from_tensor_slices(tf.zeros((4, 3), tf.int64)).batch(2)),
        TypeError,
        "dataset",
        r"ids of shape \(None, 3\)",
        id="2d-ids",
    ),
    pytest.param(
        preview([0, 1, 2]),
        TypeError,
        "dataset_or_fn",
        r"got list: make a dataset of it first",
        id="a-list",
    ),
    pytest.param(
        lambda s: mk.preview_input(s, s.experimental_distribute_dataset(ids(8, 4))),
        TypeError,
        "dataset_or_fn",
        r"already distributed: pass the dataset itself",
        id="already-distributed",
    ),
    pytest.param(
        preview(lambda context: [0, 1]),
        TypeError,
        "dataset",
        "returned list, not a tf.data.Dataset",
        id="fn-returns-list",
    ),
    pytest.param(
        preview(lambda: tf.data.Dataset.range(4).batch(1)),
        TypeError,
        "InputContext",
        "exactly one argument",
        id="fn-without-argument",
    ),
    pytest.param(
        preview(lambda context: tf.data.Dataset.range(4)),
        ValueError,
        "batch",
        "get_per_replica_batch_size",
        id="fn-unbatched",
    ),
    pytest.param(
        preview(None, steps=0), ValueError, "steps", "steps must be at least 1, got 0", id="steps-0"
    ),
    pytest.param(
        preview(None, steps=2.0), TypeError, "steps", "steps must be an int", id="steps-a-float"
    ),
    pytest.param(
        preview(None, input_options={"fetch": False}),
        TypeError,
        "input_options",
        "input_options must be a tf.distribute.InputOptions",
        id="input_options-a-dict",
    ),
    pytest.param(
        lambda s: mk.preview_input("mirrored", ids(8, 4)),
        TypeError,
        "strategy",
        r"got the text 'mirrored': create one with strategy = mk\.make_strategy\(\) and call "
        r"mk\.preview_input\(strategy, dataset\)",
        id="strategy-a-string",
    ),
    pytest.param(
        lambda s: mk.preview_input(ids(8, 4), s),
        TypeError,
        "strategy",
        r"got _BatchDataset",
        id="arguments-swapped",
    ),
]


@pytest.mark.wrong_inputs("mk.preview_input")
@pytest.mark.parametrize(("call", "error", "argument", "match"), WRONG_PREVIEWS)
def test_wrong_inputs_give_clear_errors(refuses, strategy, call, error, argument, match):
    refuses(lambda: call(strategy), error, argument, match)


def test_check_input_pipeline(strategy):
    assert repr(mk.check_input_pipeline(..., strategy)).startswith("NOT YET: not attempted")
    full = {"drop_remainder": True}
    good = mk.check_input_pipeline(ids(64, 8 * REPLICAS, **full), strategy, per_replica_batch=8)
    assert repr(good) == (
        f"PASS: every replica gets 8 examples at every step (global batch {8 * REPLICAS})."
    )
    wrong_size = mk.check_input_pipeline(
        ids(64, 4 * REPLICAS, **full), strategy, per_replica_batch=8
    )
    assert not wrong_size and "each replica gets 4 examples per step, expected 8" in repr(
        wrong_size
    )
    partial = mk.check_input_pipeline(ids(18, 8), strategy)
    assert not partial and "partial global batch" in partial.message
    unbatched = mk.check_input_pipeline(tf.data.Dataset.range(8), strategy)
    assert not unbatched and "not batched" in unbatched.message
    policy = mk.check_input_pipeline(ids(16, 8, **full), strategy, auto_shard="DATA")
    assert not policy and "auto-shard policy is AUTO, expected DATA" in policy.message
    data = with_policy(ids(16, 8, **full), AutoShardPolicy.DATA)
    assert mk.check_input_pipeline(data, strategy, auto_shard="DATA")

    def per_replica(context):
        size = context.get_per_replica_batch_size(8 * REPLICAS)
        mine = tf.data.Dataset.range(1000).shard(
            context.num_input_pipelines, context.input_pipeline_id
        )
        return mine.repeat().batch(size, drop_remainder=True)

    assert mk.check_input_pipeline(per_replica, strategy, global_batch=8 * REPLICAS)


def test_check_input_pipeline_refuses_what_only_works_for_this_data(strategy):
    # 64 examples divide by the global batch: no partial batch here, but nothing prevents one.
    lucky = mk.check_input_pipeline(ids(64, 8 * REPLICAS), strategy)
    assert not lucky and "drop_remainder=True" in lucky.message
    # A filter that keeps only full batches does what drop_remainder does; one that keeps
    # any non-empty batch does not.
    size = 8 * REPLICAS
    full_only = ids(50, size).filter(lambda batch: tf.shape(batch)[0] == size)
    assert mk.check_input_pipeline(full_only, strategy, per_replica_batch=8)
    empty = mk.check_input_pipeline(ids(8, size, drop_remainder=True), strategy)
    assert not empty and "brings no step at all" in empty.message
    any_size = ids(64, size).filter(lambda batch: tf.shape(batch)[0] > 0)
    assert (
        "nothing keeps the last batch full" in mk.check_input_pipeline(any_size, strategy).message
    )
    # Repeated before batching, every batch is full without drop_remainder.
    assert mk.check_input_pipeline(tf.data.Dataset.range(10).repeat().batch(8), strategy)
    ends = mk.check_input_pipeline(ids(64, 8, **{"drop_remainder": True}), strategy, repeats=True)
    assert not ends and "ends after 8 steps" in ends.message
    small = mk.check_input_pipeline(
        tf.data.Dataset.range(8).repeat().batch(REPLICAS), strategy, global_batch=8 * REPLICAS
    )
    assert not small and f"each step brings {REPLICAS} examples, expected a global" in small.message


def test_check_input_pipeline_calls_a_dataset_function_as_other_machines_would(strategy):
    examples = tf.data.Dataset.range(64)

    def right(context):
        size = context.get_per_replica_batch_size(16)
        mine = examples.shard(context.num_input_pipelines, context.input_pipeline_id)
        return mine.batch(size, drop_remainder=True)

    def fixed(context):
        mine = examples.shard(context.num_input_pipelines, context.input_pipeline_id)
        return mine.batch(16 // REPLICAS, drop_remainder=True)

    def unsharded(context):
        return examples.batch(context.get_per_replica_batch_size(16), drop_remainder=True)

    def partial(context):
        mine = examples.shard(context.num_input_pipelines, context.input_pipeline_id)
        return mine.batch(context.get_per_replica_batch_size(16))

    def by_replicas(context):  # one worker reads 1 / REPLICAS of the data
        mine = examples.shard(context.num_replicas_in_sync, context.input_pipeline_id)
        return mine.batch(context.get_per_replica_batch_size(16), drop_remainder=True)

    def filtered(context):
        size = context.get_per_replica_batch_size(16)
        mine = examples.shard(context.num_input_pipelines, context.input_pipeline_id)
        return mine.batch(size).filter(lambda batch: tf.shape(batch)[0] == size)

    # Full batches, but of no fixed size: the distributed dataset cannot drop a short last step.
    unfixed = mk.check_input_pipeline(filtered, strategy, global_batch=16)
    assert not unfixed and "cannot drop a short last step" in unfixed.message
    missing = mk.check_input_pipeline(by_replicas, strategy, global_batch=16)
    assert not missing and "examples missing across input pipelines" in missing.message

    def breaks(context):
        if context.num_replicas_in_sync != REPLICAS:
            raise RuntimeError("only for this machine")
        return right(context)

    assert mk.check_input_pipeline(right, strategy, global_batch=16)
    verdicts = {
        f.__name__: mk.check_input_pipeline(f, strategy, global_batch=16)
        for f in (fixed, unsharded, partial, breaks)
    }
    assert "with 1 replica in sync the function batches 4" in verdicts["fixed"].message
    assert "both read the same examples" in verdicts["unsharded"].message
    assert "drop_remainder=True" in verdicts["partial"].message
    assert (
        "failed when called with another InputContext: RuntimeError" in verdicts["breaks"].message
    )
    assert not any(verdicts.values())

    def one_pipeline(context):  # breaks only where the check looks beyond the first examples
        if context.num_input_pipelines != 1:
            raise RuntimeError("one machine only")
        return right(context)

    only_one = mk.check_input_pipeline(one_pipeline, strategy, global_batch=16, first_examples=64)
    assert not only_one and "another InputContext: RuntimeError: one machine" in only_one.message
    with pytest.raises(ValueError, match="needs global_batch=..."):
        mk.check_input_pipeline(right, strategy)
    with pytest.raises(TypeError, match="repeats must be True or False"):
        mk.check_input_pipeline(right, strategy, global_batch=16, repeats="yes")


@pytest.mark.parametrize(
    ("examples", "global_batch", "steps"),
    [
        (50, 4 * REPLICAS, 1),
        (64, 4 * REPLICAS, 3),
        (10, 4, 2),
        (7, 10, 3),
        (5, 2 * REPLICAS - 1, 1),
    ],
)
def test_the_worked_out_preview_is_what_the_strategy_delivers(
    strategy, devices, examples, global_batch, steps
):
    from mirrorkit.checks.input_preview import preview_split
    from mirrorkit.report.values import short_device

    real = mk.preview_input(strategy, ids(examples, global_batch), steps=steps)
    worked_out = preview_split(
        examples, global_batch, REPLICAS, steps=steps, devices=[short_device(d) for d in devices]
    )
    assert worked_out == real


def test_a_dataset_function_that_batches_twice_shows_each_replica_s_batch(strategy):
    def batches_twice(context):  # a batch of 2 batches of 32: 64 examples for one replica
        return tf.data.Dataset.range(64).batch(32).batch(2)

    preview = mk.preview_input(strategy, batches_twice)
    first = [b for b in preview.batches if b.step == 0]
    assert [b.size for b in first] == [64] + [0] * (REPLICAS - 1)
    assert first[0].shapes == ((2, 32),) and first[1].status == "EMPTY"
    assert preview.warnings[0].startswith(
        "the dataset is batched twice: each element holds batches of batches"
    )
    assert (
        "At step 0: replica 0: 64 examples (2, 32), replica 1: 0 examples" in (preview.warnings[0])
    )
    assert preview.warnings[0].endswith(
        "Call .batch() once, with context.get_per_replica_batch_size(global_batch) in the "
        "dataset function."
    )
