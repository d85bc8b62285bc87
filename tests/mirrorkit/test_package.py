import ast
import inspect as pyinspect
from pathlib import Path

import mirrorkit as mk
from tests.mirrorkit.test_devices import run_fresh

PACKAGE = Path(mk.__file__).parent


def test_public_names_resolve_and_are_documented_with_examples():
    # Listed in __init__.pyi, loaded on use.
    assert set(mk.__all__) <= set(dir(mk))
    for name in mk.__all__:
        value = getattr(mk, name)
        if callable(value):
            doc = pyinspect.getdoc(value) or ""
            assert "Example:" in doc, f"{name} has no runnable example"


def test_import_is_light_and_never_pulls_ui_libraries():
    # TensorFlow itself imports IPython and matplotlib when they are installed, so the
    # promise is about mirrorkit: importing it loads none of them, nor TensorFlow, and
    # using it loads nothing beyond what TensorFlow and Keras already do.
    result = run_fresh(
        """
        import sys
        ui = ("ipywidgets", "matplotlib", "IPython", "tensorflow")
        import mirrorkit as mk
        print(sorted(m for m in ui if m in sys.modules))
        import keras, tensorflow as tf
        before = set(sys.modules)
        mk.make_reproducible(0)
        mk.inspect(mk.make_strategy().run(lambda: tf.constant(1.0)))
        mk.check_mirrored(..., mk.make_strategy())
        print(sorted(m for m in set(sys.modules) - before if m.split(".")[0] in ui[:3]))
        """
    )
    assert result.returncode == 0, result.stderr
    assert result.stdout.split("\n")[:2] == ["[]", "[]"]


def test_source_never_imports_ui_libraries():
    for path in PACKAGE.rglob("*.py"):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if isinstance(node, ast.Import | ast.ImportFrom):
                names = (
                    [a.name for a in node.names] if isinstance(node, ast.Import) else [node.module]
                )
                for name in names:
                    assert name.split(".")[0] not in {"ipywidgets", "matplotlib", "IPython"}, path
