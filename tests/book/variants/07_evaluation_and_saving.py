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
            "each replica's own mean",
        ),
        (
            "a one-device loop with no strategy",
            "def evaluate(model, dataset):\n"
            "    total = count = 0.0\n"
            "    for x_batch, y_batch in dataset:\n"
            "        per_example = keras.losses.mean_squared_error(y_batch, model(x_batch))\n"
            "        total += float(tf.reduce_sum(per_example))\n"
            "        count += int(tf.size(per_example))\n"
            "    return total / count",
            "outside any strategy",
        ),
        (
            "under the scope, but no strategy.run",
            "def evaluate(model, dataset):\n"
            "    total = count = 0.0\n"
            "    with strategy.scope():\n"
            "        for x_batch, y_batch in dataset:\n"
            "            per_example = keras.losses.mean_squared_error(y_batch, model(x_batch))\n"
            "            total += float(tf.reduce_sum(per_example))\n"
            "            count += float(tf.size(per_example))\n"
            "    return total / count",
            "cross-replica context",
        ),
        (
            "the replicas' sums averaged with MEAN, times a literal 4",
            "def evaluate(model, dataset):\n"
            "    @tf.function\n"
            "    def sums(batch):\n"
            + REPLICA_SUMS
            + "            return tf.reduce_sum(per_example), tf.cast(tf.size(per_example), "
            "tf.float32)\n\n"
            "        total, count = strategy.run(on_replica, args=batch)\n"
            '        return strategy.reduce("MEAN", total, axis=None) * 4, '
            'strategy.reduce("SUM", count, axis=None)\n\n'
            "    total = count = 0.0\n"
            "    for batch in strategy.experimental_distribute_dataset(dataset):\n"
            "        batch_total, batch_count = sums(batch)\n"
            "        total, count = total + float(batch_total), count + float(batch_count)\n"
            "    return total / count",
            "fixed 4 where there are",
        ),
        (
            "NumPy on a replica's symbolic tensors",
            _loop("np.sum(per_example.numpy()) / GLOBAL_BATCH"),
            "numpy",
        ),
        (
            "the chapter's printed loss, copied",
            "def evaluate(model, dataset):\n    return 0.0123",
            "never called the model",
        ),
        (
            "the chapter's global model, not the one given",
            "def evaluate(given, dataset):\n"
            "    @tf.function\n"
            "    def sums(batch):\n"
            + REPLICA_SUMS
            + "            return tf.reduce_sum(per_example), tf.cast(tf.size(per_example), "
            "tf.float32)\n\n"
            "        total, count = strategy.run(on_replica, args=batch)\n"
            '        return strategy.reduce("SUM", total, axis=None), '
            'strategy.reduce("SUM", count, axis=None)\n\n'
            "    total = count = 0.0\n"
            "    for batch in strategy.experimental_distribute_dataset(dataset):\n"
            "        batch_total, batch_count = sums(batch)\n"
            "        total, count = total + float(batch_total), count + float(batch_count)\n"
            "    return total / count",
            "never called the model it was given",
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
        (
            "the model the chapter restored above, returned",
            RESTORE + "    return plain",
            "does not read the checkpoint at its path",
        ),
        (
            "the chapter's mirrored_path, whatever the path",
            RESTORE + "    restored = build_model()\n"
            "    tf.train.Checkpoint(model=restored).restore(mirrored_path)\n"
            "    return restored",
            "does not read the checkpoint at its path",
        ),
        (
            "the saved model itself",
            RESTORE + "    return model",
            "the model that was saved",
        ),
        (
            "weights only, no optimizer state",
            RESTORE + "    restored = build_model()\n"
            "    tf.train.Checkpoint(model=restored).restore(path).expect_partial()\n"
            "    restored.compile(optimizer=keras.optimizers.Adam(0.01), loss='mse')\n"
            "    return restored",
            "step count",
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
        "def evaluate(model, dataset):  # eager strategy.run, local results added in Python\n"
        "    def on_replica(x_batch, y_batch):\n"
        "        per_example = keras.losses.MeanSquaredError(reduction='none')(\n"
        "            y_batch, model(x_batch, training=False))\n"
        "        return tf.reduce_sum(per_example), tf.size(per_example)\n\n"
        "    total, count = 0.0, 0\n"
        "    for batch in strategy.experimental_distribute_dataset(dataset):\n"
        "        sums, counts = strategy.run(on_replica, args=batch)\n"
        "        total += sum(float(v) for v in strategy.experimental_local_results(sums))\n"
        "        count += sum(int(v) for v in strategy.experimental_local_results(counts))\n"
        "    return total / count",
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
