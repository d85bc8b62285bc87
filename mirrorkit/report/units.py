"""Byte sizes, rates and durations as people read them ("1.5 KiB", "3.2 GB/s", "25 us").

Sizes as people write them ("4KiB") are read by :func:`mirrorkit._validate.parse_size`.

Example:
    >>> from mirrorkit.report.units import format_rate, format_size
    >>> format_size(1536), format_rate(3.2e9)
    ('1.5 KiB', '3.2 GB/s')
"""

from __future__ import annotations


def format_size(nbytes: int) -> str:
    """4096 -> '4 KiB'; 1536 -> '1.5 KiB'; 100 -> '100 B'."""
    for unit, factor in (("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10)):
        if nbytes >= factor:
            return f"{nbytes / factor:.4g} {unit}"
    return f"{nbytes} B"


def format_rate(bytes_per_second: float) -> str:
    """Decimal units, as nccl-tests prints them: 1.2e9 -> '1.2 GB/s'; 999.7e6 -> '1 GB/s'.

    Rounded to 3 significant digits before the unit is chosen, so nothing reads "1e+03 MB/s".
    """
    bytes_per_second = float(f"{bytes_per_second:.3g}")
    for unit, factor in (("GB/s", 1e9), ("MB/s", 1e6), ("KB/s", 1e3)):
        if bytes_per_second >= factor:
            return f"{bytes_per_second / factor:.3g} {unit}"
    return f"{bytes_per_second:.3g} B/s"


def format_seconds(seconds: float) -> str:
    """0.00123 -> '1.23 ms'; 2.5e-05 -> '25 us'; 1.5 -> '1.5 s'; 0.0009996 -> '1 ms'.

    Rounded to 3 significant digits before the unit is chosen, so nothing reads "1e+03 us".
    """
    seconds = float(f"{seconds:.3g}")
    if seconds >= 1:
        return f"{seconds:.3g} s"
    if seconds >= 1e-3:
        return f"{seconds * 1e3:.3g} ms"
    return f"{seconds * 1e6:.3g} us"


def format_percent(fraction: float) -> str:
    """0.123 -> '12.3%'; 0.0004 -> '0.04%'."""
    percent = fraction * 100
    return f"{percent:.3g}%" if percent < 100 else f"{percent:.0f}%"
