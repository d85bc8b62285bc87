"""A real ``MultiWorkerMirroredStrategy`` cluster of local processes, and real clusters' set-up.

:mod:`~mirrorkit.cluster.launcher` (``LocalCluster``, with the owner loop in ``_session``),
:mod:`~mirrorkit.cluster.cluster_run`, :mod:`~mirrorkit.cluster.worker` (``WorkerContext``),
:mod:`~mirrorkit.cluster.worker_cli` (``python -m mirrorkit.worker``),
:mod:`~mirrorkit.cluster.protocol`, :mod:`~mirrorkit.cluster.events` and
:mod:`~mirrorkit.cluster.scaleout`; how they fit together: docs/design/cluster.md.

Example:
    >>> import mirrorkit as mk
    >>> mk.LocalCluster(2, echo=False).num_processes
    2
"""
