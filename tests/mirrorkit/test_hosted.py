"""The end of the hosted set-up: which replaced packages need a restart, and graphviz's `dot`."""

import importlib.metadata

import pytest

import mirrorkit
from mirrorkit import hosted

TOPS = {"ipywidgets": ["ipywidgets"], "numpy": ["numpy"], "PIL": ["pillow"], "yaml": ["PyYAML"]}


@pytest.mark.parametrize(
    ("before", "after", "imported", "expected"),
    [
        # replaced and imported: restart
        ({"ipywidgets": "7.7.1"}, {"ipywidgets": "8.1.9"}, ["ipywidgets.widgets"],
         [("ipywidgets", "7.7.1", "8.1.9")]),
        # replaced but never imported: no restart
        ({"ipywidgets": "7.7.1"}, {"ipywidgets": "8.1.9"}, ["numpy"], []),
        # imported but unchanged: no restart
        ({"numpy": "2.0.2"}, {"numpy": "2.0.2"}, ["numpy"], []),
        # newly installed (not there before): nothing old was in memory
        ({}, {"ipywidgets": "8.1.9"}, ["ipywidgets"], []),
        # module and distribution names differ; distribution names normalized
        ({"Pillow": "10.0"}, {"pillow": "11.3"}, ["PIL.Image"], [("Pillow", "10.0", "11.3")]),
        ({"pyyaml": "6.0.1"}, {"PyYAML": "6.0.2"}, ["yaml"], [("pyyaml", "6.0.1", "6.0.2")]),
        # removed by pip: not "replaced"
        ({"numpy": "2.0.2"}, {}, ["numpy"], []),
    ],
)  # fmt: skip
def test_a_restart_is_asked_only_for_replaced_packages_in_memory(before, after, imported, expected):
    assert hosted.replaced_in_memory(before, after, imported, TOPS) == expected


def _installed() -> dict[str, str]:
    return {d.name: d.version for d in importlib.metadata.distributions()}


def test_nothing_changed_means_no_restart_and_tensorflow_left_alone(capsys):
    lines = hosted.finish_setup(_installed(), install_dot=False)
    version = mirrorkit.__version__
    assert lines[0].startswith(
        f"mirrorkit {version} and mirrorbook-widgets {version} are installed"
    )
    assert "TensorFlow" in lines[0] and "left as installed" in lines[0]
    assert not any("Restart" in line for line in lines)
    assert capsys.readouterr().out.splitlines() == lines


def test_a_replaced_imported_package_asks_for_a_restart():
    before = _installed()
    before["numpy"] = "1.0.0"  # as if pip had just upgraded the numpy this process imported
    lines = hosted.finish_setup(before, install_dot=False)
    assert any("numpy 1.0.0 -> " in line and "Restart the kernel" in line for line in lines)


def test_a_replaced_tensorflow_is_said(monkeypatch):
    before = _installed()
    before["tensorflow"] = "2.19.0"
    line = hosted.finish_setup(before, install_dot=False)[0]
    assert "pip changed TensorFlow 2.19.0 -> " in line and "Keras" in line


def test_missing_dot_is_named_with_what_to_install(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))  # no dot, no apt-get
    lines = hosted.finish_setup(_installed(), install_dot=True)
    assert any("`dot` is missing" in line and "apt-get install graphviz" in line for line in lines)


def test_what_pip_added_besides_the_two_packages_is_named():
    before = _installed()
    before.pop("lazy_loader", None), before.pop("lazy-loader", None)  # as if pip had added it
    line = hosted.finish_setup(before, install_dot=False)[0]
    assert line.startswith("mirrorkit ") and " (with lazy-loader " in line, line
    assert "pip changed" not in line


def test_any_replaced_preinstalled_package_is_said_by_name():
    before = _installed()
    before["ipywidgets"] = "0.0.1"  # as if pip had replaced the widgets that were there
    line = hosted.finish_setup(before, install_dot=False)[0]
    assert "pip changed ipywidgets 0.0.1 -> " in line, line
    assert "TensorFlow" in line and "left as installed" in line  # TensorFlow itself was kept
