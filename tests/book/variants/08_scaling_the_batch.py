"""Chapter 8: accumulating with a default-reduction loss, and clipping after the sum."""

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
    ],
}
