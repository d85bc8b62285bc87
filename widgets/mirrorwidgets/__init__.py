"""mirrorwidgets: draw what mirrorkit measures, live in Jupyter and as static snapshots.

Like :mod:`mirrorkit`, importing this package does not import TensorFlow or Keras; each
widget's module is loaded when first used, so ``mirrorkit.simulate_replicas`` and
``mirrorkit.make_reproducible`` can still run first.

Example:
    >>> import mirrorwidgets
    >>> mirrorwidgets.__version__
    '0.1.0'
    >>> "ReplicaGrid" in mirrorwidgets.__all__
    True
"""

from __future__ import annotations

import contextlib
import importlib
import sys
from typing import TYPE_CHECKING, Any

__version__ = "0.1.0"

# Colab draws ipywidgets 8 through its custom widget manager, which a notebook must switch on
# (anywidget and ipyleaflet do the same on import). Anywhere else this does nothing.
if "google.colab" in sys.modules:
    with contextlib.suppress(ImportError, AttributeError):
        from google.colab import output

        output.enable_custom_widget_manager()

# Public name -> module that defines it. Loaded on first use (PEP 562).
_EXPORTS = {
    "ReplicaGrid": "mirrorwidgets.replica_grid",
    "TopologyDiagram": "mirrorwidgets.topology",
    "TopologyView": "mirrorwidgets.topology",
    "hierarchical_groups": "mirrorwidgets.topology",
    "LiveTrainingView": "mirrorwidgets.live",
    "ClusterView": "mirrorwidgets.cluster_view",
    "LiveTrainingHook": "mirrorwidgets.live",
    "LiveTrainingCallback": "mirrorwidgets.live",
    "BatchSplitView": "mirrorwidgets.batch_split",
    "LossScaleView": "mirrorwidgets.loss_scale",
    "AllReduceChart": "mirrorwidgets.all_reduce_chart",
    "StepTimeline": "mirrorwidgets.step_timeline",
}

__all__ = [
    "AllReduceChart",
    "BatchSplitView",
    "ClusterView",
    "LiveTrainingCallback",
    "LiveTrainingHook",
    "LiveTrainingView",
    "LossScaleView",
    "ReplicaGrid",
    "StepTimeline",
    "TopologyDiagram",
    "TopologyView",
    "hierarchical_groups",
]

if TYPE_CHECKING:  # pragma: no cover - for type checkers and IDEs only
    from mirrorwidgets.all_reduce_chart import AllReduceChart
    from mirrorwidgets.batch_split import BatchSplitView
    from mirrorwidgets.cluster_view import ClusterView
    from mirrorwidgets.live import LiveTrainingCallback, LiveTrainingHook, LiveTrainingView
    from mirrorwidgets.loss_scale import LossScaleView
    from mirrorwidgets.replica_grid import ReplicaGrid
    from mirrorwidgets.step_timeline import StepTimeline
    from mirrorwidgets.topology import TopologyDiagram, TopologyView, hierarchical_groups


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mirrorwidgets' has no attribute {name!r}")
    value = getattr(importlib.import_module(module), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
