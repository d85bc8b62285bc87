"""What the browser labs' in-page checks compare with: each exercise's inputs and results.

Written from the answer key (``_lab_exercises``) by ``page_table``; a test holds the two equal
(run ``tests/mirrorkit/checks/test_lab_page.py`` with ``MIRRORBOOK_WRITE_LAB_PAGE=1`` to write it
again). The lab site's wheel holds this table and not the key.

Example:
    >>> PAGE["05_ring_all_reduce/ex1"]["answer"]
    'ring_steps'
"""

PAGE = {
    "02_batch_split/ex1": {
        "answer": "steps_per_epoch",
        "inputs": [(50, 16), (64, 16), (10, 4), (3, 8)],
        "mistakes": [
            (
                "you counted only the full batches: the short last batch is a step too.",
                [3, 4, 2, 0],
            ),
            ("a step count is a whole number.", [3.125, 4.0, 2.5, 0.375]),
        ],
        "outputs": [4, 4, 3, 1],
    },
    "02_batch_split/ex2": {
        "answer": "last_step_sizes",
        "inputs": [(50, 16, 4), (10, 10, 4), (64, 16, 4), (21, 8, 4), (7, 16, 3)],
        "mistakes": [
            (
                "you spread the examples evenly: the last replicas get what "
                "is left of ceil(batch / replicas) each, in replica order.",
                [[1, 1, 0, 0], [3, 3, 2, 2], [4, 4, 4, 4], [2, 1, 1, 1], [3, 2, 2]],
            ),
            (
                "that is a full batch's split, not the last.",
                [[4, 4, 4, 4], [3, 3, 3, 1], [4, 4, 4, 4], [2, 2, 2, 2], [6, 6, 4]],
            ),
            (
                "with no short batch the last is full.",
                [[1, 1, 0, 0], [0, 0, 0, 0], [0, 0, 0, 0], [2, 2, 1, 0], [3, 3, 1]],
            ),
        ],
        "outputs": [[1, 1, 0, 0], [3, 3, 3, 1], [4, 4, 4, 4], [2, 2, 1, 0], [3, 3, 1]],
    },
    "03_sum_and_mean/ex1": {
        "answer": "replica_loss",
        "inputs": [([0.5, 1.5, 1.0], 12), ([2.0, 0.25], 8), ([0.75], 4)],
        "mistakes": [
            ("a local mean: divide by the global batch instead.", [1.0, 1.125, 0.75]),
            ("the sum, undivided: the SUM of replicas is then B times.", [3.0, 2.25, 0.75]),
        ],
        "outputs": [0.25, 0.28125, 0.1875],
    },
    "03_sum_and_mean/ex2": {
        "answer": "keras_default_weights",
        "inputs": [([2, 2, 2, 0],), ([8, 8, 8, 8],), ([3, 3, 3, 1],), ([5, 4],)],
        "mistakes": [
            (
                "that is the global batch's division.",
                [[1.0, 1.0, 1.0, 0.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0]],
            ),
            (
                "B / b each, a local mean's weight: Keras's default also divides by N.",
                [
                    [3.0, 3.0, 3.0, 0.0],
                    [4.0, 4.0, 4.0, 4.0],
                    [3.3333333333333335, 3.3333333333333335, 3.3333333333333335, 10.0],
                    [1.8, 2.25],
                ],
            ),
            (
                "a replica with no examples weighs nothing: 0.",
                [[1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0, 1.0, 1.0], [1.0, 1.0]],
            ),
        ],
        "outputs": [
            [0.75, 0.75, 0.75, 0.0],
            [1.0, 1.0, 1.0, 1.0],
            [0.8333333333333334, 0.8333333333333334, 0.8333333333333334, 2.5],
            [0.9, 1.125],
        ],
    },
    "04_loss_scaling/ex1": {
        "answer": "overflows",
        "inputs": [(1.5, 32768.0), (1.5, 65536.0), (1.0, 65519.0), (10.0, 4096.0), (10.0, 8192.0)],
        "mistakes": [
            ("the scale multiplies first.", [False, False, False, False, False]),
            ("float16 rounds: up to 65519.99 rounds to 65504.", [False, True, True, False, True]),
        ],
        "outputs": [False, True, False, False, True],
    },
    "04_loss_scaling/ex2": {
        "answer": "safe_scale",
        "inputs": [(1.5,), (10.0,), (0.01,), (1.0,)],
        "mistakes": [
            ("that scale overflows: halve it.", [65536.0, 8192.0, 8388608.0, 65536.0]),
            (
                "twice that still fits: the largest one is wanted.",
                [16384.0, 2048.0, 2097152.0, 16384.0],
            ),
            (
                "the scale is a power of two, as the optimizer halves it.",
                [43669.333333333336, 6550.4, 6550400.0, 65504.0],
            ),
        ],
        "outputs": [32768.0, 4096.0, 4194304.0, 32768.0],
    },
    "05_ring_all_reduce/ex1": {
        "answer": "ring_steps",
        "inputs": [(2,), (4,), (8,), (3,)],
        "mistakes": [
            (
                "you counted only the reduce-scatter half; the ring "
                "hands the finished sums round in as many steps again.",
                [1, 3, 7, 2],
            ),
            ("a replica needs no step to send to itself: n - 1 per half.", [4, 8, 16, 6]),
        ],
        "outputs": [2, 6, 14, 4],
    },
    "05_ring_all_reduce/ex2": {
        "answer": "ring_bytes_sent",
        "inputs": [(1024, 4), (4096, 8), (64, 2)],
        "mistakes": [
            ("that is half: the sums go round again.", [768, 3584, 32]),
            ("each step sends one chunk, 1/n of the tensor.", [6144, 57344, 128]),
            ("2 (n - 1) chunks of size / n: not quite twice.", [2048, 8192, 128]),
        ],
        "outputs": [1536, 7168, 64],
    },
    "06_auto_shard/ex1": {
        "answer": "data_examples",
        "inputs": [(4, 2, 0), (5, 2, 1), (4, 3, 2), (10, 4, 3)],
        "mistakes": [
            (
                "you cut evenly: the last replicas get what is left of "
                "ceil(batch / replicas) each, in replica order.",
                [2, 2, 1, 2],
            )
        ],
        "outputs": [2, 2, 0, 1],
    },
    "06_auto_shard/ex2": {
        "answer": "times_trained",
        "inputs": [("DATA", 2), ("OFF", 2), ("OFF", 3), ("DATA", 4)],
        "mistakes": [
            ("under OFF every worker trains on every example.", [1, 1, 1, 1]),
            ("under DATA each example goes to one worker only.", [2, 2, 3, 4]),
        ],
        "outputs": [1, 2, 3, 1],
    },
    "07_evaluation_loss/ex1": {
        "answer": "evaluation_mean",
        "inputs": [([[[1.0, 2.0], [3.0, 4.0]], [[5.0], []]],), ([[[0.5], [1.5]], [[2.5], [0.5]]],)],
        "mistakes": [
            (
                "the mean of the batches' means weighs a short last batch like a full one.",
                [3.75, 1.25],
            ),
            (
                "the mean of the replicas' means weighs a replica's few examples like many.",
                [3.3333333333333335, 1.25],
            ),
        ],
        "outputs": [3.0, 1.25],
    },
    "07_evaluation_loss/ex2": {
        "answer": "metric_result",
        "inputs": [([10.0, 6.0], [8, 2]), ([4.0, 4.0, 1.0], [4, 4, 1])],
        "mistakes": [
            (
                "averaging the replicas' ratios ('MEAN'): sum totals and counts, divide once.",
                [2.125, 1.0],
            ),
            ("divide by the examples counted, not the replicas.", [8.0, 3.0]),
        ],
        "outputs": [1.6, 1.0],
    },
    "08_scaling_rule/ex1": {
        "answer": "scaled_rate",
        "inputs": [(0.1, 8, "linear"), (0.1, 4, "sqrt"), (0.5, 2, "linear")],
        "mistakes": [
            ("the rate must grow with the replicas.", [0.1, 0.1, 0.5]),
            (
                "you swapped the rules: linear multiplies by k, sqrt by sqrt(k).",
                [0.28284271247461906, 0.4, 0.7071067811865476],
            ),
            ("the batch grew: the rate grows too, it does not shrink.", [0.0125, 0.025, 0.25]),
        ],
        "outputs": [0.8, 0.2, 1.0],
    },
    "08_scaling_rule/ex2": {
        "answer": "warmup_rate",
        "inputs": [(0, 0.1, 8, 8), (3, 0.1, 8, 8), (8, 0.1, 8, 8), (20, 0.1, 4, 5)],
        "mistakes": [
            ("warm-up starts at BASE, not at 0.", [0.0, 0.30000000000000004, 0.8, 0.4]),
            (
                "step 0 is at BASE: count from 0.",
                [0.1875, 0.44999998807907104, 0.800000011920929, 0.4000000059604645],
            ),
            ("during warm-up the rate climbs; only then is it b k.", [0.8, 0.8, 0.8, 0.4]),
        ],
        "outputs": [
            0.10000000149011612,
            0.36249998211860657,
            0.800000011920929,
            0.4000000059604645,
        ],
    },
}
