"""The student's process for answers judged by query: it runs them and writes what they return.

The grader runs this file's source with ``python -I -c`` in the sandbox, where the
repository is hidden whole (mirrorkit, whose checks hold the answers, included): it reads
nothing but the Python environment. The job comes on stdin: each exercise's answer cell, the
name of the function it defines, the modules it may use as the chapter imports them, and the
calls to make: argument tuples, or ``{"args", "kwargs", "then"}`` where ``then`` are calls on
what the first call returned. Each result is written as JSON data, never a verdict. Standard
library only, but for the modules a job names.

Example (what one output line looks like):
    >>> outcome(lambda n: 2 * (n - 1), (3,))
    {'value': 4}
    >>> outcome(lambda n: n / 0, (3,))
    {'raised': 'ZeroDivisionError: division by zero'}
"""

import importlib
import json
import math
import numbers
import os
import sys

MAX_OUTPUT = 16_384  # bytes of one result's JSON; a larger one is "unreadable"
MAX_DEPTH = 8  # nested lists in a result
MAX_ITEMS = 4096  # items of one list in a result


def plain(value, depth: int = 0):
    """``value`` as JSON data (numbers, bools, strings, None, lists), or raise TypeError."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, numbers.Integral):
        return int(value) if abs(value) < 2**63 else float(value)
    if isinstance(value, numbers.Real):
        return float(value) if math.isfinite(value) else repr(float(value))
    if isinstance(value, list | tuple) and depth < MAX_DEPTH and len(value) <= MAX_ITEMS:
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
        size = len(json.dumps(data))
    except Exception:  # noqa: BLE001 - not plain data, or a number that will not convert
        return {"unreadable": type(value).__name__[:80]}
    if size > MAX_OUTPUT:
        return {"unreadable": f"a {type(value).__name__} of more than {MAX_OUTPUT} bytes"}
    return data


def decoded(value):
    """An argument as the job wrote it: ``{"TensorShape": dims}`` and ``{"DType": name}`` are
    TensorFlow's objects; lists and dicts are decoded inside."""
    if isinstance(value, dict) and len(value) == 1 and ("TensorShape" in value or "DType" in value):
        tf = importlib.import_module("tensorflow")
        if "TensorShape" in value:
            return tf.TensorShape(value["TensorShape"])
        return tf.dtypes.as_dtype(value["DType"])
    if isinstance(value, dict):
        return {key: decoded(item) for key, item in value.items()}
    if isinstance(value, list):
        return [decoded(item) for item in value]
    return value


def called(function, call) -> dict:
    """One call's result; with ``then``, the results of the calls on what it returned."""
    if not isinstance(call, dict):  # an argument tuple
        return outcome(function, tuple(call))
    args, kwargs = decoded(call.get("args", [])), decoded(call.get("kwargs", {}))
    if "then" not in call:
        return outcome(lambda: function(*args, **kwargs), ())
    try:
        made = function(*args, **kwargs)
    except Exception as error:  # noqa: BLE001 - the learner's code
        return {"raised": f"{type(error).__name__}: {error}"[:500]}
    if not callable(made):
        return {"returned": type(made).__name__[:80]}
    return {"calls": [called(made, then) for then in call["then"]]}


def answer(exercise: dict) -> dict:
    """Run one answer cell on its own and make every call on the function it defines."""
    namespace = {"__name__": "__main__", "__builtins__": __builtins__}
    try:
        for name, module in exercise.get("imports", {}).items():
            namespace[name] = importlib.import_module(module)
        exec(compile(exercise["source"], f"<your answer to exercise {exercise['number']}>", "exec"),
             namespace)  # fmt: skip
    except Exception as error:  # noqa: BLE001 - the learner's cell
        return {"failed": f"your answer cell raised {type(error).__name__}: {error}"[:500]}
    function = namespace.get(exercise["name"])
    if function is Ellipsis:
        return {"ellipsis": True}
    if not callable(function):
        kind = "nothing" if function is None else f"a {type(function).__name__}"
        return {"failed": f"{exercise['name']} must be a function; the answer cell made it {kind}"}
    return {"outputs": [called(function, call) for call in exercise["inputs"]]}


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
