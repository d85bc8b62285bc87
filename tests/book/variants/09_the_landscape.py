"""Chapter 9: steps scheduled on a parameter-server cluster, and a partitioner for a cluster.

Both checks draw their numbers as they run (the steps and the value the workers read; two
clusters and two shard sizes), so the hard-coded families fail at any replica count.
"""

STEPS = (
    "def run_steps(coordinator, dataset_fn, step, steps):\n"
    "    batches = iter({dataset})\n"
    "    results = [coordinator.schedule(step, args=(batches, i)) for i in {indices}]\n"
    "    return {returned}\n"
)
PER_WORKER = "coordinator.create_per_worker_dataset(dataset_fn)"
FETCHED = "[result.fetch() for result in results]"


def steps(dataset=PER_WORKER, indices="range(steps)", returned=FETCHED) -> str:
    return STEPS.format(dataset=dataset, indices=indices, returned=returned)


PARTITIONERS = "tf.distribute.experimental.partitioners"

WRONG = {
    1: [
        ("RemoteValues returned, not fetched", steps(returned="results"), "fetch()"),
        (
            "step called on the chief, not scheduled",
            "def run_steps(coordinator, dataset_fn, step, steps):\n"
            f"    batches = iter({PER_WORKER})\n"
            "    return [step(batches, i) for i in range(steps)]\n",
            "step was called on the chief",
        ),
        (
            "the dataset made on the chief",
            steps(dataset="dataset_fn()"),
            "create_per_worker_dataset(dataset_fn)",
        ),
        ("indices counted from 1", steps(indices="range(1, steps + 1)"), "counted from 1"),
        ("one step too few", steps(indices="range(steps - 1)"), "run_steps was asked for"),
        (
            "only the last step's value",
            steps(returned="results[-1].fetch()"),
            "not a list",
        ),
        (
            "the values in another order",
            steps(returned=f"sorted({FETCHED}, reverse=True)"),
            "in another order",
        ),
        (
            "hard-coded: a list of numbers, nothing scheduled",
            "def run_steps(coordinator, dataset_fn, step, steps):\n"
            "    return [i + 1 for i in range(steps)]\n",
            "never ran",
        ),
        (
            "hard-coded: steps scheduled, but a list of its own returned",
            steps(returned="[2 * (i + 1) for i in range(steps)]"),
            "not the values the scheduled steps returned",
        ),
    ],
    2: [
        (
            "every variable split, one shard per parameter server",
            f"partitioner_for = lambda cluster, size: {PARTITIONERS}.FixedShardsPartitioner(\n"
            "    len(cluster['ps'])\n"
            ")",
            "even those under the limit",
        ),
        (
            "elements counted, not bytes",
            "import math\n"
            "def partitioner_for(cluster, max_shard_bytes):\n"
            "    def partitioner(shape, dtype):\n"
            "        per_shard = max(1, max_shard_bytes // shape[1:].num_elements())\n"
            "        shards = min(len(cluster['ps']), math.ceil(shape[0] / per_shard))\n"
            "        return [shards] + [1] * (shape.rank - 1)\n"
            "    return partitioner\n",
            "dtype.size",
        ),
        (
            "4 bytes an element, whatever the dtype",
            "def partitioner_for(cluster, max_shard_bytes):\n"
            f"    rule = {PARTITIONERS}.MaxSizePartitioner(max_shard_bytes, len(cluster['ps']))\n"
            "    return lambda shape, dtype: rule(shape, tf.float32)\n",
            "4 bytes an element",
        ),
        (
            "one shard per worker",
            "def partitioner_for(cluster, max_shard_bytes):\n"
            f"    return {PARTITIONERS}.MaxSizePartitioner(\n"
            "        max_shard_bytes, max_shards=len(cluster['worker'])\n"
            "    )\n",
            "one shard per worker",
        ),
        (
            "MinSizePartitioner's rule: ceil(bytes / limit), not whole rows",
            "def partitioner_for(cluster, max_shard_bytes):\n"
            f"    return {PARTITIONERS}.MinSizePartitioner(max_shard_bytes, len(cluster['ps']))\n",
            "whole rows",
        ),
        (
            "no limit on the shards",
            f"partitioner_for = lambda cluster, size: {PARTITIONERS}.MaxSizePartitioner(size)",
            "more shards than the cluster has parameter servers",
        ),
        (
            "hard-coded: the chapter's printed MinSizePartitioner",
            "def partitioner_for(cluster, max_shard_bytes):  # the chapter's by_size, copied\n"
            f"    return {PARTITIONERS}.MinSizePartitioner(\n"
            "        min_shard_bytes=256 * 1024, max_shards=2\n"
            "    )\n",
            "shards, not",
        ),
        (
            "hard-coded: three parameter servers",
            f"partitioner_for = lambda cluster, size: {PARTITIONERS}.MaxSizePartitioner(size, 3)",
            "parameter servers: read their number from the cluster",
        ),
        (
            "hard-coded: a constant partition",
            "def partitioner_for(cluster, max_shard_bytes):\n"
            "    return lambda shape, dtype: [3] + [1] * (len(shape) - 1)\n",
            "shards, not",
        ),
    ],
}

RIGHT = {
    1: [
        steps(),
        "def run_steps(coordinator, dataset_fn, step, steps):\n"
        "    per_worker = coordinator.create_per_worker_dataset(dataset_fn)\n"
        "    pending, i = [], 0\n"
        "    while i < steps:\n"
        "        args = (iter(per_worker), tf.constant(i))\n"
        "        pending.append(coordinator.schedule(step, args=args))\n"
        "        i += 1\n"
        "    coordinator.join()\n"
        "    return [int(value) for value in coordinator.fetch(pending)]\n",
        "def run_steps(coordinator, dataset_fn, step, steps):\n"
        "    batches = iter(coordinator.create_per_worker_dataset(dataset_fn))\n"
        "    values = []\n"
        "    for i in range(steps):  # one at a time: slower, still right\n"
        "        values.append(float(coordinator.schedule(step, args=(batches, i)).fetch()))\n"
        "    return tuple(values)\n",
    ],
    2: [
        "def partitioner_for(cluster, max_shard_bytes):\n"
        f"    return {PARTITIONERS}.MaxSizePartitioner(\n"
        "        max_shard_bytes=max_shard_bytes, max_shards=len(cluster['ps'])\n"
        "    )\n",
        "import math\n"
        "def partitioner_for(cluster, max_shard_bytes):\n"
        "    servers = tf.train.ClusterSpec(cluster).num_tasks('ps')\n"
        "    def partitioner(shape, dtype):\n"
        "        row_bytes = shape[1:].num_elements() * dtype.size\n"
        "        rows_per_shard = max(1, max_shard_bytes // row_bytes)\n"
        "        shards = min(servers, shape[0], math.ceil(shape[0] / rows_per_shard))\n"
        "        return [shards] + [1] * (shape.rank - 1)\n"
        "    return partitioner\n",
        "def partitioner_for(cluster, max_shard_bytes):\n"
        "    def partitioner(shape, dtype):\n"
        "        rows, row = shape[0], shape.num_elements() // shape[0] * dtype.size\n"
        "        shards = 1\n"
        "        most = min(len(cluster['ps']), rows)\n"
        "        while shards < most and -(-rows // shards) * row > max_shard_bytes:\n"
        "            shards += 1\n"
        "        return [shards] + [1] * (len(shape) - 1)\n"
        "    return partitioner\n",
    ],
}
