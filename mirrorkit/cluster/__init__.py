"""A real ``MultiWorkerMirroredStrategy`` cluster of local processes, and real clusters' set-up.

* :mod:`~mirrorkit.cluster.launcher`: :class:`~mirrorkit.LocalCluster` starts one supervisor
  process, which starts and owns the workers (:mod:`~mirrorkit.cluster._supervisor`,
  :mod:`~mirrorkit.cluster._worker_main`), in a private network namespace where it can
  (:mod:`~mirrorkit.cluster._netns`). On Linux the processes start warm: the kernel's warm
  process (:mod:`~mirrorkit.cluster._warm` on the kernel's side,
  :mod:`~mirrorkit.cluster._zygote` itself) imports TensorFlow once and forks every run's
  supervisor, which forks its workers (:mod:`~mirrorkit.cluster._forked`).
* :mod:`~mirrorkit.cluster.protocol`: what the launcher, the supervisor and the workers say to
  each other, as typed messages.
* :mod:`~mirrorkit.cluster.events`: what a run reports while it runs, folded into a status.
* :mod:`~mirrorkit.cluster.worker`: what a training function sees on each worker.
* :mod:`~mirrorkit.cluster.scaleout`: ``TF_CONFIG``, Slurm and Kubernetes configuration for
  running the same function on many machines.
"""
