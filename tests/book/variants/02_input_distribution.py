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
        (
            "a literal global batch of 32 (8 on each of four replicas)",
            "train = examples.take(50).batch(32, drop_remainder=True)",
            "examples",
        ),
        (
            "a filter that keeps any non-empty batch",
            "train = examples.take(50).batch(8 * strategy.num_replicas_in_sync)"
            ".filter(lambda ids, xy: tf.size(ids) > 0)",
            "partial",
        ),
        (
            "an empty dataset, which has no partial batch",
            "train = examples.take(0).batch(8 * strategy.num_replicas_in_sync, "
            "drop_remainder=True)",
            "no step",
        ),
        (
            "all 64 examples in a hard-coded 2 batches of 32",
            "train = examples.batch(32)",
            "drop_remainder=true",
        ),
        (
            "take(50) after batching: 50 batches, so every example",
            "train = examples.batch(8 * strategy.num_replicas_in_sync, drop_remainder=True)"
            ".take(50)",
            "only the first 50 examples",
        ),
    ],
    2: [
        (
            "not sharded: every pipeline reads everything",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    return examples.take(48).batch(per_replica, drop_remainder=True)",
            "shard",
        ),
        (
            "a fixed per-replica batch instead of the context's",
            "def make_train(context):\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(GLOBAL_BATCH // strategy.num_replicas_in_sync, "
            "drop_remainder=True)",
            "get_per_replica_batch_size",
        ),
        (
            "no drop_remainder (the examples happen to divide evenly)",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(per_replica)",
            "drop_remainder=true",
        ),
        (
            "sharded by the replica count: three quarters of the data never read",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    sharded = examples.take(48).shard(context.num_replicas_in_sync, "
            "context.input_pipeline_id)\n"
            "    return sharded.batch(per_replica, drop_remainder=True)",
            "shard by context.num_input_pipelines",
        ),
        (
            "sharded into a hard-coded 4",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    sharded = examples.take(48).shard(4, context.input_pipeline_id)\n"
            "    return sharded.batch(per_replica, drop_remainder=True)",
            "shard by context.num_input_pipelines",
        ),
        (
            "a literal per-replica batch of 4",
            "def make_train(context):\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(4, drop_remainder=True)",
            "get_per_replica_batch_size",
        ),
        (
            "every example twice",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.repeat(2).batch(per_replica, drop_remainder=True)",
            "more than once",
        ),
        (
            "full batches kept by a filter: the batch size is not fixed",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    batches = sharded.batch(per_replica)\n"
            "    return batches.filter(lambda ids, xy: tf.shape(ids)[0] == per_replica)",
            "drop_remainder=true",
        ),
        (
            "the chapter's make_dataset with drop_remainder=True: all 64 examples",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.batch(per_replica, drop_remainder=True)",
            "only the first 48 examples",
        ),
        (
            "take(48) after shard: 48 of each shard, so a worker reads held-out examples",
            "def make_train(context):\n"
            "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
            "    sharded = examples.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
            "    return sharded.take(48).batch(per_replica, drop_remainder=True)",
            "input pipeline 0 of 2",
        ),
        (
            "batched by the global batch",
            "def make_train(context):\n"
            "    kept = examples.take(48)\n"
            "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
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
        (
            "a literal global batch of 16",
            DATA.format("DATA") + "stream = examples.repeat().batch(16).with_options(options)",
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
        "size = 8 * strategy.num_replicas_in_sync\n"
        "train = examples.take(50).batch(size).filter(lambda ids, xy: tf.shape(ids)[0] == size)",
    ],
    2: [
        "def make_train(context):\n"
        "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    kept = examples.take(48)\n"
        "    sharded = kept.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
        "    return sharded.batch(per_replica, drop_remainder=True)",
        "def make_train(context):\n"
        "    per_replica = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    batches = examples.take(48).batch(per_replica, drop_remainder=True)\n"
        "    mine = batches.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
        "    return mine.prefetch(2)",
        "def make_train(context):\n"
        "    train_ids = examples.filter(lambda i, xy: i < 48)\n"
        "    mine = train_ids.shard(context.num_input_pipelines, context.input_pipeline_id)\n"
        "    size = context.get_per_replica_batch_size(GLOBAL_BATCH)\n"
        "    return mine.shuffle(64, seed=SEED).batch(size, drop_remainder=True)",
    ],
    3: [
        DATA.format("DATA")
        + "stream = examples.repeat().batch(GLOBAL_BATCH).with_options(options)",
        DATA.format("DATA") + "stream = examples.with_options(options).repeat()\n"
        "stream = stream.batch(GLOBAL_BATCH, drop_remainder=True)",
        "policy = tf.data.experimental.AutoShardPolicy.DATA\n"
        "options = tf.data.Options()\n"
        "options.experimental_distribute.auto_shard_policy = policy\n"
        "stream = examples.repeat().batch(4 * strategy.num_replicas_in_sync)"
        ".with_options(options)",
    ],
}
