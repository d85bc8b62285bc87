"""Measurements of distribution at work: the all-reduce, and where a step's time goes.

* :mod:`~mirrorkit.measure.allreduce`: time the real all-reduce (``python -m
  mirrorkit.measure`` from a shell, :mod:`~mirrorkit.measure.command`).
* :mod:`~mirrorkit.measure.tracing`: split each training step into input, compute and
  all-reduce time (with TensorFlow's profiler, :mod:`~mirrorkit.measure._profiler`).
"""
