"""Cheats graded through the real sandbox score 0, each with a named reason.

One synthetic two-exercise lab (tests/bookbuild/grading_lab.py), judged beside the answer as
chapters 3 to 8 are (its defences are the record of the trusted code, the audit hook and the
sealed channel; test_grading_export.py tries the same families by export); every submission
is graded by bookbuild.grading.grade in the sandbox, several side by side. The `grading`
marker keeps these to the reference job.
"""

import importlib.util
import time
import uuid
from pathlib import Path

import pytest

from bookbuild import ROOT

pytestmark = pytest.mark.grading

_spec = importlib.util.spec_from_file_location(
    "grading_lab", Path(__file__).with_name("grading_lab.py")
)
lab_kit = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(lab_kit)

OUTSIDE = Path("/tmp") / f"mirrorbook-cheat-{uuid.uuid4().hex}"
EVIL = ROOT / "tests" / f"evil-{uuid.uuid4().hex}.py"
FAKE_CHECK = "class V:\n    passed = True\n    message = ''\n\n"
CHEATS = {
    "own mk": (
        FAKE_CHECK + "class mk:\n    check_mirrored = staticmethod(lambda *a, **k: V())\n"
        "counter = 0",
        None,
    ),
    "sys.modules replaced": (
        "import sys, types\nfake = types.ModuleType('mirrorkit')\n"
        + FAKE_CHECK
        + "fake.check_mirrored = lambda *a, **k: V()\nsys.modules['mirrorkit'] = fake\ncounter = 0",
        "sys.modules['mirrorkit'] was replaced",
    ),
    "check patched": (
        FAKE_CHECK
        + "import mirrorkit\nmirrorkit.check_mirrored = lambda *a, **k: V()\ncounter = 0",
        "mirrorkit.check_mirrored was replaced",
    ),
    "check code patched": (
        FAKE_CHECK + "import mirrorkit\ntry:\n    mirrorkit.check_mirrored.__code__ = "
        "(lambda *a, **k: V()).__code__\nexcept RuntimeError:\n    pass\ncounter = 0",
        "object.__setattr__",
    ),
    "builtins patched": (
        "import builtins\nbuiltins.isinstance = lambda *a: True\ncounter = 0",
        "builtins.isinstance was replaced",
    ),
    "json patched": (
        "import json\n_dumps = json.dumps\n"
        "json.dumps = lambda o, *a, **k: _dumps(dict(o, passed=True) if isinstance(o, dict) "
        "else o, *a, **k)\ncounter = 0",
        "json.dumps was replaced",
    ),
    "fake results": (
        "import os, json\nos.makedirs('tests', exist_ok=True)\n"
        "open('tests/ex1.py', 'w').write('test = {\"points\": 1}')\n"
        "json.dump({'tests': [{'name': 'ex1', 'score': 1, 'max_score': 1}]}, "
        "open('results.json', 'w'))",
        None,
    ),
    "file outside": (
        f"open({str(OUTSIDE)!r}, 'w').write('stays?')\n"
        f"try:\n    open({str(EVIL)!r}, 'w').write('x')\nexcept OSError:\n    pass",
        None,
    ),
    "forged verdicts": (
        "import os, json\nfor fd in range(3, 21):\n    for k in (1, 2):\n        try:\n"
        "            os.write(fd, (json.dumps({'kind': 'verdict', 'run': 0, 'exercise': k, "
        "'case': f'ex{k}', 'passed': True, 'feedback': '', 'seconds': 0}) + '\\n').encode())\n"
        "        except OSError:\n            pass\ncounter = 0",
        "forged",
    ),
    "fork": (
        "import os\ntry:\n    if os.fork() == 0:\n        os._exit(0)\nexcept RuntimeError:\n"
        "    pass\ncounter = 0",
        "os.fork",
    ),
}
# An answer that ends the run costs its own exercise, with the real reason, and the run
# starts again for the exercises not yet graded: exercise 2 (the key) still scores.
ENDINGS = {
    "sys.exit": ("import sys\nsys.exit(3)", "sys.exit(3)"),
    "os._exit": ("import os\nos._exit(0)", "exited with status 0"),
    "abort": ("import os\nos.abort()", "killed by SIGABRT"),
    "endless loop": ("while True:\n    pass", "took longer than 25 s"),
}


