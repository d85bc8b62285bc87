"""bookbuild.grading's parts that need no sandbox: the program, the answers, the seal."""

import hashlib
import hmac
import json

import nbformat
from nbformat.v4 import new_code_cell, new_notebook

from bookbuild.grading._verdicts import TOKEN_REQUEST, verify
from bookbuild.grading.program import program_steps
from bookbuild.grading.submission import answers_of
from bookbuild.manifest import load_manifest


def test_chapter_1s_program_runs_the_key_and_leaves_out_the_hosted_setup():
    chapter = load_manifest()["chapters"][0]
    nb = nbformat.read(chapter["path"], as_version=4)
    steps = program_steps(nb)
    kinds = [s["kind"] for s in steps]
    assert kinds[0] == "parameters" and kinds.count("answer") == kinds.count("check") == 3
    answers = [s for s in steps if s["kind"] == "answer"]
    assert [a["asks"] for a in answers] == [["counter"], ["squares"], ["total_of_ids_plus_one"]]
    assert all("..." not in a["solution"] for a in answers)
    tagged = {
        tag: {i for i, c in enumerate(nb.cells) if tag in c.metadata.get("tags", [])}
        for tag in ("hosted-setup", "claim")
    }
    ran = {s["cell"] for s in steps}
    assert tagged["hosted-setup"] and not ran & tagged["hosted-setup"]
    assert tagged["claim"] and tagged["claim"] <= ran  # later cells use what claims define


def test_an_exercise_with_two_answer_cells_or_none_is_not_found():
    tag = {"tags": ["exercise-answer"]}
    check = {"tags": ["exercise-check"]}
    nb = new_notebook(
        cells=[
            new_code_cell("x = 1", metadata=tag),
            new_code_cell("x = 2", metadata=tag),
            new_code_cell("check(x)", metadata=check),
            new_code_cell("check(y)", metadata=check),
            new_code_cell("z = 3", metadata={"tags": ["otter_answer_cell"]}),
            new_code_cell("check(z)", metadata=check),
        ]
    )
    assert answers_of(nb, [1, 2, 3]) == {1: None, 2: None, 3: "z = 3"}


def _sealed(records: list, token: bytes) -> list[bytes]:
    lines = [json.dumps(r).encode() + b"\n" for r in [*records, TOKEN_REQUEST]]
    seal = hmac.new(token, b"".join(lines), hashlib.sha256).hexdigest()
    return [*lines, json.dumps({"kind": "end", "hmac": seal}).encode() + b"\n"]


def test_the_seal_rejects_forged_extra_or_missing_lines():
    verdict = {"kind": "verdict", "exercise": 1, "passed": False}
    good = _sealed([verdict], b"token")
    assert verify(good, b"token") == ([verdict], "")
    forged = [good[0].replace(b"false", b"true"), *good[1:]]
    assert "forged" in verify(forged, b"token")[1]
    assert "forged" in verify([good[0], *good], b"token")[1]  # a line added
    assert "ended before" in verify(good[:-1], b"token")[1]  # no seal: the runner died
    assert "forged" in verify(good, b"other")[1]
    twice = _sealed([TOKEN_REQUEST, verdict], b"token")
    assert "more than once" in verify(twice, b"token")[1]
