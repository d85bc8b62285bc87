"""Checks of arguments that several public functions share, each with one clear sentence."""

from __future__ import annotations

import inspect


def require_strategy(strategy, call: str) -> None:
    """Raise a TypeError unless ``strategy`` is a ``tf.distribute.Strategy`` object.

    ``call`` is how the learner's call should read, e.g. ``"mk.preview_input(strategy,
    dataset)"``; the message quotes it.
    """
    import tensorflow as tf

    if isinstance(strategy, tf.distribute.Strategy):
        return
    if isinstance(strategy, type) and issubclass(strategy, tf.distribute.Strategy):
        raise TypeError(
            f"strategy is the class {strategy.__name__}, not a strategy: create one first, "
            f"strategy = mk.make_strategy(), then call {call}."
        )
    if inspect.isroutine(strategy) and strategy.__name__ == "make_strategy":
        raise TypeError(
            f"strategy is the function make_strategy, not a strategy: call it "
            f"(strategy = mk.make_strategy()), then call {call}."
        )
    if inspect.isroutine(strategy):
        got = f"the function {strategy.__name__}"
    elif isinstance(strategy, str):
        got = f"the text {strategy!r}"
    else:
        got = type(strategy).__name__
    raise TypeError(
        f"strategy must be a tf.distribute.Strategy, got {got}: create one with "
        f"strategy = mk.make_strategy() and call {call}."
    )
