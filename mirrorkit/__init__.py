"""mirrorkit: see ``tf.distribute`` at work, on a laptop or a cluster.

Everything here wraps the real TensorFlow objects; the package is laid out by concept:

* at the top, what every lesson uses: :mod:`~mirrorkit.devices`, :mod:`~mirrorkit.strategy`,
  :mod:`~mirrorkit.inspection`, :mod:`~mirrorkit.reproducibility`, :mod:`~mirrorkit.errors`
  and :mod:`~mirrorkit.hosted`;
* :mod:`mirrorkit.checks` (verdicts on a learner's code), :mod:`mirrorkit.training`
  (training loops), :mod:`mirrorkit.measure` (benchmarks and tracing),
  :mod:`mirrorkit.cluster` (multi-worker clusters), :mod:`mirrorkit.report` (the renderer).

Public names are listed once, in ``__init__.pyi``, and loaded on first use (design notes:
docs/design/core.md, "The package").

Example:
    >>> import mirrorkit as mk
    >>> "simulate_replicas" in mk.__all__
    True
"""

import lazy_loader

__version__ = "0.1.0.dev0"

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
