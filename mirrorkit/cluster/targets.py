"""Training targets, ``train.py[:function]``: checked without running them, then run.

Example:
    >>> from mirrorkit.cluster.targets import target_problem
    >>> target_problem("train.txt")[0].__name__
    'FileNotFoundError'
"""

from __future__ import annotations

import ast
import os
import runpy
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from mirrorkit.cluster.targets import WorkerContext


def target_problem(file: str, function: str = "") -> tuple[type[Exception], str] | None:
    """What is wrong with a training target ``file[:function]``, found without running it.

    Returns ``None`` when ``file`` is a Python script that defines ``function`` at its top
    level, else the error to raise and a sentence to follow the target's name.

    Example:
        >>> from mirrorkit.cluster.targets import target_problem
        >>> target_problem("train.ipynb")[1]
        'is a notebook, which the workers cannot run: export it with `jupyter nbconvert --to script train.ipynb` and run the .py file.'
    """  # noqa: E501
    path = Path(file)
    if path.suffix == ".ipynb":
        return ValueError, (
            "is a notebook, which the workers cannot run: export it with "
            f"`jupyter nbconvert --to script {file}` and run the .py file."
        )
    if path.is_dir():
        return ValueError, (
            f"is a folder: name the training script inside it, e.g. '{path / 'train.py'}'."
        )
    if not path.is_file():
        where = "" if path.is_absolute() else f" (looked in {Path.cwd()})"
        return FileNotFoundError, (
            f"names no file{where}: check the name, or give the script's full path."
        )
    if path.suffix != ".py":
        return ValueError, (
            f"is not a Python script (.py): name the .py file that holds the training code, "
            f"e.g. '{path.with_suffix('.py')}'."
        )
    if not function:
        return None
    if not function.isidentifier():
        name = function.split("(")[0].strip()
        fix = f"'{file}:{name}'" if name.isidentifier() else f"'{file}:train'"
        return ValueError, (
            f"names {function!r} after the colon, which is not a function's name: write {fix}."
        )
    try:
        body = ast.parse(path.read_text(encoding="utf-8"), str(path)).body
    except (SyntaxError, UnicodeDecodeError, ValueError):
        return None  # the worker runs it and reports Python's own error, with its line
    names = _top_level_names(body)
    if names is None or function in names:
        return None
    defined = [n.name for n in body if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)]
    return ValueError, (
        f"names a function {function!r} that {path.name} does not define at its top level "
        f"(its functions: {', '.join(defined) or 'none'}): check the name after the colon."
    )


STRATEGY_CLASSES = (
    "MultiWorkerMirroredStrategy",
    "CollectiveAllReduceStrategy",
    "ParameterServerStrategy",
    "ParameterServerStrategyV2",
)


def joins_by_itself(file: str | os.PathLike) -> bool:
    """Whether a training script builds its own multi-worker strategy.

    That is ``MultiWorkerMirroredStrategy``, or ``ParameterServerStrategy`` (whose workers
    and parameter servers start a ``tf.distribute.Server`` themselves in such a script).
    Such a script is plain TensorFlow: it reads TF_CONFIG and joins the cluster when it
    creates the strategy, so a worker must not join for it (collective ops can be set up
    only once per process). Found by reading the script, without running it.

    Example:
        >>> import tempfile
        >>> from pathlib import Path
        >>> from mirrorkit.cluster.targets import joins_by_itself
        >>> folder = Path(tempfile.mkdtemp())
        >>> plain = "strategy = tf.distribute.MultiWorkerMirroredStrategy()"
        >>> helped = "strategy = mirrorkit.current_context().strategy"
        >>> _ = (folder / "plain.py").write_text(plain)
        >>> _ = (folder / "helped.py").write_text(helped)
        >>> joins_by_itself(folder / "plain.py"), joins_by_itself(folder / "helped.py")
        (True, False)
    """
    try:
        tree = ast.parse(Path(file).read_text(encoding="utf-8"), str(file))
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return False  # the worker runs it and reports the error, with its line
    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            called = node.func
            name = called.attr if isinstance(called, ast.Attribute) else getattr(called, "id", "")
            if name in STRATEGY_CLASSES:
                return True
    return False


def _top_level_names(body: list[ast.stmt]) -> set[str] | None:
    """Names a module's statements bind at its top level; ``None`` if unknowable (``import *``)."""
    names: set[str] = set()
    for node in body:
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
            names.add(node.name)
        elif isinstance(node, ast.Import | ast.ImportFrom):
            for alias in node.names:
                if alias.name == "*":
                    return None
                names.add(alias.asname or alias.name.split(".")[0])
        elif isinstance(node, ast.Assign | ast.AnnAssign | ast.AugAssign):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            names |= {n.id for t in targets for n in ast.walk(t) if isinstance(n, ast.Name)}
        elif isinstance(node, ast.If | ast.Try | ast.With | ast.For | ast.While):
            for block in ("body", "orelse", "finalbody"):
                inner = _top_level_names(getattr(node, block, []))
                if inner is None:
                    return None
                names |= inner
            for handler in getattr(node, "handlers", []):
                inner = _top_level_names(handler.body)
                if inner is None:
                    return None
                names |= inner
    return names


def run_target(target: str, context: WorkerContext) -> Any:
    """Run ``path.py:function`` (called with the context) or ``path.py`` (as a script).

    Example:
        >>> from mirrorkit.cluster.targets import run_target
        >>> run_target("missing.py:train", None)
        Traceback (most recent call last):
        ...
        FileNotFoundError: no such training file: missing.py (target 'missing.py:train')
    """
    path, _, function = target.partition(":")
    if not Path(path).is_file():
        raise FileNotFoundError(f"no such training file: {path} (target {target!r})")
    if not function:
        runpy.run_path(path, run_name="__main__")
        return None
    namespace = runpy.run_path(path, run_name="__mirrorkit_worker__")
    if function not in namespace:
        raise AttributeError(f"{path} defines no function {function!r}")
    return namespace[function](context)
