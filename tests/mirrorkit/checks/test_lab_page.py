"""The browser labs' in-page checks read a table, not the answer key, and the site ships no key.

``mirrorkit/checks/_lab_page.py`` is written from the key (``lab_answers.page_table``); run
this file with ``MIRRORBOOK_WRITE_LAB_PAGE=1`` to write it again after changing an exercise.
"""

import json
import os
from pathlib import Path

from bookbuild.lite.wheels import shipped_files
from mirrorkit.checks import _lab_page
from mirrorkit.checks.lab_answers import EXERCISES, check, check_answer, page_table

PAGE_FILE = Path(_lab_page.__file__)


def test_the_page_table_is_the_one_the_answer_key_gives():
    table = page_table()
    if os.environ.get("MIRRORBOOK_WRITE_LAB_PAGE") == "1":
        lines = PAGE_FILE.read_text(encoding="utf-8").splitlines(keepends=True)
        (k,) = [k for k, line in enumerate(lines) if line.startswith("_TABLE = ")]
        data = json.dumps(table, sort_keys=True, separators=(",", ":"))
        lines[k] = f"_TABLE = {data!r}  # noqa: E501\n"
        PAGE_FILE.write_text("".join(lines), encoding="utf-8")
    assert table == _lab_page.PAGE, (
        "mirrorkit/checks/_lab_page.py is not what the answer key gives: run "
        "tests/mirrorkit/checks/test_lab_page.py with MIRRORBOOK_WRITE_LAB_PAGE=1"
    )


def test_the_page_check_and_the_graders_agree_on_the_pages_inputs():
    for key, exercise in EXERCISES.items():
        page = _lab_page.PAGE[key]
        for answer in (exercise.right, *(wrong for wrong, _ in exercise.mistakes), None):
            assert check(key, answer) == check_answer(key, answer, page["inputs"]), key


def test_the_lab_sites_wheel_holds_the_page_table_and_not_the_key():
    shipped = shipped_files()
    assert "mirrorkit/checks/lab_answers.py" in shipped
    assert "mirrorkit/checks/_lab_page.py" in shipped
    assert "mirrorkit/checks/_lab_exercises.py" not in shipped
