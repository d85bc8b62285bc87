"""bookbuild.claims: which version-dependent facts of the chapters still hold."""

import contextlib
import io
from pathlib import Path

import nbformat
import nbformat.v4 as v4
from tensorflow.python.distribute import collective_util

from bookbuild.claims import CLAIM_TAG, claim_cells, claim_changes, output_text


def chapter(*cells):
    return v4.new_notebook(cells=list(cells))


def claim(source, *outputs):
    return v4.new_code_cell(source, metadata={"tags": [CLAIM_TAG]}, outputs=list(outputs))


def stream(text):
    return v4.new_output("stream", name="stdout", text=text)


def error(name, value=""):
    return v4.new_output("error", ename=name, evalue=value, traceback=["..."])


def test_a_claim_that_raises_or_prints_otherwise_is_listed_and_one_that_holds_is_not():
    stored = chapter(
        claim("print(trap)", stream("InvalidArgumentError\n")),
        claim("print(scale)", stream("0.25\n")),
        claim("assert ok", stream("")),
    )
    executed = chapter(
        claim("print(trap)", stream("NoneType\n")),
        claim("print(scale)", stream("0.25\n")),
        claim("assert ok", error("AssertionError")),
    )
    assert claim_changes(stored, executed, "c.ipynb") == [
        "c.ipynb cell 0 `print(trap)`: printed 'NoneType', stored 'InvalidArgumentError'",
        "c.ipynb cell 2 `assert ok`: raised AssertionError",
    ]


def test_a_failing_cell_that_is_no_claim_is_listed_too():
    executed = chapter(v4.new_code_cell("import missing", outputs=[error("ImportError", "x")]))
    assert claim_changes(executed, executed, "c.ipynb") == [
        "c.ipynb cell 0: not a claim, raised ImportError: x (the chapter did not run through "
        "from there)"
    ]


def test_after_a_failed_set_up_only_its_cause_is_listed_not_every_name_it_left_undefined():
    stored = chapter(
        v4.new_code_cell("import missing", outputs=[]),
        claim("print(tf)", stream("2.21\n")),
        v4.new_code_cell("model = keras.Sequential()", outputs=[]),
        claim("assert 1 == 2", stream("")),
    )
    executed = chapter(
        v4.new_code_cell("import missing", outputs=[error("ModuleNotFoundError", "missing")]),
        claim("print(tf)", error("NameError", "name 'tf' is not defined")),
        v4.new_code_cell("model = keras.Sequential()", outputs=[error("NameError", "keras")]),
        claim("assert 1 == 2", error("AssertionError")),
    )
    assert claim_changes(stored, executed, "c.ipynb") == [
        "c.ipynb cell 1 `print(tf)`: not checked, cell 0 failed before it",
        "c.ipynb cell 3 `assert 1 == 2`: raised AssertionError",  # not a NameError: still news
        "c.ipynb cell 0: not a claim, raised ModuleNotFoundError: missing (the chapter did not "
        "run through from there)",
    ]


def test_addresses_and_ports_do_not_count_as_changes():
    stored = chapter(claim("print(f)", stream("<function f at 0x7f3fc9834cc0> 127.0.0.1:4711\n")))
    executed = chapter(claim("print(f)", stream("<function f at 0x7f00aa11bb22> 127.0.0.1:5000\n")))
    assert claim_changes(stored, executed, "c.ipynb") == []


def test_every_chapter_with_exercises_states_claims_and_its_stored_claims_ran(manifest):
    for entry in manifest["chapters"]:
        nb = nbformat.read(entry["path"], as_version=4)
        claims = claim_cells(nb)
        if entry["exercises"]:
            assert claims, f"{entry['file']} has no cell tagged {CLAIM_TAG!r}"
        for index, cell in claims:
            where = f"{entry['file']} cell {index}"
            assert output_text(cell), f"{where}: a claim shows nothing (assert and print)"
            assert all(o.output_type != "error" for o in cell.outputs), f"{where} failed"


# What another TensorFlow or Keras would make each claim read. The stand-in chooser is here,
# in a file, so that inspect.getsource reads it as it reads TensorFlow's.
def _chooser_that_picks_nccl(self):
    self._communication_options = collective_util.Options(
        implementation=collective_util.CommunicationImplementation.NCCL
    )


def _claim(manifest, file: str, marker: str):
    """The stored chapter and the index of its one claim cell whose source holds ``marker``."""
    entry = next(c for c in manifest["chapters"] if c["file"] == file)
    nb = nbformat.read(entry["path"], as_version=4)
    found = [index for index, cell in claim_cells(nb) if marker in cell.source]
    assert len(found) == 1, f"{file}: one claim with {marker!r}, found {found}"
    return nb, found[0]


def _run(cell_source: str, namespace: dict) -> str:
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(cell_source, "<claim>", "exec"), namespace)  # noqa: S102 - the book's own cell
    return printed.getvalue()


def test_a_gpu_claim_fails_when_the_installed_library_says_otherwise(
    manifest, strategy, monkeypatch, tmp_path
):
    """Each claim behind a GPU sentence runs here as stored, then against a changed library."""
    import keras
    import keras.src.backend
    import keras.src.trainers.trainer
    import tensorflow as tf
    from tensorflow.python.distribute import mirrored_strategy

    def nccl_default():
        monkeypatch.setattr(
            mirrored_strategy.MirroredExtended,
            "_make_collective_ops_with_fallbacks",
            _chooser_that_picks_nccl,
        )

    def xla_allowed():
        monkeypatch.setattr(keras.src.trainers.trainer, "model_supports_jit", lambda model: True)

    def tensorflow_backend_lands():
        for backend in ("jax", "tensorflow"):
            (tmp_path / backend).mkdir()
            lib = '"""A backend that places tensors."""\n\ndef distribute_tensor(tensor, layout):\n'
            (tmp_path / backend / "distribution_lib.py").write_text(lib + "    return tensor\n")
        monkeypatch.setattr(keras.src.backend, "__file__", str(tmp_path / "__init__.py"))

    cases = [
        ("05_where_the_time_goes.ipynb", "_make_collective_ops_with_fallbacks", nccl_default),
        ("05_where_the_time_goes.ipynb", "def resolved_jit_compile", xla_allowed),
        ("09_the_landscape.ipynb", "keras.distribution places tensors", tensorflow_backend_lands),
    ]
    for file, marker, change in cases:
        stored, index = _claim(manifest, file, marker)
        namespace = {"tf": tf, "keras": keras, "collective": strategy, "Path": Path}
        # As stored, but printed by this environment's library (nbval compares the stored
        # output itself at the pinned versions): then the same cell against a changed one.
        held = nbformat.from_dict(stored)
        held.cells[index].outputs = [stream(_run(stored.cells[index].source, namespace))]
        change()
        executed = nbformat.from_dict(stored)
        executed.cells[index].outputs = [stream(_run(stored.cells[index].source, namespace))]
        changes = claim_changes(held, executed, file)
        assert len(changes) == 1 and changes[0].startswith(f"{file} cell {index} "), changes
        assert ": printed " in changes[0], changes  # the claim noticed the change
