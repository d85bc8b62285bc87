"""Code that makes TensorFlow, Keras and NumPy unimportable, as in the browser labs' Python.

Run first in a subprocess or a kernel (:data:`REFUSE`); the tests of the TensorFlow-free
modules, of the site's wheels and of the labs share it.
"""

REFUSED = ("tensorflow", "keras", "numpy")
REFUSE = f"""\
import sys


class _RefuseInBrowser:
    def find_spec(self, name, path=None, target=None):
        if name.split(".")[0] in {REFUSED!r}:
            raise ImportError(f"{{name}} is refused here: the browser (Pyodide) does not have it")


sys.meta_path.insert(0, _RefuseInBrowser())
"""
