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
            "a list holding the variable",
            "with strategy.scope():\n    counter = [tf.Variable(0.0)]",
            "has type list",
        ),
        ("a plain number", "counter = 0.0", "not a variable"),
        (
            "made under another strategy of four hard-coded devices",
            "other = tf.distribute.MirroredStrategy([f'/cpu:{i}' for i in range(4)])\n"
            "with other.scope():\n    counter = tf.Variable(0.0)",
            "another strategy",
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
            "the table copied from the output, on every replica",
            "squares = strategy.run(lambda: tf.constant([0.0, 1.0, 4.0, 9.0]))",
            "expected shape ()",
        ),
        (
            "the table as a tensor, not per replica",
            "squares = tf.constant([0.0, 1.0, 4.0, 9.0])",
            "not a per-replica value",
        ),
        (
            "the square of replica number + 1",
            f"squares = strategy.run(lambda: tf.square(tf.cast({ID} + 1, tf.float32)))",
            "do not follow the replica number",
        ),
        (
            "values from a function, not squared",
            "squares = strategy.experimental_distribute_values_from_function(\n"
            "    lambda ctx: tf.constant(float(ctx.replica_id_in_sync_group))\n)",
            "do not follow the replica number",
        ),
        (
            "the table [0, 1, 4, 9] picked by replica number (fails at 8 replicas)",
            "table = [0.0, 1.0, 4.0, 9.0]\n"
            f"squares = strategy.run(lambda: tf.constant(table[{ID}]))",
            "indexerror",
        ),
        (
            "the table [0, 1, 4, 9] from distribute_values_from_function, not strategy.run",
            "squares = strategy.experimental_distribute_values_from_function(\n"
            "    lambda ctx: [0.0, 1.0, 4.0, 9.0][ctx.replica_id_in_sync_group]\n)",
            "not the result of strategy.run",
        ),
        (
            "the table [0, 1, 4, 9] read modulo 4",
            "table = [0.0, 1.0, 4.0, 9.0]\n"
            "squares = strategy.experimental_distribute_values_from_function(\n"
            "    lambda ctx: tf.constant(table[ctx.replica_id_in_sync_group % 4])\n)",
            "do not follow the replica number",
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
            "an all-reduce of ones, then N(N + 1) / 2",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    n = context.all_reduce('sum', tf.constant(1.0))\n"
            "    return n * (n + 1) / 2",
            "all-reduce of a constant",
        ),
        (
            "an int32 all-reduce of ones, then N(N + 1) / 2",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    n = context.all_reduce(tf.distribute.ReduceOp.SUM, 1)\n"
            "    return tf.cast(n * (n + 1) // 2, tf.float32)",
            "after the all-reduce",
        ),
        (
            "a hard-coded 10",
            "def total_of_ids_plus_one():\n    return tf.constant(10.0)",
            "no all-reduce produced it",
        ),
        (
            "an all-reduce of the hard-coded 10 / 4",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    return context.all_reduce('sum', tf.constant(10.0 / 4))",
            "all-reduce of a constant",
        ),
        (
            "MEAN times a hard-coded 4",
            "def total_of_ids_plus_one():\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    mine = tf.cast(context.replica_id_in_sync_group + 1, tf.float32)\n"
            "    return context.all_reduce('mean', mine) * 4",
            "expected",
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
        "squares = strategy.experimental_distribute_values_from_function(\n"
        "    lambda ctx: tf.constant(float(ctx.replica_id_in_sync_group ** 2))\n)",
        f"squares = tf.function(lambda: strategy.run(lambda: tf.cast({ID} ** 2, tf.float32)))()",
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
        "def total_of_ids_plus_one():\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    total = context.all_reduce('sum', context.replica_id_in_sync_group + 1)\n"
        "    return tf.cast(total, tf.float32)  # an int32 all-reduce: TensorFlow adds with AddN",
        "def total_of_ids_plus_one():\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    n = context.num_replicas_in_sync\n"
        "    mine = tf.one_hot(context.replica_id_in_sync_group, n)\n"
        "    everyone = context.all_reduce(tf.distribute.ReduceOp.SUM, mine)\n"
        "    return tf.reduce_sum(everyone * tf.range(1.0, n + 1.0))",
    ],
}
