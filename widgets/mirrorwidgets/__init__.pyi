"""The public names of :mod:`mirrorwidgets`, each listed once: loaded lazily from here.

Each import names its public name twice (``X as X``), the way a stub marks a re-export
(PEP 484); ``lazy_loader.attach_stub`` reads the same lines at run time.
"""

from ._routes import hierarchical_groups as hierarchical_groups
from .all_reduce_chart import (
    AllReduceChart as AllReduceChart,
)
from .all_reduce_stepper import (
    AllReduceStepper as AllReduceStepper,
)
from .batch_split import (
    BatchSplitView as BatchSplitView,
)
from .cluster_view import (
    ClusterView as ClusterView,
)
from .live import (
    LiveTrainingCallback as LiveTrainingCallback,
    LiveTrainingHook as LiveTrainingHook,
    LiveTrainingView as LiveTrainingView,
)
from .loss_curves import LossCurves as LossCurves
from .loss_scale import (
    LossScaleView as LossScaleView,
)
from .replica_grid import (
    ReplicaGrid as ReplicaGrid,
)
from .step_timeline import (
    StepTimeline as StepTimeline,
)
from .topology import TopologyDiagram as TopologyDiagram, TopologyView as TopologyView
