"""Chapter 8: accumulating with a default-reduction loss, and clipping after the sum.

The chapter's strategy has REPLICAS replicas and K follows REPLICAS (3 on 4, 2 on 2 or 3), so
the answers that hard-code the book's numbers (4 replicas, K = 3, 96 examples) pass at 4
replicas and fail at 2 and 3, with feedback that says a number was hard-coded.
"""

PRED = "model(x, training=True)"
TAPE = "    with tf.GradientTape() as tape:\n"
ADD = (
    "    gradients = tape.gradient(loss, model.trainable_variables)\n"
    "    for accumulator, gradient in zip(accumulators, gradients):\n"
    "        accumulator.assign_add(gradient)\n"
)
HEAD = "def accumulate_default(model, accumulators, x, y):\n" + TAPE
CONTEXT = "    context = tf.distribute.get_replica_context()\n"

WRONG = {
    1: [
        (
            "no division by K",
            HEAD + f"        loss = default_mse(y, {PRED})\n" + ADD,
            "micro-batch's global batch",
        ),
        (
            "divided by the replicas as well",
            HEAD + f"        loss = default_mse(y, {PRED}) / (K * N)\n" + ADD,
            "twice",
        ),
        (
            "assign instead of assign_add",
            HEAD
            + f"        loss = default_mse(y, {PRED}) / K\n"
            + ADD.replace("assign_add", "assign"),
            "assign_add",
        ),
        (
            "divided by the whole step's examples again",
            HEAD + f"        loss = default_mse(y, {PRED}) / (K * MICRO)\n" + ADD,
            "share of the whole step",
        ),
        (
            "a local mean divided by a hard-coded 4 replicas",
            HEAD + f"        loss = tf.reduce_mean(per_example_mse(y, {PRED})) / (K * 4)\n" + ADD,
            "hard-coded 4",
        ),
        (
            "divided by a hard-coded 3 for K",
            HEAD + f"        loss = default_mse(y, {PRED}) / 3\n" + ADD,
            "hard-coded 3",
        ),
        (
            "the book's global batch as a number",
            HEAD + "        per_example = per_example_mse(y, model(x, training=True))\n"
            "        loss = tf.nn.compute_average_loss(per_example, global_batch_size=96)\n" + ADD,
            "hard-coded 96",
        ),
    ],
    2: [
        (
            "clipped on each replica",
            "def clip_after_sum(gradients, clip_norm):\n"
            "    clipped, _ = tf.clip_by_global_norm(gradients, clip_norm)\n"
            "    return clipped",
            "before the sum",
        ),
        (
            "the clipped sum summed again",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
            "    clipped, _ = tf.clip_by_global_norm(total, clip_norm)\n"
            "    return clipped",
            "sums the",
        ),
        (
            "the norm of the MEAN gradient: the bound acts N times too loosely",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    mean = context.all_reduce(tf.distribute.ReduceOp.MEAN, gradients)\n"
            "    clipped, _ = tf.clip_by_global_norm(mean, clip_norm)\n"
            "    return clipped",
            "mean of the",
        ),
        (
            "each weight clipped on its own",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
            "    return [tf.clip_by_norm(g, clip_norm) / N for g in total]",
            "clip_by_global_norm",
        ),
        (
            "the pair returned",
            "def clip_after_sum(gradients, clip_norm):\n"
            "    return tf.clip_by_global_norm(gradients, clip_norm)",
            "keep the first",
        ),
        (
            "the clipped sum divided by a hard-coded 4",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
            "    clipped, _ = tf.clip_by_global_norm(total, clip_norm)\n"
            "    return [g / 4 for g in clipped]",
            "hard-coded 4",
        ),
        (
            "the global norm guessed from the local one",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    norm = tf.linalg.global_norm(gradients) * context.num_replicas_in_sync\n"
            "    return [g * tf.minimum(1.0, clip_norm / norm) for g in gradients]",
            "local norm",
        ),
        (
            "the replicas' norms all-reduced instead of their gradients",
            "def clip_after_sum(gradients, clip_norm):\n"
            + CONTEXT
            + "    norm = context.all_reduce('SUM', tf.linalg.global_norm(gradients))\n"
            "    return [g * tf.minimum(1.0, clip_norm / norm) for g in gradients]",
            "sum of the replicas' local norms",
        ),
    ],
}

RIGHT = {
    1: [
        HEAD + f"        loss = default_mse(y, {PRED}) / K\n" + ADD,
        HEAD
        + f"        loss = default_mse(y, {PRED})\n"
        + "    gradients = tape.gradient(loss, model.trainable_variables)\n"
        "    for accumulator, gradient in zip(accumulators, gradients):\n"
        "        accumulator.assign_add(gradient / K)\n",
        HEAD + "        per_example = per_example_mse(y, model(x, training=True))\n"
        "        replicas = tf.distribute.get_replica_context().num_replicas_in_sync\n"
        "        loss = tf.reduce_sum(per_example) / (K * tf.cast(tf.shape(x)[0] * replicas,"
        " tf.float32))\n" + ADD,
    ],
    2: [
        "def clip_after_sum(gradients, clip_norm):\n"
        + CONTEXT
        + "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
        "    clipped, _ = tf.clip_by_global_norm(total, clip_norm)\n"
        "    return [g / context.num_replicas_in_sync for g in clipped]",
        "def clip_after_sum(gradients, clip_norm):\n"
        + CONTEXT
        + "    norm = tf.linalg.global_norm(context.all_reduce('SUM', gradients))\n"
        "    factor = tf.minimum(1.0, clip_norm / norm)\n"
        "    return [g * factor for g in gradients]",
        "def clip_after_sum(gradients, clip_norm):\n"
        + CONTEXT
        + "    total = context.all_reduce(tf.distribute.ReduceOp.SUM, gradients)\n"
        "    squares = tf.add_n([tf.reduce_sum(tf.square(g)) for g in total])\n"
        "    scale = clip_norm / tf.maximum(tf.sqrt(squares), clip_norm)\n"
        "    return [g * scale for g in gradients]",
    ],
}
