"""Running a learner's step next to one device's: the shared machinery of the scaling checks.

Example:
    >>> from mirrorkit.checks._learner_runs import LearnerError, run_learner
    >>> def step():
    ...     raise ValueError("Shapes (8, 1) and (8,) are incompatible")
    >>> try:
    ...     run_learner(step)
    ... except LearnerError as error:
    ...     print(error)
    your function failed inside strategy.run: ValueError: Shapes (8, 1) and (8,) are incompatible.
"""

from __future__ import annotations

import functools
import numbers
import re

import numpy as np

from mirrorkit._validate import require_model_fn
from mirrorkit.checks._steps import build_model, check_layers, flat_float64, per_example_values
from mirrorkit.report.values import error_lines

LEARNING_RATE = 0.1


class LearnerError(Exception):
    """A mistake in the learner's code (their function failed or returned the wrong thing)."""


def reference_and_copy(tf, strategy, model_fn, x, learning_rate, argument: str = "batch"):
    """The one-device reference model and its copy in the strategy's scope, with SGD.

    A ``model_fn`` that is a model, or builds a model the checks cannot judge, raises.
    """
    require_model_fn(model_fn)
    reference = build_model(tf, model_fn, x, argument)
    check_layers(reference)
    model, optimizer = copy_in_scope(tf, strategy, model_fn, x, learning_rate, argument)
    model.set_weights(reference.get_weights())
    return reference, model, optimizer


def copy_in_scope(tf, strategy, model_fn, x, learning_rate, argument: str = "batch"):
    """``model_fn()`` built in the strategy's scope, with SGD built for its weights.

    A ``model_fn`` that is a model, or builds a model the checks cannot judge, raises.
    """
    import keras

    require_model_fn(model_fn)
    with strategy.scope():
        model = build_model(tf, model_fn, x, argument)
        optimizer = keras.optimizers.SGD(learning_rate)
        optimizer.build(model.trainable_variables)
    check_layers(model)
    return model, optimizer


def mean_gradient(tf, model, loss_fn, x, y) -> np.ndarray:
    """The gradient of the mean per-example loss (summed over outputs), as one float64 vector."""
    with tf.GradientTape() as tape:
        mean = tf.reduce_mean(per_example_values(tf, loss_fn, y, model(x, training=True)))
    gradients = tape.gradient(mean, model.trainable_variables)
    return flat_float64([np.asarray(g, np.float64) for g in gradients])


def flat_weights(model) -> np.ndarray:
    return flat_float64([np.asarray(v, np.float64) for v in model.trainable_variables])


def run_learner(step, *args):
    """Run a traced step of the learner's code; their exceptions become one sentence."""
    try:
        return step(*args)
    except Exception as error:  # noqa: BLE001 - any failure of the learner's code
        raise LearnerError(_traced_why(error)) from None


def _traced_why(error: BaseException) -> str:
    """One sentence from an error raised while tracing, without AutoGraph's "in user code"."""
    if (sentence := traced_learner_error(error)) is not None:
        return sentence
    if numpy_in_graph(error):
        return NUMPY_IN_GRAPH
    return f"your function failed inside strategy.run: {innermost_error(error).rstrip('.')}."


_ERROR_LINE = re.compile(r"^(?:[\w.]+\.)?(\w*(?:Error|Exception|Exit|Warning))(?:: (.*))?$")
_USER_FRAME = re.compile(r'^File "([^"]+)", line (\d+), in (\S+)')

# Why a NumPy call fails in a traced step, as the learner should read it.
NUMPY_IN_GRAPH = (
    "your code turns a tensor into NumPy (.numpy(), np.mean, float(...)), but inside "
    "strategy.run and tf.function a tensor is symbolic: it has no value yet while the step is "
    "traced. Write the computation with TensorFlow operations (tf.reduce_sum, tf.reduce_mean, "
    "tf.cast) and return a tensor."
)
_NUMPY_SIGNS = (
    "object has no attribute 'numpy'",
    "Cannot convert a symbolic tf.Tensor",
    "Cannot convert a symbolic Keras",
    "Expected any non-tensor type, but got a tensor instead",
    "Attempting to capture an EagerTensor without building a function",
)


def numpy_in_graph(error: BaseException) -> bool:
    """Whether ``error`` says NumPy was asked for the value of a traced (symbolic) tensor.

    Example:
        >>> numpy_in_graph(AttributeError("'SymbolicTensor' object has no attribute 'numpy'"))
        True
        >>> numpy_in_graph(ValueError("Dimensions must be equal"))
        False
    """
    text = str(error)
    return any(sign in text for sign in _NUMPY_SIGNS)


def innermost_error(error: BaseException) -> str:
    r"""``'XxxError: message'``: the error TensorFlow wrapped, not its "in user code:" header.

    A traced function's error carries the learner's traceback in its message; the last line
    naming an error is the one that says why. The learner's own line is added when the
    traceback names it (a frame outside TensorFlow, Keras and NumPy).

    Example:
        >>> innermost_error(ValueError('in user code:\n\n  File "<answer>", line 3, in loss  *\n'
        ...     '      return x + y\n\n  ValueError: Dimensions must be equal, but are 4 and 5'))
        'ValueError: Dimensions must be equal, but are 4 and 5 (in loss, line 3: return x + y)'
        >>> innermost_error(KeyError("k"))
        "KeyError: 'k'"
    """
    lines = [line for line in error_lines(error) if line != "in user code:"]
    named = [m for m in (_ERROR_LINE.match(line) for line in lines) if m]
    if named and named[-1].group(2):
        what = f"{named[-1].group(1)}: {named[-1].group(2)}"
    else:
        first = next((line for line in lines if not _USER_FRAME.match(line)), "")
        what = f"{type(error).__name__}: {first or str(error) or 'no message'}"
    what = re.sub(r" for '\{\{node .*$", "", what)[:240]
    where = _learner_line(lines)
    return f"{what} ({where})" if where else what


