"""bookbuild.junit: reading pytest's JUnit XML reports."""

from bookbuild.junit import failures_in


def test_test_latest_names_each_failure_from_pytests_report(tmp_path):
    report = tmp_path / "tests.xml"
    report.write_text(
        '<testsuites><testsuite name="pytest">'
        '<testcase classname="tests.a" name="test_ok"/>'
        '<testcase classname="tests.a" name="test_bad"><failure message="assert 1 == 2&#10;more"/>'
        "</testcase>"
        '<testcase classname="tests.b" name="test_setup"><error message="fixture broke"/>'
        "</testcase>"
        "</testsuite></testsuites>"
    )
    assert failures_in(report, "tests") == [
        "tests: tests.a::test_bad: assert 1 == 2",
        "tests: tests.b::test_setup: fixture broke",
    ]
    assert failures_in(tmp_path / "missing.xml", "doctests") == [
        "doctests: pytest wrote no report (it could not start; output above)"
    ]
