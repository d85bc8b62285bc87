"""Published bandwidths of real interconnects, each with its source, for the cost model.

:data:`LINKS` maps a short name (``"pcie4_x16"``, ``"nvlink4_h100"``, ``"ethernet_25g"``...)
to a :class:`Link`: bytes per second in one direction, what the figure counts, and where it
comes from. :meth:`mirrorkit.CostModel.predict` takes a link's bandwidth in place of the one
fitted on this machine. No latency is listed: none is cited for these links here.

Example:
    >>> import mirrorkit as mk
    >>> link = mk.LINKS["pcie4_x16"]
    >>> round(link.bandwidth / 1e9, 2), link.source.startswith("https://")
    (31.51, True)
"""

from __future__ import annotations

import difflib
import math
from collections.abc import Iterator, Mapping
from dataclasses import dataclass

from mirrorkit._validate import refuse
from mirrorkit.report.render import Line, Report, Reported
from mirrorkit.report.units import format_rate


@dataclass(frozen=True)
class Link:
    """An interconnect's published bandwidth: what one direction of a replica's link carries.

    Attributes:
        name: What it is, e.g. ``"NVLink 4 (H100 SXM)"``.
        bandwidth: Bytes per second in one direction.
        counts: What the figure counts (raw signalling or after encoding, one direction or
            both), in one line.
        source: Where the figure comes from (a URL).
        note: Anything else a reader should know (how it was checked, what it leaves out).

    Example:
        >>> from mirrorkit.measure.links import Link
        >>> mine = Link("my 10 GbE", 10e9 / 8, "per direction, MAC data rate",
        ...             "https://example.org/my-switch")
        >>> mine.bandwidth
        1250000000.0
    """

    name: str
    bandwidth: float
    counts: str
    source: str
    note: str = ""

    def __post_init__(self) -> None:
        write = (
            "Link('10 GbE', 10e9 / 8, 'per direction, MAC data rate', 'https://...'), "
            "with the bandwidth in bytes per second, one direction"
        )
        if not isinstance(self.name, str) or not self.name.strip():
            refuse("name", self.name, must="non-empty text", write=write, error=ValueError)
        bandwidth = self.bandwidth
        if isinstance(bandwidth, bool) or not isinstance(bandwidth, int | float):
            refuse("bandwidth", bandwidth, must="a number of bytes per second", write=write)
        if not (bandwidth > 0 and math.isfinite(bandwidth)):
            must = "a positive, finite number of bytes per second"
            refuse("bandwidth", bandwidth, must=must, write=write, error=ValueError)
        object.__setattr__(self, "bandwidth", float(bandwidth))
        for name in ("counts", "source", "note"):
            if not isinstance(getattr(self, name), str):
                refuse(name, getattr(self, name), must="text", write=write)
        if not self.counts.strip():
            must = "text that says what the figure counts (e.g. 'per direction, after encoding')"
            refuse("counts", self.counts, must=must, write=write, error=ValueError)
        if not self.source.startswith(("http://", "https://")):
            must = "the URL the figure comes from"
            refuse("source", self.source, must=must, write=write, error=ValueError)


class _LinkTable(Mapping, Reported):
    """:data:`LINKS`: a mapping from short names to :class:`Link`, printed as a table."""

    def __init__(self, links: Mapping[str, Link]) -> None:
        self._links = dict(links)

    def __getitem__(self, key: str) -> Link:
        return self._links[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._links)

    def __len__(self) -> int:
        return len(self._links)

    def report(self) -> Report:
        """The links as a table: name, bandwidth per direction, what it counts, source."""
        rows = list(self._links.items())
        return Report(
            headline=("Published interconnect bandwidths, one direction",),
            columns=(
                ("link", [key for key, _ in rows]),
                ("what", [link.name for _, link in rows]),
                ("bandwidth", [format_rate(link.bandwidth) for _, link in rows]),
                ("counts", [link.counts for _, link in rows]),
                ("source", [link.source for _, link in rows]),
            ),
            lines=(
                Line(
                    "No latency is cited for any link: predictions on a link take launch and "
                    "alpha from the fit on this machine unless you pass alpha=."
                ),
            ),
        )


_PCIE_RELEASE = (
    "https://convergedigest.blogspot.com/2019/05/new-pci-express-50-spec-handles-32.html"
)
_PCIE_NOTE = (
    "PCI-SIG's PCIe 5.0 release (as reproduced at the source; pcisig.com itself was not in the "
    "search index) gives the raw rate (x16: 32 GB/s per direction for 4.0, 64 for 5.0, "
    "'128 GB/s' for 5.0 counting both directions); the 128/130 encoding factor is the Linux "
    "kernel's PCIE_SPEED2MBS_ENC (drivers/pci/pci.h). TLP/DLLP packet overhead is not "
    "subtracted, so copies see less."
)

