"""The values each browser lab invites the reader to change, their ranges, and why.

A lab checks every such value in its own words (its variable, its range and the reason for
it, what to write) before it computes anything, and again in each function a slider calls:
nothing a reader types reaches the book's code as a value it would refuse in a library's
words, and no value makes the tab work for long (each range says what bounds it). A slider
takes its range from here and refuses, rather than caps, a value it cannot show.

Example:
    >>> from mirrorkit.checks.lab_settings import check_settings
    >>> check_settings("03_sum_and_mean", EXAMPLES=100)
    Traceback (most recent call last):
    ...
    ValueError: EXAMPLES must be an int from 1 to 64 (the lab holds 64 examples), got 100: write EXAMPLES = 32.
"""  # noqa: E501 - a doctest's expected line

from __future__ import annotations

from dataclasses import dataclass

from mirrorkit._validate import refuse, require_choice, require_count, require_number


@dataclass(frozen=True)
class Setting:
    """One value a lab invites the reader to change.

    Attributes:
        name: The lab's variable, e.g. ``"REPLICAS"``.
        example: The lab's own value: what a refusal says to write.
        minimum: The smallest value accepted.
        maximum: The largest value accepted.
        why: What the range stands for, or what bounds it (the work the lab does).
        whole: An int (True), or any number (False).
        above: For a number, a bound it must stay above (``0`` for a rate).

    Example:
        >>> Setting("REPLICAS", 4, 1, 64, "at most 64 columns").check(8)
        8
    """

    name: str
    example: int | float
    minimum: int | float | None
    maximum: int | float
    why: str
    whole: bool = True
    above: float | None = None

    def check(self, value, name: str | None = None):
        """``value`` if it is in range; else the refusal, naming ``name`` (the variable's)."""
        name = name or self.name
        write = f"{name} = {self.example!r}" if name.isupper() else f"{name}={self.example!r}"
        if self.whole:
            low = self.minimum if self.minimum is not None else 0
            return require_count(
                name, value, minimum=low, maximum=self.maximum, write=write, why=self.why
            )
        return require_number(
            name,
            value,
            above=self.above,
            minimum=self.minimum,
            maximum=self.maximum,
            write=write,
            why=self.why,
        )


_STEP = "a picture draws every example of a step"
_TAB = "more would keep the browser tab busy for long"
SETTINGS: dict[str, tuple[Setting, ...]] = {
    "02_batch_split": (
        Setting("EXAMPLES", 50, 1, 1_000_000, _TAB),
        Setting("GLOBAL_BATCH", 16, 1, 1024, _STEP),
        Setting("REPLICAS", 4, 1, 64, "the picture draws a column per replica"),
    ),
    "03_sum_and_mean": (
        Setting("REPLICAS", 4, 1, 64, "the table lists a weight per replica"),
        Setting("EXAMPLES", 32, 1, 64, "the lab holds 64 examples"),
        Setting("WEIGHT", 0.5, -100.0, 100.0, "the one weight of the model", whole=False),
    ),
    "04_loss_scaling": (
        Setting("SCALE", 2**15, None, 2.0**64, "a loss scale", whole=False, above=0),
        Setting("GROWTH", 2, 1, 1_000_000, "good steps before the scale doubles"),
        Setting("LARGEST_GRADIENT", 1.5, None, 1e6, "a gradient's size", whole=False, above=0),
        Setting("STEPS", 12, 1, 200, "the table prints a row per step"),
    ),
    "05_ring_all_reduce": (
        Setting("SIZE", 1 << 20, 1, 1 << 50, "bytes per replica, up to a petabyte"),
        Setting("SECONDS", 0.001, None, 1e6, "the all-reduce's time", whole=False, above=0),
        Setting("REPLICAS", 64, 2, 64, "a ring of n replicas makes 2(n - 1) n sends, all counted"),
        Setting("LAUNCH", 650e-6, 0.0, 10.0, "seconds per call", whole=False),
        Setting("ALPHA", 146e-6, 0.0, 10.0, "seconds per step", whole=False),
        Setting("GRADIENTS", 25_000_000, 1, 10**12, "float32 parameters"),
    ),
    "06_auto_shard": (
        Setting("WORKERS", 2, 1, 8, "the lab prints every worker's batches"),
        Setting("GLOBAL_BATCH", 4, 1, 64, "the lab prints every batch"),
        Setting("EXAMPLES", 16, 1, 200, "the lab prints every example each worker reads"),
    ),
    "07_evaluation_loss": (
        Setting("EXAMPLES", 50, 1, 2000, _TAB),
        Setting("GLOBAL_BATCH", 16, 1, 2000, "a batch's examples are cut across replicas"),
        Setting("REPLICAS", 4, 1, 16, "the lab lists each replica's totals"),
    ),
    "08_scaling_rule": (
        Setting("BASE", 0.1, None, 10.0, "a learning rate", whole=False, above=0),
        Setting("REPLICAS", 8, 1, 1024, "replicas of the same batch"),
        Setting("WARMUP", 8, 0, 10_000, "steps of warm-up, 0 for none"),
        Setting("STEPS", 12, 1, 200, "the lab prints a bar per step"),
    ),
}


def setting(lab: str, name: str) -> Setting:
    """The :class:`Setting` of lab ``lab`` called ``name`` (any case: ``replicas`` too).

    Example:
        >>> setting("02_batch_split", "replicas").maximum
        64
    """
    require_choice("lab", lab, list(SETTINGS))
    found = [s for s in SETTINGS[lab] if s.name == name.upper()]
    if not found:
        names = ", ".join(s.name for s in SETTINGS[lab])
        refuse("name", name, must=f"one of {names}", write=f"name={SETTINGS[lab][0].name!r}")
    return found[0]


def check_settings(lab: str, **values) -> None:
    """Each value if its setting accepts it, else the refusal in the lab's words.

    A name in capitals is the lab's variable (``REPLICAS=REPLICAS``); in lower case, an
    argument of one of the lab's functions (``replicas=replicas``): the message names it.

    Example:
        >>> check_settings("02_batch_split", GLOBAL_BATCH=16.0)
        Traceback (most recent call last):
        ...
        TypeError: GLOBAL_BATCH must be an int from 1 to 1024 (a picture draws every example of a step), got float 16.0: write GLOBAL_BATCH = 16.
    """  # noqa: E501 - a doctest's expected line
    for name, value in values.items():
        setting(lab, name).check(value, name)


def slider(lab: str, name: str, value, *, low=None, high=None, call: str = "") -> dict:
    """The arguments of a slider for ``value``: it starts there, or the value is refused.

    ``low`` and ``high`` narrow the setting's range to what the slider shows; a value
    outside it is refused with ``call``, the way to try it without the slider.

    Example:
        >>> slider("04_loss_scaling", "GROWTH", 2, high=20)
        {'value': 2, 'min': 1, 'max': 20}
        >>> slider("04_loss_scaling", "GROWTH", 2000, high=20, call="search(growth=2000)")
        Traceback (most recent call last):
        ...
        ValueError: GROWTH must be an int from 1 to 20 (what the slider shows; search(growth=2000) takes any accepted value), got 2000: write GROWTH = 2.
    """  # noqa: E501 - a doctest's expected line
    known = setting(lab, name)
    value = known.check(value, name)
    low = known.minimum if low is None else low
    high = known.maximum if high is None else high
    shown = Setting(
        known.name,
        known.example,
        low,
        high,
        f"what the slider shows; {call} takes any accepted value"
        if call
        else "what the slider shows",
        known.whole,
        None if low is not None else known.above,
    )
    shown.check(value, name)
    return {"value": value, "min": low, "max": high}
