"""The browser lab site: JupyterLite with its Pyodide kernel, built beside the HTML book.

A reader with no Python opens a chapter's lab from the book's page and runs its idea in the
browser, offline. Design notes and what was measured: docs/design/browser-labs.md.

Example:
    >>> from bookbuild.lite.modules import BROWSER_MODULES
    >>> "mirrorkit.checks.batch_split" in BROWSER_MODULES
    True
"""