#: Published bandwidths of interconnects, one direction, in bytes per second; each with
#: what the figure counts and its source. Print it for the table.
LINKS = _LinkTable(
    {
        "pcie4_x16": Link(
            "PCIe 4.0 x16",
            16e9 * 16 * 128 / 130 / 8,
            "per direction, after 128b/130b encoding: 16 GT/s x 16 lanes x 128/130 / 8",
            _PCIE_RELEASE,
            _PCIE_NOTE,
        ),
        "pcie5_x16": Link(
            "PCIe 5.0 x16",
            32e9 * 16 * 128 / 130 / 8,
            "per direction, after 128b/130b encoding: 32 GT/s x 16 lanes x 128/130 / 8",
            _PCIE_RELEASE,
            _PCIE_NOTE,
        ),
        "nvlink3_a100": Link(
            "NVLink 3 (A100)",
            600e9 / 2,
            "per direction: half of NVIDIA's 600 GB/s, the total of an A100's 12 "
            "third-generation links in both directions",
            "https://www.nvidia.com/de-de/data-center/nvlink/",
            "NVIDIA's NVLink page (the German edition was the one found): 'bis zu zwölf "
            "NVLink-Verbindungen der dritten Generation für eine Bandbreite von insgesamt "
            "600 GB/s'. The total of all the GPU's links, not of one link.",
        ),
        "nvlink4_h100": Link(
            "NVLink 4 (H100 SXM)",
            900e9 / 2,
            "per direction: half of NVIDIA's 900 GB/s 'bidirectional per GPU' over an "
            "H100's 18 fourth-generation links in DGX/HGX servers",
            "https://nvidia.com/de-de/technologies/hopper-architecture",
            "NVIDIA's Hopper page (German edition found): '900 Gigabyte pro Sekunde (GB/s) "
            "bidirektional pro Grafikprozessor'. A user measured 380 GB/s one way against "
            "450 GB/s theoretical (github.com/NVIDIA/nccl/issues/1264).",
        ),
        "ethernet_25g": Link(
            "25 Gb Ethernet",
            25e9 / 8,
            "per direction (full duplex): the 25 Gb/s MAC data rate, after 64b/66b "
            "encoding; frame, IP and transport headers still come out of it",
            "http://www.ieee802.org/3/by/P802_3by_Objectives.pdf",
            "IEEE P802.3by objectives 'Support a MAC data rate of 25 Gb/s', full duplex, "
            "as quoted in a search result; the PDF itself was not retrieved.",
        ),
        "ethernet_100g": Link(
            "100 Gb Ethernet",
            100e9 / 8,
            "per direction (full duplex): the 100 Gb/s MAC data rate, after 64b/66b "
            "encoding; frame, IP and transport headers still come out of it",
            "https://www.fiberise.com/wiki/100-gigabit-ethernet-physical-standards",
            "IEEE 802.3ba objectives ('Support MAC data rates of 40 and 100 Gbit/s', "
            "full-duplex only) as quoted by this third-party page; no IEEE page for 802.3ba "
            "was in the search index.",
        ),
        "ethernet_400g": Link(
            "400 Gb Ethernet",
            400e9 / 8,
            "per direction (full duplex): the 400 Gb/s MAC data rate; frame, IP and "
            "transport headers still come out of it",
            "https://standards.iteh.ai/catalog/standards/iso/ab6cd111-e544-4b35-bb49-967e173caa4e/"
            "iso-iec-ieee-8802-3-2017-amd-10-2019",
            "IEEE 802.3bs-2017 (ISO/IEC/IEEE 8802-3 Amd 10), 'parameters ... for 200 Gb/s and "
            "400 Gb/s operation', from a standards catalogue; the line encoding (256b/257b) "
            "was not verified.",
        ),
        "infiniband_hdr": Link(
            "InfiniBand HDR (200 Gb/s)",
            200e9 / 8,
            "per direction: the 200 Gb/s data rate of one HDR port (links are full duplex)",
            "https://docs.nvidia.com/networking/display/ConnectX6EN/Introduction",
            "NVIDIA ConnectX-6 manual: 'up to two ports of 200Gb/s for InfiniBand and "
            "Ethernet'. Whether 200 Gb/s is before or after line encoding was not verified.",
        ),
        "infiniband_ndr": Link(
            "InfiniBand NDR (400 Gb/s)",
            400e9 / 8,
            "per direction: the 400 Gb/s data rate of one NDR port (links are full duplex)",
            "https://docs.nvidia.com/networking/display/ConnectX7VPI/Introduction",
            "NVIDIA ConnectX-7 manual: 'Single-port OSFP: NDR 400Gb/s and 400GbE'. Whether "
            "400 Gb/s is before or after line encoding was not verified.",
        ),
    }
)


def resolve_link(value) -> Link | None:
    """``None``, a :class:`Link`, or the link named ``value`` in :data:`LINKS` (forgiving case).

    Example:
        >>> resolve_link("PCIe 4.0 x16") is resolve_link("pcie4_x16") is LINKS["pcie4_x16"]
        True
    """
    if value is None or isinstance(value, Link):
        return value
    names = ", ".join(LINKS)
    if not isinstance(value, str):
        write = f"link='nvlink4_h100', or another of {names}"
        refuse("link", value, must="a name in LINKS or a Link", write=write)
    if value in LINKS:
        return LINKS[value]
    folded = {k.lower(): k for k in LINKS} | {v.name.lower(): k for k, v in LINKS.items()}
    if value.strip().lower() in folded:
        return LINKS[folded[value.strip().lower()]]
    close = difflib.get_close_matches(value.lower(), list(folded), n=1, cutoff=0.5)
    hint = f"did you mean {folded[close[0]]!r}? " if close else ""
    raise ValueError(
        f"link {value!r} is not in LINKS; {hint}choose one of {names}, or pass "
        "Link(name, bytes_per_second, counts, source_url) of your own."
    )
