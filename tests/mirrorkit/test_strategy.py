import inspect

import pytest
import tensorflow as tf

import mirrorkit as mk
from mirrorkit import _gpus
from mirrorkit.strategy import _shared_gpu_reason
from tests.conftest import REPLICAS
from tests.mirrorkit.test_devices import run_fresh


def all_reduce_sum(strategy):
    def fn():
        context = tf.distribute.get_replica_context()
        return context.all_reduce("sum", tf.cast(context.replica_id_in_sync_group, tf.float32))

    return [float(v) for v in strategy.experimental_local_results(strategy.run(fn))]


@pytest.mark.parametrize(
    ("name", "ops_class"),
    [
        ("collective", "CollectiveAllReduce"),
        ("one_device", "ReductionToOneDevice"),
        ("hierarchical_copy", "HierarchicalCopyAllReduce"),
    ],
)
def test_each_runnable_algorithm_gives_a_real_strategy_that_all_reduces(name, ops_class):
    strategy = mk.make_strategy(name)
    assert isinstance(strategy, tf.distribute.MirroredStrategy)
    assert strategy.num_replicas_in_sync == REPLICAS
    assert type(strategy.extended._cross_device_ops).__name__ == ops_class
    total = sum(range(REPLICAS))
    assert all_reduce_sum(strategy) == [total] * REPLICAS


def test_same_request_returns_the_same_strategy(strategy):
    assert mk.make_strategy() is strategy
    assert mk.make_strategy("one_device") is mk.make_strategy("one_device")
    assert mk.make_strategy("one_device") is not strategy


def test_devices_subset(devices):
    strategy = mk.make_strategy(devices=devices[:2])
    assert strategy.num_replicas_in_sync == 2
    assert all_reduce_sum(strategy) == [1.0, 1.0]


def test_nccl_without_gpu_fails_at_construction_with_the_reason():
    with pytest.raises(mk.AllReduceUnavailableError) as error:
        mk.make_strategy("nccl")
    message = str(error.value)
    assert "no GPU" in message
    assert "no NcclAllReduce kernel for CPUs" in message
    assert "all_reduce='collective'" in message


def test_every_algorithm_is_described():
    assert set(mk.ALL_REDUCE_ALGORITHMS) == {
        "collective",
        "one_device",
        "hierarchical_copy",
        "nccl",
    }
    assert all(len(text) > 20 for text in mk.ALL_REDUCE_ALGORITHMS.values())


REPRODUCE_COLLISION = """
import mirrorkit as mk
mk.make_reproducible(0)
mk.simulate_replicas(2)
import tensorflow as tf

def reduce_ones(size):
    ctx = tf.distribute.get_replica_context()
    return ctx.all_reduce("sum", tf.ones([size]))

{make}
first.run(reduce_ones, args=(3,))
try:
    second.run(reduce_ones, args=(5,))
    print("RESULT ok")
except tf.errors.InvalidArgumentError as error:
    print("RESULT", "Shape mismatch in the collective instance" in str(error))
"""


def test_two_raw_strategies_collide_but_two_from_make_strategy_do_not():
    # What chapter 1 teaches, checked against the installed TensorFlow: two default
    # MirroredStrategy objects share collective keys; make_strategy's do not.
    raw = run_fresh(
        REPRODUCE_COLLISION.format(
            make="first, second = [tf.distribute.MirroredStrategy() for _ in range(2)]"
        )
    )
    assert "RESULT True" in raw.stdout, raw.stdout + raw.stderr
    cached = run_fresh(
        REPRODUCE_COLLISION.format(
            make="first = tf.distribute.MirroredStrategy(); second = mk.make_strategy()"
        )
    )
    assert "RESULT ok" in cached.stdout, cached.stdout + cached.stderr


# -- NCCL and logical GPUs sharing a physical GPU -------------------------------------------


@pytest.mark.parametrize(
    ("per_physical", "physical"),
    [
        ([], ()),
        ([1], (0,)),
        ([4], (0, 0, 0, 0)),  # Colab: one GPU split in four
        ([2, 2], (0, 0, 1, 1)),
        ([2, 1, 1], (0, 0, 1, 2)),
        ([1, 1, 1, 1, 0, 0, 0, 0], (0, 1, 2, 3)),  # GPUs 4-7 hidden
        ([0, 2, 0, 1], (1, 1, 3)),  # hidden GPUs take no logical numbers
    ],
)
def test_logical_to_physical(per_physical, physical):
    assert _gpus.logical_to_physical(per_physical) == physical


