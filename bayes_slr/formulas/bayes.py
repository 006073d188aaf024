"""Exact Bayes error at population level (docs/model.md section 2).

``E_Bayes = 1 - E[sum_l p_l^2]``, ``p = softmax(c_nu chi*)``: the ``B`` term of softmax
attention at ``k = c_nu k*``. Under the spiked law the location's score is
``N(nu, nu)`` and the others ``N(0, nu)``; under max-SLR all scores are i.i.d.
``N(0, nu^2)`` (the location does not change the law of ``X``). Either way the
tokens are independent and ``E[sum p^2] = int du {...}`` is one ``log t``
integral of one-dimensional Gaussian expectations (:mod:`bayes_slr.formulas.normalised`).
For max-SLR with ``nu = inf`` the location is the argmax of ``chi*``, a function of
``X``: the Bayes error is 0.

**Heads and presence** (docs/multihead.md section 2). In the population limit the heads' keys and
values are orthogonal: head ``h``'s scores see its own token only, and the heads are independent
given ``X``. Head ``h`` is present with probability ``rho``; its posterior over ``(b_h = 1, eps_h =
l)`` is ``q_l = e^{c chi_l} / (C_L + sum_j e^{c chi_j})``, ``C_L = (1 - rho) / rho e^{-o_L}``, with
``c chi_l + o_L`` the variant's location log-weights (``o_L = -nu/2 - log L`` spiked), and the
Bayes error is ``1 - E[sum_l q_l^2] / rho`` whatever ``H``
(:func:`presence_bayes_error_exact`). With ``1 / (C + S)^2 = int t e^{-t (C + S)} dt`` and ``t =
e^u`` the tokens factorise as in :mod:`bayes_slr.formulas.normalised`, times ``exp(-C_L e^u)``: a
present head contributes the one-head integrand, an absent head ``L`` null tokens. At ``rho = 1``
``C_L = 0`` and this is the one-head integral (the same value within the two quadratures' bounds).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.formulas import normalised
from bayes_slr.formulas.population import length_support, location_mean
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics import integrals as q
from bayes_slr.numerics.integrals import BOUND_FLOOR


class ExactValue(NamedTuple):
    """A value from quadrature with a bound: ``|value - truth| <= error_bound``."""

    value: float
    error_bound: float


def bayes_error_exact(config: SLRConfig) -> ExactValue:
    """Population Bayes error ``1 - E[sum_l p_l^2]`` averaged over the length law; of a
    multi-head task (``config.multihead``: several heads or ``presence < 1``), that of
    :func:`presence_bayes_error_exact`.

    Parameters
    ----------
    config : SLRConfig
        The task; ``D`` and ``Delta`` are ignored.

    Returns
    -------
    ExactValue
        The error and a bound on its quadrature error (below 1e-7; typically 1e-9):
        the difference between the rule used and the nested rule of half its
        resolution, plus the truncation bound.
    """
    if config.multihead:
        return presence_bayes_error_exact(config)
    if math.isinf(config.c_nu):  # the location is a function of X (argmax): no error
        return ExactValue(0.0, 0.0)
    scale = (
        config.c_nu
    )  # the scores c_nu chi* have mean c_nu * shift at the location and spread |c_nu|
    fine, coarse = normalised.independent_terms(
        "softmax", location_mean(config, scale), abs(scale), *length_support(config)
    )[:, 1]
    return ExactValue(float(1.0 - fine), float(abs(fine - coarse)) + BOUND_FLOOR)


def _presence_core(functions: tuple, params: tuple, rules: tuple, laws: tuple) -> jax.Array:
    """``E[sum_l q_l^2]``: location score ``N(mu_loc, sigma^2)`` when present, others ``N(0,
    sigma^2)``; per length ``L`` the constant ``C_L = e^{log_c}`` in the denominator."""
    (mu_loc, sigma, presence), (z, u), (length_probs, lengths, log_c) = params, rules, laws
    y_loc = u.nodes[:, None] + (mu_loc + sigma * z.nodes)[None, :]
    y_other = u.nodes[:, None] + (sigma * z.nodes)[None, :]
    log_m_other = q.log_complement(q.expectation(z, q.kernel_tail(y_other)))
    m_loc = 1.0 - q.expectation(z, q.kernel_tail(y_loc))
    second_loc = q.expectation(z, q.kernel_second(y_loc))
    second_other = q.expectation(z, q.kernel_second(y_other))

    def one_length(law: jax.Array) -> jax.Array:
        prob, length, log_constant = law[0], law[1], law[2]
        powers = jnp.exp(jnp.maximum(length - 1.0, 0.0) * jnp.maximum(log_m_other, q.LOG_FLOOR))
        powers_minus = jnp.exp(
            jnp.maximum(length - 2.0, 0.0) * jnp.maximum(log_m_other, q.LOG_FLOOR)
        )
        present = second_loc * powers + (length - 1.0) * second_other * m_loc * powers_minus
        absent = length * second_other * powers
        damping = jnp.exp(-jnp.exp(jnp.minimum(log_constant + u.nodes, -q.LOG_FLOOR)))
        integrand = damping * (presence * present + (1.0 - presence) * absent)
        return prob * q.expectation(u, integrand)

    per_length = jax.lax.map(
        one_length, jnp.stack([length_probs, lengths, log_c], axis=1), batch_size=64
    )
    return jnp.sum(per_length)


def _log_constants(config: SLRConfig, lengths: np.ndarray) -> np.ndarray:
    """``log C_L`` per length: ``log((1 - rho) / rho) - o_L`` (``-inf`` at ``rho = 1``), ``o_L``
    the variant's location log-weight of a zero score in a sequence of length ``L``."""
    if config.presence == 1.0:
        return np.full(lengths.shape, -np.inf)
    log_odds = math.log1p(-config.presence) - math.log(config.presence)
    return log_odds - config.law.zero_score_log_weight(config.nu, lengths)


def presence_bayes_error_exact(config: SLRConfig) -> ExactValue:
    """Population Bayes error ``1 - E[sum_l q_l^2] / rho`` of multi-head SLR, averaged over the
    length law (any ``H``: the heads are independent given ``X`` and share one law).

    Parameters
    ----------
    config : SLRConfig
        The task (``presence`` is ``rho``); ``D``, ``Delta`` and ``heads`` are ignored.

    Returns
    -------
    ExactValue
        The error and its quadrature bound (fine against half resolution, plus the floor); the
        bound is divided by ``rho`` as the value is.
    """
    if math.isinf(config.c_nu):  # the location is a function of X (argmax): no error
        return ExactValue(0.0, 0.0)
    scale = config.c_nu
    mu_loc, sigma = location_mean(config, scale), abs(scale)
    probs, lengths = length_support(config)
    chi_lo = min(mu_loc, 0.0) - q.ZMAX * sigma
    chi_hi = max(mu_loc, 0.0) + q.ZMAX * sigma
    rules = (q.gaussian_rule(sigma), q.uniform_rule(-chi_hi - q.LOG_DECAY, -chi_lo + q.LOG_GROWTH))
    fine, coarse = q.evaluate_levels(
        _presence_core,
        (),
        (mu_loc, sigma, config.presence),
        rules,
        (probs, lengths, _log_constants(config, lengths)),
    )
    rho = config.presence
    return ExactValue(float(1.0 - fine / rho), float(abs(fine - coarse)) / rho + BOUND_FLOOR)
