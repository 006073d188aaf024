"""Laplace kernels of a log-normal weight and their averages over a Gaussian quadratic exponent.

For ``X = exp(x + sigma z)``, ``z ~ N(0, 1)``, the kernels

    tail(x) = E_z[1 - exp(-X)],   first(x) = E_z[X exp(-X)],   second(x) = E_z[X^2 exp(-X)]

are ``1 - E[exp(-t A)]``, ``E[t A exp(-t A)]`` and ``E[(t A)^2 exp(-t A)]`` of a weight
``A = e^(x - log t) e^(sigma z)``: the Laplace transform of a log-normal weight and its first two
size-biased versions. :func:`kernel_table` tabulates their logarithms once per ``sigma`` (cubic
Hermite pieces with exact slopes, ``(log tail)' = first / tail``, ``(log first)' = 1 - second /
first``, ``(log second)' = 2 - third / second``; exact tails outside the table).

:func:`quadratic_transforms` averages them over ``x = nu - r^2 / 2`` with ``r ~ N(m, tau^2)``, on a
uniform grid of ``nu`` and for a batch of means ``m``. With ``r = (y - o) / s`` this is the Laplace
transform, over its centre ``o``, of the weight ``exp(kappa + sigma z) N(y; o, s^2)`` of one
component of a Gaussian mixture (the Bayes-optimal output channel of
:mod:`bayes_slr.formulas.bayes_channel`). The ``r`` average is a trapezoid rule on a fixed grid of
``[-R_MAX, R_MAX]`` (the kernels vanish beyond it on the ``nu`` range used), so the table is read
once for all means; a narrow law (``tau`` below :data:`NARROW_TAU`) is integrated on its own
Gaussian rule instead.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.numerics import integrals

TABLE_LOW, TABLE_HIGH = -45.0, 6.0
"""The table covers ``[TABLE_LOW - z_top sigma, TABLE_HIGH + ZMAX sigma]`` (``z_top``: the upper
end of the rule in ``z``, :func:`rule_top`): below it every ``x + sigma z < -45`` (``exp(-X) = 1 -
X`` to ``e^-45``), above it every ``X > e^6`` (kernels below ``e^-400``, ``tail = 1``)."""
TABLE_COUNT = 2301
"""Nodes of every table: spacing ``(51 + (9 + z_top) sigma) / 2300``, at most ``0.03 max(1,
sigma)`` for ``sigma < 17`` (cubic Hermite error about 1e-10 on the transforms, against a table
three times finer)."""
SIZE_BIAS_TAIL = 4.5
"""Reach of the rule in ``z`` beyond ``3 sigma``: ``X^k exp(-X)`` (``k <= 3``) weighs the Gaussian
by ``exp(k sigma z)``, which moves its mass up to ``z = k sigma`` where ``X`` is small; the
rule's upper end is ``max(ZMAX, 3 sigma + SIZE_BIAS_TAIL)``, so that it grows only once ``sigma >
1.5`` (below, the rule and the tables are those of a fixed ``[-ZMAX, ZMAX]``)."""
R_MAX = 16.0
"""Half-width of the fixed ``r`` grid: ``tail(nu - R_MAX^2 / 2) < e^(-83 + sigma^2 / 2)`` for ``nu
<= 45`` (``E[X]``; below ``e^-60`` for ``sigma < 6.8``)."""
R_COUNT = 301
"""Nodes of the fixed ``r`` grid (spacing 0.107). The kernels' edge at ``r^2 / 2 = nu`` has width
``1 / r``; where it is sharp (large ``nu``) the integrands of the callers carry ``e^-nu``: against
a grid of spacing 0.02 the channel of :mod:`~bayes_slr.numerics.mixture_channel` moves by 1e-11."""
NARROW_TAU = 0.16
"""Below this ``tau`` (1.5 grid spacings) the Gaussian in ``r`` is integrated on its own rule."""
NARROW_NODES = 65
_NARROW_Z = np.linspace(-integrals.ZMAX, integrals.ZMAX, NARROW_NODES)
_NARROW_WEIGHTS = np.exp(-0.5 * _NARROW_Z**2) / np.sum(np.exp(-0.5 * _NARROW_Z**2))
_R_GRID = np.linspace(0.0, R_MAX, (R_COUNT + 1) // 2)
"""The non-negative half of the ``r`` grid (the kernels depend on ``r^2``: signs are folded)."""


class KernelTable(NamedTuple):
    """``log tail``, ``log first``, ``log second``: cubic Hermite pieces on a uniform grid of ``x``.

    ``pieces[f, i]`` holds the coefficients of ``t^0..t^3`` of function ``f`` on
    ``[x_lo + i spacing, x_lo + (i + 1) spacing]``; ``lower[f]`` the value at ``x_lo``;
    ``upper[f]`` the value and the slope at the upper end.
    """

    x_lo: jax.Array
    spacing: jax.Array
    pieces: jax.Array
    lower: jax.Array
    upper: jax.Array


class Transforms(NamedTuple):
    """Averages over ``r ~ N(m, tau^2)`` of the kernels at ``x = nu - r^2 / 2``, ``(n_m, n_nu)``.

    ``second_rho`` weights ``second`` by ``r^2 / 2``.
    """

    tail: jax.Array
    first: jax.Array
    second: jax.Array
    second_rho: jax.Array


LOWER_SLOPES = jnp.array([1.0, 1.0, 2.0])
"""Slopes of ``log tail``, ``log first``, ``log second`` below the table (``X -> 0``)."""


def log_kernels(x: jax.Array, sigma: jax.Array, rule: integrals.Rule) -> jax.Array:
    """``log tail``, ``log first``, ``log second``, ``log third`` at the points ``x``, ``(4,) +
    x.shape``, by the Gaussian ``rule`` in ``z`` (its spacing must resolve ``sigma``).

    Summed in linear space: on the table's range ``-45 - (9 + z_top) sigma <= x + sigma z``, and the
    node ``z = -ZMAX`` keeps every kernel above ``e^-600`` up to ``x = 6 + ZMAX sigma`` (``sigma <
    30``).
    """
    X = jnp.exp(integrals.clip_log_argument(x[..., None] + sigma * rule.nodes))
    laplace = jnp.exp(-X) * rule.weights
    tail = jnp.sum(-jnp.expm1(-X) * rule.weights, axis=-1)
    first = jnp.sum(X * laplace, axis=-1)
    second = jnp.sum(X**2 * laplace, axis=-1)
    third = jnp.sum(X**3 * laplace, axis=-1)
    return jnp.log(jnp.stack([tail, first, second, third]))


def kernel_table(sigma: jax.Array, rule: integrals.Rule) -> KernelTable:
    """Tabulate the kernels for the spread ``sigma >= 0`` (``rule``: a Gaussian rule sized for the
    largest ``sigma`` the caller uses, :func:`table_rule`)."""
    z_top = float(rule.nodes[-1])
    x_lo = TABLE_LOW - z_top * sigma
    spacing = (TABLE_HIGH - TABLE_LOW + (integrals.ZMAX + z_top) * sigma) / (TABLE_COUNT - 1)
    x = x_lo + spacing * jnp.arange(TABLE_COUNT)
    log_tail, log_first, log_second, log_third = log_kernels(x, sigma, rule)
    values = jnp.stack([log_tail, log_first, log_second])
    slopes = jnp.stack(
        [
            jnp.exp(log_first - log_tail),
            -jnp.expm1(log_second - log_first),
            2.0 - jnp.exp(log_third - log_second),
        ]
    )
    f0, f1 = values[:, :-1], values[:, 1:]
    d0, d1 = slopes[:, :-1] * spacing, slopes[:, 1:] * spacing
    pieces = jnp.stack(
        [f0, d0, 3.0 * (f1 - f0) - 2.0 * d0 - d1, 2.0 * (f0 - f1) + d0 + d1], axis=-1
    )
    return KernelTable(
        x_lo, spacing, pieces, values[:, 0], jnp.stack([values[:, -1], slopes[:, -1]], axis=-1)
    )


def kernel_values(table: KernelTable, x: jax.Array) -> jax.Array:
    """``tail``, ``first``, ``second`` at ``x``, shape ``(3,) + x.shape``.

    Cubic Hermite in log space inside the table; below it the exact power laws (slopes 1, 1, 2);
    above it the end slopes (``tail -> 1``, the others below ``e^-400``).
    """
    count = table.pieces.shape[1]
    position = (x - table.x_lo) / table.spacing
    index = jnp.clip(jnp.floor(position), 0, count - 1).astype(jnp.int32)
    t = jnp.clip(position - index, 0.0, 1.0)
    c = table.pieces[:, index]
    inside = c[..., 0] + t * (c[..., 1] + t * (c[..., 2] + t * c[..., 3]))
    expand = (slice(None),) + (None,) * x.ndim
    gap_lo = x - table.x_lo
    gap_hi = (position - count) * table.spacing
    below = table.lower[expand] + LOWER_SLOPES[expand] * gap_lo
    above = table.upper[:, 0][expand] + table.upper[:, 1][expand] * gap_hi
    log_values = jnp.where(gap_lo < 0, below, jnp.where(gap_hi > 0, above, inside))
    return jnp.exp(log_values)


def _grid_transforms(table: KernelTable, nu: jax.Array, m: jax.Array, tau: jax.Array) -> Transforms:
    """Trapezoid rule on the fixed ``r`` grid: one table read for every mean."""
    r = _R_GRID
    step = r[1] - r[0]
    kernels = kernel_values(table, nu[:, None] - 0.5 * r[None, :] ** 2)  # (3, n_nu, n_r)
    density = jnp.exp(-0.5 * ((r[None, :] - m[:, None]) / tau) ** 2) + jnp.exp(
        -0.5 * ((r[None, :] + m[:, None]) / tau) ** 2
    )
    weights = jnp.where(r == 0.0, 0.5, 1.0) * step * density / (tau * math.sqrt(2.0 * math.pi))
    tail, first, second = (weights @ k.T for k in kernels)
    return Transforms(tail, first, second, (weights * (0.5 * r**2)) @ kernels[2].T)


def _narrow_transforms(
    table: KernelTable, nu: jax.Array, m: jax.Array, tau: jax.Array
) -> Transforms:
    """The Gaussian in ``r`` on its own rule (``r = m + tau z``), one table read per mean."""
    r = m[:, None] + tau * _NARROW_Z[None, :]  # (n_m, n_z)
    kernels = kernel_values(table, nu[None, :, None] - 0.5 * r[:, None, :] ** 2)
    tail, first, second = (k @ _NARROW_WEIGHTS for k in kernels)
    return Transforms(
        tail, first, second, (kernels[2] * (0.5 * r[:, None, :] ** 2)) @ _NARROW_WEIGHTS
    )


def quadratic_transforms(
    table: KernelTable, nu: jax.Array, m: jax.Array, tau: jax.Array
) -> Transforms:
    """Averages of the kernels at ``x = nu - r^2 / 2`` over ``r ~ N(m, tau^2)``.

    Parameters
    ----------
    table : the kernels of the spread ``sigma`` (:func:`kernel_table`).
    nu : (n_nu,) grid, at most 50 (the fixed ``r`` grid covers the kernels' support there).
    m : (n_m,) means of ``r``.
    tau : standard deviation of ``r``, ``> 0`` (a traced scalar: the rule is chosen by
        ``lax.cond``).

    Returns
    -------
    Transforms
        Each ``(n_m, n_nu)``. Accuracy: the table's (about 1e-9 relative) where the Gaussian is
        resolved.
    """
    return jax.lax.cond(tau < NARROW_TAU, _narrow_transforms, _grid_transforms, table, nu, m, tau)


def rule_top(max_sigma: float) -> float:
    """Upper end of the rule in ``z`` for spreads up to ``max_sigma``: ``ZMAX``, or ``3 max_sigma +
    SIZE_BIAS_TAIL`` where the size-biased kernels' mass lies beyond it (:data:`SIZE_BIAS_TAIL`)."""
    return max(integrals.ZMAX, 3.0 * float(max_sigma) + SIZE_BIAS_TAIL)


def table_rule_size(max_sigma: float) -> int:
    """Node count of the Gaussian rule in ``z`` on ``[-ZMAX, rule_top(max_sigma)]`` for tables of
    spreads up to ``max_sigma``: spacing at most ``integrals.STEP / max(1, max_sigma)`` (the kernels
    vary on a unit scale in ``x + sigma z``), rounded up to ``2^k + 1`` nodes so that few sizes are
    compiled."""
    span = 0.5 * (integrals.ZMAX + rule_top(max_sigma))
    half = math.ceil(span * max(float(max_sigma), 1.0) / integrals.STEP)
    return 2 * (1 << max(4, math.ceil(math.log2(half)))) + 1


def table_rule(nodes: int, top: float = integrals.ZMAX) -> integrals.Rule:
    """The normalised Gaussian trapezoid rule of ``nodes`` points on ``[-ZMAX, top]`` (NumPy
    arrays: safe to build inside a trace; ``top``: :func:`rule_top` for a kernel table)."""
    z = np.linspace(-integrals.ZMAX, top, nodes)
    weights = np.exp(-0.5 * z**2)
    return integrals.Rule(z, weights / weights.sum())
