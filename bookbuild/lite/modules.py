"""The modules of mirrorkit and mirrorwidgets that run in the browser, with no TensorFlow.

The lab site installs wheels built from the same sources holding only these modules and the
project modules they import (:mod:`bookbuild.lite.wheels`);
``tests/mirrorkit/test_tensorflow_free.py`` imports each with TensorFlow, Keras and NumPy
refused. A lab (``book/browser/``) may import only these.

Example:
    >>> all(name.split(".")[0] in ("mirrorkit", "mirrorwidgets") for name in BROWSER_MODULES)
    True
"""

from __future__ import annotations

# The modules a browser lab imports; the project modules they import come with them.
BROWSER_MODULES = (
    "mirrorkit.checks.batch_split",
    "mirrorkit.checks.loss_shares",
    "mirrorkit.checks.auto_shard",
    "mirrorkit.checks.input_preview",
    "mirrorkit.checks.lab_settings",
    "mirrorkit.checks.lab_answers",
    "mirrorkit.measure.schedules",
    "mirrorkit.training.dynamic_loss_scale",
    "mirrorkit.training.float16",
    "mirrorkit.training.learning_rate_rules",
    "mirrorkit.measure.replay",
    "mirrorkit.measure.links",
    "mirrorwidgets.all_reduce_stepper",
    "mirrorwidgets.batch_split",
    "mirrorwidgets.lab_charts",
    "mirrorwidgets.step_timeline",
)
