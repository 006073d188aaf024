"""Exact ``A_s`` and ``B_s`` for the normalised activations (softmax, softplus kernel).

``s_l = phi(chi_l) / S`` with ``S = sum_j phi(chi_j)``. With ``1/S = int exp(-t S) dt``,
``1/S^2 = int t exp(-t S) dt`` and ``t = e^u``, every integrand depends on
``y = u + log phi(chi)`` only through the kernels of :mod:`bayes_slr.numerics.integrals`,
and tokens that are independent contribute a product, i.e. a power
``exp((L - 1) log M)``:

* independent tokens (spiked, and max-SLR's ``B`` where all tokens are i.i.d.):
  ``A = int du E_loc[k1] M0^(L-1)``,
  ``B = int du {E_loc[k2] M0^(L-1) + (L-1) E_0[k2] M_loc M0^(L-2)}``;
* max-SLR, finite ``nu``: ``A = E[sum_l w_l s_l]`` with the teacher weights
  ``w = softmax(nu chi*)``; two normalisers, hence a double integral over
  ``(a, b) = (log t, log r)``; the per-token expectation over ``(chi*, u)`` factorises
  into matrix products;
* max-SLR, ``nu = inf``: ``A = L E[s_1 1{chi*_1 = max}]``, an integral over the
  value ``x`` of the maximum with the other tokens restricted below ``x`` (a
  cumulative integral on a Gauss-Legendre panel rule). Softmax with an aligned key
  (``r = 0``, ``m >= 1``) depends on score differences only: in the shifted
  variables ``y = log t + m x`` and ``g = m (x - x')`` its grids do not grow with ``m``.

Each routine returns its value on the fine and the coarse resolution; callers
turn their difference into the stated error bound.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import ndtr

from bayes_slr.attention.activations import get_activation
from bayes_slr.numerics import integrals as q

PANEL_ORDER = 12
"""Gauss-Legendre nodes per panel of the ``nu = inf`` rule (the coarse rule uses half)."""
_X_BATCH = 64
XMAX = 10.0
"""Range ``[-XMAX, XMAX]`` of the maximum's value: ``Phi(-10) = 7.6e-24``."""
GAP_MAX = 48.0
"""Range ``[0, GAP_MAX]`` of the scaled score gap ``g``: ``1 - exp(-e^(y - g)) < e^(-44)`` beyond
it.
"""
SHIFTED_WIDTH = 0.5
"""Panel width of the shifted softmax rule in ``x`` and in ``g`` (both integrands vary on a unit
scale).
"""


def log_phi(activation: str, chi: jax.Array) -> jax.Array:
    """``log phi(chi)`` of a normalised activation, from its registry record."""
    return get_activation(activation).log_phi(chi)


def _log_phi_function(activation: str) -> tuple[Callable[[jax.Array], jax.Array]]:
    """The integrands' functions of a normalised activation: ``(log phi,)`` (see
    :func:`~bayes_slr.numerics.integrals.fine_and_coarse`).
    """
    return (get_activation(activation).log_phi,)


def _log_phi_range(activation: str, lo: float, hi: float) -> tuple[float, float]:
    """``(log phi(lo), log phi(hi))`` as Python floats (``phi`` is increasing)."""
    values = np.asarray(log_phi(activation, jnp.asarray([lo, hi])))
    return float(values[0]), float(values[1])


def _log_t_rule(activation: str, chi_lo: float, chi_hi: float, step: float = q.STEP) -> q.Rule:
    """Rule in ``u = log t`` covering ``u + log phi(chi)`` in ``[-LOG_DECAY, LOG_GROWTH]``."""
    psi_lo, psi_hi = _log_phi_range(activation, chi_lo, chi_hi)
    return q.uniform_rule(-psi_hi - q.LOG_DECAY, -psi_lo + q.LOG_GROWTH, step)


