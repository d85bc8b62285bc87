"""Chapter 4: fixing losses that scale the gradient wrongly."""

PRED = "model(x, training=True)"
GLOBAL_SIZE = (
    "    context = tf.distribute.get_replica_context()\n"
    "    global_size = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.shape(x)[0])\n"
)

WRONG = {
    1: [
        (
            "kept as it is",
            f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED})",
            "summed",
        ),
        (
            "divided by the replicas",
            f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / N",
            "replicas, not by the global batch",
        ),
        (
            "divided by the replica's own batch",
            "def sum_fixed(model, x, y):\n"
            f"    return summed_mse(y, {PRED}) / tf.cast(tf.shape(x)[0], tf.float32)",
            "local batch",
        ),
        (
            "divided by a literal 32 (the stored GLOBAL_BATCH of four replicas)",
            f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / 32",
            "fixed 32 where the global batch",
        ),
        (
            "divided by 8 examples and a literal 4 replicas",
            f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / 8 / 4",
            "fixed 4 where there are",
        ),
        (
            "the summed loss taken out to NumPy",
            "def sum_fixed(model, x, y):\n"
            f"    return tf.constant(summed_mse(y, {PRED}).numpy() / GLOBAL_BATCH)",
            "numpy",
        ),
    ],
    2: [
        (
            "the default-reduction loss divided by the replicas (the Keras 2 advice)",
            f"def replica_share(model, x, y):\n    return default_mse(y, {PRED}) / N",
            "twice",
        ),
        (
            "the summed loss divided by the replicas only",
            "def replica_share(model, x, y):\n"
            f"    return summed_mse(y, {PRED}) / strategy.num_replicas_in_sync",
            "replicas, not by the global batch",
        ),
        (
            "the local mean divided by a literal 4 replicas",
            "def replica_share(model, x, y):\n"
            f"    local_mean = summed_mse(y, {PRED}) / tf.cast(tf.shape(x)[0], tf.float32)\n"
            "    return local_mean / 4",
            "uneven split",  # at 4 replicas the 4 holds; a short batch shows the local mean
        ),
        (
            "the local mean divided by the replicas: right only when their batches are equal",
            "def replica_share(model, x, y):\n"
            f"    local_mean = tf.reduce_mean(per_example_mse(y, {PRED}))\n"
            "    return local_mean / strategy.num_replicas_in_sync",
            "uneven split",
        ),
        (
            "the local mean not divided at all",
            "def replica_share(model, x, y):\n"
            f"    return tf.reduce_mean(per_example_mse(y, {PRED}))",
            "local batch",
        ),
        (
            "the summed loss divided by the global batch and the replicas again",
            f"def replica_share(model, x, y):\n    return summed_mse(y, {PRED}) / GLOBAL_BATCH / N",
            "twice",
        ),
    ],
    3: [
        (
            "penalty not scaled",
            "def regularized_short(model, x, y):\n"
            + GLOBAL_SIZE
            + f"    per_example = per_example_mse(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_size)\n"
            "    return loss + tf.add_n(model.losses)",
            "scale_regularization_loss",
        ),
        (
            "divided by GLOBAL_BATCH",
            "def regularized_short(model, x, y):\n"
            f"    per_example = per_example_mse(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)\n"
            "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "global batch of 10",
        ),
        (
            "hard-coded to 10 examples",
            "def regularized_short(model, x, y):\n"
            f"    per_example = per_example_mse(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=10)\n"
            "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "fixed 10 where the global batch",
        ),
        (
            "penalty left out",
            "def regularized_short(model, x, y):\n"
            + GLOBAL_SIZE
            + f"    per_example = per_example_mse(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=global_size)",
            "missing",
        ),
        (
            "penalty divided by a literal 4 replicas",
            "def regularized_short(model, x, y):\n"
            + GLOBAL_SIZE
            + f"    per_example = per_example_mse(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_size)\n"
            "    return loss + tf.add_n(model.losses) / 4",
            "penalty by a fixed 4",
        ),
        (
            "divided by a literal 32",
            "def regularized_short(model, x, y):\n"
            f"    loss = tf.reduce_sum(per_example_mse(y, {PRED})) / 32\n"
            "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "fixed 32 where the global batch",
        ),
    ],
}

RIGHT = {
    1: [
        f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / GLOBAL_BATCH",
        f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / (8 * N)",
        "def sum_fixed(model, x, y):  # the global batch counted by an all-reduce\n"
        + GLOBAL_SIZE
        + f"    return summed_mse(y, {PRED}) / tf.cast(global_size, tf.float32)",
    ],
    2: [
        "def replica_share(model, x, y):\n"
        "    share = GLOBAL_BATCH / strategy.num_replicas_in_sync\n"
        f"    total = tf.reduce_sum(per_example_mse(y, {PRED}))\n"
        "    return total / share / strategy.num_replicas_in_sync",
        "def replica_share(model, x, y):  # the replicas read where the loss runs\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    share = GLOBAL_BATCH / context.num_replicas_in_sync\n"
        f"    return tf.reduce_sum(tf.square(y - {PRED})) / share / context.num_replicas_in_sync",
        "def replica_share(model, x, y):\n"
        "    n = strategy.num_replicas_in_sync\n"
        f"    return summed_mse(y, {PRED}) / (GLOBAL_BATCH // n) / n",
    ],
    3: [
        "def regularized_short(model, x, y):\n"
        + GLOBAL_SIZE
        + f"    per_example = per_example_mse(y, {PRED})\n"
        "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=global_size)\n"
        "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
        "def regularized_short(model, x, y):\n"
        + GLOBAL_SIZE
        + "    total = tf.reduce_sum(per_example_mse(y, "
        + PRED
        + "))\n"
        "    penalty = tf.add_n(model.losses) / N\n"
        "    return total / tf.cast(global_size, tf.float32) + penalty",
    ],
}
