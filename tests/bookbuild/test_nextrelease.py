"""dev.py test-next's pure parts: the version above the range, the wheels, the report."""

import pytest

from bookbuild.nextrelease import (
    Outcome,
    issue_claim,
    issue_verdict,
    keras_release_requirements,
    newest_above,
    plan_pythons,
    report_text,
    upper_bound,
    version_key,
    wheel_pythons,
)

INDEX = [  # tensorflow's versions on PyPI in November 2026, as the index lists them
    *("2.19.0rc0", "2.19.0", "2.19.1", "2.20.0rc0", "2.20.0", "2.21.0rc0", "2.21.0rc1"),
    "2.21.0",
    "2.22.0rc0",
    "2.15.0.post1",
]


@pytest.mark.parametrize(
    ("versions", "expected"),
    [
        (INDEX, "2.22.0rc0"),  # a release candidate above the range counts
        ([*INDEX, "2.22.0rc1", "2.22.0"], "2.22.0"),  # the release beats its candidates
        ([*INDEX, "2.23.0a1", "2.22.0"], "2.23.0a1"),  # the newest, pre-release or not
        ([*INDEX, "2.22.0.dev20261101"], "2.22.0rc0"),  # dev builds are not releases
        ([v for v in INDEX if not v.startswith("2.22")], None),  # nothing above: None
        (["2.21.1rc0", "2.21.1", "2.20.1"], None),  # patch releases inside the range
        ([*INDEX, "not-a-version"], "2.22.0rc0"),
    ],
)
def test_newest_above_the_range_includes_pre_releases(versions, expected):
    assert newest_above(versions, upper_bound("tensorflow>=2.20.0,<2.22")) == expected


def test_versions_sort_as_pep_440_says():
    ordered = ["2.22.0.dev1", "2.22.0a0", "2.22.0b2", "2.22.0rc0", "2.22.0rc10", "2.22.0"]
    assert sorted(reversed(ordered), key=version_key) == ordered
    assert version_key("2.22") == version_key("2.22.0")
    assert version_key("2.15.0.post1") > version_key("2.15.0")


def test_the_upper_bound_is_the_exclusive_cap():
    assert upper_bound("tensorflow>=2.20.0,<2.22") == "2.22"
    assert upper_bound("tensorflow<3,>=2.20") == "3"
    with pytest.raises(ValueError, match="< bound"):
        upper_bound("tensorflow<=2.21,>=2.20")


WHEELS = [
    f"tensorflow-2.22.0rc0-cp{n}-cp{n}-{platform}.whl"
    for n in ("310", "311", "312", "313", "314")
    for platform in ("macosx_12_0_arm64", "manylinux_2_27_aarch64", "manylinux_2_27_x86_64")
] + [
    "tensorflow-2.22.0rc0-cp315-cp315-macosx_12_0_arm64.whl",  # another platform only
    "tensorflow-2.22.0rc0-cp314-cp314t-manylinux_2_27_x86_64.whl",  # free-threaded
    "tensorflow-2.21.0-cp39-cp39-manylinux_2_17_x86_64.manylinux2014_x86_64.whl",  # older
    "tensorflow-2.22.0rc0.tar.gz",
]


def test_pythons_with_wheels_for_this_platform():
    expected = ["3.10", "3.11", "3.12", "3.13", "3.14"]
    assert wheel_pythons(WHEELS, "2.22.0rc0", "Linux", "x86_64") == expected
    assert wheel_pythons(WHEELS, "2.22.0rc0", "Darwin", "arm64") == [*expected, "3.15"]
    assert wheel_pythons(WHEELS, "2.22.0rc0", "Windows", "AMD64") == []
    assert wheel_pythons(WHEELS, "2.21.0", "Linux", "x86_64") == ["3.9"]


def test_each_python_not_run_is_named_with_why():
    run, skipped = plan_pythons(["3.10", "3.11", "3.13", "3.14"], None)
    assert run == ["3.11", "3.13", "3.14"]  # above the book's Pythons: tried, if installable
    assert [python for python, _ in skipped] == ["3.10"]
    run, skipped = plan_pythons(["3.11", "3.13"], ["3.13", "3.12"])
    assert run == ["3.13"]
    assert dict(skipped) == {
        "3.11": "not asked for (--python 3.13 3.12)",
        "3.12": "the release has no wheel for it on this platform",
    }


def test_the_release_mode_swaps_keras_nightly_for_keras():
    requires = [
        "absl-py>=1.0.0",
        "keras-nightly>=3.12.0.dev",
        'nvidia-nccl-cu12<3.0,>=2.30.7; extra == "and-cuda"',
        "h5py<3.15.0,>=3.11.0",
    ]
    assert keras_release_requirements(requires) == [
        "absl-py>=1.0.0",
        "h5py<3.15.0,>=3.11.0",
        "keras",
    ]


CLAIM = "03_custom_training_loops.ipynb cell 33 `def make_train_step(model, optimizer):`"


def _claim(source, outputs=()):
    return {
        "cell_type": "code",
        "source": source,
        "metadata": {"tags": ["claim"]},
        "outputs": [*outputs],
    }


