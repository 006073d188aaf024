"""The quadrature channel of the Bayes-optimal state evolution against independent routes.

* Monte Carlo over the channel draws (the route the state evolution used before): within 4 of its
  standard errors;
* the heat-equation identity ``score_a = 2 d psi / d q_a`` (the scores and ``psi`` are computed
  from different integrands): central differences;
* the first step from ``q = 0`` in closed form (:func:`uninformative_scores`);
* a finer grid of every quadrature (slow).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.phase import uninformative_scores
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.numerics import laplace_kernels, mixture_channel

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
VARIABLE = SLRConfig("spiked", 1, LengthLaw.uniform(4), 1.0, 0.05)
NOISELESS = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
ARGMAX_PAIR = SLRConfig("max", 1, LengthLaw.fixed(2), math.inf, 0.1)
SOFTMAX_PAIR = ARGMAX_PAIR.replace(nu=2.0)
MC_SAMPLES = 2**15


@pytest.mark.parametrize(
    "config, q",
    [
        (SPIKED, (0.85, 0.95)),
        (VARIABLE, (0.3, 0.6)),
        (NOISELESS, (0.6, 0.7)),
        (NOISELESS.replace(nu=24.0), (0.9591, 0.999)),
        (NOISELESS.replace(nu=32.0), (0.97, 0.99)),
        (ARGMAX_PAIR, (0.77, 0.96)),
    ],
)
def test_quadrature_channel_matches_monte_carlo(config, q):
    """psi and both scores within 4 Monte Carlo standard errors of the channel draws (32768; 4096
    for the two-token max-SLR channel, whose location integrals cost more per draw; its softmax
    version was checked the same way at five points, within 1.5 standard errors of 65536 draws).

    At ``nu = 24, 32`` the weights' spread ``sigma = sqrt(nu q_k)`` is about 5: the key score's
    integrand reaches far below ``nu = -30`` and the size-biased kernels' mass lies near ``z = 2
    sigma, 3 sigma`` (grids fixed for small ``sigma`` were 3000 and 28000 standard errors off).
    Closer to ``q_v = 1`` the draws' spread is ruled by rare draws whose location is ambiguous, and
    the standard error of 32768 draws is not a reliable scale: the points keep ``q_v <= 0.999``."""
    exact = BayesChannel(config).value(np.array(q))
    assert BayesChannel(config).exact
    draws = MC_SAMPLES if config.variant == "spiked" else 4096
    sampled = BayesChannel(config, mc_samples=draws, monte_carlo=True).value(np.array(q))
    assert abs(exact.psi - sampled.psi) < 4 * sampled.psi_stderr
    stderrs = np.sqrt(np.diag(sampled.score_covariance))
    assert np.all(np.abs(np.subtract(exact.scores, sampled.scores)) < 4 * stderrs)


@pytest.mark.parametrize(
    "config, q",
    [
        (SPIKED, (0.5, 0.4)),
        (VARIABLE, (0.7, 0.2)),
        (NOISELESS, (0.6, 0.7)),
        (ARGMAX_PAIR, (0.6, 0.7)),
        (SOFTMAX_PAIR, (0.05, 0.5)),
    ],
)
def test_scores_are_twice_the_derivative_of_psi(config, q):
    """``score_a = 2 d psi / d q_a`` (docs/theory.md part B): central differences of step 1e-4 have
    truncation error ~1e-8 and rounding error (1e-10 relative quadrature accuracy) / 1e-4 ~ 1e-6."""
    channel = BayesChannel(config)
    scores = np.asarray(channel.value(np.array(q)).scores)
    step = 1e-4
    for a in range(2):
        shift = step * np.eye(2)[a]
        derivative = (
            channel.value(np.array(q) + shift).psi - channel.value(np.array(q) - shift).psi
        ) / (2 * step)
        assert 2 * derivative == pytest.approx(scores[a], rel=1e-5)


@pytest.mark.parametrize("config", [SPIKED, VARIABLE])
def test_first_step_from_zero_is_the_closed_form(config):
    """At ``q = 0`` the scores are ``(c^2 E[1/L], E[1/L] / (1 + Delta))`` (spiked); the quadrature
    meets them to 1e-7 (its accuracy where ``q_v`` is tiny: the ``r`` law is a point, and the ``y``
    grid alone resolves the kernels' edge; 1.7e-8 measured)."""
    channel = BayesChannel(config)
    score_k, score_v = uninformative_scores(config)
    mean_inverse_length = sum(p / L for L, p in config.length.support())
    assert score_k == pytest.approx(config.nu * mean_inverse_length, rel=1e-12)
    assert score_v == pytest.approx(mean_inverse_length / (1 + config.Delta), rel=1e-12)
    assert channel.value(np.zeros(2)).scores == pytest.approx((score_k, score_v), rel=1e-7)


def test_first_step_from_zero_max_slr_has_no_key_signal():
    """Max-SLR: the location posterior sums to one, so ``sum_j d log P_j / d omega_l = 0`` at the
    symmetric point and ``score_k = 0`` at ``q = 0`` (``k`` is learned at second order only); the
    location integrals' derivatives (automatic differentiation) give it to rounding, and so does
    the two-token quadrature channel."""
    score_k, score_v = uninformative_scores(ARGMAX_PAIR)
    assert score_k == pytest.approx(0.0, abs=1e-12)
    assert score_v == pytest.approx(1.0 / (2 * 1.1), rel=1e-12)
    quadrature = BayesChannel(ARGMAX_PAIR).value(np.zeros(2)).scores  # 1e-7: tiny q_v, as above
    assert abs(quadrature[0]) < 1e-9 and quadrature[1] == pytest.approx(score_v, rel=1e-7)


@pytest.mark.slow
@pytest.mark.parametrize("nu, q, Delta", [(2.0, (0.5, 0.4), 0.1), (24.0, (0.9591, 0.999), 0.0)])
def test_quadrature_is_converged_in_its_grids(monkeypatch, nu, q, Delta):
    """Halving the ``nu`` and ``y`` spacings and the ``z`` rule's, reaching 6 further in ``nu``
    below and 3 further in ``z`` above, a three times finer kernel table and a four times finer
    ``r`` grid move psi and the scores by less than 1e-9 relative (1e-11 measured) away from tiny
    ``q_v``, at a small spread of the weights and at a wide one (``sigma = 4.8``, where the ranges
    follow ``sigma``)."""
    c = math.sqrt(nu)
    probs, lengths = np.array([0.0, 0.0, 1.0, 0.0]), np.array([1.0, 2.0, 3.0, 1.0])
    nodes = laplace_kernels.table_rule_size(c)

    def channel(rule_nodes, rule_top, extension):
        return np.asarray(
            mixture_channel._lognormal_mixture_channel.__wrapped__(
                np.array(q),
                Delta,
                jax.numpy.asarray(c),
                probs,
                lengths,
                rule_nodes,
                rule_top,
                extension,
            )
        )

    default = channel(nodes, laplace_kernels.rule_top(c), mixture_channel.grid_extension(c))
    monkeypatch.setattr(mixture_channel, "NU_GRID", np.arange(-36.0, 50.0 + 1e-9, 0.25))
    monkeypatch.setattr(mixture_channel, "Y_GRID", np.linspace(-9.0, 9.0, 109))
    monkeypatch.setattr(laplace_kernels, "TABLE_COUNT", 6901)
    monkeypatch.setattr(laplace_kernels, "_R_GRID", np.linspace(0.0, laplace_kernels.R_MAX, 601))
    finer = channel(
        2 * nodes - 1, laplace_kernels.rule_top(c) + 3.0, 2 * mixture_channel.grid_extension(c)
    )
    np.testing.assert_allclose(finer, default, rtol=1e-9)
