"""Location posteriors of one sequence from Gaussian key fields (no SLR configuration).

The key projections of a sequence's tokens have independent Gaussian posteriors
``h_j ~ N(omega_{k,j}, V_k)``. The posterior probability of the location is

* max-SLR, ``nu = inf``: ``P(l is the argmax of h)`` (:func:`argmax_log_posterior`,
  64-node Gauss-Hermite in one variable, log space);
* max-SLR, finite ``nu``: ``E_h[softmax(nu h)_l]`` (:func:`softmax_log_posterior`), through
  ``1/S = int exp(-t S) dt`` as a quadrature in ``log t`` of products of one-dimensional
  Gaussian integrals, tabulated once per evaluation (:func:`laplace_table`).

Shared by the state evolution (:mod:`bayes_slr.formulas.replica_bayes`) and the AMP algorithm
(:mod:`bayes_slr.inference.amp`). Pure functions of ``(nu, omega_k, V_k, mask)``, differentiable
in ``omega_k``; ``-inf`` on padded tokens. Both are integrals over one quadrature variable ``u``
of ``exp(T_l(u))`` with ``T_l`` a sum of one-token terms; :func:`argmax_location_derivatives` and
:func:`softmax_location_derivatives` return, from the same terms, the first derivatives
``d log P_l / d omega_{k,j}`` and the second derivatives ``d^2 log P_l / d omega_{k,j}^2`` in closed
form (what AMP's output denoiser needs, see :class:`LocationDerivatives`).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.numerics import MAX_FINITE_NU as MAX_FINITE_NU  # re-exported: defined without JAX
from bayes_slr.numerics import integrals

HERMITE_NODES, HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(64)
TABLE_STEP = 0.02
"""Spacing of the ``log M``, ``log F`` tables in units of ``max(1, s)``: cubic Hermite error ~1e-9.
"""
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


class LocationDerivatives(NamedTuple):
    """A location posterior and its derivatives in the key fields.

    Attributes
    ----------
    log_post : (Lbar,) ``log P_l``, ``-inf`` on padded tokens.
    jacobian : (Lbar, Lbar) ``d log P_l / d omega_{k,j}`` (row ``l``, column ``j``), zero on
    padding.
    curvature : (Lbar, Lbar) ``d^2 log P_l / d omega_{k,j}^2``, zero on padding.
    """

    log_post: jax.Array
    jacobian: jax.Array
    curvature: jax.Array


def node_integral(
    log_weights: jax.Array,
    terms: jax.Array,
    slopes: jax.Array,
    curvatures: jax.Array,
    mask: jax.Array,
) -> LocationDerivatives:
    """``log P_l = log sum_u w_u exp(T_l(u))`` and its derivatives from those of the node terms.

    With ``rho_l(u)`` the normalised weights ``w_u exp(T_l(u)) / P_l``,
    ``d log P_l / d omega_j = E_rho[dT_l / d omega_j]`` and
    ``d^2 log P_l / d omega_j^2 = E_rho[d^2 T_l / d omega_j^2 + (dT_l / d omega_j)^2] - (d log P_l /
    d omega_j)^2``.

    Parameters
    ----------
    log_weights : (U,) log quadrature weights.
    terms : (Lbar, U) ``T_l(u)``.
    slopes, curvatures : (Lbar, Lbar, U) ``dT_l(u) / d omega_j`` and ``d^2 T_l(u) / d omega_j^2``.
    mask : (Lbar,) True on real tokens.
    """
    exponent = terms + log_weights
    log_post = jax.scipy.special.logsumexp(exponent, axis=1)
    rho = jnp.exp(exponent - log_post[:, None])[:, None, :]
    jacobian = jnp.sum(rho * slopes, axis=-1)
    curvature = jnp.sum(rho * (curvatures + slopes**2), axis=-1) - jacobian**2
    pair = mask[:, None] & mask[None, :]
    return LocationDerivatives(
        jnp.where(mask, log_post, -jnp.inf),
        jnp.where(pair, jacobian, 0.0),
        jnp.where(pair, curvature, 0.0),
    )


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

    log_m, log_f, log_f2 = jax.lax.map(
        at, jnp.linspace(x_lo, x_hi, count), batch_size=TABLE_BATCH
    ).T
    spacing = (x_hi - x_lo) / (count - 1)
    values = jnp.stack([log_m, log_f])
    slopes = jnp.stack([-jnp.exp(log_f - log_m), -jnp.expm1(log_f2 - log_f)])
    f0, f1, d0, d1 = (
        values[:, :-1],
        values[:, 1:],
        slopes[:, :-1] * spacing,
        slopes[:, 1:] * spacing,
    )
    pieces = jnp.stack(
        [f0, d0, 3.0 * (f1 - f0) - 2.0 * d0 - d1, 2.0 * (f0 - f1) + d0 + d1], axis=-1
    )
    return LaplaceTable(
        x_lo, spacing, pieces, jnp.stack([values[:, 0], values[:, -1], slopes[:, -1]], axis=-1)
    )


def table_lookup(table: LaplaceTable, x: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(log M(x), log F(x))`` with their first and second derivatives in ``x``.

    Cubic Hermite inside the table, exact tails outside; continuously differentiable in ``x``. Below
    the table ``log M`` decays like ``e^x`` and ``log F`` grows like ``x`` (exact there); above,
    both
    continue linearly with the end slopes (values below ``e^-400``, immaterial).

    Returns
    -------
    values, slopes, curvatures : each of shape ``(2,) + x.shape``, ``log M`` first; the derivatives
    are
        those of the piece that gives the value (the cubic, ``m_lo e^(x - x_lo)`` and ``f_lo + x -
        x_lo``
        below, the linear continuation above).
    """
    count = table.pieces.shape[1]
    position = (x - table.x_lo) / table.spacing
    index = jnp.clip(jnp.floor(position), 0, count - 1).astype(jnp.int32)
    tau = jnp.clip(position - index, 0.0, 1.0)
    gap_lo, gap_hi = x - table.x_lo, (position - count) * table.spacing
    below, above = gap_lo < 0, gap_hi > 0
    values, slopes, curvatures = [], [], []
    for pieces, (lo, hi, end_slope) in zip(
        table.pieces, table.ends
    ):  # one gather per function: faster on CPU
        c = pieces[index]
        inside = c[..., 0] + tau * (c[..., 1] + tau * (c[..., 2] + tau * c[..., 3]))
        slope = (c[..., 1] + tau * (2.0 * c[..., 2] + 3.0 * tau * c[..., 3])) / table.spacing
        curvature = (2.0 * c[..., 2] + 6.0 * tau * c[..., 3]) / table.spacing**2
        values.append(jnp.where(above, hi + end_slope * gap_hi, inside))
        slopes.append(jnp.where(above, end_slope, slope))
        curvatures.append(jnp.where(above, 0.0, curvature))
    tail = table.ends[0, 0] * jnp.exp(
        jnp.minimum(gap_lo, 0.0)
    )  # log M below the table, and both its derivatives
    values = [
        jnp.where(below, tail, values[0]),
        jnp.where(below, table.ends[1, 0] + gap_lo, values[1]),
    ]
    slopes = [jnp.where(below, tail, slopes[0]), jnp.where(below, 1.0, slopes[1])]
    curvatures = [jnp.where(below, tail, curvatures[0]), jnp.where(below, 0.0, curvatures[1])]
    return jnp.stack(values), jnp.stack(slopes), jnp.stack(curvatures)


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
    (Lbar,) log probabilities, ``-inf`` on padded tokens (the value of
    :func:`argmax_location_derivatives`;
    the derivatives are not computed once compiled).
    """
    return argmax_location_derivatives(omega_k, V_k, mask).log_post


def argmax_location_derivatives(
    omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
) -> LocationDerivatives:
    """:func:`argmax_log_posterior` with its derivatives in ``omega_k`` in closed form.

    With ``z_lj = (omega_l - omega_j) / sqrt(V_k) + u`` and the inverse Mills ratio
    ``lambda = phi / Phi`` (``lambda' = -lambda (z + lambda)``), the node terms
    ``T_l = sum_{j != l} log Phi(z_lj)`` have ``dT_l / d omega_j = -lambda(z_lj) / sqrt(V_k)`` for
    ``j != l`` and ``sum_{j' != l} lambda(z_lj') / sqrt(V_k)`` for ``j = l``; the second derivatives
    replace ``lambda`` by ``lambda'`` and ``sqrt(V_k)`` by ``V_k`` (both signs ``+``). See
    :func:`node_integral`.
    """
    s = jnp.sqrt(V_k)
    z = ((omega_k[:, None] - omega_k[None, :]) / s)[..., None] + HERMITE_NODES  # (l, j, u)
    others = (mask[None, :] & ~jnp.eye(omega_k.size, dtype=bool))[..., None]
    log_cdf = jax.scipy.special.log_ndtr(z)
    mills = jnp.where(others, jnp.exp(jax.scipy.stats.norm.logpdf(z) - log_cdf), 0.0)
    mills_slope = -mills * (z + mills)
    diagonal = jnp.eye(omega_k.size, dtype=bool)[..., None]
    slopes = (jnp.where(diagonal, jnp.sum(mills, axis=1, keepdims=True), 0.0) - mills) / s
    curvatures = (
        jnp.where(diagonal, jnp.sum(mills_slope, axis=1, keepdims=True), 0.0) + mills_slope
    ) / V_k
    terms = jnp.sum(jnp.where(others, log_cdf, 0.0), axis=1)
    log_weights = jnp.log(HERMITE_WEIGHTS / math.sqrt(2 * math.pi))
    return node_integral(log_weights, terms, slopes, curvatures, mask)


def location_derivatives(
    c: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
) -> LocationDerivatives:
    """``log E_h[softmax(c h)_l]`` with its derivatives (:func:`softmax_location_derivatives`), or
    at ``c = inf`` ``log P(l is the argmax of h)`` (:func:`argmax_location_derivatives`).

    Parameters
    ----------
    c : inverse temperature, ``0 <= c <= MAX_FINITE_NU`` or ``inf`` (a Python number).
    omega_k, V_k, mask : as in :func:`softmax_location_derivatives`.
    """
    if math.isinf(c):
        return argmax_location_derivatives(omega_k, V_k, mask)
    return softmax_location_derivatives(c, omega_k, V_k, mask)


def softmax_log_posterior(
    nu: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
) -> jax.Array:
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

    Returns
    -------
    (Lbar,) log probabilities, ``-inf`` on padded tokens (the value of
    :func:`softmax_location_derivatives`).
    """
    return softmax_location_derivatives(nu, omega_k, V_k, mask).log_post


def softmax_location_derivatives(
    nu: float, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
) -> LocationDerivatives:
    """:func:`softmax_log_posterior` with its derivatives in ``omega_k`` in closed form.

    The node terms ``T_l(u) = log F(u + a_l) + sum_{j != l} log M(u + a_j)`` (``a = nu omega_k``,
    the
    nodes ``u`` held fixed: their centre is not differentiated, as in :func:`softmax_log_posterior`)
    have ``dT_l / d omega_j = nu (log F)'(u + a_l)`` for ``j = l`` and ``nu (log M)'(u + a_j)``
    otherwise,
    and second derivatives with ``nu^2`` and the second derivatives of the table pieces
    (:func:`table_lookup`). See :func:`node_integral`.
    """
    with jax.ensure_compile_time_eval():  # the rules are cached: never build them as tracers
        gaussian, rule = (
            integrals.gaussian_rule(nu),
            integrals.uniform_rule(*LOG_T_RANGE, LOG_T_STEP),
        )
    s = nu * jnp.sqrt(V_k)
    table = laplace_table(s, gaussian)
    scores = jnp.where(mask, nu * omega_k, 0.0)
    centre = -jax.lax.stop_gradient(jax.scipy.special.logsumexp(jnp.where(mask, scores, -jnp.inf)))
    scale = jnp.maximum(1.0, s)
    values, slopes, curvatures = table_lookup(
        table, centre + scores[:, None] + scale * rule.nodes[None, :]
    )
    real = mask[:, None]
    log_m, log_f = jnp.where(real, values[0], 0.0), values[1]
    terms = log_f + jnp.sum(log_m, axis=0) - log_m
    diagonal = jnp.eye(omega_k.size, dtype=bool)[..., None]
    node_slopes = nu * jnp.where(
        diagonal, slopes[1][:, None, :], jnp.where(real, slopes[0], 0.0)[None]
    )
    node_curvatures = nu**2 * jnp.where(
        diagonal, curvatures[1][:, None, :], jnp.where(real, curvatures[0], 0.0)[None]
    )
    return node_integral(jnp.log(scale * rule.weights), terms, node_slopes, node_curvatures, mask)
