"""Chapter 9: a parameter-server cluster's TF_CONFIG, and a variable partitioner."""

CHIEF = '["10.0.0.1:2222"]'
WORKERS = '["10.0.0.2:2222", "10.0.0.3:2222"]'
PS = '["10.0.0.4:2222"]'


def config(cluster: str, task: str = '{"type": "worker", "index": 1}') -> str:
    return f"tf_config = {{'cluster': {cluster}, 'task': {task}}}"


PARTITIONER = (
    "def partitioner(shape, dtype):\n"
    "    size = shape.num_elements(){size}\n"
    "    split = size {op} 256 * 1024 and shape[0] >= 2\n"
    "    return [2 if split else 1] + [1] * (shape.rank - 1)"
)

WRONG = {
    1: [
        (
            "the chief listed among the workers",
            config(
                f'{{"chief": {CHIEF}, "worker": ["10.0.0.1:2222", "10.0.0.2:2222", '
                f'"10.0.0.3:2222"], "ps": {PS}}}',
                '{"type": "worker", "index": 2}',
            ),
            "chief",
        ),
        (
            "'parameter_server' as the job name",
            config(f'{{"chief": {CHIEF}, "worker": {WORKERS}, "parameter_server": {PS}}}'),
            "'ps'",
        ),
        (
            "the index counted from 1",
            config(
                f'{{"chief": {CHIEF}, "worker": {WORKERS}, "ps": {PS}}}',
                '{"type": "worker", "index": 2}',
            ),
            "counted from 1",
        ),
    ],
    2: [
        (
            "every variable split",
            "partitioner = tf.distribute.experimental.partitioners.FixedShardsPartitioner(2)",
            "stays whole",
        ),
        (
            "split from the limit on (>=)",
            PARTITIONER.format(size=" * dtype.size", op=">="),
            "not >=",
        ),
        (
            "elements counted, not bytes",
            PARTITIONER.format(size="", op=">"),
            "dtype.size",
        ),
    ],
}

RIGHT = {
    1: [
        config(f'{{"chief": {CHIEF}, "worker": {WORKERS}, "ps": {PS}}}'),
        "import json\n"
        "jobs = {'chief': ['10.0.0.1'], 'worker': ['10.0.0.2', '10.0.0.3'], 'ps': ['10.0.0.4']}\n"
        "cluster = {job: [f'{host}:2222' for host in hosts] for job, hosts in jobs.items()}\n"
        "tf_config = json.dumps({'cluster': cluster, 'task': {'type': 'worker', 'index': 1}})",
    ],
    2: [
        "partitioner = tf.distribute.experimental.partitioners.MinSizePartitioner(\n"
        "    min_shard_bytes=256 * 1024, max_shards=2\n"
        ")",
        PARTITIONER.format(size=" * dtype.size", op=">"),
        "partitioner = tf.distribute.experimental.partitioners.MaxSizePartitioner(\n"
        "    max_shard_bytes=256 * 1024, max_shards=2\n"
        ")",
    ],
}
