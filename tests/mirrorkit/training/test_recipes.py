"""Fault tolerance for real: kill a worker, resume from the checkpoint, compare with no fault."""

from __future__ import annotations

import numpy as np
import pytest

import mirrorkit as mk
from mirrorkit.training.recipes import checkpointed_training, compare_weights


def test_resumed_run_equals_an_uninterrupted_run(tmp_path):
    cluster = mk.LocalCluster(2, echo=False)
    reference = cluster.run(checkpointed_training, args=(str(tmp_path / "reference"),))

    interrupted = str(tmp_path / "interrupted")
    with pytest.raises(mk.WorkerFailedError, match="worker 1 failed: killed by SIGKILL"):
        cluster.run(checkpointed_training, args=(interrupted,), fault=mk.KillWorker(1, 6))
    resumed = cluster.run(checkpointed_training, args=(interrupted,))

    assert reference.result["resumed_from"] == 0
    assert resumed.result["resumed_from"] == 4  # the last save before the kill at step 6
    assert sorted(resumed.result["losses"]) == list(range(5, 13))
    for number, loss in resumed.result["losses"].items():
        assert loss == reference.result["losses"][number]
    comparison = compare_weights(reference.result["weights"], resumed.result["weights"])
    assert comparison.equal, comparison
    # and every worker ends with the same weights
    assert compare_weights(resumed.results[0]["weights"], resumed.results[1]["weights"]).equal


def test_compare_weights_reports_differences():
    same = compare_weights([np.ones(3)], [np.ones(3)])
    assert same.equal and same.max_abs_difference == 0.0
    nudged = compare_weights([np.ones(3)], [np.ones(3) + np.array([0, 1e-7, 0])])
    assert not nudged.equal and 0 < nudged.max_abs_difference < 1e-6
    with pytest.raises(ValueError, match="compare the same model"):
        compare_weights([np.ones(3)], [np.ones(4)])
    with pytest.raises(ValueError, match="1 arrays against 2"):
        compare_weights([np.ones(3)], [np.ones(3), np.ones(1)])
