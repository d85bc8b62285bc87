"""Checks a learner runs on their own code: a verdict and a hint, never a traceback.

* :mod:`~mirrorkit.checks.verdicts`: the ``check_*`` functions and :class:`~mirrorkit.CheckResult`.
* :mod:`~mirrorkit.checks.equivalence`: does a distributed step compute one device's gradient?
* :mod:`~mirrorkit.checks.input_preview`: which examples each replica receives.
* :mod:`~mirrorkit.checks.measurement`: a learner's reading of all-reduce measurements.
* :mod:`~mirrorkit.checks.resume`: does a learner's checkpointing survive a killed worker?
"""
