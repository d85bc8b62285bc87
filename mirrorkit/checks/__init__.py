"""Checks a learner runs on their own code: a verdict and a hint, never a traceback.

* :mod:`~mirrorkit.checks.result`: :class:`~mirrorkit.CheckResult`, the verdict every check returns.
* :mod:`~mirrorkit.checks.replica_values`: a mirrored variable, per-replica values, an all-reduce.
* :mod:`~mirrorkit.checks.input_pipeline`, :mod:`~mirrorkit.checks.input_preview` and
  :mod:`~mirrorkit.checks.batch_split`: how a dataset is split across replicas.
* :mod:`~mirrorkit.checks.loss_step`: does a custom loop's loss give one device's gradient?
* :mod:`~mirrorkit.checks.equivalence`: does a distributed step compute one device's gradient?
* :mod:`~mirrorkit.checks.all_reduce_ranking`, :mod:`~mirrorkit.checks.all_reduce_growth`: a
  learner's reading of all-reduce measurements.
* :mod:`~mirrorkit.checks.resume`: does a learner's checkpointing survive a killed worker?
* :mod:`~mirrorkit.checks.evaluation`: does an evaluation loop average over every example?
* :mod:`~mirrorkit.checks.restore`: does a restore give back the saved model, bit for bit?
* :mod:`~mirrorkit.checks.cluster_spec`: a parameter-server TF_CONFIG, and a variable partitioner.
* :mod:`~mirrorkit.checks.parameter_server`: steps scheduled on a parameter-server cluster;
  :mod:`~mirrorkit.checks.partitioner`: a partitioner made for a given cluster.
* :mod:`~mirrorkit.checks.accumulation`, :mod:`~mirrorkit.checks.clipping`: gradient
  accumulation and clipping under a strategy.
* :mod:`~mirrorkit.checks.loss_shares`, :mod:`~mirrorkit.checks.auto_shard`: loss shares and
  auto-sharding worked out without TensorFlow (chapters 3, 4 and 6, and their browser labs).
"""
