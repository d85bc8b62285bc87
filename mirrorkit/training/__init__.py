"""Small training loops, each showing one mechanism at work.

* :mod:`~mirrorkit.training.mixed_precision`: dynamic loss scaling under a strategy.
* :mod:`~mirrorkit.training.keras_fit`: the working path for Keras 3 ``fit`` under
  ``MultiWorkerMirroredStrategy``.
* :mod:`~mirrorkit.training.recipes`: training functions for a local cluster that survive a
  killed worker.
* :mod:`~mirrorkit.training.checkpoints`: resuming from the newest readable checkpoint, and
  refusing one written by another model or optimizer.
* :mod:`~mirrorkit.training.scaling`: one task trained at several replica counts, to compare
  learning-rate rules side by side.
* :mod:`~mirrorkit.training.learning_rate_rules`, :mod:`~mirrorkit.training.float16` and
  :mod:`~mirrorkit.training.dynamic_loss_scale`: without TensorFlow, the learning rate of each
  step, float16's range, and Keras's dynamic loss scale (chapters 4 and 8, and their browser
  labs).

Example:
    >>> from mirrorkit.training.scaling import linear_scaling_schedule
    >>> linear_scaling_schedule(0.1, 2)
    0.2
"""
