"""The one renderer behind every text and HTML report of mirrorkit, and its widgets' palette.

* :mod:`~mirrorkit.report.render`: a report is a headline, a table and lines
  (:class:`~mirrorkit.report.render.Report`); :class:`~mirrorkit.report.render.Reported`
  gives every reporting class its ``print``, ``repr`` and notebook HTML from it.
* :mod:`~mirrorkit.report.style`: the one palette and stylesheet, shared with mirrorwidgets.
* :mod:`~mirrorkit.report.values`: short, stable text for devices and array values.
* :mod:`~mirrorkit.report.units`: byte sizes, rates and durations as people write them.
"""
