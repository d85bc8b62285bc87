"""Checks a learner runs on their own code: a verdict and a hint, never a traceback.

* :mod:`~mirrorkit.checks.result`: :class:`~mirrorkit.CheckResult`, the verdict every check returns.
* :mod:`~mirrorkit.checks.verdicts`: checks of values, all-reduces, input splits and losses.
* :mod:`~mirrorkit.checks.equivalence`: does a distributed step compute one device's gradient?
* :mod:`~mirrorkit.checks.input_preview`: which examples each replica receives.
* :mod:`~mirrorkit.checks.measurement`: a learner's reading of all-reduce measurements.
* :mod:`~mirrorkit.checks.resume`: does a learner's checkpointing survive a killed worker?
* :mod:`~mirrorkit.checks.evaluation`: does an evaluation loop average over every example?
* :mod:`~mirrorkit.checks.restore`: does a restore give back the saved model, bit for bit?
* :mod:`~mirrorkit.checks.cluster_spec`: a parameter-server cluster's TF_CONFIG, and a variable
  partitioner.
* :mod:`~mirrorkit.checks.scaling`: gradient accumulation and clipping under a strategy.
"""
