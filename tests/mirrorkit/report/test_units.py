"""Units: a value near a unit's boundary is rounded first, then given its unit."""

import pytest

from mirrorkit.report.units import format_rate, format_seconds


@pytest.mark.parametrize(
    ("seconds", "text"),
    [(0.0009996, "1 ms"), (0.00123, "1.23 ms"), (2.5e-5, "25 us"), (0.9996, "1 s"), (0.0, "0 us")],
)
def test_seconds_never_read_1e3_of_the_smaller_unit(seconds, text):
    assert format_seconds(seconds) == text


@pytest.mark.parametrize(
    ("rate", "text"),
    [(999.7e6, "1 GB/s"), (1.2e9, "1.2 GB/s"), (999.6e3, "1 MB/s"), (12.0, "12 B/s")],
)
def test_rates_never_read_1e3_of_the_smaller_unit(rate, text):
    assert format_rate(rate) == text
