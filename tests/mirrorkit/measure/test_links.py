"""Published link bandwidths: each has a source, a positive bandwidth and says what it counts."""

import math

import pytest

from mirrorkit.measure.links import LINKS, Link


def test_every_link_has_a_source_a_positive_bandwidth_and_says_what_it_counts():
    assert len(LINKS) >= 9
    for key, link in LINKS.items():
        assert link.source.startswith(("https://", "http://")), key
        assert link.bandwidth > 0 and math.isfinite(link.bandwidth), key
        assert "per direction" in link.counts, key
        assert link.note, key
    assert LINKS["nvlink4_h100"].bandwidth == 450e9
    assert LINKS["nvlink3_a100"].bandwidth == 300e9
    assert LINKS["infiniband_ndr"].bandwidth == LINKS["ethernet_400g"].bandwidth == 50e9
    assert LINKS["pcie4_x16"].bandwidth == pytest.approx(31.5e9, rel=1e-3)
    text = str(LINKS)
    assert all(key in text for key in LINKS) and "No latency is cited" in text


# -- wrong inputs -----------------------------------------------------------------------------


WRONG_LINKS = [
    pytest.param(("", 1e9, "per direction", "https://x.org"), ValueError, "name", r"non-empty"),
    pytest.param(
        ("a", -1.0, "per direction", "https://x.org"),
        ValueError,
        "bandwidth",
        r"positive, finite number of bytes per second",
    ),
    pytest.param(
        ("a", "1GB/s", "per direction", "https://x.org"),
        TypeError,
        "bandwidth",
        r"number of bytes per second, got str",
    ),
    pytest.param(("a", 1e9, " ", "https://x.org"), ValueError, "counts", r"what the figure"),
    pytest.param(("a", 1e9, "per direction", "the datasheet"), ValueError, "source", r"the URL"),
]


@pytest.mark.wrong_inputs("mk.Link")
@pytest.mark.parametrize(("args", "error", "argument", "match"), WRONG_LINKS)
def test_wrong_link_arguments_get_a_clear_message(refuses, args, error, argument, match):
    refuses(lambda: Link(*args), error, argument, match)
