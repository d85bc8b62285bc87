"""mk.check_accumulation on a model's dict of inputs: its refusals say how to cut the data."""

import numpy as np

import mirrorkit as mk


def test_a_dict_batch_that_does_not_split_into_micro_batches_is_refused_clearly(strategy, refuses):
    data = ({"price": np.ones((10, 3)), "size": np.ones((10, 2))}, np.ones((10, 1)))
    refuses(
        lambda: mk.check_accumulation(
            lambda *a: None, lambda *a: None, strategy, None, data, micro_steps=2
        ),
        ValueError,
        "data",
        r"multiple of 2 \* micro_steps .*got 10 examples: write data=\(x, y\) with every array "
        r"of x and y cut to its first 8 examples",
    )
