"""Measurements of distribution at work: the all-reduce, and where a step's time goes.

* :mod:`~mirrorkit.measure.allreduce` times the real all-reduce, into the results of
  :mod:`~mirrorkit.measure.benchmark` (``python -m mirrorkit.measure`` from a shell);
  :mod:`~mirrorkit.measure.schedules` and :mod:`~mirrorkit.measure.replay` play each
  algorithm step by step, without TensorFlow.
* :mod:`~mirrorkit.measure.tracing` splits each training step into input, compute and
  all-reduce time (:mod:`~mirrorkit.measure.step_trace`, exported by
  :mod:`~mirrorkit.measure.trace_events`).
"""
