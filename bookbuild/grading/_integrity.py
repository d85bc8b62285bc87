"""Inside the runner: a record of the trusted code, compared after each student step.

:func:`snapshot` records, before any student code runs, the module dicts of mirrorkit*,
bookbuild*, builtins, otter*, tensorflow*, keras* and numpy* (their functions, classes and
modules), the ``__code__`` and defaults of mirrorkit's functions, the ``__dict__`` of
mirrorkit's classes and of the classes TensorFlow's and Keras's public modules export, and
``sys.modules`` for those names. :func:`changes` says what differs now. :func:`install_guard`
adds an audit hook that refuses what a submission could use to reach the runner's objects
(``gc``, ``ctypes``, frames of other threads, trace functions, new audit hooks, ``os.fork``,
assigning ``__code__``) and remembers each refusal. None of this is a wall: student code runs
in this process (the checks need its objects), see docs/design/grading.md.
"""

from __future__ import annotations

import builtins
import sys
import types

# Bound here, so a submission that patches builtins cannot blind the comparison.
from builtins import any, dict, getattr, hasattr, id, isinstance, len, list, type, vars, zip  # noqa: UP029

WATCHED = ("mirrorkit", "mirrorwidgets", "bookbuild", "otter", "tensorflow", "keras", "numpy")
# The standard modules the runner itself writes its verdicts with.
RUNNER_USES = ("json", "hmac", "hashlib", "os", "posix", "threading", "_thread", "ast", "sys")
RUNNER_USES += ("types", "gc", "codecs", "contextlib", "signal", "time")
# Audit events refused once the guard is armed, by prefix.
REFUSED = (
    "sys.addaudithook",
    "gc.get_objects",
    "gc.get_referrers",
    "gc.get_referents",
    "ctypes.",
    "os.fork",
    "os.forkpty",
    "sys.settrace",
    "sys.setprofile",
    "sys._current_frames",
)
_KEPT = (types.FunctionType, type, types.ModuleType, types.BuiltinFunctionType)


def _watched(name: str) -> bool:
    return name == "builtins" or name.split(".", 1)[0] in (*WATCHED, *RUNNER_USES)


def _lazy(value, now=None) -> bool:
    """TensorFlow's and Keras's lazy loaders replace themselves by the module they load.

    A replacement counts as that only if it is a module whose file lies in the same package's
    installed folder (which the sandbox's user cannot write); TensorFlow also swaps its API
    modules for the ones they wrap (``tf.saved_model`` after a SavedModel is loaded).
    """
    if not isinstance(value, types.ModuleType):
        return False
    if now is None:
        return "lazy" in type(value).__name__.lower()
    name = getattr(value, "__name__", None)
    top = sys.modules.get(str(name).split(".", 1)[0])
    folder = str(getattr(top, "__file__", "") or "").rpartition("/")[0]
    file = str(getattr(now, "__file__", "") or "")
    return isinstance(now, types.ModuleType) and bool(folder) and file.startswith(folder + "/")


def snapshot() -> dict:
    """Record the trusted code as it is now (call it before any student code runs).

    Returns:
        The record :func:`changes` compares with.
    """
    modules = {n: m for n, m in list(sys.modules.items()) if m is not None and _watched(n)}
    record: dict = {"modules": modules, "dicts": {}, "code": {}, "classes": {}}
    for name, module in modules.items():
        try:
            entries = dict(vars(module))
        except TypeError:
            continue
        kept = {k: v for k, v in entries.items() if isinstance(v, _KEPT) and k != "_"}
        record["dicts"][name] = kept
        for value in kept.values():
            _note(record, value, name)
    record["dicts"]["builtins"] = {k: v for k, v in vars(builtins).items() if k != "_"}
    # mirrorkit's public names load lazily (lazy_loader): record what each name gives.
    record["public"] = [
        (module, key, getattr(module, key))
        for name, module in modules.items()
        if name.split(".", 1)[0] in ("mirrorkit", "bookbuild")
        for key in getattr(module, "__all__", ())
        if hasattr(module, key)
    ]
    for module, _, value in record["public"]:
        _note(record, value, module.__name__)
    return record


def _note(record: dict, value, module_name: str) -> None:
    """Record a function's code and a class's dict (all of mirrorkit's; TF/Keras classes)."""
    ours = module_name.split(".", 1)[0] in ("mirrorkit", "bookbuild")
    if isinstance(value, types.FunctionType) and ours:
        record["code"][id(value)] = _code(value)
    elif (
        isinstance(value, type)
        and id(value) not in record["classes"]
        and (ours or module_name.split(".", 1)[0] != "numpy")
    ):
        members = dict(vars(value))
        record["classes"][id(value)] = (value, members)
        for member in members.values() if ours else ():
            function = getattr(member, "__func__", member)
            if isinstance(function, types.FunctionType):
                record["code"][id(function)] = _code(function)


def _code(function) -> tuple:
    return (function, function.__code__, function.__defaults__, function.__kwdefaults__)


def changes(record: dict, limit: int = 5) -> list[str]:
    """What differs from the record: replaced modules, names, code or class members.

    Args:
        record: What :func:`snapshot` returned.
        limit: Stop after this many differences.

    Returns:
        One sentence per difference; empty when nothing changed.
    """
    found: list[str] = []
    for name, module in record["modules"].items():
        if sys.modules.get(name) is not module and not _lazy(module):
            found.append(f"sys.modules[{name!r}] was replaced")
    for name, kept in record["dicts"].items():
        current = vars(builtins) if name == "builtins" else vars(record["modules"][name])
        for key, value in kept.items():
            now = current.get(key)
            if now is not value and not _lazy(value, now):
                found.append(f"{name}.{key} was replaced")
                if len(found) >= limit:
                    return found
    for module, key, value in record["public"]:
        if getattr(module, key, None) is not value:
            found.append(f"{module.__name__}.{key} was replaced")
    for function, code, defaults, kwdefaults in record["code"].values():
        now = (function.__code__, function.__defaults__, function.__kwdefaults__)
        if any(a is not b for a, b in zip(now, (code, defaults, kwdefaults), strict=True)):
            found.append(f"{function.__module__}.{function.__qualname__} was patched")
    for cls, members in record["classes"].values():
        current = vars(cls)
        for key, value in members.items():
            if current.get(key) is not value:
                found.append(f"{cls.__module__}.{cls.__qualname__}.{key} was replaced")
                break
        if len(found) >= limit:
            break
    return found[:limit]


def restore(record: dict) -> None:
    """Put back what the record holds, so the runner can still report after tampering."""
    sys.modules.update(record["modules"])
    for name, kept in record["dicts"].items():
        vars(builtins if name == "builtins" else record["modules"][name]).update(kept)
    for function, code, defaults, kwdefaults in record["code"].values():
        if function.__code__ is not code:  # cannot happen while the guard refuses it
            function.__code__ = code
        function.__defaults__, function.__kwdefaults__ = defaults, kwdefaults


def install_guard() -> list[str]:
    """Add the audit hook; from now on it refuses :data:`REFUSED` and ``__code__`` assignment.

    Returns:
        The list each refusal is appended to (read it after every student step).
    """
    refused: list[str] = []

    def guard(event: str, args: tuple) -> None:
        if event.startswith(REFUSED) or (
            event == "object.__setattr__" and len(args) > 1 and args[1] == "__code__"
        ):
            refused.append(event)
            raise RuntimeError(f"refused by the grader: {event}")

    sys.addaudithook(guard)
    return refused
