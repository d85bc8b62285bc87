"""The one renderer behind every text and HTML report of mirrorkit and its widgets.

* :mod:`~mirrorkit.report.tables`: tables as plain text and as HTML, with short, stable
  text for devices and array values.
* :mod:`~mirrorkit.report.units`: byte sizes, rates and durations as people write them.
"""
