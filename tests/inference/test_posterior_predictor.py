"""The Bayes-optimal posterior predictor (draws weighted by p(X | k)) and the unbiased error
estimate.

Routes compared: the streamed, grouped, log-space predictor against a direct NumPy
evaluation of docs/model.md section 5's formula; the weighted and plain predictors (equal for
max-SLR, different for spiked); the cross-replicate error estimate against the plain
square of a finite-draw average (whose bias is ``E_X[Var(f_bar)]``).
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest
from scipy.special import logsumexp, softmax

from bayes_slr.inference.predictive import (
    PosteriorPredictor,
    bayes_test_error,
    posterior_errors,
)
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.models.scoring import excess_error_given_teacher
from bayes_slr.models.simulate import draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig

TASK = SLRConfig("spiked", 20, LengthLaw.fixed(3), 2.0, 0.1)
ALPHA = 1
SAMPLING = {"chains": 4, "warmup": 200, "samples": 500}
N_TEST = 4_000


def _posterior(variant: str, seed: int = 0):
    config = TASK.replace(variant=variant)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(seed), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, ALPHA * config.D)
    draws = sample_posterior(key_sampler, config, batch, **SAMPLING)
    return config, teacher, batch, draws


@pytest.fixture(scope="module")
def spiked():
    return _posterior("spiked")


@pytest.fixture(scope="module")
def max_slr():
    return _posterior("max")


def _direct_prediction(config, k, v, X, L):
    """docs/model.md section 5 in NumPy: weights p(X | k_s) (spiked: (1/L) sum_l exp(sqrt(nu) chi_l
    - nu|k|^2/2D);
    max: 1), then the weighted mean of sum_l softmax(c_nu chi)_l z_l."""
    D = config.D
    chi, z = X[:L] @ k.T / math.sqrt(D), X[:L] @ v.T / math.sqrt(D)  # (L, S)
    if config.variant == "spiked":
        log_w = logsumexp(
            math.sqrt(config.nu) * chi - config.nu * np.sum(k**2, axis=1) / (2 * D), axis=0
        ) - math.log(L)
    else:
        log_w = np.zeros(k.shape[0])
    f = np.sum(softmax(config.c_nu * chi, axis=0) * z, axis=0)
    weights = np.exp(log_w - log_w.max())
    return np.sum(weights * f) / weights.sum(), f.mean(), weights.sum() ** 2 / np.sum(weights**2)


@pytest.mark.parametrize("variant", ["spiked", "max"])
def test_weighted_predictor_matches_direct_formula(variant, spiked, max_slr):
    """Streamed, grouped, log-space evaluation = direct NumPy formula (float64 round-off)."""
    config, teacher, _, draws = spiked if variant == "spiked" else max_slr
    test = simulate(jax.random.PRNGKey(5), config, teacher, 7)
    predictor = PosteriorPredictor(config, draws.k, draws.v, max_draws=300, groups=3)
    out = predictor.evaluate(test.X, test.lengths)
    k = np.asarray(draws.k).reshape(-1, config.D)[:: -(-draws.k.shape[0] * draws.k.shape[1] // 300)]
    v = np.asarray(draws.v).reshape(-1, config.D)[:: -(-draws.k.shape[0] * draws.k.shape[1] // 300)]
    k, v = k[: predictor.draws], v[: predictor.draws]
    for n in range(7):
        X = np.asarray(test.X[n])
        bayes, plain, ess = _direct_prediction(config, k, v, X, int(test.lengths[n]))
        np.testing.assert_allclose(out.bayes[n], bayes, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out.plain[n], plain, rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(out.importance_ess[n], ess, rtol=1e-8)
        group = np.arange(predictor.draws) < predictor.draws // 3
        np.testing.assert_allclose(
            out.bayes_groups[n, 0],
            _direct_prediction(config, k[group], v[group], X, int(test.lengths[n]))[0],
            rtol=1e-10,
        )


def test_max_slr_predictors_coincide(max_slr):
    """For max-SLR p(X | k) does not depend on k: the two predictors and their errors are equal."""
    config, teacher, _, draws = max_slr
    errors = posterior_errors(
        jax.random.PRNGKey(3), config, teacher, draws.k, draws.v, N_test=N_TEST, max_draws=400
    )
    assert errors.bayes.value == pytest.approx(errors.plain.value, rel=1e-10)
    assert errors.importance_ess["q05"] == pytest.approx(errors.importance_ess["draws"], rel=1e-8)


def test_spiked_weighted_predictor_beats_plain_mean(spiked):
    """Spiked, alpha = 1: conditioning on the test sequence lowers the error (paired, same draws and
    test set; 4 standard errors of the per-sequence difference). The bias of squaring each pooled
    predictor is about Var_post(f)/S_eff for both and cancels to O(1/S) in the difference."""
    config, teacher, _, draws = spiked
    predictor = PosteriorPredictor(config, draws.k, draws.v, max_draws=1000, groups=1)

    def difference(batch):
        out = predictor.evaluate(batch.X, batch.lengths)
        return excess_error_given_teacher(
            config, teacher, batch, out.bayes
        ) - excess_error_given_teacher(config, teacher, batch, out.plain)

    result = streamed_mean(difference, jax.random.PRNGKey(4), config, teacher, 2 * N_TEST)
    assert result.mean + 4 * result.stderr < 0, (result.mean, result.stderr)


def test_split_estimator_removes_the_finite_draw_bias(spiked):
    """alpha = 1: squaring an average of m draws is biased up by E_X[Var(f_bar_m)]; the
    cross-replicate
    estimator is not.

    The pooled draws (shuffled: nearly independent) are partitioned into subsets of ``m``
    draws. Per subset, old (one group, squared) and new (4 groups of m/4, cross products)
    estimates on one test set. Reference: the new estimator on all draws. Checks, with the
    standard error of the subset average: (1) old - new averages to the bias predicted from the
    per-draw spread, ``E_X[s_f^2] / m`` (within 4 SE); (2) the new estimates average to the
    reference (4 SE), so the old one is biased by (1).
    """
    config, teacher, _, draws = spiked
    key = jax.random.PRNGKey(8)
    k = np.asarray(draws.k).reshape(-1, config.D)
    v = np.asarray(draws.v).reshape(-1, config.D)
    order = np.random.default_rng(0).permutation(k.shape[0])
    k, v = k[order], v[order]
    m = 8
    subsets = [slice(i, i + m) for i in range(0, 1600, m)]
    reference = bayes_test_error(
        key, config, teacher, k, v, N_test=N_TEST, weighted=False, max_draws=k.shape[0]
    )
    old = np.array(
        [
            bayes_test_error(
                key, config, teacher, k[s], v[s], N_test=N_TEST, weighted=False, groups=1
            ).value
            for s in subsets
        ]
    )
    new = np.array(
        [
            bayes_test_error(
                key, config, teacher, k[s], v[s], N_test=N_TEST, weighted=False, groups=4
            ).value
            for s in subsets
        ]
    )
    test = simulate(key, config, teacher, N_TEST)
    f = np.asarray(
        PosteriorPredictor(config, k[:1600], v[:1600], weighted=False, groups=200, max_draws=1600)
        .evaluate(test.X, test.lengths)
        .plain_groups
    )  # (n, 200) subset means of 8 draws
    predicted_bias = float(
        np.mean(np.var(f, axis=1, ddof=1))
    )  # Var over subsets of the m-draw mean
    gap = old - new
    assert (
        abs(gap.mean() - predicted_bias)
        < 4 * gap.std(ddof=1) / math.sqrt(gap.size) + 0.05 * predicted_bias
    )
    assert predicted_bias > 4 * new.std(ddof=1) / math.sqrt(new.size)  # the test can see the bias
    assert abs(new.mean() - reference.value) < 4 * new.std(ddof=1) / math.sqrt(new.size)
    assert old.mean() - reference.value > 4 * old.std(ddof=1) / math.sqrt(old.size)


def test_replicate_standard_error_covers_draw_noise(spiked):
    """The standard error of the cross-replicate estimate includes a draw-noise part; both parts are
    positive.
    """
    config, teacher, _, draws = spiked
    error = bayes_test_error(
        jax.random.PRNGKey(3), config, teacher, draws.k, draws.v, N_test=N_TEST, max_draws=400
    )
    assert error.stderr_draws > 0 and error.stderr_test > 0
    assert error.stderr == pytest.approx(math.hypot(error.stderr_test, error.stderr_draws))
