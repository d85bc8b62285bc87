"""bookbuild.grading: grading submissions with a lab's autograder."""

from bookbuild.grading import _feedback


def test_feedback_is_the_assertion_message_of_otters_output():
    output = (
        "ex1 results:\n    ex1 - 1 result:\n        Test case failed\n"
        "        AssertionError: value is a plain variable with one copy\n"
    )
    assert _feedback(output) == "value is a plain variable with one copy"
    assert _feedback("ex2 results:\n  TypeError: boom\n") == "TypeError: boom"
    assert _feedback("") == ""
