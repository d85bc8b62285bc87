import inspect as pyinspect

import pytest

import mirrorwidgets
from tests.mirrorkit.test_devices import run_fresh


def test_public_names_resolve_and_are_documented_with_examples():
    # Listed in __init__.pyi, loaded on use.
    assert set(mirrorwidgets.__all__) <= set(dir(mirrorwidgets))
    for name in mirrorwidgets.__all__:
        value = getattr(mirrorwidgets, name)
        assert "Example:" in (pyinspect.getdoc(value) or ""), f"{name} has no runnable example"


def test_import_does_not_start_tensorflow():
    result = run_fresh("import sys, mirrorwidgets\nprint('tensorflow' in sys.modules)")
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == "False"


COLAB = """
import importlib.metadata, sys, types
installed = importlib.metadata.version  # this Colab's ipywidgets is {ipywidgets}
importlib.metadata.version = lambda n: "{ipywidgets}" if n == "ipywidgets" else installed(n)
calls = []
google = types.ModuleType("google")
colab = types.ModuleType("google.colab")
output = types.ModuleType("google.colab.output")
output.enable_custom_widget_manager = lambda: calls.append("enabled")
google.colab, colab.output = colab, output
sys.modules.update({"google": google, "google.colab": colab, "google.colab.output": output})
import mirrorwidgets
print(calls)
"""


@pytest.mark.parametrize(("ipywidgets", "calls"), [("8.1.9", "['enabled']"), ("7.7.1", "[]")])
def test_in_colab_the_custom_widget_manager_is_switched_on_for_ipywidgets_8(ipywidgets, calls):
    # google.colab stands in as a module with the one function Colab offers for this; Colab
    # draws its own ipywidgets 7.7.1 without it.
    result = run_fresh(COLAB.replace("{ipywidgets}", ipywidgets))
    assert result.returncode == 0, result.stderr
    assert result.stdout.strip() == calls


def test_elsewhere_nothing_colab_is_touched():
    result = run_fresh("import sys, mirrorwidgets\nprint('google.colab' in sys.modules)")
    assert result.stdout.strip() == "False", result.stderr