@pytest.mark.parametrize(
    ("device", "index"),
    [
        ("/device:GPU:0", 0),
        ("/job:localhost/replica:0/task:0/device:GPU:3", 3),
        ("/gpu:12", 12),
        ("GPU:1", 1),
        ("/device:CPU:0", None),
        ("/job:worker/replica:0/task:1/device:GPU:0", None),  # another worker's GPU
        ("/device:GPU:0/extra", None),
    ],
)
def test_gpu_index(device, index):
    assert _gpus.gpu_index(device) == index


LONG = "/job:localhost/replica:0/task:0/device:GPU:{}"


@pytest.mark.parametrize(
    ("devices", "per_physical", "shared"),
    [
        ([LONG.format(i) for i in range(4)], [4], {0: tuple(LONG.format(i) for i in range(4))}),
        (
            [f"/device:GPU:{i}" for i in range(4)],
            [2, 1, 1],
            {0: ("/device:GPU:0", "/device:GPU:1")},
        ),
        (
            [f"/device:GPU:{i}" for i in range(4)],
            [2, 2],
            {0: ("/device:GPU:0", "/device:GPU:1"), 1: ("/device:GPU:2", "/device:GPU:3")},
        ),
        ([f"/device:GPU:{i}" for i in range(4)], [1, 1, 1, 1, 0, 0, 0, 0], {}),
        (["/device:GPU:0", "/device:GPU:2"], [2, 2], {}),  # one replica on each GPU
        (["/device:GPU:0"], [4], {}),  # one replica cannot share
        (["/device:CPU:0", "/device:CPU:1"], [], {}),
        (["/device:GPU:0", "/device:GPU:9"], [2], {}),  # GPU:9 is not a known logical GPU
    ],
)
def test_shared_physical_gpus(devices, per_physical, shared):
    assert _gpus.shared_physical_gpus(devices, per_physical) == shared


def test_the_nccl_reason_for_shared_gpus_names_replicas_and_the_physical_gpu():
    shared = _gpus.shared_physical_gpus([f"/device:GPU:{i}" for i in range(4)], [2, 2])
    reason = _shared_gpu_reason(shared)
    assert reason == (
        "replicas GPU:0 and GPU:1 are logical GPUs on the same physical GPU 0; GPU:2 and GPU:3 "
        "are logical GPUs on the same physical GPU 1, and NCCL needs each replica on a "
        'physical GPU of its own (two on one GPU stop it with "Duplicate GPU detected")'
    )
    three = _gpus.shared_physical_gpus([f"/device:GPU:{i}" for i in range(3)], [3])
    assert _shared_gpu_reason(three).startswith("replicas GPU:0, GPU:1 and GPU:2 are logical")


def test_nccl_reason_reaches_available_algorithms(devices):
    from mirrorkit.measure.allreduce import available_algorithms

    found = available_algorithms(devices)
    assert found["nccl"].startswith("NCCL all-reduce cannot run here: this machine has no GPU.")
    assert found["nccl"].endswith(
        "Use all_reduce='collective' (the default) or 'one_device' instead."
    )
    assert [name for name, why in found.items() if why is None] == [
        "collective",
        "one_device",
        "hierarchical_copy",
    ]


# -- TensorFlow's own choice for the default collective all-reduce ------------------------


def test_the_collective_description_follows_tensorflow_source():
    # MirroredStrategy picks RING when every device is a CPU, or when logical GPUs
    # outnumber physical ones (a GPU split into several), and otherwise keeps NCCL.
    from tensorflow.python.distribute import mirrored_strategy

    extended = mirrored_strategy.MirroredExtended
    source = inspect.getsource(extended._make_collective_ops_with_fallbacks)
    assert "len(physical_gpus) < len(logical_gpus)" in source
    assert source.count("CommunicationImplementation.RING") == 2
    init = inspect.getsource(extended.__init__)
    assert "implementation=collective_util.CommunicationImplementation.NCCL" in init
    text = mk.ALL_REDUCE_ALGORITHMS["collective"]
    assert "ring on CPUs" in text
    assert "logical GPUs outnumber physical ones" in text
    assert "NCCL when every replica is a whole physical GPU" in text