def _learner_line(lines: list[str]) -> str:
    """'in f, line N: code' for the last frame of the learner's code a traceback names."""
    found = ""
    for index, line in enumerate(lines):
        frame = _USER_FRAME.match(line)
        if frame and not re.search(r"site-packages|dist-packages|/mirrorkit/", frame.group(1)):
            code = lines[index + 1] if index + 1 < len(lines) else ""
            code = "" if _USER_FRAME.match(code) or _ERROR_LINE.match(code) else code
            found = f"in {frame.group(3)}, line {frame.group(2)}" + (f": {code}" if code else "")
    return found[:160]


def learner_error(error: BaseException, what: str) -> str:
    """One sentence for an error the learner's ``what`` raised: the real error, or NumPy's why.

    Example:
        >>> learner_error(AttributeError("'SymbolicTensor' object has no attribute 'numpy'"),
        ...     "evaluate")[:42]
        'evaluate failed: your code turns a tensor '
    """
    if isinstance(error, LearnerError):
        return str(error)
    if numpy_in_graph(error):
        return f"{what} failed: {NUMPY_IN_GRAPH}"
    return f"{what} raised {innermost_error(error).rstrip('.')}."


def traced_learner_error(error: BaseException) -> str | None:
    r"""The sentence of a :class:`LearnerError` raised while tracing, however wrapped, or None.

    A ``guarded`` function's error raised inside ``tf.function`` reaches the caller inside
    AutoGraph's "in user code:" text; this finds its sentence again. None: the error is not
    the learner's (the check's own, to raise as it is).

    Example:
        >>> traced_learner_error(LearnerError("compute_loss failed: ..."))
        'compute_loss failed: ...'
        >>> traced_learner_error(ValueError("in user code:\n\n  LearnerError: f raised X."))
        'f raised X.'
        >>> traced_learner_error(LearnerError('in user code:\n\n  File "a.py", line 3, in f  *\n'
        ...     '      return g(x)\n\n  f failed: use tf.reduce_mean.\n'))
        'f failed: use tf.reduce_mean.'
        >>> traced_learner_error(KeyError("k")) is None
        True
    """
    lines = [line for line in error_lines(error) if line != "in user code:"]
    ours = [line for line in lines if line.startswith("LearnerError: ")]
    if ours:
        return ours[-1].removeprefix("LearnerError: ")
    if not isinstance(error, LearnerError):
        return None
    # AutoGraph keeps the type and puts its frames before the sentence, the last line.
    return lines[-1] if "in user code:" in str(error) and lines else str(error)


def guarded(function, what: str):
    """``function`` whose errors become :class:`LearnerError` sentences, even when traced.

    Raised inside ``tf.function``, an error reaches the caller wrapped in AutoGraph's
    "in user code:" text; a LearnerError's sentence is then found again by ``run_learner``.

    Example:
        >>> guarded(lambda x: 1 / x, "compute_loss")(0)
        Traceback (most recent call last):
        ...
        mirrorkit.checks._learner_runs.LearnerError: compute_loss raised ZeroDivisionError: ...
    """

    @functools.wraps(function)
    def run(*args, **kwargs):
        try:
            return function(*args, **kwargs)
        except LearnerError:
            raise
        except Exception as error:  # noqa: BLE001 - the learner's code: a verdict
            raise LearnerError(learner_error(error, what)) from None

    return run


def literal_numbers(function) -> tuple[float, ...]:
    """The numbers written in ``function`` (and its nested functions), or read from globals.

    These are the candidates for a number fixed for one replica count (a 4 or a 32). 0 and
    1 are left out; so are True and False.

    Example:
        >>> def loss(x):
        ...     return x / 32 + 0.5 * x
        >>> literal_numbers(loss)
        (0.5, 32)
    """
    code = getattr(getattr(function, "__func__", function), "__code__", None)
    if code is None:
        return ()
    found: dict = {}
    names: set = set()
    stack = [code]
    while stack:
        each = stack.pop()
        names.update(each.co_names)
        for const in each.co_consts:
            if hasattr(const, "co_consts"):
                stack.append(const)
            elif isinstance(const, numbers.Real) and not isinstance(const, bool):
                found[const] = None
    scope = getattr(function, "__globals__", {})
    for name in names:
        value = scope.get(name)
        if isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_):
            found[value] = None
    for value in getattr(function, "__defaults__", None) or ():
        if isinstance(value, numbers.Real) and not isinstance(value, bool):
            found[value] = None
    return tuple(sorted(v for v in found if v not in (0, 1, -1) and np.isfinite(v)))


def same_gradient(a: np.ndarray, b: np.ndarray) -> bool:
    return float(np.linalg.norm(a - b)) <= 1e-4 * float(np.linalg.norm(b)) + 1e-6
