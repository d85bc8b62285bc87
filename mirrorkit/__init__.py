"""mirrorkit: see ``tf.distribute`` at work, on a laptop or a cluster.

Everything here wraps the real TensorFlow objects. TensorFlow itself is imported
only when a function that needs it is first used, so that
:func:`make_reproducible` can quiet TensorFlow's start-up logs before they print.

Example:
    >>> import mirrorkit as mk
    >>> "simulate_replicas" in mk.__all__
    True
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Public name -> private module that defines it. Loaded on first use (PEP 562).
_EXPORTS = {
    "AllReduceUnavailableError": "mirrorkit.errors",
    "ReplicaSetupError": "mirrorkit.errors",
    "make_reproducible": "mirrorkit.reproducibility",
    "simulate_replicas": "mirrorkit.devices",
    "plan_replicas": "mirrorkit.devices",
    "ReplicaPlan": "mirrorkit.devices",
    "replica_devices": "mirrorkit.devices",
    "ALL_REDUCE_ALGORITHMS": "mirrorkit.strategy",
    "make_strategy": "mirrorkit.strategy",
    "inspect": "mirrorkit.inspection",
    "ReplicaRow": "mirrorkit.inspection",
    "ReplicaTable": "mirrorkit.inspection",
    "CheckResult": "mirrorkit.checks",
    "check_mirrored": "mirrorkit.checks",
    "check_per_replica": "mirrorkit.checks",
    "check_all_reduced": "mirrorkit.checks",
    "check_input_pipeline": "mirrorkit.checks",
    "preview_input": "mirrorkit.input_preview",
    "AUTO_SHARD_POLICIES": "mirrorkit.input_preview",
    "InputPreview": "mirrorkit.input_preview",
    "ReplicaBatch": "mirrorkit.input_preview",
    "check_step_equivalence": "mirrorkit.equivalence",
    "check_loss_step": "mirrorkit.checks",
    "StepEquivalence": "mirrorkit.equivalence",
    "WeightGradient": "mirrorkit.equivalence",
    "MIXED_PRECISION_POLICIES": "mirrorkit.mixed_precision",
    "mixed_precision_policy": "mirrorkit.mixed_precision",
    "run_loss_scale": "mirrorkit.mixed_precision",
    "LossScaleHistory": "mirrorkit.mixed_precision",
    "LossScaleStep": "mirrorkit.mixed_precision",
    "AllReduceBenchmark": "mirrorkit.allreduce",
    "AllReduceRecord": "mirrorkit.allreduce",
    "available_algorithms": "mirrorkit.allreduce",
    "benchmark_all_reduce": "mirrorkit.allreduce",
    "bus_bandwidth": "mirrorkit.allreduce",
    "measure_copy_bandwidth": "mirrorkit.allreduce",
    "StepPhases": "mirrorkit.tracing",
    "StepTrace": "mirrorkit.tracing",
    "StepTracer": "mirrorkit.tracing",
    "EVENT_KINDS": "mirrorkit.events",
    "WORKER_STATES": "mirrorkit.events",
    "ClusterStatus": "mirrorkit.events",
    "WorkerEvent": "mirrorkit.events",
    "WorkerStatus": "mirrorkit.events",
    "ClusterError": "mirrorkit.errors",
    "ClusterStartError": "mirrorkit.errors",
    "WorkerFailedError": "mirrorkit.errors",
    "ClusterTimeoutError": "mirrorkit.errors",
    "ClusterSecurityWarning": "mirrorkit.errors",
    "LocalCluster": "mirrorkit.launcher",
    "ClusterRun": "mirrorkit.launcher",
    "KillWorker": "mirrorkit.launcher",
    "NETWORKS": "mirrorkit.launcher",
    "WorkerContext": "mirrorkit.worker",
    "current_context": "mirrorkit.worker",
    "FitReadyModel": "mirrorkit.keras_fit",
    "fit_ready": "mirrorkit.keras_fit",
}

__all__ = [
    "ALL_REDUCE_ALGORITHMS",
    "AUTO_SHARD_POLICIES",
    "AllReduceBenchmark",
    "AllReduceRecord",
    "AllReduceUnavailableError",
    "CheckResult",
    "ClusterError",
    "ClusterRun",
    "ClusterSecurityWarning",
    "ClusterStartError",
    "ClusterStatus",
    "ClusterTimeoutError",
    "EVENT_KINDS",
    "FitReadyModel",
    "InputPreview",
    "KillWorker",
    "LocalCluster",
    "LossScaleHistory",
    "LossScaleStep",
    "MIXED_PRECISION_POLICIES",
    "NETWORKS",
    "ReplicaBatch",
    "ReplicaPlan",
    "ReplicaRow",
    "ReplicaSetupError",
    "ReplicaTable",
    "StepEquivalence",
    "StepPhases",
    "StepTrace",
    "StepTracer",
    "WORKER_STATES",
    "WeightGradient",
    "WorkerContext",
    "WorkerEvent",
    "WorkerFailedError",
    "WorkerStatus",
    "available_algorithms",
    "benchmark_all_reduce",
    "bus_bandwidth",
    "check_all_reduced",
    "check_input_pipeline",
    "check_loss_step",
    "check_mirrored",
    "check_per_replica",
    "check_step_equivalence",
    "current_context",
    "fit_ready",
    "inspect",
    "make_reproducible",
    "make_strategy",
    "measure_copy_bandwidth",
    "mixed_precision_policy",
    "plan_replicas",
    "preview_input",
    "replica_devices",
    "run_loss_scale",
    "simulate_replicas",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mirrorkit.allreduce import (
        AllReduceBenchmark,
        AllReduceRecord,
        available_algorithms,
        benchmark_all_reduce,
        bus_bandwidth,
        measure_copy_bandwidth,
    )
    from mirrorkit.checks import (
        CheckResult,
        check_all_reduced,
        check_input_pipeline,
        check_loss_step,
        check_mirrored,
        check_per_replica,
    )
    from mirrorkit.devices import ReplicaPlan, plan_replicas, replica_devices, simulate_replicas
    from mirrorkit.equivalence import StepEquivalence, WeightGradient, check_step_equivalence
    from mirrorkit.errors import (
        AllReduceUnavailableError,
        ClusterError,
        ClusterSecurityWarning,
        ClusterStartError,
        ClusterTimeoutError,
        ReplicaSetupError,
        WorkerFailedError,
    )
    from mirrorkit.events import (
        EVENT_KINDS,
        WORKER_STATES,
        ClusterStatus,
        WorkerEvent,
        WorkerStatus,
    )
    from mirrorkit.input_preview import (
        AUTO_SHARD_POLICIES,
        InputPreview,
        ReplicaBatch,
        preview_input,
    )
    from mirrorkit.inspection import ReplicaRow, ReplicaTable, inspect
    from mirrorkit.keras_fit import FitReadyModel, fit_ready
    from mirrorkit.launcher import NETWORKS, ClusterRun, KillWorker, LocalCluster
    from mirrorkit.mixed_precision import (
        MIXED_PRECISION_POLICIES,
        LossScaleHistory,
        LossScaleStep,
        mixed_precision_policy,
        run_loss_scale,
    )
    from mirrorkit.reproducibility import make_reproducible
    from mirrorkit.strategy import ALL_REDUCE_ALGORITHMS, make_strategy
    from mirrorkit.tracing import StepPhases, StepTrace, StepTracer
    from mirrorkit.worker import WorkerContext, current_context


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mirrorkit' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