def test_the_default_collective_runs_as_a_ring_on_cpus(strategy):
    options = strategy.extended._communication_options
    assert options.implementation == tf.distribute.experimental.CommunicationImplementation.RING


EXAMPLE = r"devices=\['/cpu:0', '/cpu:1'\]"
WRONG_STRATEGY_ARGUMENTS = [
    pytest.param(
        dict(devices="/cpu:0"),
        TypeError,
        "devices",
        r"not the string '/cpu:0': write devices=\['/cpu:0'\]",
        id="devices as a string",
    ),
    pytest.param(
        dict(devices=["/gpu:0"]),
        ValueError,
        "devices",
        r"no device '/gpu:0' in this process, which has CPU:0, CPU:1.*simulate_replicas",
        id="a GPU on a machine without",
    ),
    pytest.param(
        dict(devices=["/cpu:9"]),
        ValueError,
        "devices",
        r"no device '/cpu:9' .* mk\.simulate_replicas\(n\)",
        id="a device past the last",
    ),
    pytest.param(
        dict(all_reduce="hierarchical_copy", devices=["/cpu:0", "/cpu:1", "/cpu:2"]),
        ValueError,
        "hierarchical_copy",
        r"leave .*cpu:2's values out of every sum.*even number of devices",
        id="hierarchical copy on an odd count",
    ),
    pytest.param(
        dict(devices=["/cpu:0", "/device:CPU:0"]),
        ValueError,
        "devices",
        r"names CPU:0 twice.*each replica needs a device of its own",
        id="one device twice",
    ),
    pytest.param(
        dict(devices=["cpu"]),
        ValueError,
        "devices",
        r"'cpu' is not a device name: write the type and the index",
        id="no index",
    ),
    pytest.param(
        dict(devices=[0, 1]),
        TypeError,
        "devices",
        r"each device must be a name such as '/cpu:0', got 0",
        id="indices",
    ),
    pytest.param(
        dict(devices=["/job:worker/task:1/device:CPU:0"]),
        ValueError,
        "devices",
        r"on job 'worker'.*mk\.LocalCluster",
        id="another worker's device",
    ),
    pytest.param(
        dict(devices=4), TypeError, "devices", rf"got int; e\.g\. {EXAMPLE}", id="a replica count"
    ),
    pytest.param(
        dict(devices=[]), ValueError, "devices", r"empty; pass device names.*or None", id="empty"
    ),
    pytest.param(
        dict(all_reduce="ring"),
        ValueError,
        "all_reduce",
        r"unknown all_reduce 'ring'; choose one of 'collective'.*'nccl'",
        id="ring",
    ),
    pytest.param(
        dict(all_reduce="NCCL"), ValueError, "all_reduce", r"did you mean 'nccl'\?", id="upper case"
    ),
    pytest.param(
        dict(all_reduce=["/cpu:0", "/cpu:1"]),
        TypeError,
        "all_reduce",
        r"looks like devices.*make_strategy\(devices=\['/cpu:0', '/cpu:1'\]\)",
        id="devices passed first",
    ),
    pytest.param(
        dict(all_reduce=tf.distribute.ReductionToOneDevice()),
        TypeError,
        "all_reduce",
        r"ReductionToOneDevice object: write make_strategy\(all_reduce='one_device'\)",
        id="a CrossDeviceOps object",
    ),
    pytest.param(
        dict(all_reduce=None),
        TypeError,
        "all_reduce",
        r"choose one of 'collective'.*make_strategy\('collective'\)",
        id="None",
    ),
]


@pytest.mark.wrong_inputs("mk.make_strategy")
@pytest.mark.parametrize(("kwargs", "error", "argument", "match"), WRONG_STRATEGY_ARGUMENTS)
def test_wrong_arguments_get_a_sentence_not_a_one_replica_strategy(
    refuses, kwargs, error, argument, match
):
    refuses(lambda: mk.make_strategy(**kwargs), error, argument, match)


def test_device_names_in_any_spelling_work(devices):
    short = [f"/cpu:{i}" for i in range(2)]
    strategy = mk.make_strategy(devices=short)
    assert strategy.num_replicas_in_sync == 2
