"""Checks of arguments that several public functions share, each with one clear sentence."""

from __future__ import annotations


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
    raise TypeError(
        f"strategy must be a tf.distribute.Strategy, got {type(strategy).__name__}: "
        f"create one with strategy = mk.make_strategy() and call {call}."
    )
