"""The cost model's least-squares solver: parameters at least 0, and their standard errors."""

from __future__ import annotations

import itertools

import numpy as np


def nonnegative_least_squares(a: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Minimise ``||a x - y||`` with ``x >= 0``, exactly, for a few columns.

    The solution is the unconstrained least-squares solution on its own support, so the
    best subset of columns whose solution has no negative value is the answer: every subset
    is tried. Columns are scaled to unit norm first (the byte column is 1e9 times the
    others).

    Returns:
        ``(x, support)``: the solution, and which of its values are above their bound 0.

    Example:
        >>> a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
        >>> x, support = nonnegative_least_squares(a, np.array([3.0, 2.0, 1.0]))
        >>> x.round(6).tolist(), support.tolist()  # the slope would be negative: held at 0
        ([2.0, 0.0], [True, False])
    """
    norms = np.linalg.norm(a, axis=0)
    norms[norms == 0] = 1.0
    b = a / norms
    k = b.shape[1]
    best: tuple[float, np.ndarray, np.ndarray] | None = None
    for size in range(k, 0, -1):
        for subset in itertools.combinations(range(k), size):
            cols = list(subset)
            z, *_ = np.linalg.lstsq(b[:, cols], y, rcond=None)
            if (z < 0).any():
                continue
            x = np.zeros(k)
            x[cols] = z
            cost = float(np.sum((b @ x - y) ** 2))
            if best is None or cost < best[0] * (1 - 1e-12):
                support = np.zeros(k, bool)
                support[cols] = True
                best = (cost, x, support)
    assert best is not None  # one positive column alone always fits y > 0 with x > 0
    return best[1] / norms, best[2]


def covariance(a: np.ndarray, y: np.ndarray, x: np.ndarray, support: np.ndarray):
    """The covariance of the solution's values above their bound, or ``None``.

    ``None`` when no residual is left to judge it (as many rows as values fitted); the rows
    and columns of values held at 0 are 0.

    Example:
        >>> a = np.array([[1.0, 1.0], [1.0, 2.0], [1.0, 3.0]])
        >>> y = np.array([1.0, 2.1, 2.9])
        >>> x, support = nonnegative_least_squares(a, y)
        >>> covariance(a, y, x, support).shape
        (2, 2)
    """
    dof = len(y) - int(support.sum())
    if dof <= 0:
        return None
    residuals = a @ x - y
    sub = a[:, support]
    full = np.zeros((len(x), len(x)))
    index = np.flatnonzero(support)
    full[np.ix_(index, index)] = float(residuals @ residuals) / dof * np.linalg.pinv(sub.T @ sub)
    return full
