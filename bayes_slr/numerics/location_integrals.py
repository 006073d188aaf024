"""Location posteriors of one sequence from Gaussian key fields (no SLR configuration).

The key projections of a sequence's tokens have independent Gaussian posteriors
``h_j ~ N(omega_{k,j}, V_k)``. The posterior probability of the location is

* max-SLR, ``nu = inf``: ``P(l is the argmax of h)`` (:func:`argmax_log_posterior`,
  64-node Gauss-Hermite in one variable, log space);
* max-SLR, finite ``nu``: ``E_h[softmax(nu h)_l]`` (:func:`softmax_log_posterior`), through
  ``1/S = int exp(-t S) dt`` as a quadrature in ``log t`` of products of one-dimensional
  Gaussian integrals, tabulated once per evaluation (:func:`laplace_table`).

Shared by the state evolution (:mod:`bayes_slr.theory.replica_bayes`) and the AMP algorithm
(:mod:`bayes_slr.inference.amp`). Pure functions of ``(nu, omega_k, V_k, mask)``, differentiable
in ``omega_k``; ``-inf`` on padded tokens.
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.numerics import integrals

HERMITE_NODES, HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(64)
MAX_FINITE_NU = 100.0
"""Largest finite ``nu`` of max-SLR: the cost of the location posterior grows like ``nu``
(its Gaussian rule has ``~72 nu`` nodes), while ``nu = inf`` differs from it by ``O(1/nu^2)``."""
TABLE_STEP = 0.02
"""Spacing of the ``log M``, ``log F`` tables in units of ``max(1, s)``: cubic Hermite error ~1e-9."""
TABLE_SPAN = 69.0
"""The table covers ``[-ZMAX s - 45, ZMAX s + 6]``, of width ``18 s + 51 <= 69 max(1, s)``."""
TABLE_BATCH = 256
LOG_T_RANGE = (-36.0, 20.0)
"""Range of ``(log t - c) / max(1, s)``: the integrand is below ``e^-36`` of its mass to the left
and past its Gaussian tail (and the ``s^2`` shift of a very unlikely token's mode) to the right."""
LOG_T_STEP = 0.5


class LaplaceTable(NamedTuple):
    """``log M`` and ``log F`` as cubic Hermite pieces on an equispaced grid of ``x``.

    ``M(x) = E_z[exp(-e^(x + s z))]`` and ``F(x) = E_z[e^(x + s z) exp(-e^(x + s z))]``,
    ``z ~ N(0, 1)``: the Laplace factor and the first kernel of one token whose score
    ``nu h`` has mean ``x`` (after the shift by ``log t``) and standard deviation ``s``.
    ``pieces[f, i]`` holds the coefficients of ``tau^0..tau^3`` of function ``f`` (``log M``,
    ``log F``) on ``[x_lo + i spacing, x_lo + (i + 1) spacing]``; ``ends[f]`` holds the value
    at the lower end, the value and the slope at the upper end, for the tails.
    """

    x_lo: jax.Array
    spacing: jax.Array
    pieces: jax.Array
    ends: jax.Array


def laplace_table(s: jax.Array, rule: integrals.Rule) -> LaplaceTable:
    """Tabulate ``log M``, ``log F`` (see :class:`LaplaceTable`) for a score spread ``s``.

    Parameters
    ----------
    s : score standard deviation ``nu sqrt(V_k)``, ``>= 0``.
    rule : Gaussian rule in ``z`` whose spacing resolves ``s`` (:func:`integrals.gaussian_rule`
        of ``s`` or more): the kernels vary on a unit scale in ``x + s z``.

    Returns
    -------
    LaplaceTable
        On ``[-ZMAX s - 45, ZMAX s + 6]``. Below it every ``y = x + s z < -45``, so
        ``log M = -C e^x`` and ``log F = x + const`` to relative ``e^-45``; above it
        ``M, F < e^-400``. Derivatives: ``(log M)' = -F/M``, ``(log F)' = 1 - F_2/F`` with
        ``F_2 = E[e^(2y) exp(-e^y)]``.
    """
    count = math.ceil(TABLE_SPAN / TABLE_STEP) + 1
    x_lo, x_hi = -integrals.ZMAX * s - 45.0, integrals.ZMAX * s + 6.0
    log_weights = jnp.log(rule.weights)

    def at(x: jax.Array) -> jax.Array:
        y = integrals.clip_log_argument(x + s * rule.nodes)
        log_kernels = jnp.arange(3.0)[:, None] * y[None, :] - jnp.exp(y)[None, :]
        return jax.scipy.special.logsumexp(log_weights + log_kernels, axis=1)

    log_m, log_f, log_f2 = jax.lax.map(at, jnp.linspace(x_lo, x_hi, count), batch_size=TABLE_BATCH).T
    spacing = (x_hi - x_lo) / (count - 1)
    values = jnp.stack([log_m, log_f])
    slopes = jnp.stack([-jnp.exp(log_f - log_m), -jnp.expm1(log_f2 - log_f)])
    f0, f1, d0, d1 = values[:, :-1], values[:, 1:], slopes[:, :-1] * spacing, slopes[:, 1:] * spacing
    pieces = jnp.stack([f0, d0, 3.0 * (f1 - f0) - 2.0 * d0 - d1, 2.0 * (f0 - f1) + d0 + d1], axis=-1)
    return LaplaceTable(x_lo, spacing, pieces, jnp.stack([values[:, 0], values[:, -1], slopes[:, -1]], axis=-1))


def table_lookup(table: LaplaceTable, x: jax.Array) -> tuple[jax.Array, jax.Array]:
    """``(log M(x), log F(x))``: cubic Hermite inside the table, exact tails outside.

    Continuously differentiable in ``x``. Below the table ``log M`` decays like ``e^x``
    and ``log F`` grows like ``x`` (exact there); above, both continue linearly with the
    end slopes (values below ``e^-400``, immaterial).
    """
    count = table.pieces.shape[1]
    position = (x - table.x_lo) / table.spacing
    index = jnp.clip(jnp.floor(position), 0, count - 1).astype(jnp.int32)
    tau = jnp.clip(position - index, 0.0, 1.0)
    gap_lo, gap_hi = x - table.x_lo, (position - count) * table.spacing
    inside = []
    for pieces in table.pieces:  # one gather per function: much faster than a gather of pairs on CPU
        c = pieces[index]
        inside.append(c[..., 0] + tau * (c[..., 1] + tau * (c[..., 2] + tau * c[..., 3])))
    (m_lo, m_hi, m_slope), (f_lo, f_hi, f_slope) = table.ends
    log_m = jnp.where(gap_hi > 0, m_hi + m_slope * gap_hi, inside[0])
    log_f = jnp.where(gap_hi > 0, f_hi + f_slope * gap_hi, inside[1])
    below = gap_lo < 0
    return jnp.where(below, m_lo * jnp.exp(jnp.minimum(gap_lo, 0.0)), log_m), jnp.where(below, f_lo + gap_lo, log_f)


def argmax_log_posterior(omega_k: jax.Array, V_k: jax.Array, mask: jax.Array) -> jax.Array:
    """``log P(l = argmax_j h_j)`` over the real tokens, ``h_j ~ N(omega_{k,j}, V_k)`` independent.

    ``P_l = E_u[prod_{j != l} Phi((omega_l - omega_j) / sqrt(V_k) + u)]``, ``u ~ N(0, 1)`` by
    64-node Gauss-Hermite, in log space.

    Parameters
    ----------
    omega_k : (Lbar,) posterior means of the key projections.
    V_k : posterior variance, ``> 0``.
    mask : (Lbar,) True on real tokens.

    Returns
    -------
    (Lbar,) log probabilities, ``-inf`` on padded tokens.
    """
    gaps = (omega_k[:, None] - omega_k[None, :]) / jnp.sqrt(V_k)
    others = mask[None, :] & ~jnp.eye(omega_k.size, dtype=bool)
    log_cdf = jnp.where(others[None], jax.scipy.special.log_ndtr(gaps[None] + HERMITE_NODES[:, None, None]), 0.0)
    log_weights = jnp.log(HERMITE_WEIGHTS / math.sqrt(2 * math.pi))
    log_post = jax.scipy.special.logsumexp(log_weights[:, None] + jnp.sum(log_cdf, axis=-1), axis=0)
    return jnp.where(mask, log_post, -jnp.inf)


def softmax_log_posterior(nu: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array) -> jax.Array:
    """``log E_h[softmax(nu h)_l]`` over the real tokens, ``h_j ~ N(omega_{k,j}, V_k)`` independent.

    With ``a = nu omega_k``, ``s = nu sqrt(V_k)``, ``1/S = int_0^inf exp(-t S) dt`` and ``t = e^u``,

        E[softmax(nu h)_l] = int du F(u + a_l) prod_{j != l} M(u + a_j)

    (``M``, ``F`` of :class:`LaplaceTable`), a trapezoid rule in
    ``u = c + max(1, s) t``, ``t`` in ``LOG_T_RANGE`` with spacing ``LOG_T_STEP``, centred at
    ``c = -logsumexp(a)`` (at ``s = 0`` every token's integrand is proportional to
    ``e^(u-c) exp(-e^(u-c))``, with its mode at ``c``). All in log space: no overflow for any
    ``nu omega``. Accuracy (checked against brute-force quadrature and Monte Carlo): about
    1e-9 on ``log P`` where ``P > e^-30``; finite, less accurate, below.

    Parameters
    ----------
    nu : finite inverse temperature, ``0 <= nu <= MAX_FINITE_NU``.
    omega_k, V_k, mask : as in :func:`argmax_log_posterior` (``V_k <= 1``: the Gaussian rule is
        sized for ``s <= nu``).
    """
    with jax.ensure_compile_time_eval():  # the rules are cached: never build them as tracers
        gaussian, rule = integrals.gaussian_rule(nu), integrals.uniform_rule(*LOG_T_RANGE, LOG_T_STEP)
    s = nu * jnp.sqrt(V_k)
    table = laplace_table(s, gaussian)
    scores = jnp.where(mask, nu * omega_k, 0.0)
    centre = -jax.lax.stop_gradient(jax.scipy.special.logsumexp(jnp.where(mask, scores, -jnp.inf)))
    scale = jnp.maximum(1.0, s)
    log_m, log_f = table_lookup(table, centre + scores[:, None] + scale * rule.nodes[None, :])
    log_m = jnp.where(mask[:, None], log_m, 0.0)
    integrand = log_f + jnp.sum(log_m, axis=0) - log_m
    log_post = jax.scipy.special.logsumexp(integrand + jnp.log(scale * rule.weights), axis=1)
    return jnp.where(mask, log_post, -jnp.inf)
