"""The public names of :mod:`mirrorkit.cluster.scaleout`, each listed once.

Each import names its public name twice (``X as X``), the way a stub marks a re-export
(PEP 484); ``lazy_loader.attach_stub`` reads the same lines at run time.
"""

from ._arguments import (
    DEFAULT_PORT as DEFAULT_PORT,
)
from .hosts import (
    tf_config as tf_config,
    tf_config_env as tf_config_env,
    tf_configs as tf_configs,
)
from .kubernetes import (
    kubernetes_manifest as kubernetes_manifest,
)
from .slurm import (
    slurm_script as slurm_script,
    slurm_tf_config as slurm_tf_config,
)