def _independent_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``(A, B)`` when tokens are independent: location ``N(mu_loc, sigma^2)``, others ``N(0,
    sigma^2)``; ``log_sink`` the log of a constant in the denominator (``-inf``: none).
    """
    (log_phi,), (mu_loc, sigma, log_sink) = functions, params
    (z, u), (length_probs, lengths) = rules, laws
    y_loc = u.nodes[:, None] + log_phi(mu_loc + sigma * z.nodes)[None, :]
    y_other = u.nodes[:, None] + log_phi(sigma * z.nodes)[None, :]
    log_m_other = q.log_complement(q.expectation(z, q.kernel_tail(y_other)))
    m_loc = 1.0 - q.expectation(z, q.kernel_tail(y_loc))
    # a constant C = e^{log_sink} in the denominator: 1/(C + S)^k carries e^{-C t} (1 without)
    sink = jnp.exp(-jnp.exp(jnp.minimum(log_sink + u.nodes, -q.LOG_FLOOR)))
    powers = sink * q.power_mixture(length_probs, lengths - 1.0, log_m_other)
    powers_minus = sink * q.power_mixture(
        length_probs * (lengths - 1.0), lengths - 2.0, log_m_other
    )
    a_value = q.expectation(u, q.expectation(z, q.kernel_first(y_loc)) * powers, axis=0)
    b_integrand = (
        q.expectation(z, q.kernel_second(y_loc)) * powers
        + q.expectation(z, q.kernel_second(y_other)) * m_loc * powers_minus
    )
    return jnp.stack([a_value, q.expectation(u, b_integrand, axis=0)])


def independent_terms(
    activation: str,
    mu_loc: float,
    sigma: float,
    length_probs: np.ndarray,
    lengths: np.ndarray,
    step: float = q.STEP,
    grid_mu: float = 0.0,
    grid_sigma: float = 0.0,
    log_sink: float = -math.inf,
) -> np.ndarray:
    """``(A, B)`` for independent tokens, averaged over the length law, on two resolutions.

    Parameters
    ----------
    activation : a normalised activation ("softmax", "softplus", "softmax1", ...).
    mu_loc : mean of the location's score (``m_k sqrt(nu)`` spiked, 0 for i.i.d. tokens).
    sigma : standard deviation of every score, ``sqrt(q_k)``.
    length_probs, lengths : the length law's support.
    step : fine spacing in the integrands' unit scale (smaller is more accurate).
    grid_mu, grid_sigma : size the grids for ``|mu_loc| <= grid_mu`` and ``sigma <= grid_sigma``
        at least, so that a search reuses one compiled shape.
    log_sink : ``log C`` of a constant ``C`` in the denominator,
        ``s_l = phi(chi_l) / (C + sum phi(chi))`` (``-inf``: ``C = 0``); ``1/(C + S)^k`` gains
        the factor ``e^{-C t}`` under the ``t`` integral.

    Returns
    -------
    (2, 2) array: rows fine and coarse resolution, columns ``A`` and ``B``.
    """
    sigma_grid = max(sigma, grid_sigma)
    chi_lo = min(mu_loc, -grid_mu, 0.0) - q.ZMAX * sigma_grid
    chi_hi = max(mu_loc, grid_mu, 0.0) + q.ZMAX * sigma_grid
    rules = (q.gaussian_rule(sigma_grid, step=step), _log_t_rule(activation, chi_lo, chi_hi, step))
    return q.evaluate_levels(
        _independent_core,
        _log_phi_function(activation),
        (mu_loc, sigma, log_sink),
        rules,
        (length_probs, lengths),
    )


def _student_kernels(
    log_phi: Callable[[jax.Array], jax.Array],
    m: jax.Array,
    r: jax.Array,
    x: jax.Array,
    w: q.Rule,
    b: q.Rule,
    kernels: tuple,
) -> list[jax.Array]:
    """Per-token expectations over the student noise ``u``, on the grid ``(x, b)``.

    Returns ``E_u[k(b + log phi(m x + r u))]`` for each kernel ``k`` in ``kernels``,
    each of shape ``(x.size, b.size)``; the ``(x, u, b)`` grid is never held whole
    (with a one-node ``u`` rule, ``r = 0``, there is no such grid).
    """

    def at_score(x_value: jax.Array) -> jax.Array:
        y = b.nodes[None, :] + log_phi(m * x_value + r * w.nodes)[:, None]
        return jnp.stack([q.expectation(w, kernel(y), axis=0) for kernel in kernels])

    if w.nodes.shape[0] == 1:
        y = b.nodes[None, :] + log_phi(m * x + r * w.nodes[0])[:, None]
        return [w.weights[0] * kernel(y) for kernel in kernels]
    values = jax.lax.map(at_score, x, batch_size=_X_BATCH)
    return [values[:, i] for i in range(len(kernels))]


def _tilted_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``A`` for max-SLR with finite ``nu`` (teacher and student normalisers)."""
    (log_phi,), (nu, m, r), (x, w, a, b), (length_probs, lengths) = functions, params, rules, laws
    student_tail, student_first = _student_kernels(
        log_phi, m, r, x.nodes, w, b, (q.kernel_tail, q.kernel_first)
    )
    y_teacher = a.nodes[:, None] + nu * x.nodes[None, :]
    teacher_tail = q.kernel_tail(y_teacher) * x.weights
    teacher_first = q.kernel_first(y_teacher) * x.weights
    one_minus_k = (
        jnp.sum(teacher_tail, axis=1)[:, None]
        + q.expectation(x, student_tail, axis=0)[None, :]
        - teacher_tail @ student_tail
    )
    powers = q.power_mixture(length_probs * lengths, lengths - 1.0, q.log_complement(one_minus_k))
    joint_first = teacher_first @ student_first
    return q.expectation(a, q.expectation(b, joint_first * powers), axis=0)


def tilted_first(
    activation: str,
    nu: float,
    m: float,
    r: float,
    length_probs: np.ndarray,
    lengths: np.ndarray,
    grid_norm: float = 0.0,
) -> np.ndarray:
    """``A`` for max-SLR with finite ``nu``, averaged over the length law: (fine, coarse).

    The grids are sized for ``|m| = max(|m|, grid_norm)``: a search over ``m`` with
    a fixed ``grid_norm`` compiles once.
    """
    m_grid = max(abs(m), grid_norm)
    chi_max = q.ZMAX * (m_grid + r)
    rules = (
        q.gaussian_rule(max(nu, m_grid, 1.0)),
        q.gaussian_rule(r, point_if_zero=True),
        q.uniform_rule(-q.ZMAX * nu - q.LOG_DECAY, q.ZMAX * nu + q.LOG_GROWTH),
        _log_t_rule(activation, -chi_max, chi_max),
    )
    return q.evaluate_levels(
        _tilted_core, _log_phi_function(activation), (nu, m, r), rules, (length_probs, lengths)
    )


