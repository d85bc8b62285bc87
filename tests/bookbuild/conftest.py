"""Fixtures the grading tests share."""

import json

import pytest


@pytest.fixture(scope="session")
def chapter_program(tmp_path_factory):
    """``chapter_program("1")``: the chapter's grading program as ``dev.py labs`` writes it."""
    from bookbuild.grading.program import write_program
    from bookbuild.labs import chapters_with_exercises
    from bookbuild.manifest import load_manifest

    made: dict = {}

    def program(number: str) -> dict:
        if number not in made:
            (chapter,) = chapters_with_exercises(load_manifest(), [number])
            folder = tmp_path_factory.mktemp(f"ch{number}")
            made[number] = json.loads(write_program(chapter, folder / "program.json").read_text())
        return made[number]

    return program
