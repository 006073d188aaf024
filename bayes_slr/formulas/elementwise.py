"""Exact ``A_s`` and ``B_s`` for the element-wise activations (linear, erf, any with a Gaussian
mean).

``s_l = 1 + chi_l`` or ``1 + erf(c + chi_l)`` act token by token, so
``B = sum_l E[s(chi_l)^2]`` is a sum of one-dimensional Gaussian moments, and only
the teacher's location law couples tokens in ``A = E[s(chi_eps)]``:

* spiked: ``A = E[s(chi_loc)]``, ``chi_loc ~ N(m_k sqrt(nu), q_k)``, whatever ``L``;
* max-SLR, finite ``nu``: ``A = L int da E_x[k1(a + nu x) s_bar(x)] M(a)^(L-1)`` with
  ``s_bar(x) = E_u[s(m_k x + r u)]`` and ``M(a) = E_x[exp(-e^(a + nu x))]``;
* max-SLR, ``nu = inf``: ``A = L int dx phi(x) Phi(x)^(L-1) s_bar(x)``.

First moments use the Gaussian closed forms ``E[1 + mu + sigma Z] = 1 + mu`` and
``E[erf(a + b Z)] = erf(a / sqrt(1 + 2 b^2))``; the erf second moment is a
one-dimensional quadrature.
"""

from __future__ import annotations

import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from jax.scipy.special import log_ndtr

from bayes_slr.attention.activations import get_activation
from bayes_slr.formulas.normalised import PANEL_ORDER, XMAX
from bayes_slr.numerics import integrals as q


def mean_score(activation: str, mu: jax.Array, var: jax.Array, c: jax.Array) -> jax.Array:
    """``E[s(chi)]`` for ``chi ~ N(mu, var)``: the closed form of the activation's record."""
    return get_activation(activation).gaussian_mean(mu, var, c)


def _second_moment_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``E[s(chi)^2]`` for ``chi ~ N(mu, sigma^2)``: the record's closed form, else quadrature of
    ``s^2``; ``functions = (closed form or None, score)``.
    """
    (closed_form, score), (mu, sigma, c), (z,) = functions, params, rules
    if closed_form is not None:
        return closed_form(mu, sigma, c)
    return q.expectation(z, score(mu + sigma * z.nodes, c) ** 2)


def second_moment(
    activation: str,
    mu: float,
    sigma: float,
    c: float,
    grid_sigma: float = 0.0,
    step: float = q.STEP,
) -> np.ndarray:
    """``E[s(chi)^2]``, ``chi ~ N(mu, sigma^2)``: (fine, coarse); grid sized for ``max(sigma,
    grid_sigma)``.
    """
    z = q.gaussian_rule(max(sigma, grid_sigma), step=step)
    record = get_activation(activation)
    functions = (record.gaussian_second_moment, record.score)
    return q.evaluate_levels(_second_moment_core, functions, (mu, sigma, c), (z,))


def _gaussian_mean_function(activation: str) -> tuple[Callable]:
    """The integrands' functions of an element-wise activation: ``(E[s(chi)] in closed form,)``."""
    return (get_activation(activation).gaussian_mean,)


def _tilted_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``A`` for max-SLR with finite ``nu``: one teacher normaliser, one ``log t`` integral."""
    (gaussian_mean,), (nu, m, r, c) = functions, params
    (x, a), (length_probs, lengths) = rules, laws
    y = a.nodes[:, None] + nu * x.nodes[None, :]
    log_m = q.log_complement(q.expectation(x, q.kernel_tail(y)))
    tilted = q.expectation(x, q.kernel_first(y) * gaussian_mean(m * x.nodes, r**2, c)[None, :])
    powers = q.power_mixture(length_probs * lengths, lengths - 1.0, log_m)
    return q.expectation(a, tilted * powers)


def tilted_first(
    activation: str,
    nu: float,
    m: float,
    r: float,
    c: float,
    length_probs: np.ndarray,
    lengths: np.ndarray,
    grid_norm: float = 0.0,
) -> np.ndarray:
    """``A`` for max-SLR with finite ``nu``, averaged over the length law: (fine, coarse).

    Grids sized for ``max(|m|, grid_norm)`` (one compiled shape for a search).
    """
    rules = (
        q.gaussian_rule(max(nu, abs(m), grid_norm, 1.0)),
        q.uniform_rule(-q.ZMAX * nu - q.LOG_DECAY, q.ZMAX * nu + q.LOG_GROWTH),
    )
    return q.evaluate_levels(
        _tilted_core,
        _gaussian_mean_function(activation),
        (nu, m, r, c),
        rules,
        (length_probs, lengths),
    )


def _argmax_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``A`` for max-SLR with ``nu = inf``: the score's mean at the maximum of ``L`` normals."""
    (gaussian_mean,), (m, r, c), (x,), (length_probs, lengths) = functions, params, rules, laws
    density = jnp.exp(-0.5 * x.nodes**2) / math.sqrt(2.0 * math.pi)
    powers = q.power_mixture(length_probs * lengths, lengths - 1.0, log_ndtr(x.nodes))
    return jnp.sum(x.weights * density * powers * gaussian_mean(m * x.nodes, r**2, c))


def argmax_first(
    activation: str,
    m: float,
    r: float,
    c: float,
    length_probs: np.ndarray,
    lengths: np.ndarray,
    grid_norm: float = 0.0,
) -> np.ndarray:
    """``A`` for max-SLR with ``nu = inf``, averaged over the length law: (fine, coarse).

    Grids sized for ``max(|m|, grid_norm)`` (one compiled shape for a search).
    """
    width = 1.0 / max(abs(m) / math.sqrt(1.0 + 2.0 * r**2), grid_norm, 1.0)
    return q.evaluate_levels(
        _argmax_core,
        _gaussian_mean_function(activation),
        (m, r, c),
        (q.panel_rule(-XMAX, XMAX, width, PANEL_ORDER),),
        (length_probs, lengths),
        (q.panel_rule(-XMAX, XMAX, width, PANEL_ORDER // 2),),
    )
