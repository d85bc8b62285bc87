"""Chapter 2: datasets for experimental_distribute_dataset and from a function."""

DATA = (
    "options = tf.data.Options()\n"
    "options.experimental_distribute.auto_shard_policy = "
    "tf.data.experimental.AutoShardPolicy.{}\n"
)

WRONG = {
    1: [
        (
            "batched by the per-replica size",
            "train = examples.take(50).batch(8, drop_remainder=True)",
            "expected 8",
        ),
        (
            "a partial last batch",
            "train = examples.take(50).batch(8 * strategy.num_replicas_in_sync)",
            "partial",
        ),
        (
            "all the examples, which happen to divide evenly, without drop_remainder",
            "train = examples.batch(8 * strategy.num_replicas_in_sync)",
            "drop_remainder=true",
        ),
        ("not batched", "train = examples.take(50)", "batch"),
    ],
    2: [
        (
            "not sharded: every pipeline reads everything",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    return examples.batch(per_replica, drop_remainder=True)",
            "shard",
        ),
        (
            "a fixed per-replica batch instead of the context's",
            "def make_train(context):\n"
            "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(GLOBAL_BATCH // strategy.num_replicas_in_sync, "
            "drop_remainder=True)",
            "get_per_replica_batch_size",
        ),
        (
            "no drop_remainder (the examples happen to divide evenly)",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(per_replica)",
            "drop_remainder=true",
        ),
        (
            "batched by the global batch",
            "def make_train(context):\n"
            "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(GLOBAL_BATCH, drop_remainder=True)",
            "get_per_replica_batch_size",
        ),
    ],
    3: [
        (
            "does not repeat",
            DATA.format("DATA") + "stream = examples.batch(GLOBAL_BATCH).with_options(options)",
            "repeat",
        ),
        (
            "options made but never applied",
            DATA.format("DATA") + "stream = examples.repeat().batch(GLOBAL_BATCH)",
            "auto-shard policy is auto",
        ),
        (
            "the FILE policy",
            DATA.format("FILE")
            + "stream = examples.repeat().batch(GLOBAL_BATCH).with_options(options)",
            "expected data",
        ),
        (
            "batched by one replica's share",
            DATA.format("DATA")
            + "stream = examples.repeat().batch(GLOBAL_BATCH // strategy.num_replicas_in_sync)"
            ".with_options(options)",
            "global batch",
        ),
    ],
}

RIGHT = {
    1: [
        "train = examples.take(50).batch(8 * strategy.num_replicas_in_sync, drop_remainder=True)",
        "per_replica = 8\n"
        "train = (\n"
        "    examples.take(50)\n"
        "    .shuffle(50, seed=SEED)\n"
        "    .batch(per_replica * strategy.num_replicas_in_sync, drop_remainder=True)\n"
        "    .prefetch(tf.data.AUTOTUNE)\n"
        ")",
    ],
    2: [
        "def make_train(context):\n"
        "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
        "    return sharded.batch(per_replica, drop_remainder=True)",
        "def make_train(context):\n"
        "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    batches = examples.batch(per_replica, drop_remainder=True)\n"
        "    mine = batches.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
        "    return mine.prefetch(2)",
    ],
    3: [
        DATA.format("DATA")
        + "stream = examples.repeat().batch(GLOBAL_BATCH).with_options(options)",
        DATA.format("DATA") + "stream = examples.with_options(options).repeat()\n"
        "stream = stream.batch(GLOBAL_BATCH, drop_remainder=True)",
    ],
}
