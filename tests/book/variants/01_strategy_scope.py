"""Chapter 1: variables, strategy.run and the all-reduce."""

ID = "tf.distribute.get_replica_context().replica_id_in_sync_group"

WRONG = {
    1: [
        ("made outside the scope", "counter = tf.Variable(0.0)", "strategy.scope()"),
        (
            "an int32 variable (0, not 0.0)",
            "with strategy.scope():\n    counter = tf.Variable(0)",
            "dtype is int32",
        ),
        (
            "the wrong initial value",
            "with strategy.scope():\n    counter = tf.Variable(1.0)",
            "expected 0",
        ),
        (
            "a constant, not a variable",
            "with strategy.scope():\n    counter = tf.constant(0.0)",
            "not a variable",
        ),
        (
            "a sync-on-read variable",
            "with strategy.scope():\n    counter = tf.Variable(0.0, "
            "synchronization=tf.VariableSynchronization.ON_READ, "
            "aggregation=tf.VariableAggregation.SUM)",
            "synconreadvariable",
        ),
    ],
    2: [
        (
            "the replica number, not squared",
            f"squares = strategy.run(lambda: tf.cast({ID}, tf.float32))",
            "replica 2 holds 2",
        ),
        (
            "integers, not float32",
            f"squares = strategy.run(lambda: {ID} * {ID})",
            "dtype is int32",
        ),
        (
            "the local results, not the PerReplica",
            f"squares = strategy.experimental_local_results(\n"
            f"    strategy.run(lambda: tf.cast({ID} ** 2, tf.float32))\n)",
            "experimental_local_results",
        ),
        (
            "a Python list computed without strategy.run",
            "squares = [float(i * i) for i in range(strategy.num_replicas_in_sync)]",
            "has type list",
        ),
        (
            "reduced to one value",
            f"squares = strategy.reduce(\n    'SUM', strategy.run(lambda: tf.cast({ID} ** 2, "
            "tf.float32)), axis=None\n)",
            "not a per-replica value",
        ),
    ],
    3: [
        (
            "no all-reduce: each replica keeps its own number",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    return tf.cast(context.replica_id_in_sync_group + 1, tf.float32)",
            "replica 0 holds 1,",
        ),
        (
            "the right number, computed without an all-reduce",
            "def total_of_ids_plus_one():\n"
            "    n = tf.distribute.get_replica_context().num_replicas_in_sync\n"
            "    return tf.constant(n * (n + 1) / 2, tf.float32)",
            "no all-reduce produced it",
        ),
        (
            "MEAN instead of SUM",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)\n"
            "    return context.all_reduce('mean', mine)",
            "mean",
        ),
        (
            "the result of strategy.run, not the function",
            "def _total():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)\n"
            "    return context.all_reduce('sum', mine)\n\n"
            "total_of_ids_plus_one = strategy.run(_total)",
            "not a function",
        ),
        (
            "an all-reduce whose result is not returned",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    context.all_reduce('sum', tf.cast(context.replica_id_in_sync_group + 1, "
            "tf.float32))\n"
            "    n = context.num_replicas_in_sync\n"
            "    return tf.constant(n * (n + 1) / 2, tf.float32)",
            "no all-reduce produced it",
        ),
    ],
}

RIGHT = {
    1: [
        "with strategy.scope():\n    counter = tf.Variable(0.0)",
        "with strategy.scope():\n    counter = tf.Variable(0, dtype=tf.float32, name='counter')",
        "with strategy.scope():\n    counter = tf.Variable(tf.zeros([]))",
    ],
    2: [
        "def square_of_id():\n"
        f"    replica_id = {ID}\n"
        "    return tf.cast(replica_id * replica_id, tf.float32)\n\n"
        "squares = strategy.run(square_of_id)",
        f"squares = strategy.run(lambda: tf.square(tf.cast({ID}, tf.float32)))",
    ],
    3: [
        "def total_of_ids_plus_one():\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)\n"
        "    return context.all_reduce(tf.distribute.ReduceOp.SUM, mine)",
        "def total_of_ids_plus_one():\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    ids = tf.cast(context.replica_id_in_sync_group, tf.float32)\n"
        "    return context.all_reduce('sum', ids) + tf.cast(context.num_replicas_in_sync, "
        "tf.float32)",
    ],
}