def test_the_issue_claim_is_the_first_claim_from_its_first_mention():
    cells = [
        _claim("print(1)"),
        {"cell_type": "markdown", "source": ["Adam fails there\n", "(keras-team/keras#23085)."]},
        {"cell_type": "code", "source": "x = 1", "metadata": {}},
        _claim("adam_step(batch)"),
        _claim("print(2)"),
    ]
    chapters = [("01.ipynb", {"cells": [_claim("a")]}), ("03.ipynb", {"cells": cells})]
    assert issue_claim(chapters) == ("03.ipynb", 3)
    assert issue_claim(chapters[:1]) is None


def _stream(text):
    return {"output_type": "stream", "name": "stdout", "text": text}


def _error(ename, evalue=""):
    return {"output_type": "error", "ename": ename, "evalue": evalue, "traceback": []}


@pytest.mark.parametrize(
    ("outputs", "expected"),
    [
        (
            [_stream(["first step with an Adam that was not built: InvalidArgumentError\n"])],
            "keras#23085: still fails (work-around needed)",
        ),
        (
            [
                _stream("first step with an Adam that was not built: NoneType\n"),
                _error("AssertionError"),
            ],
            "keras#23085: fixed in keras 3.16.0.dev2026102704 — the work-around can go",
        ),
        (
            [_stream("...: InvalidArgumentError\n"), _error("AssertionError")],
            "keras#23085: still fails, with another message (work-around needed): "
            "'...: InvalidArgumentError'",
        ),
        (
            [_error("NameError", "name 'make_model' is not defined")],
            "keras#23085: not checked: a cell before its claim failed "
            "(NameError: name 'make_model' is not defined)",
        ),
        (
            [_error("ValueError", "bad")],
            "keras#23085: not decided: its claim cell raised ValueError: bad",
        ),
    ],
)
def test_the_issue_line_is_read_from_its_claim_cell(outputs, expected):
    assert issue_verdict(_claim("adam_step(batch)", outputs), "3.16.0.dev2026102704") == expected


def test_an_unexecuted_chapter_leaves_the_issue_unchecked():
    assert (
        issue_verdict(None, "3.15.1") == "keras#23085: not checked (its chapter was not executed)"
    )


def test_the_report_names_versions_failures_claims_the_issue_and_what_did_not_run():
    fixed = Outcome(
        python="3.13",
        mode="keras-nightly",
        versions={
            "python": "3.13.0",
            "tensorflow": "2.22.0rc0",
            "keras": "keras-nightly 3.16.0.dev1",
        },
        broke=[
            "chapters: tests.book.test_rerun::test_chapter[03]: AssertionError",
            f"claim: {CLAIM}: raised AssertionError",
        ],
        claims=[f"{CLAIM}: raised AssertionError"],
        issue="keras#23085: fixed in keras 3.16.0.dev1 — the work-around can go",
        seconds=1500.4,
    )
    held = Outcome(
        python="3.13",
        mode="keras-release",
        versions={"python": "3.13.0", "tensorflow": "2.22.0rc0", "keras": "keras 3.15.1"},
        issue="keras#23085: still fails (work-around needed)",
        seconds=1400,
    )
    text = report_text(
        "2.22.0rc0",
        "tensorflow>=2.20.0,<2.22",
        ["3.10", "3.13", "3.14"],
        [fixed, held],
        [("3.10", "older than every Python the book supports"), ("3.14", "no interpreter")],
    )
    assert text.startswith("# dev.py test-next: TensorFlow 2.22.0rc0\n")
    assert "(`tensorflow>=2.20.0,<2.22`)" in text and "Python 3.10, 3.13, 3.14" in text
    assert (
        "## Python 3.13.0, keras-nightly: TensorFlow 2.22.0rc0, keras-nightly 3.16.0.dev1 (1500 s)"
        in text
    )
    assert "## Python 3.13.0, keras-release: TensorFlow 2.22.0rc0, keras 3.15.1 (1400 s)" in text
    nightly, release = text.split("## ")[1:3]
    assert "- keras#23085: fixed in keras 3.16.0.dev1 — the work-around can go" in nightly
    assert (
        "- tests that failed: 1\n  - chapters: tests.book.test_rerun::test_chapter[03]" in nightly
    )
    assert "- claims changed: 1\n  - 03_custom_training_loops.ipynb cell 33" in nightly
    assert "- keras#23085: still fails (work-around needed)\n- tests that failed: none\n" in release
    assert "- claims changed: none" in release
    assert "Python 3.14: NOT RUN: no interpreter" in text
    assert text.endswith("Something broke in 1 of 2 environment(s).")


def test_a_claims_only_report_says_no_test_ran():
    text = report_text("2.22.0rc0", "tensorflow<2.22", ["3.13"], [], [], tests=False)
    assert "Only every chapter with its claims (--claims-only): no tests ran." in text
    assert "Doctests" not in text
    assert text.endswith("Nothing broke in 0 environment(s).")
