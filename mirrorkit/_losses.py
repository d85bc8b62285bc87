"""The per-example loss the checks compare against, from what a learner names."""

from mirrorkit._validate import refuse

_LOSS_KINDS = "a Keras loss name, a keras.losses.Loss or a function loss(y_true, y_pred)"


def per_example_loss(loss):
    """The function ``loss(y_true, y_pred)`` returning one value per example, from a Keras
    loss name, a ``keras.losses.Loss`` (its reduction ignored) or a function."""
    import keras

    if isinstance(loss, str):
        try:
            fn = keras.losses.get(loss)
        except ValueError:
            refuse(
                "loss",
                must=_LOSS_KINDS,
                got=f"{loss!r} (loss={loss!r} is not a Keras loss name: use a name such as 'mse')",
                write="loss='mse' or loss='sparse_categorical_crossentropy'",
                error=ValueError,
            )
        return fn.call if isinstance(fn, keras.losses.Loss) else fn
    if isinstance(loss, keras.losses.Loss):
        return loss.call  # the per-example values, before any reduction
    if callable(loss):
        return loss
    refuse("loss", loss, must=_LOSS_KINDS, write="loss='mse'")