def _argmax_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``A`` for max-SLR with ``nu = inf``: integral over the value of the maximum."""
    (log_phi,), (m, r), (x, w, b), (length_probs, lengths) = functions, params, rules, laws
    student_laplace, student_first = _student_kernels(
        log_phi, m, r, x.nodes, w, b, (q.kernel_laplace, q.kernel_first)
    )
    density = jnp.exp(-0.5 * x.nodes**2) / math.sqrt(2.0 * math.pi)
    below = q.panel_cumulative(x, density[:, None] * student_laplace)
    powers = q.power_mixture(
        length_probs * lengths, lengths - 1.0, jnp.log(jnp.maximum(below, 0.0))
    )
    inner = q.expectation(b, student_first * powers)
    return jnp.sum(x.weights * density * inner)


def _softmax_argmax_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``A`` for softmax with an aligned key on max-SLR with ``nu = inf``, in shifted variables.

    With ``y = log t + m x`` (``x`` the maximum) and ``g = m (x - x')`` for another token,
    ``A = L int dx phi(x) int dy k1(y) G(x, y)^(L-1)`` and
    ``G(x, y) = Phi(x) - (1/m) int_0^inf phi(x - g/m) (1 - exp(-e^(y - g))) dg``.
    """
    (m,), (x, y, g), (length_probs, lengths) = params, rules, laws
    shifted = x.nodes[:, None] - g.nodes[None, :] / m
    density = jnp.exp(-0.5 * shifted**2) / math.sqrt(2.0 * math.pi) * g.weights
    tails = q.kernel_tail(y.nodes[:, None] - g.nodes[None, :])
    below = ndtr(x.nodes)[:, None] - density @ tails.T / m
    powers = q.power_mixture(
        length_probs * lengths, lengths - 1.0, jnp.log(jnp.maximum(below, 0.0))
    )
    inner = powers @ (y.weights * q.kernel_first(y.nodes))
    return jnp.sum(x.weights * jnp.exp(-0.5 * x.nodes**2) / math.sqrt(2.0 * math.pi) * inner)


def _softmax_argmax_first(m: float, length_probs: np.ndarray, lengths: np.ndarray) -> np.ndarray:
    """:func:`argmax_first` of softmax at ``r = 0``, ``m >= 1``: one grid for every ``m``."""
    fine = tuple(
        q.panel_rule(lo, hi, SHIFTED_WIDTH, order)
        for lo, hi, order in ((-XMAX, XMAX, PANEL_ORDER), (0.0, GAP_MAX, PANEL_ORDER))
    )
    coarse = tuple(
        q.panel_rule(lo, hi, SHIFTED_WIDTH, PANEL_ORDER // 2)
        for lo, hi in ((-XMAX, XMAX), (0.0, GAP_MAX))
    )
    y = q.uniform_rule(-q.LOG_DECAY, q.LOG_GROWTH)
    return q.evaluate_levels(
        _softmax_argmax_core,
        (),
        (m,),
        (fine[0], y, fine[1]),
        (length_probs, lengths),
        (coarse[0], q.coarse(y), coarse[1]),
    )


def argmax_first(
    activation: str,
    m: float,
    r: float,
    length_probs: np.ndarray,
    lengths: np.ndarray,
    grid_norm: float = 0.0,
) -> np.ndarray:
    """``A`` for max-SLR with ``nu = inf``, averaged over the length law: (fine, coarse).

    Grids sized for ``max(|m|, grid_norm)`` as in :func:`tilted_first`. Panels of
    width ``1/|m|`` (the scale of the integrand in ``x``) with 12 nodes agree with
    6 nodes to ~1e-12. Softmax with ``r = 0`` and ``m >= 1`` takes the shifted route
    (:func:`_softmax_argmax_core`), whose cost does not depend on ``m``.
    """
    if activation == "softmax" and r == 0.0 and m >= 1.0:
        return _softmax_argmax_first(m, length_probs, lengths)
    m_grid = max(abs(m), grid_norm)
    w = q.gaussian_rule(r, point_if_zero=True)
    chi_max = XMAX * m_grid + q.ZMAX * r
    b = _log_t_rule(activation, -chi_max, chi_max)
    width = 1.0 / max(m_grid, 1.0)
    return q.evaluate_levels(
        _argmax_core,
        _log_phi_function(activation),
        (m, r),
        (q.panel_rule(-XMAX, XMAX, width, PANEL_ORDER), w, b),
        (length_probs, lengths),
        (q.panel_rule(-XMAX, XMAX, width, PANEL_ORDER // 2), q.coarse(w), q.coarse(b)),
    )
