import inspect as pyinspect

import mirrorwidgets
from tests.mirrorkit.test_devices import run_fresh


def test_public_names_resolve_and_are_documented_with_examples():
    assert sorted(mirrorwidgets.__all__) == sorted(mirrorwidgets._EXPORTS)
    for name in mirrorwidgets.__all__:
        value = getattr(mirrorwidgets, name)
        assert "Example:" in (pyinspect.getdoc(value) or ""), f"{name} has no runnable example"


def test_import_does_not_start_tensorflow():
    result = run_fresh("import sys, mirrorwidgets\nprint('tensorflow' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"
