"""mirrorkit: see ``tf.distribute`` at work, on a laptop or a cluster.

Everything here wraps the real TensorFlow objects. The package is laid out by concept:

* at the top, what every lesson uses: :mod:`~mirrorkit.devices` (replicas on any machine),
  :mod:`~mirrorkit.strategy`, :mod:`~mirrorkit.inspection` (distributed values as tables),
  :mod:`~mirrorkit.reproducibility`, :mod:`~mirrorkit.errors` and :mod:`~mirrorkit.hosted`;
* :mod:`mirrorkit.checks`: verdicts on a learner's own code;
* :mod:`mirrorkit.training`: training loops that show one mechanism (loss scaling, Keras
  ``fit`` under ``MultiWorkerMirroredStrategy``, checkpointed training);
* :mod:`mirrorkit.measure`: all-reduce benchmarks and step tracing;
* :mod:`mirrorkit.cluster`: a real multi-worker cluster of local processes, and the
  configuration for real clusters;
* :mod:`mirrorkit.report`: the one renderer behind every text and HTML report.

The public names are listed once, in ``__init__.pyi``, and loaded on first use (SPEC 1,
``lazy_loader``): TensorFlow is imported only when a name that needs it is, so that
:func:`make_reproducible` can quiet TensorFlow's start-up logs before they print.

Example:
    >>> import mirrorkit as mk
    >>> "simulate_replicas" in mk.__all__
    True
"""

import lazy_loader

__version__ = "0.1.0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
