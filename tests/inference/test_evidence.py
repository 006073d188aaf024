"""Annealed importance sampling of the evidence against exact enumeration of the locations.

For a training set small enough to enumerate every assignment of the locations (``L^N``), the
evidence is a sum of Gaussian integrals: the key's, ``(1 + N nu / D)^(-D/2) exp(|b|^2 / (2 (1 + N
nu / D)))`` with ``b = sqrt(nu / D) sum_mu x_(mu, eps_mu)``, and the value's, the marginal
``N(y; 0, Delta I + A A^T)`` of a Bayesian linear regression (``A = x_eps / sqrt(D)``). Forward AIS
is a lower bound on ``log Z`` in expectation and reverse AIS (from the teacher) an upper bound; both
must meet the exact value within 4 of their standard errors, and bracket it on average.
"""

from __future__ import annotations

import itertools
import math

import jax
import numpy as np
import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.inference.evidence import annealed_log_evidence, teacher_log_likelihood
from bayes_slr.inference.information_rate import location_draws, log_predictive
from bayes_slr.models.batch import SLRBatch
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig

CONFIG = SLRConfig("spiked", 5, LengthLaw.fixed(2), 2.0, 0.1)


def exact_log_evidence(config: SLRConfig, batch) -> float:
    """``log Z`` by enumerating the ``L^N`` location assignments (module docstring)."""
    X, y = np.asarray(batch.X), np.asarray(batch.y)
    N, L, D = X.shape
    precision = 1.0 + N * config.nu / D
    terms = []
    for eps in itertools.product(range(L), repeat=N):
        located = X[np.arange(N), list(eps)]
        b = math.sqrt(config.nu / D) * located.sum(axis=0)
        key_part = -0.5 * D * math.log(precision) + b @ b / (2.0 * precision)
        A = located / math.sqrt(D)
        covariance = config.Delta * np.eye(N) + A @ A.T
        value_part = -0.5 * (
            N * math.log(2 * math.pi)
            + np.linalg.slogdet(covariance)[1]
            + y @ np.linalg.solve(covariance, y)
        )
        terms.append(key_part + value_part - N * math.log(L))
    return float(np.logaddexp.reduce(terms))


def test_annealed_evidence_matches_exact_enumeration(key):
    """Three teachers, N = 8 sequences (256 assignments): forward and reverse AIS within 4 standard
    errors of the exact ``log Z``; the teacher's log-likelihood exceeds ``log Z`` on average (the
    mutual information is positive)."""
    gaps = []
    for seed in range(3):
        key_teacher, key_data, key_ais = jax.random.split(jax.random.fold_in(key, seed), 3)
        teacher = draw_teacher(key_teacher, CONFIG.D)
        batch = simulate(key_data, CONFIG, teacher, 8)
        exact = exact_log_evidence(CONFIG, batch)
        forward = annealed_log_evidence(key_ais, CONFIG, batch, temperatures=400, chains=32)
        reverse = annealed_log_evidence(
            key_ais,
            CONFIG,
            batch,
            temperatures=400,
            chains=32,
            direction="reverse",
            teacher=teacher,
        )
        for estimate in (forward, reverse):
            assert abs(estimate.log_evidence - exact) < 4 * estimate.stderr + 1e-9
        gaps.append(teacher_log_likelihood(CONFIG, batch, teacher) - exact)
    assert np.mean(gaps) > 0


def test_evidence_refuses_what_the_exact_sampler_does_not_cover(key):
    teacher = draw_teacher(key, 4)
    batch = simulate(key, CONFIG.replace(D=4), teacher, 3)
    with pytest.raises(ConfigError, match="variant"):
        annealed_log_evidence(key, CONFIG.replace(variant="max", D=4), batch)
    with pytest.raises(ConfigError, match="teacher"):
        annealed_log_evidence(key, CONFIG.replace(D=4), batch, direction="reverse")


def test_chain_rule_of_posterior_predictives_meets_exact_evidence(key):
    """``log Z = sum_n log p(s_n | first n sequences)``: the Rao-Blackwellised predictives of
    :mod:`bayes_slr.inference.information_rate`, each from collapsed Gibbs draws of the locations
    of the sequences before it, sum to the enumerated ``log Z`` (6 sequences), within the
    draws' own bias estimate (halving the draws) plus 0.02 per sequence for their noise."""
    key_teacher, key_data, key_draws = jax.random.split(key, 3)
    teacher = draw_teacher(key_teacher, CONFIG.D)
    batch = simulate(key_data, CONFIG, teacher, 6)
    total, bias = 0.0, 0.0
    for n in range(6):
        before = SLRBatch(*(x[:n] for x in batch))
        new = SLRBatch(*(x[n : n + 1] for x in batch))
        eps = location_draws(jax.random.fold_in(key_draws, n), CONFIG, before, samples=200).eps
        term = log_predictive(CONFIG, before, new, eps)[0]
        total += term
        bias += abs(term - log_predictive(CONFIG, before, new, eps[::2])[0])
    assert abs(total - exact_log_evidence(CONFIG, batch)) < 4 * bias + 6 * 0.02
