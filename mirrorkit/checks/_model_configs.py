"""A model and a loss as configuration another process rebuilds: Keras classes only.

A check asked in one process and judged in another (the grader's executor and its verdict)
sends the chapter's model this way, so the verdict can compute the one-device reference
without running the chapter: what crosses is Keras's own configuration, and the rebuild
accepts only Keras's own classes that run no code of their own (no ``Lambda``, nothing
registered by a user), with Keras's ``safe_mode`` on.

Example:
    >>> import keras
    >>> model = keras.Sequential([keras.Input((2,)), keras.layers.Dense(1)])
    >>> rebuilt = model_from(config_of(model))
    >>> [tuple(w.shape) for w in rebuilt.weights]
    [(2, 1), (1,)]
"""

from __future__ import annotations

from mirrorkit.checks._steps import build_model

_CODE_LAYERS = frozenset({"Lambda", "TFSMLayer", "JaxLayer", "FlaxLayer", "TorchModuleWrapper"})
_OWN = {  # module -> the classes of Keras's own that may appear there (None: any of its own)
    "keras": frozenset({"Sequential", "Functional", "DTypePolicy", "FloatDTypePolicy"}),
    "keras.layers": None,
    "keras.initializers": None,
    "keras.regularizers": frozenset({"L1", "L2", "L1L2", "OrthogonalRegularizer"}),
    "keras.losses": None,
}
_BASES = {  # module -> the class every class named there must be
    "keras.layers": "Layer",
    "keras.initializers": "Initializer",
    "keras.regularizers": "Regularizer",
    "keras.losses": "Loss",
}
_FUNCTIONAL = ("keras.src.models.functional", "Functional")  # where Keras writes it from
_TENSOR = "__keras_tensor__"  # a functional model's links between layers
MAX_CONFIG = 1 << 20  # characters of one configuration, at most


def config_of(thing) -> dict | None:
    """Keras's configuration of a model or a loss, or None when Keras cannot write one."""
    import keras

    try:
        return keras.saving.serialize_keras_object(thing)
    except Exception:  # noqa: BLE001 - a model of the learner's own classes: not sent
        return None


def sent_loss(loss):
    """The check's ``loss`` as it crosses: a Keras loss name, or Keras's configuration."""
    return loss if isinstance(loss, str) else config_of(loss)


def reference_of(tf, record: dict, model_fn, loss) -> tuple:
    """``(model, loss)`` a verdict computes its one-device reference with.

    The check's own ``model_fn`` (built on the record's ``x``) and ``loss``, or, where None,
    the model and loss rebuilt from the configuration the record carries.
    """
    if model_fn is None:
        model = model_from(record["model"])
    else:
        model = build_model(tf, model_fn, record["x"])
    return model, loss_from(record["loss"]) if loss is None else loss


def model_from(config):
    """The model ``config`` describes, built, with fresh weights.

    Raises:
        ValueError: If ``config`` names a class that is not Keras's own, or is no model.
    """
    import keras

    if config is None:
        raise ValueError(
            "the chapter's model did not cross: Keras could not write its configuration "
            "(a model of classes of its own?); build the chapter's model from Keras's layers"
        )
    _allowed(config)
    model = keras.saving.deserialize_keras_object(config, safe_mode=True)
    if not isinstance(model, keras.Model) or not model.built:
        raise ValueError("the configuration is not a built Keras model")
    return model


def loss_from(config):
    """The loss ``config`` describes: a Keras loss name, or a Keras loss class's configuration.

    Raises:
        ValueError: If ``config`` is neither.
    """
    import keras

    if isinstance(config, str):
        return config
    _allowed(config)
    if not isinstance(config, dict) or config.get("module") != "keras.losses":
        raise ValueError("the configuration is not a Keras loss")
    return keras.losses.deserialize(config)


def _allowed(config) -> None:
    """Refuse a configuration that names a class Keras's own modules do not hold."""
    import json

    import keras

    if len(json.dumps(config)) > MAX_CONFIG:
        raise ValueError("the configuration is too large")
    stack = [config]
    while stack:
        each = stack.pop()
        if isinstance(each, list):
            stack.extend(each)
        if not isinstance(each, dict):
            continue
        stack.extend(each.values())
        name = each.get("class_name")
        if name is None or name == _TENSOR and "module" not in each:
            continue
        module = each.get("module")
        if not _keras_class(keras, module, name) or each.get("registered_name") not in (None, name):
            raise ValueError(f"the configuration names {module}.{name}, not a class it accepts")


def _keras_class(keras, module, name) -> bool:
    """Whether ``module.name`` is one of Keras's own classes that the rebuild accepts."""
    if (module, name) == _FUNCTIONAL:
        return True
    own = _OWN.get(module, frozenset())
    if not isinstance(name, str) or name.startswith("_") or name in _CODE_LAYERS:
        return False
    if own is not None and name not in own:
        return False
    home = getattr(keras, module.split(".", 1)[1]) if "." in module else keras
    found = getattr(home, name, None)
    base = getattr(home, _BASES[module]) if module in _BASES else object
    return isinstance(found, type) and issubclass(found, base)
