"""Each browser lab (book/browser/) runs top to bottom in CPython with TensorFlow, Keras and
NumPy refused: the same cells that run in the reader's browser (Pyodide) import none of them.

The browser itself runs them in tests/browser/test_lite_site.py.
"""

from __future__ import annotations

import nbformat
import pytest

from bookbuild.execute import notebook_client
from tests.conftest import ROOT
from tests.refuse_heavy import REFUSE  # run first in the lab's kernel, as in the browser

LABS = sorted((ROOT / "book" / "browser").glob("*.ipynb"))
# Seconds a lab's cell may take (each takes under 5 here, under load). Small on purpose: now and
# then a cell's reply reaches nbclient only when its wait for the reply times out (seen with the
# labs' ipywidgets `interact` cells on a loaded machine: the lab still passes, a timeout later).
CELL_TIMEOUT = 30


@pytest.mark.parametrize("lab", LABS, ids=lambda path: path.name)
def test_a_browser_lab_runs_without_tensorflow_keras_or_numpy(lab, tmp_path):
    nb = nbformat.read(lab, as_version=4)
    assert not any(cell.get("outputs") for cell in nb.cells), "store browser labs without outputs"
    nb.cells.insert(0, nbformat.v4.new_code_cell(REFUSE))
    with notebook_client(nb, timeout=CELL_TIMEOUT, cwd=lab.parent) as client:
        client.execute()
    printed = [o for cell in nb.cells for o in cell.get("outputs", ())]
    assert printed, "a lab shows the reader something"


def test_there_are_browser_labs():
    assert LABS, "book/browser/ holds the browser labs"
