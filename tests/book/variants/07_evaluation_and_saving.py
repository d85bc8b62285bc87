"""Chapter 7: an evaluation loop right for any number of examples; restoring on one device."""

REPLICA_SUMS = (
    "        def on_replica(x_batch, y_batch):\n"
    "            predicted = model(x_batch, training=False)\n"
    "            per_example = keras.losses.mean_squared_error(y_batch, predicted)\n"
)


def _loop(replica_result: str, reduce: str = "SUM") -> str:
    """An evaluation that averages one reduced number per batch (the chapter's own loop)."""
    return (
        "def evaluate(model, dataset):\n"
        "    @tf.function\n"
        "    def step(batch):\n" + REPLICA_SUMS + f"            return {replica_result}\n\n"
        "        per_replica = strategy.run(on_replica, args=batch)\n"
        f'        return strategy.reduce("{reduce}", per_replica, axis=None)\n\n'
        "    batches = strategy.experimental_distribute_dataset(dataset)\n"
        "    return float(np.mean([float(step(batch)) for batch in batches]))"
    )


RESTORE = "def restore_on_one_device(path):\n"

WRONG = {
    1: [
        (
            "the chapter's loop: each batch divided by GLOBAL_BATCH, batches averaged",
            _loop("tf.nn.compute_average_loss(per_example, global_batch_size=GLOBAL_BATCH)"),
            "global batch of 16",
        ),
        (
            "each replica's mean, summed",
            _loop("tf.reduce_mean(per_example)"),
            "times too large",
        ),
        (
            "a Keras loss object, averaged over replicas",
            _loop(
                "keras.losses.MeanSquaredError()(y_batch, model(x_batch, training=False))", "MEAN"
            ),
            "divided by the replicas twice",
        ),
        (
            "each replica's mean, averaged over replicas",
            _loop("tf.reduce_mean(per_example)", "MEAN"),
            "mean of nothing",
        ),
    ],
    2: [
        (
            "nothing restored",
            RESTORE + "    return build_model()",
            "not the saved ones",
        ),
        (
            "restored under the strategy's scope",
            RESTORE + "    with strategy.scope():\n"
            "        restored = build_model()\n"
            "    tf.train.Checkpoint(model=restored).restore(path)\n"
            "    return restored",
            "restored under a strategy's scope",
        ),
        (
            "load_weights on a checkpoint",
            RESTORE
            + "    restored = build_model()\n    restored.load_weights(path)\n    return restored",
            "load_weights",
        ),
        (
            "another name than when saving",
            RESTORE + "    restored = build_model()\n"
            "    tf.train.Checkpoint(net=restored).restore(path).expect_partial()\n"
            "    return restored",
            "same names",
        ),
        (
            "another optimizer",
            RESTORE + "    restored = build_model()\n"
            '    restored.compile(optimizer="sgd", loss="mse")\n'
            "    tf.train.Checkpoint(model=restored).restore(path).expect_partial()\n"
            "    return restored",
            "same optimizer",
        ),
    ],
}

RIGHT = {
    1: [
        "def evaluate(model, dataset):\n"
        "    @tf.function\n"
        "    def sums(batch):\n"
        + REPLICA_SUMS
        + "            count = tf.cast(tf.size(per_example), tf.float32)\n"
        "            return tf.reduce_sum(per_example), count\n\n"
        "        total, count = strategy.run(on_replica, args=batch)\n"
        '        total = strategy.reduce("SUM", total, axis=None)\n'
        '        return total, strategy.reduce("SUM", count, axis=None)\n\n'
        "    total = count = 0.0\n"
        "    for batch in strategy.experimental_distribute_dataset(dataset):\n"
        "        batch_total, batch_count = sums(batch)\n"
        "        total, count = total + float(batch_total), count + float(batch_count)\n"
        "    return total / count",
        "def evaluate(model, dataset):\n"
        "    with strategy.scope():\n"
        "        mean = keras.metrics.Mean()\n\n"
        "    @tf.function\n"
        "    def step(batch):\n"
        "        def on_replica(x_batch, y_batch):\n"
        "            per_example = keras.losses.mean_squared_error(y_batch, model(x_batch))\n"
        "            mean.update_state(per_example)\n\n"
        "        strategy.run(on_replica, args=batch)\n\n"
        "    for batch in strategy.experimental_distribute_dataset(dataset):\n"
        "        step(batch)\n"
        "    return float(mean.result())",
    ],
    2: [
        RESTORE + "    restored = build_model()\n"
        "    tf.train.Checkpoint(model=restored, optimizer=restored.optimizer).restore(path)\n"
        "    return restored",
        RESTORE + "    restored = build_model()\n"
        "    restored.optimizer.build(restored.trainable_variables)\n"
        "    tf.train.Checkpoint(model=restored).restore(path).assert_consumed()\n"
        "    return restored",
    ],
}