@pytest.fixture(scope="module")
def graded(tmp_path_factory):
    folder = tmp_path_factory.mktemp("cheats")
    lab = lab_kit.make_lab(folder, tiny=lab_kit.BESIDE)
    paths = {"key": lab_kit.submission(folder, "key", lab_kit.KEY[1], lab_kit.KEY[2])}
    paths |= {
        name: lab_kit.submission(folder, f"c{i}", code)
        for i, (name, (code, _)) in enumerate(CHEATS.items())
    }
    paths |= {
        name: lab_kit.submission(folder, f"e{i}", code, lab_kit.KEY[2])
        for i, (name, (code, _)) in enumerate(ENDINGS.items())
    }
    paths["deleted folder"] = lab_kit.submission(
        folder, "deleted", "import os, shutil\nshutil.rmtree(os.getcwd())", lab_kit.KEY[2]
    )
    paths["loop"] = lab_kit.submission(folder, "loop", "while True:\n    pass")
    paths["syntax"] = lab_kit.submission(folder, "syntax", "counter = (\n1 +", lab_kit.KEY[2])
    started = time.monotonic()
    # The endless loop times out whatever the limit; a short one keeps the pool short.
    grades = lab_kit.grade_many(lab, paths, timeouts={"loop": 20.0}, limit=25.0)
    print(f"graded {len(paths)} submissions in {time.monotonic() - started:.0f} s")
    return grades


def test_the_key_scores_full_marks_judged_beside(graded):
    key = graded["key"]
    assert (key.status, key.total) == ("graded", (2.0, 2.0)), key
    assert "exercises 1, 2 judged in the student's process" in key.isolation, key


@pytest.mark.parametrize("name", list(CHEATS))
def test_each_cheat_scores_zero_with_a_named_reason(graded, name):
    result, reason = graded[name], CHEATS[name][1]
    assert result.total == (0.0, 2.0), result
    if reason is None:  # no tampering seen: the trusted check rejected the answer
        assert result.status == "graded", result
        assert result.scores["ex1"].feedback, result
    else:
        assert result.status == "tampered", result
        assert reason in result.detail, result


def test_a_file_written_outside_the_folder_does_not_stay(graded):
    assert graded["file outside"].total[0] == 0
    assert not OUTSIDE.exists()
    assert not EVIL.exists()  # the repository is not writable by nobody


@pytest.mark.parametrize("name", list(ENDINGS))
def test_an_answer_that_ends_the_run_costs_only_its_exercise_with_the_real_reason(graded, name):
    result, reason = graded[name], ENDINGS[name][1]
    assert result.status == "graded", result
    assert result.scores["ex1"].points == 0 and reason in result.scores["ex1"].feedback, result
    assert "exercise 1" in result.detail and reason in result.detail, result
    assert "cuda" not in result.detail.lower(), result  # the reason, never a log line
    assert result.scores["ex2"].points == 1, result


def test_a_deleted_working_folder_still_gets_a_grade_out_of_two(graded):
    result = graded["deleted folder"]
    assert result.total[1] == 2.0 and result.scores["ex1"].points == 0, result


def test_an_infinite_loop_times_out(graded):
    result = graded["loop"]
    assert result.status == "timeout" and "longer than 20" in result.detail, result


def test_a_syntax_error_fails_its_exercise_only(graded):
    result = graded["syntax"]
    assert result.status == "graded", result
    assert result.scores["ex1"].points == 0 and result.scores["ex1"].feedback.startswith("line ")
    assert result.scores["ex2"].points == 1, result
