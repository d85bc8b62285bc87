"""The browser lab site's wheels of mirrorkit and mirrorbook-widgets: complete, and nothing more.

Unpacked alone, with TensorFlow, Keras and NumPy refused and this tree out of reach, every
module the labs import imports from them; a module that imports NumPy at module level stops
the build with its line.
"""

from __future__ import annotations

import email
import subprocess
import sys
import textwrap
import zipfile

import pytest

from bookbuild import built
from bookbuild.lite import wheels
from bookbuild.lite.contents import SITE_FOLDER
from bookbuild.lite.modules import BROWSER_MODULES
from tests.refuse_heavy import REFUSE

# The wheels the test run's lab site carries (bookbuild.built), where dev.py built one: the
# chapters stage reads them. A pytest run alone builds them here, once.
pytestmark = pytest.mark.book

PROBE = REFUSE + textwrap.dedent(
    """
    import importlib

    for name in sys.argv[1:]:
        importlib.import_module(name)
    import mirrorkit, mirrorwidgets
    print(mirrorkit.__file__)
    print(mirrorwidgets.__file__)
    """
)


@pytest.fixture(scope="module")
def site_wheels(tmp_path_factory) -> list:
    """[mirrorkit's wheel, mirrorbook-widgets'], from the shared lab site or built once."""
    html = built.shared("html")
    if html is None:
        return wheels.build_wheels(tmp_path_factory.mktemp("wheels"))
    pypi = html / SITE_FOLDER / "pypi"
    return [next(pypi.glob(f"{name}-*.whl")) for name in ("mirrorkit", "mirrorbook_widgets")]


def test_the_unpacked_wheels_alone_import_every_browser_module(tmp_path, site_wheels):
    site = tmp_path / "site"
    for wheel in site_wheels:
        zipfile.ZipFile(wheel).extractall(site)
    # -P and a folder of its own: the checkout's mirrorkit is not on the path, and the wheels'
    # folder comes before the environment's editable installs.
    done = subprocess.run(
        [sys.executable, "-P", "-c", PROBE, *BROWSER_MODULES],
        cwd=tmp_path,
        env={"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin"},
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == [
        str(site / "mirrorkit" / "__init__.py"),
        str(site / "mirrorwidgets" / "__init__.py"),
    ]
    assert not (site / "mirrorkit" / "strategy.py").exists()  # TensorFlow's part stays out


def test_the_wheels_require_only_what_the_site_serves(tmp_path, site_wheels):
    kit, widgets = site_wheels
    for wheel, expected in (
        (kit, ["lazy_loader>=0.4"]),
        (
            widgets,
            ["mirrorkit==0.1.0.dev0", "lazy_loader>=0.4", "traitlets>=5.7", "ipywidgets>=8,<9"],
        ),
    ):
        with zipfile.ZipFile(wheel) as archive:
            name = next(n for n in archive.namelist() if n.endswith(".dist-info/METADATA"))
            metadata = email.message_from_bytes(archive.read(name))
            assert archive.testzip() is None
        assert metadata.get_all("Requires-Dist") == expected
    # Built again, byte for byte the same: the one repeat, and it is the check.
    assert wheels.build_wheels(tmp_path / "again")[0].read_bytes() == kit.read_bytes()


def test_a_module_level_numpy_import_stops_the_build_with_its_line(tmp_path, monkeypatch):
    module = tmp_path / "mirrorkit" / "lab_idea.py"
    module.parent.mkdir()
    module.write_text("import math\n\nimport numpy as np\n\n\ndef f():\n    import keras\n")
    monkeypatch.setattr(wheels, "ROOT", tmp_path)
    with pytest.raises(SystemExit, match=r"lab_idea.py line 3 imports numpy, which the browser"):
        wheels._project_imports(module, "mirrorkit")


def test_guarded_and_function_level_imports_are_allowed(tmp_path):
    module = tmp_path / "guarded.py"
    module.write_text(
        "import contextlib\nfrom typing import TYPE_CHECKING\n"
        "if TYPE_CHECKING:\n    import numpy\n"
        "with contextlib.suppress(ImportError):\n    import google.colab\n"
        "try:\n    import tensorflow\nexcept ImportError:\n    pass\n"
        "def f():\n    import keras\n"
        "from mirrorkit.report import units\n"
    )
    assert wheels._project_imports(module, "mirrorkit") == [
        "mirrorkit.report",
        "mirrorkit.report.units",
    ]
