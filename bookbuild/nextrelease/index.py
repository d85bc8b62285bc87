"""What the package index offers: TensorFlow's versions and wheels, and the one above the range.

Example:
    >>> newest_above(["2.21.0", "2.22.0rc0", "2.22.0rc1", "2.23.0.dev1"], "2.22")
    '2.22.0rc1'
"""

from __future__ import annotations

import json
import os
import platform
import re
import tomllib
import urllib.request

from bookbuild.environments import PYPROJECTS

VERSION = re.compile(r"^(\d+(?:\.\d+)*)(?:(a|b|rc)(\d+))?(?:\.post(\d+))?(?:\.dev(\d+))?$")
WHEEL = re.compile(r"^([^-]+)-([^-]+)(?:-\d[^-]*)?-([^-]+)-([^-]+)-([^-]+)\.whl$")
PLATFORMS = {"Linux": ("manylinux", "linux"), "Darwin": ("macosx",), "Windows": ("win",)}


def version_key(version: str) -> tuple | None:
    """A sort key for a PEP 440 version (release, pre-release, post, dev); None if not one.

    Example:
        >>> sorted(["2.22.0", "2.22.0rc0", "2.22.0.dev1", "2.21.1"], key=version_key)
        ['2.21.1', '2.22.0.dev1', '2.22.0rc0', '2.22.0']
        >>> version_key("latest") is None
        True
    """
    match = VERSION.match(version)
    if not match:
        return None
    release, pre, pre_number, post, dev = match.groups()
    numbers = tuple(int(n) for n in release.split("."))
    numbers += (0,) * (6 - len(numbers))
    if pre:
        phase = ({"a": 0, "b": 1, "rc": 2}[pre], int(pre_number))
    else:
        phase = (-1, 0) if dev is not None and post is None else (3, 0)
    return numbers, phase, int(post or -1), int(dev) if dev is not None else float("inf")


def newest_above(versions: list[str], cap: str) -> str | None:
    """The newest release or pre-release at or above ``cap`` (a ``<`` bound); dev builds not.

    Args:
        versions: The versions on the index.
        cap: The exclusive upper bound of the supported range (``"2.22"``).

    Returns:
        The version, or None if the index has nothing above the range.

    Example:
        >>> newest_above(["2.20.0", "2.21.0", "2.22.0rc0"], "2.22")
        '2.22.0rc0'
        >>> newest_above(["2.20.0", "2.21.0", "2.21.1rc0"], "2.22") is None
        True
    """
    floor = version_key(cap)[0]
    above = [
        v
        for v in versions
        if (key := version_key(v)) and key[0] >= floor and key[3] == float("inf")
    ]
    return max(above, key=version_key, default=None)


def upper_bound(requirement: str) -> str:
    """The exclusive upper bound (``<``) of a requirement.

    Raises:
        ValueError: If it has none.

    Example:
        >>> upper_bound("tensorflow>=2.20.0,<2.22")
        '2.22'
    """
    match = re.search(r"(?<![<>=!~])<(?!=)\s*([0-9][\w.]*)", requirement)
    if not match:
        raise ValueError(f"requirement must have a < bound, got {requirement!r}: write 'x<2.22'.")
    return match[1]


def tensorflow_requirement() -> str:
    """The TensorFlow requirement of mirrorkit: the supported range (pyproject.toml).

    Example:
        >>> tensorflow_requirement().startswith("tensorflow>=")
        True
    """
    dependencies = tomllib.loads(PYPROJECTS[0].read_text())["project"]["dependencies"]
    return next(d for d in dependencies if re.match(r"tensorflow\b(?![-_.\w])", d))


def wheel_pythons(
    files: list[str],
    version: str,
    system: str = platform.system(),
    machine: str = platform.machine(),
) -> list[str]:
    """The Pythons a release has a wheel for, on a platform (this machine's by default).

    Args:
        files: The file names on the index.
        version: The release.
        system: ``platform.system()``: ``Linux``, ``Darwin`` or ``Windows``.
        machine: ``platform.machine()``: ``x86_64``, ``arm64``, ``AMD64``...

    Returns:
        ``"3.X"`` versions, oldest first (CPython wheels; free-threaded ones left out).

    Example:
        >>> files = ["tensorflow-2.22.0rc0-cp313-cp313-manylinux_2_27_x86_64.whl",
        ...          "tensorflow-2.22.0rc0-cp310-cp310-macosx_12_0_arm64.whl",
        ...          "tensorflow-2.22.0rc0-cp311-cp311-manylinux_2_27_x86_64.whl",
        ...          "tensorflow-2.21.0-cp312-cp312-manylinux_2_27_x86_64.whl"]
        >>> wheel_pythons(files, "2.22.0rc0", "Linux", "x86_64")
        ['3.11', '3.13']
    """
    families = PLATFORMS.get(system, (system.lower(),))
    found = set()
    for name in files:
        match = WHEEL.match(name)
        if not match or match[2] != version or match[4].endswith("t"):
            continue
        tags = match[5].split(".")
        if any(t.startswith(families) and t.lower().endswith(machine.lower()) for t in tags):
            found.update(re.findall(r"cp(3)(\d+)", match[3]))
    return [f"{major}.{minor}" for major, minor in sorted(found, key=lambda p: int(p[1]))]


def read_index(name: str) -> tuple[list[str], list[str]]:
    """A distribution's versions and wheel files on the package index (PEP 691 JSON).

    The index is ``$PIP_INDEX_URL``, else PyPI. Yanked files are left out.

    Raises:
        SystemExit: If the index cannot be read: nothing is tested then.

    Example:
        >>> versions, files = read_index("tensorflow")  # doctest: +SKIP
        >>> "2.21.0" in versions  # doctest: +SKIP
        True
    """
    url = f"{os.environ.get('PIP_INDEX_URL', 'https://pypi.org/simple').rstrip('/')}/{name}/"
    request = urllib.request.Request(url, headers={"Accept": "application/vnd.pypi.simple.v1+json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            page = json.load(response)
    except (OSError, ValueError) as error:
        raise SystemExit(
            f"[dev] test-next: could not read the package index at {url} ({error}); "
            "nothing was tested"
        ) from error
    files = [f["filename"] for f in page.get("files", []) if not f.get("yanked")]
    wheels = [match for f in files if (match := WHEEL.match(f))]
    return sorted({m[2] for m in wheels}, key=version_key), files
