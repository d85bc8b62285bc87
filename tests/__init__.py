"""mirrorbook's tests: a regular package, so that ``tests.*`` is always this folder.

A namespace ``tests`` loses to any regular package of that name on ``sys.path``, and IPython
7 (Colab's 7.34.0, the hosted job's) appends ``IPython/extensions``, which holds one, to
``sys.path`` when it is imported: a cluster worker that imports IPython could then not import
a test's function (``No module named 'tests.mirrorkit'``).
"""
