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
    ],
    2: [
        (
            "the Keras 2 advice unchanged",
            "def keras2_fixed(model, x, y):\n    return keras2_advice(model, x, y)",
            "twice",
        ),
        (
            "multiplied by the replicas",
            f"def keras2_fixed(model, x, y):\n    return default_mse(y, {PRED}) * N",
            "local batch",
        ),
        (
            "divided by the global batch as well",
            f"def keras2_fixed(model, x, y):\n    return default_mse(y, {PRED}) / GLOBAL_BATCH",
            "averaged twice",
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
            "by the global batch size",
        ),
        (
            "penalty left out",
            "def regularized_short(model, x, y):\n"
            + GLOBAL_SIZE
            + f"    per_example = per_example_mse(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=global_size)",
            "missing",
        ),
    ],
}

RIGHT = {
    1: [
        f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / GLOBAL_BATCH",
        f"def sum_fixed(model, x, y):\n    return summed_mse(y, {PRED}) / (8 * N)",
    ],
    2: [
        f"def keras2_fixed(model, x, y):\n    return default_mse(y, {PRED})",
        "def keras2_fixed(model, x, y):\n    return keras2_advice(model, x, y) * N",
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
