"""bookbuild: the book's own logic, which ``dev.py`` runs but does not contain.

``dev.py`` is the task runner: it finds interpreters, makes the virtual environments and runs
the test jobs. What it runs for the book lives here, one concept per module:

- :mod:`bookbuild.manifest`: reading and checking ``jupyter_book.toml``;
- :mod:`bookbuild.cells`: the cells written into every chapter from the manifest;
- :mod:`bookbuild.execute`: running chapters in a kernel and storing their outputs;
- :mod:`bookbuild.jupyterbook`: Jupyter Book 1's configuration, and the HTML build;
- :mod:`bookbuild.checks`: the commands of lint, doctests, the test suite's parts and nbval;
- :mod:`bookbuild.lanes`: the test jobs' stages, run side by side;
- :mod:`bookbuild.timing`: where the test command's time goes, and its budget;
- :mod:`bookbuild.tasks`: the internal ``dev.py _...`` commands, run inside an environment;
- :mod:`bookbuild.shell`: running a command the way every part of ``dev.py`` does.

Every module imports only the standard library at the top, so ``dev.py`` can import the
package before any environment exists; nbformat, nbclient and the rest are imported by the
functions that use them, which run inside the book's environment.

Example:
    >>> from bookbuild import ROOT
    >>> (ROOT / "jupyter_book.toml").is_file()
    True
"""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent  # the project's top folder, where dev.py is
