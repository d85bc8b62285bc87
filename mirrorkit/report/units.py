"""Byte sizes, rates and durations as people write and read them ("4KiB", "3.2 GB/s").

Example:
    >>> from mirrorkit.report.units import format_size, parse_size
    >>> parse_size("4KiB"), format_size(1536)
    (4096, '1.5 KiB')
"""

from __future__ import annotations

import re

from mirrorkit._validate import refuse

_BINARY = {"": 1, "B": 1, "KIB": 1 << 10, "MIB": 1 << 20, "GIB": 1 << 30}
_DECIMAL = {"KB": 10**3, "MB": 10**6, "GB": 10**9, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
_SIZE = re.compile(r"^\s*(-?\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*$")


def parse_size(size) -> int:
    """4096, "4096", "4KiB", "1 MiB", "16M" (binary), "1MB" (decimal) -> bytes as an int."""
    if isinstance(size, int) and not isinstance(size, bool):
        return size
    if isinstance(size, float) and size.is_integer():
        return int(size)
    if not isinstance(size, str):
        must = "a number of bytes or text like '4KiB'"
        refuse("a size", size, must=must, write="4096 or '4KiB'")
    match = _SIZE.match(size)
    unit = match.group(2).upper() if match else None
    factor = None if unit is None else (_BINARY.get(unit) or _DECIMAL.get(unit))
    if match is None or factor is None:
        raise ValueError(
            f"cannot read the size {size!r}: write bytes (4096) or a number with one of the "
            "units B, KiB, MiB, GiB (1024-based) or KB, MB, GB (1000-based), e.g. '4KiB'."
        )
    value = float(match.group(1)) * factor
    if not value.is_integer():
        raise ValueError(f"the size {size!r} is not a whole number of bytes.")
    return int(value)


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
