"""The public names of :mod:`mirrorkit`, each listed once: the package loads them lazily from here.

Each import names its public name twice (``X as X``), the way a stub marks a re-export
(PEP 484); ``lazy_loader.attach_stub`` reads the same lines at run time.
"""

from ._algorithms import ALL_REDUCE_ALGORITHMS as ALL_REDUCE_ALGORITHMS
from .checks.accumulation import check_accumulation as check_accumulation
from .checks.all_reduce_growth import check_all_reduce_growth as check_all_reduce_growth
from .checks.all_reduce_ranking import check_all_reduce_ranking as check_all_reduce_ranking
from .checks.clipping import check_clipping as check_clipping
from .checks.cluster_spec import (
    check_cluster_spec as check_cluster_spec,
    check_partitioner as check_partitioner,
)
from .checks.equivalence import check_step_equivalence as check_step_equivalence
from .checks.evaluation import check_evaluation as check_evaluation
from .checks.input_pipeline import check_input_pipeline as check_input_pipeline
from .checks.input_preview import (
    AUTO_SHARD_POLICIES as AUTO_SHARD_POLICIES,
    InputPreview as InputPreview,
    ReplicaBatch as ReplicaBatch,
    preview_input as preview_input,
)
from .checks.loss_step import check_loss_step as check_loss_step
from .checks.parameter_server import check_run_steps as check_run_steps
from .checks.partitioner import check_partitioner_for as check_partitioner_for
from .checks.replica_values import (
    check_all_reduced as check_all_reduced,
    check_mirrored as check_mirrored,
    check_per_replica as check_per_replica,
)
from .checks.restore import check_restore as check_restore
from .checks.result import CheckResult as CheckResult
from .checks.resume import check_resume as check_resume
from .checks.step_equivalence import (
    StepEquivalence as StepEquivalence,
    WeightGradient as WeightGradient,
)
from .cluster._lease import (
    FolderInUseError as FolderInUseError,
    FolderTakenOverWarning as FolderTakenOverWarning,
)
from .cluster.cluster_run import ClusterRun as ClusterRun
from .cluster.events import (
    EVENT_KINDS as EVENT_KINDS,
    WORKER_STATES as WORKER_STATES,
    ClusterStatus as ClusterStatus,
    WorkerEvent as WorkerEvent,
    WorkerStatus as WorkerStatus,
)
from .cluster.launcher import (
    NETWORKS as NETWORKS,
    LocalCluster as LocalCluster,
    stop_warm_process as stop_warm_process,
)
from .cluster.protocol import KillWorker as KillWorker
from .cluster.worker import (
    WorkerContext as WorkerContext,
    current_context as current_context,
)
from .devices import (
    ReplicaPlan as ReplicaPlan,
    plan_replicas as plan_replicas,
    replica_devices as replica_devices,
    simulate_replicas as simulate_replicas,
)
from .errors import (
    AllReduceUnavailableError as AllReduceUnavailableError,
    CheckpointDamagedError as CheckpointDamagedError,
    CheckpointMismatchError as CheckpointMismatchError,
    CheckpointSkippedWarning as CheckpointSkippedWarning,
    ClusterError as ClusterError,
    ClusterSecurityWarning as ClusterSecurityWarning,
    ClusterStartError as ClusterStartError,
    ClusterTimeoutError as ClusterTimeoutError,
    ReplicaSetupError as ReplicaSetupError,
    WorkerFailedError as WorkerFailedError,
)
from .inspection import (
    ReplicaRow as ReplicaRow,
    ReplicaTable as ReplicaTable,
    inspect as inspect,
)
from .measure.allreduce import (
    available_algorithms as available_algorithms,
    benchmark_all_reduce as benchmark_all_reduce,
    measure_copy_bandwidth as measure_copy_bandwidth,
)
from .measure.benchmark import (
    AllReduceBenchmark as AllReduceBenchmark,
    AllReduceRecord as AllReduceRecord,
    bus_bandwidth as bus_bandwidth,
)
from .measure.cost_model import CostModel as CostModel, fit_cost_model as fit_cost_model
from .measure.links import LINKS as LINKS, Link as Link
from .measure.replay import AllReduceReplay as AllReduceReplay
from .measure.step_prediction import StepPrediction as StepPrediction
from .measure.step_trace import (
    StepPhases as StepPhases,
    StepTrace as StepTrace,
)
from .measure.strategy_replay import replay_all_reduce as replay_all_reduce
from .measure.tracing import StepTracer as StepTracer
from .reproducibility import (
    make_reproducible as make_reproducible,
)
from .strategy import (
    make_strategy as make_strategy,
)
from .training.checkpoints import restore_latest as restore_latest
from .training.keras_fit import (
    FitReadyModel as FitReadyModel,
    fit_ready as fit_ready,
)
from .training.mixed_precision import (
    MIXED_PRECISION_POLICIES as MIXED_PRECISION_POLICIES,
    LossScaleHistory as LossScaleHistory,
    LossScaleStep as LossScaleStep,
    mixed_precision_policy as mixed_precision_policy,
    run_loss_scale as run_loss_scale,
)
from .training.scaling import (
    ScalingCurve as ScalingCurve,
    ScalingSweep as ScalingSweep,
    linear_scaling_schedule as linear_scaling_schedule,
    run_scaling_sweep as run_scaling_sweep,
)
