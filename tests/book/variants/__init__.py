"""Answers fed to each chapter's exercises by tests/book/test_labs.py, one module per chapter.

Each module defines ``WRONG = {K: [(label, code, word), ...]}``: plausible wrong answers to
exercise K, each of which the autograder must reject with feedback containing ``word``
(lowercase; it shows the feedback names the mistake), and ``RIGHT = {K: [code, ...]}``:
different correct answers, each of which must get full marks.
"""
