"""mirrorwidgets: draw what mirrorkit measures, live in Jupyter and as static snapshots.

Like :mod:`mirrorkit`, importing this package does not import TensorFlow or Keras: the
public names are listed once, in ``__init__.pyi``, and each widget's module is loaded when
first used (``lazy_loader``), so ``mirrorkit.simulate_replicas`` and
``mirrorkit.make_reproducible`` can still run first.

Example:
    >>> import mirrorkit, mirrorwidgets
    >>> mirrorwidgets.__version__ == mirrorkit.__version__  # one release, both packages
    True
    >>> "ReplicaGrid" in mirrorwidgets.__all__
    True
"""

import contextlib
import importlib.metadata
import sys

import lazy_loader

__version__ = "0.1.0.dev0"

# Colab draws its own ipywidgets 7.7.1 natively; ipywidgets 8, where a learner installed it,
# only through its custom widget manager, which a notebook must switch on (anywidget and
# ipyleaflet do the same on import). Anywhere else this does nothing.
if "google.colab" in sys.modules and not importlib.metadata.version("ipywidgets").startswith("7."):
    with contextlib.suppress(ImportError, AttributeError):
        from google.colab import output

        output.enable_custom_widget_manager()

__getattr__, __dir__, __all__ = lazy_loader.attach_stub(__name__, __file__)
