"""``python -m mirrorkit.worker FILE[:FUNCTION]``: start one worker of a real cluster.

A scheduler (Slurm's ``srun``, a Kubernetes pod, a shell on each machine) runs this once per
node; the options are those of :func:`mirrorkit.cluster.worker_cli.main`.

Example:
    >>> import subprocess, sys
    >>> subprocess.run([sys.executable, "-m", "mirrorkit.worker", "--help"],
    ...                capture_output=True).returncode
    0
"""

import sys

from mirrorkit.cluster.worker_cli import main

if __name__ == "__main__":
    sys.exit(main())
