"""Trait validators the widgets share: a lower bound, and a throttle's budget."""

from __future__ import annotations

import traitlets

from mirrorkit._validate import refuse
from mirrorwidgets._throttle import budget_message


def at_least(*names: str, minimum: float, unit: str = "", why: str = "", example: str = ""):
    """A validator refusing a value of the traits ``names`` below ``minimum``.

    The message is :func:`mirrorkit._validate.refuse`'s, with a TraitError: ``"<name> must be
    >= <minimum> <unit> (<why>), got <value>: write e.g. <example>."``; ``example`` may say
    ``{name}`` and ``{default}``, and is ``{name}={default}`` (the trait's default) if not given.
    Assign the result in a ``HasTraits`` class body, as ``@traitlets.validate`` would be.

    Example:
        >>> import traitlets
        >>> class Chart(traitlets.HasTraits):
        ...     max_points = traitlets.Int(500)
        ...     _points = at_least("max_points", minimum=2, why="a line needs two points")
        >>> Chart(max_points=1)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        traitlets...TraitError: max_points must be >= 2 (a line needs two points), got 1: write e.g. max_points=500.
    """  # noqa: E501 - a doctest's expected line

    def check(widget, proposal):
        value = proposal["value"]
        if not value >= minimum:  # NaN too
            name = proposal["trait"].name
            bound = " ".join(str(part) for part in (minimum, unit) if part != "")
            reason = f" ({why})" if why else ""
            default = widget.traits()[name].default_value
            write = "e.g. " + (example or "{name}={default}").format(name=name, default=default)
            refuse(name, value, must=f">= {bound}{reason}", write=write, error=traitlets.TraitError)
        return value

    return traitlets.validate(*names)(check)


def budget_fraction():
    """A validator for the trait ``budget``: a fraction of wall time in (0, 1].

    Example:
        >>> import traitlets
        >>> class Live(traitlets.HasTraits):
        ...     budget = traitlets.Float(0.05)
        ...     _budget = budget_fraction()
        >>> Live(budget=5)  # doctest: +ELLIPSIS
        Traceback (most recent call last):
        ...
        traitlets.traitlets.TraitError: budget must be ... got 5.0: for 5% write budget=0.05.
    """

    def check(widget, proposal):
        if not 0 < proposal["value"] <= 1:
            raise traitlets.TraitError(budget_message(proposal["value"]))
        return proposal["value"]

    return traitlets.validate("budget")(check)
