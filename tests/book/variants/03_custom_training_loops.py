"""Chapter 3: per-replica losses for a custom training loop."""

PRED = "model(x, training=True)"

WRONG = {
    1: [
        (
            "a plain mean over the replica's own examples",
            f"def mae_loss(model, x, y):\n    return tf.reduce_mean(tf.abs(y - {PRED}))",
            "local batch",
        ),
        (
            "summed, never divided",
            "def mae_loss(model, x, y):\n"
            f"    return keras.losses.MeanAbsoluteError(reduction='sum')(y, {PRED})",
            "summed",
        ),
        (
            "the squared error instead of the absolute error",
            "def mae_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)",
            "'mae'",
        ),
        (
            "the mean divided by the replicas twice",
            "def mae_loss(model, x, y):\n"
            f"    loss = keras.losses.MeanAbsoluteError()(y, {PRED})\n"
            "    return loss / strategy.num_replicas_in_sync",
            "twice",
        ),
        (
            "the summed error divided by a literal 32 (four replicas' global batch)",
            f"def mae_loss(model, x, y):\n    return tf.reduce_sum(tf.abs(y - {PRED})) / 32",
            "fixed 32 where the global batch",
        ),
        (
            "compute_average_loss with global_batch_size=32 written out",
            "def mae_loss(model, x, y):\n"
            f"    per_example = keras.losses.mean_absolute_error(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=32)",
            "fixed 32 where the global batch",
        ),
        (
            "a plain mean divided by a literal 4 replicas",
            f"def mae_loss(model, x, y):\n    return tf.reduce_mean(tf.abs(y - {PRED})) / 4",
            "uneven split",  # at 4 replicas the 4 holds; a short batch shows the local mean
        ),
        (
            "Keras 3's default reduction: right only when the replicas' batches are equal",
            f"def mae_loss(model, x, y):\n    return keras.losses.MeanAbsoluteError()(y, {PRED})",
            "uneven split",
        ),
        (
            "the loss taken out to NumPy",
            "def mae_loss(model, x, y):\n"
            f"    errors = np.abs(y.numpy() - {PRED}.numpy())\n"
            "    return tf.constant(errors.sum() / GLOBAL_BATCH)",
            "numpy",
        ),
    ],
    2: [
        (
            "the penalty added on every replica",
            "def regularized_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)\n"
            "    return loss + tf.add_n(model.losses)",
            "scale_regularization_loss",
        ),
        (
            "the penalty left out",
            "def regularized_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)",
            "missing",
        ),
        (
            "the penalty divided by the global batch",
            "def regularized_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)\n"
            "    return loss + tf.add_n(model.losses) / GLOBAL_BATCH",
            "regularization is counted",
        ),
        (
            "the penalty divided by a literal 4 replicas",
            "def regularized_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)\n"
            "    return loss + tf.add_n(model.losses) / 4",
            "penalty by a fixed 4",
        ),
        (
            "the data loss divided by a literal 32",
            "def regularized_loss(model, x, y):\n"
            f"    loss = tf.reduce_sum(loss_object(y, {PRED})) / 32\n"
            "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
            "fixed 32 where the global batch",
        ),
    ],
    3: [
        (
            "divided by GLOBAL_BATCH, right for full batches only",
            "def any_batch_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)",
            "global batch of 10",
        ),
        (
            "hard-coded to the 10 examples of the short batch",
            "def any_batch_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=10)",
            "fixed 10 where the global batch",
        ),
        (
            "the local batch times the replicas",
            "def any_batch_loss(model, x, y):\n"
            f"    per_example = loss_object(y, {PRED})\n"
            "    local = tf.shape(x)[0] * strategy.num_replicas_in_sync\n"
            "    return tf.nn.compute_average_loss(per_example, global_batch_size=local)",
            "global batch of 10",
        ),
        (
            "a plain mean of the replica's own examples",
            f"def any_batch_loss(model, x, y):\n    return tf.reduce_mean(loss_object(y, {PRED}))",
            "local batch",
        ),
        (
            "divided by a literal 32 (four replicas' global batch)",
            "def any_batch_loss(model, x, y):\n"
            f"    return tf.reduce_sum(loss_object(y, {PRED})) / 32",
            "fixed 32 where the global batch",
        ),
        (
            "the all-reduced count read with .numpy()",
            "def any_batch_loss(model, x, y):\n"
            "    context = tf.distribute.get_replica_context()\n"
            "    count = context.all_reduce('sum', tf.shape(x)[0]).numpy()\n"
            f"    return tf.reduce_sum(loss_object(y, {PRED})) / count",
            "numpy",
        ),
    ],
}

RIGHT = {
    1: [
        "mae = keras.losses.MeanAbsoluteError(reduction='none')\n\n"
        "def mae_loss(model, x, y):\n"
        f"    per_example = mae(y, {PRED})\n"
        "    return tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)",
        f"def mae_loss(model, x, y):\n    return tf.reduce_sum(tf.abs(y - {PRED})) / GLOBAL_BATCH",
        "def mae_loss(model, x, y):\n"
        f"    total = tf.reduce_sum(tf.abs(y - {PRED}))\n"
        "    return total / tf.cast(GLOBAL_BATCH, total.dtype)",
    ],
    2: [
        "def regularized_loss(model, x, y):\n"
        f"    per_example = loss_object(y, {PRED})\n"
        "    loss = tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)\n"
        "    return loss + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
        "def regularized_loss(model, x, y):\n"
        f"    per_example = loss_object(y, {PRED})\n"
        "    loss = tf.reduce_sum(per_example) / GLOBAL_BATCH\n"
        "    return loss + tf.add_n(model.losses) / strategy.num_replicas_in_sync",
        "def regularized_loss(model, x, y):  # both parts scaled by tf.nn helpers, one line\n"
        "    return tf.nn.compute_average_loss(\n"
        f"        loss_object(y, {PRED}), global_batch_size=GLOBAL_BATCH\n"
        "    ) + tf.nn.scale_regularization_loss(tf.add_n(model.losses))",
    ],
    3: [
        "def any_batch_loss(model, x, y):\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    global_size = context.all_reduce(tf.distribute.ReduceOp.SUM, tf.shape(x)[0])\n"
        f"    per_example = loss_object(y, {PRED})\n"
        "    return tf.nn.compute_average_loss(per_example, global_batch_size=global_size)",
        "def any_batch_loss(model, x, y):\n"
        "    context = tf.distribute.get_replica_context()\n"
        "    count = tf.cast(tf.shape(x)[0], tf.float32)\n"
        "    total = context.all_reduce('sum', count)\n"
        f"    return tf.reduce_sum(loss_object(y, {PRED})) / total",
        "def any_batch_loss(model, x, y):  # the count from the per-example losses, float32\n"
        f"    per_example = keras.losses.mean_squared_error(y, {PRED})\n"
        "    count = tf.cast(tf.size(per_example), tf.float32)\n"
        "    count = tf.distribute.get_replica_context().all_reduce(\n"
        "        tf.distribute.ReduceOp.SUM, count)\n"
        "    return tf.reduce_sum(per_example) / count",
    ],
}
