"""``python -m mirrorkit.measure``: the all-reduce benchmark from a shell.

The options are those of :func:`mirrorkit.measure.command.main`.
"""

import sys

from mirrorkit.measure.command import main

sys.exit(main())
