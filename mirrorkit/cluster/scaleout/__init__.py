"""Configuration for running a ``train(ctx)`` function on a real cluster.

The local launcher starts every worker on one machine. When that machine is not enough,
the same function runs on many machines with ``python -m mirrorkit.worker
path/to/train.py:train``, started once per node by a scheduler the cluster already has.
This package writes what that scheduler needs, and nothing runs here:

* :mod:`~mirrorkit.cluster.scaleout.hosts`: :func:`tf_config`, :func:`tf_configs` and
  :func:`tf_config_env`, the ``TF_CONFIG`` of each worker, for machines you start by hand
  (or with any tool that sets variables).
* :mod:`~mirrorkit.cluster.scaleout.slurm`: :func:`slurm_script`, an ``sbatch`` script with
  one worker per node; each worker reads its place in the cluster from Slurm's variables
  with TensorFlow's ``SlurmClusterResolver``. :func:`slurm_tf_config` reads the same
  variables without TensorFlow.
* :mod:`~mirrorkit.cluster.scaleout.kubernetes`: :func:`kubernetes_manifest`, a headless
  Service and an Indexed Job, whose pods compute their ``TF_CONFIG`` from their
  completion index.

What ``MultiWorkerMirroredStrategy`` needs from the network: every worker must reach every
other worker on its port (the all-reduce goes between all of them, not only to the
chief), under the host names written in ``TF_CONFIG``.

Security: TensorFlow's gRPC server has no authentication and no encryption, and it
listens on every network interface of the machine (``0.0.0.0:<port>``). Anyone who can
reach that port can run TensorFlow operations in the worker's process. Keep the workers on
a private network, or behind a firewall that admits only the other workers; never expose
the port to the public internet.

Its public names are listed once, in ``__init__.pyi``.

Example:
    >>> from mirrorkit.cluster.scaleout import tf_configs
    >>> tf_configs(["node1", "node2"])[1]["task"]
    {'type': 'worker', 'index': 1}
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
