"""Configuration to run a ``train(ctx)`` function on a real cluster: TF_CONFIG, Slurm, Kubernetes.

Each worker runs ``python -m mirrorkit.worker path/to/train.py:train``, started once per node
by the cluster's scheduler; nothing runs here. Security: TensorFlow's gRPC server has no
authentication and listens on every interface: keep the workers on a private network (more
in docs/design/cluster.md). Its public names are listed once, in ``__init__.pyi``.

Example:
    >>> from mirrorkit.cluster.scaleout import tf_configs
    >>> tf_configs(["node1", "node2"])[1]["task"]
    {'type': 'worker', 'index': 1}
"""

import lazy_loader

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
