"""The per-example loss the checks compare against, from what a learner names."""

from mirrorkit._validate import refuse


def per_example_loss(loss):
    """The function ``loss(y_true, y_pred)`` returning one value per example, from a Keras
    loss name, a ``keras.losses.Loss`` (its reduction ignored) or a function."""
    import keras

    if isinstance(loss, str):
        try:
            fn = keras.losses.get(loss)
        except ValueError as error:
            raise ValueError(
                f"loss={loss!r} is not a Keras loss name: use a name such as 'mse' or "
                "'sparse_categorical_crossentropy', a keras.losses.Loss, or a function."
            ) from error
        if isinstance(fn, keras.losses.Loss):
            return fn.call
        return fn
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # the per-example values, before any reduction
    if callable(loss):
        return loss
    refuse(
        "loss",
        must="the per-example loss meant to be minimised: a Keras loss name such as 'mse', a "
        "keras.losses.Loss or a function loss(y_true, y_pred)",
        got=type(loss).__name__,
        write="e.g. loss='mse'",
    )
