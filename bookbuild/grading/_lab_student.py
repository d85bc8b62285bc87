"""The student's process for a browser lab's answers: it runs them and writes what they return.

The grader runs this file's source with ``python -I -c`` in the sandbox, where the
repository is hidden whole (mirrorkit, whose checks hold the labs' answers, included): it
reads nothing but the Python environment. The job comes on stdin: each exercise's answer cell,
the name of the function it defines, and the inputs drawn at grading time. For each input it
writes the function's result as JSON data (``{"value": ...}``, ``{"raised": "Type: why"}``,
``{"ellipsis": true}`` or ``{"unreadable": "type"}``), never a verdict: the grader compares
the results with the answer key itself. Standard library only, on purpose.

Example (what one output line looks like):
    >>> outcome(lambda n: 2 * (n - 1), (3,))
    {'value': 4}
    >>> outcome(lambda n: n / 0, (3,))
    {'raised': 'ZeroDivisionError: division by zero'}
"""

import json
import math
import os
import sys

MAX_OUTPUT = 16_384  # bytes of one result's JSON; a larger one is "unreadable"
MAX_DEPTH = 8  # nested lists in a result


def plain(value, depth: int = 0):
    """``value`` as JSON data (numbers, bools, strings, None, lists), or raise TypeError."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, int):
        return value if abs(value) < 2**63 else float(value)
    if isinstance(value, float):
        return value if math.isfinite(value) else repr(value)
    if isinstance(value, list | tuple) and depth < MAX_DEPTH:
        return [plain(item, depth + 1) for item in value]
    raise TypeError(type(value).__name__)


def outcome(function, args: tuple) -> dict:
    """What one call returned, as data."""
    try:
        value = function(*args)
    except Exception as error:  # noqa: BLE001 - the learner's code: its error is the result
        return {"raised": f"{type(error).__name__}: {error}"[:500]}
    if value is Ellipsis:
        return {"ellipsis": True}
    try:
        data = {"value": plain(value)}
    except (TypeError, RecursionError):
        return {"unreadable": type(value).__name__[:80]}
    if len(json.dumps(data)) > MAX_OUTPUT:
        return {"unreadable": f"a {type(value).__name__} of more than {MAX_OUTPUT} bytes"}
    return data


def answer(exercise: dict) -> dict:
    """Run one answer cell on its own and call its function on every input."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        exec(compile(exercise["source"], f"<your answer to exercise {exercise['number']}>", "exec"),
             namespace)  # fmt: skip
    except Exception as error:  # noqa: BLE001 - the learner's cell
        return {"failed": f"your answer cell raised {type(error).__name__}: {error}"[:500]}
    function = namespace.get(exercise["name"])
    if not callable(function):
        return {"failed": f"the answer cell defines no function {exercise['name']}"}
    return {"outputs": [outcome(function, tuple(args)) for args in exercise["inputs"]]}


def main() -> None:
    job = json.loads(sys.stdin.read())
    out = os.fdopen(job["result_fd"], "w", buffering=1)
    home = os.path.join("/tmp", "lab-answers")
    os.makedirs(home, exist_ok=True)
    os.chdir(home)
    for exercise in job["exercises"]:
        line = {"run": 0, "exercise": exercise["number"]}
        out.write(json.dumps({"kind": "started", **line}) + "\n")
        out.write(json.dumps({"kind": "export", "case": "outputs", **line, **answer(exercise)}))
        out.write("\n" + json.dumps({"kind": "finished", **line}) + "\n")
    out.close()


if __name__ == "__main__":
    main()
