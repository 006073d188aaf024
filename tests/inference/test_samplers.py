"""Finite-alpha posterior: Gibbs conditionals, NUTS vs Gibbs, starts, predictor limits, ArviZ files.

Tolerances come from the Monte Carlo error bars of each route: MCSEs of posterior
means (ArviZ), standard errors of test errors over fresh samples, and the quadrature
bound of the exact population value.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
import xarray as xr
from numpyro.handlers import condition
from numpyro.infer.util import log_density

import bayes_slr
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import bayes_estimator
from bayes_slr.inference.predictive import (
    bayes_test_error,
    posterior_mean_predictor,
    sequence_location_posterior,
)
from bayes_slr.inference.samplers import direction_conditionals, run_gibbs, sample_posterior
from bayes_slr.models.numpyro_models import slr_model_enumerated
from bayes_slr.models.scoring import excess_test_error, zero_predictor
from bayes_slr.models.simulate import draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm

SPIKED = SLRConfig("spiked", 10, LengthLaw.fixed(3), 4.0, 0.1)
ALPHA = 8
# One Gibbs setting, test-set size and draw count for every test (and
# tests/cli/test_cli_posterior.py):
# each compiled shape is then reused instead of compiled again.
GIBBS = {"chains": 4, "warmup": 200, "samples": 500}
N_TEST = 10_000
MAX_DRAWS = 200


@pytest.fixture(scope="module")
def data():
    """Prior teacher and ``N = alpha D`` training sequences of the small spiked task."""
    key_teacher, key_data = jax.random.split(jax.random.PRNGKey(11))
    teacher = draw_teacher(key_teacher, SPIKED.D)
    return teacher, simulate(key_data, SPIKED, teacher, ALPHA * SPIKED.D)


@pytest.fixture(scope="module")
def nuts_and_gibbs(data):
    """NUTS from random starts and Gibbs from the teacher, on the same data."""
    teacher, batch = data
    nuts = sample_posterior(
        jax.random.PRNGKey(1), SPIKED, batch, sampler="nuts", chains=2, warmup=200, samples=300
    )
    gibbs = run_gibbs(
        jax.random.PRNGKey(2), SPIKED, batch, **GIBBS, init="informed", teacher=teacher
    )
    return (
        posterior_io.to_datatree(nuts, SPIKED, batch, teacher, seed=1),
        posterior_io.to_datatree(gibbs, SPIKED, batch, teacher, seed=2),
    )


def test_gibbs_conditionals_match_joint_density(data):
    """Given the locations, log N(k | ...) + log N(v | ...) differs from the joint log-density by a
    constant.

    The joint is the enumerated NumPyro model with ``eps`` conditioned, an independent
    route to the conjugate formulas; exact up to float64 rounding.
    """
    teacher, batch = data
    eps = batch.eps
    law = direction_conditionals(batch.X[jnp.arange(eps.shape[0]), eps], batch.y, SPIKED)
    precision_v = law.v_cholesky @ law.v_cholesky.T

    def conditional(k, v):
        dk, dv = k - law.k_mean, v - law.v_mean
        return -0.5 * law.k_precision * dk @ dk - 0.5 * dv @ precision_v @ dv

    @jax.jit
    def joint(k, v):
        model = condition(slr_model_enumerated, {"eps": eps})
        value, _ = log_density(
            model, (SPIKED, batch.lengths, batch.X, batch.y), {}, {"k": k, "v": v}
        )
        return value

    points = jax.random.normal(jax.random.PRNGKey(5), (4, 2, SPIKED.D)) + jnp.stack(
        [teacher.k_star, teacher.v_star]
    )
    offsets = [float(joint(k, v) - conditional(k, v)) for k, v in points]
    assert np.ptp(offsets) < 1e-8 * max(1.0, abs(offsets[0]))


def test_nuts_and_gibbs_agree_on_overlaps(nuts_and_gibbs):
    """Posterior means of m_k, m_v, q_k, q_v agree within 4 combined MCSEs; both converged."""
    nuts, gibbs = (diagnostics.diagnostics_table(tree) for tree in nuts_and_gibbs)
    for table in (nuts, gibbs):
        assert diagnostics.convergence_summary(table)["rhat_max"] < 1.05
    assert int(nuts_and_gibbs[0].sample_stats["diverging"].sum()) == 0
    for name in posterior_io.OVERLAPS:
        tolerance = 4 * math.hypot(nuts[name]["mcse_mean"], gibbs[name]["mcse_mean"])
        assert abs(nuts[name]["mean"] - gibbs[name]["mean"]) < tolerance, name


def test_location_posterior_is_calibrated(nuts_and_gibbs, data):
    """Nishimori: E[P(eps = eps*)] = E[sum_l P(eps = l)^2] over training sequences
    (within 4 s.e.).
    """
    _, batch = data
    probs = nuts_and_gibbs[1].location_posterior["probs"].mean("chain").values
    np.testing.assert_allclose(probs.sum(axis=-1), 1.0, atol=1e-12)
    difference = probs[np.arange(probs.shape[0]), np.asarray(batch.eps)] - np.sum(probs**2, axis=-1)
    assert abs(difference.mean()) < 4 * difference.std(ddof=1) / math.sqrt(difference.size) + 1e-3


def test_new_sequence_location_posterior(nuts_and_gibbs, data):
    """Credible intervals bracket the mean; with y observed it matches the training posterior of
    that sequence.
    """
    teacher, batch = data
    tree = nuts_and_gibbs[1]
    k, v = posterior_io.draws_of(tree)
    without_y = sequence_location_posterior(SPIKED, k, batch.X[0])
    assert abs(without_y.probs.sum() - 1) < 1e-12
    assert np.all(without_y.lower <= without_y.probs) and np.all(without_y.probs <= without_y.upper)
    with_y = sequence_location_posterior(SPIKED, k, batch.X[0], v_draws=v, y=float(batch.y[0]))
    training = tree.location_posterior["probs"].isel(sequence=0).mean("chain").values
    np.testing.assert_allclose(with_y.probs, training, atol=1e-10)
    with pytest.raises(ConfigError, match="level"):
        sequence_location_posterior(SPIKED, k, batch.X[0], level=1.0)


def test_bayes_error_not_above_erm(nuts_and_gibbs, data):
    """On the same training set the posterior-mean predictor beats ERM softmax and linear (4
    combined s.e.).
    """
    teacher, batch = data
    k, v = posterior_io.draws_of(nuts_and_gibbs[1])
    key_test = jax.random.PRNGKey(7)
    bayes = bayes_test_error(key_test, SPIKED, teacher, k, v, N_test=N_TEST, max_draws=MAX_DRAWS)
    for activation in ("softmax", "linear"):
        fit = erm.fit_erm(jax.random.PRNGKey(3), batch, SPIKED, activation, lam=1e-3)
        erm_error, erm_stderr = erm.test_error(
            key_test, fit.params, SPIKED, teacher, activation, N_TEST
        )
        assert bayes.value <= erm_error + 4 * math.hypot(bayes.stderr, erm_stderr), activation


def test_random_and_informed_starts_agree_at_large_alpha():
    """Gibbs from prior draws and from the teacher give the same overlaps where the posterior is
    unimodal.
    """
    key_teacher, key_data = jax.random.split(jax.random.PRNGKey(12))
    teacher = draw_teacher(key_teacher, SPIKED.D)
    batch = simulate(key_data, SPIKED, teacher, 4 * ALPHA * SPIKED.D)
    tables = []
    for init in ("random", "informed"):
        draws = sample_posterior(
            jax.random.PRNGKey(4),
            SPIKED,
            batch,
            sampler="gibbs",
            **GIBBS,
            init=init,
            teacher=teacher,
        )
        tables.append(
            diagnostics.diagnostics_table(
                posterior_io.to_datatree(draws, SPIKED, batch, teacher, seed=4)
            )
        )
    random_start, informed_start = tables
    assert diagnostics.convergence_summary(random_start)["rhat_max"] < 1.05
    for name in posterior_io.OVERLAPS:
        tolerance = 4 * math.hypot(
            random_start[name]["mcse_mean"], informed_start[name]["mcse_mean"]
        )
        assert abs(random_start[name]["mean"] - informed_start[name]["mean"]) < tolerance, name


@pytest.mark.slow
def test_bayes_error_approaches_population_bayes_error(full_size):
    """Exact teacher (|k*|^2 = |v*|^2 = D, k* orthogonal to v*), alpha = 8 and 32.

    * The known-direction (oracle) error on fresh samples equals ``bayes_error_exact``
      within 4 s.e. plus the quadrature bound (independent routes).
    * The finite-alpha error is not below the population value (beyond 4 s.e.).
    * Its excess over the oracle, ``E[(f_post - f*)^2]``, shrinks like ``1/alpha`` for a
      regular posterior (Bernstein-von Mises): from alpha 8 to 32 by more than 2x (4x expected).
    """
    n_test = 10 * N_TEST if full_size else 2 * N_TEST
    population = bayes_error_exact(SPIKED)
    teacher = draw_teacher(jax.random.PRNGKey(3), SPIKED.D, exact=True)
    key_test = jax.random.PRNGKey(9)
    oracle = excess_test_error(
        key_test,
        SPIKED,
        teacher,
        lambda X, L: bayes_estimator(X, L, SPIKED, teacher),
        N_test=n_test,
    )
    assert abs(oracle.value - population.value) < 4 * oracle.stderr + population.error_bound
    gaps = {}
    for alpha in (ALPHA, 4 * ALPHA):
        batch = simulate(jax.random.PRNGKey(alpha), SPIKED, teacher, alpha * SPIKED.D)
        draws = run_gibbs(jax.random.PRNGKey(1), SPIKED, batch, **GIBBS)
        bayes = bayes_test_error(
            key_test, SPIKED, teacher, draws.k, draws.v, N_test=n_test, max_draws=MAX_DRAWS
        )
        assert bayes.value >= population.value - 4 * bayes.stderr - population.error_bound

        def squared_gap(test_batch, draws=draws):
            f_post = posterior_mean_predictor(
                SPIKED, draws.k[:, ::10], draws.v[:, ::10], test_batch.X, test_batch.lengths
            )
            return (
                f_post - bayes_estimator(test_batch.X, test_batch.lengths, SPIKED, teacher)
            ) ** 2

        gaps[alpha] = streamed_mean(squared_gap, key_test, SPIKED, teacher, n_test)
    assert (
        gaps[4 * ALPHA].mean + 4 * gaps[4 * ALPHA].stderr
        < (gaps[ALPHA].mean - 4 * gaps[ALPHA].stderr) / 2
    )


@pytest.mark.slow
def test_bayes_error_at_small_alpha_is_near_prior_predictive(full_size):
    """alpha = 0.2, averaged over prior teachers (Bayes-optimality holds on average over the prior).

    Upper bound: the posterior mean beats the prior-predictive predictor ``f = 0``.
    Lower bound: even knowing ``k*`` and every location, ``N`` linear observations of
    ``v*`` remove at most ``N`` of its ``D`` prior variance units, so the error is
    ``>= 1 - alpha`` on average. Both within 4 s.e. over teachers.
    """
    teachers = 16 if full_size else 8
    alpha = 0.2
    differences, errors = [], []
    for seed in range(teachers):
        key_teacher, key_data, key_test = jax.random.split(jax.random.PRNGKey(100 + seed), 3)
        teacher = draw_teacher(key_teacher, SPIKED.D)
        batch = simulate(key_data, SPIKED, teacher, round(alpha * SPIKED.D))
        draws = run_gibbs(key_data, SPIKED, batch, **GIBBS)
        bayes = bayes_test_error(
            key_test, SPIKED, teacher, draws.k, draws.v, N_test=N_TEST, max_draws=MAX_DRAWS
        )
        zero = excess_test_error(key_test, SPIKED, teacher, zero_predictor, N_test=N_TEST)
        differences.append(bayes.value - zero.value)
        errors.append(bayes.value)
    differences, errors = np.array(differences), np.array(errors)
    assert differences.mean() <= 4 * differences.std(ddof=1) / math.sqrt(teachers)
    assert errors.mean() >= 1 - alpha - 4 * errors.std(ddof=1) / math.sqrt(teachers)


def test_netcdf_round_trip_and_bad_files(nuts_and_gibbs, tmp_path):
    """A saved DataTree loads back identical; corrupt and foreign files raise ConfigError."""
    tree = nuts_and_gibbs[0]
    path = posterior_io.save_posterior(tree, tmp_path / "post.nc")
    loaded = posterior_io.load_posterior(path)
    assert posterior_io.config_of(loaded) == SPIKED
    np.testing.assert_array_equal(
        loaded["posterior_vectors"]["k"].values, tree["posterior_vectors"]["k"].values
    )
    np.testing.assert_array_equal(
        loaded.location_posterior["probs"].values, tree.location_posterior["probs"].values
    )
    with pytest.raises(ConfigError, match="exists"):
        posterior_io.save_posterior(tree, path)
    corrupt = tmp_path / "corrupt.nc"
    corrupt.write_bytes(path.read_bytes()[:2000])
    foreign = tmp_path / "foreign.nc"
    xr.Dataset({"a": ("x", np.arange(3.0))}).to_netcdf(foreign, engine="h5netcdf")
    for bad in (corrupt, foreign, tmp_path / "missing.nc"):
        with pytest.raises(ConfigError, match="posterior"):
            posterior_io.load_posterior(bad)


@pytest.mark.parametrize(
    ("given", "named"),
    [
        ({"chains": 0}, "chains"),
        ({"samples": 0}, "samples"),
        ({"warmup": -1}, "warmup"),
        ({"sampler": "nope"}, "sampler must be one of"),
        (
            {"variant": "max", "nu": 2.0, "sampler": "gibbs"},
            "sampler gibbs does not support the max variant .*use sampler auto or",
        ),
        ({"variant": "max", "nu": math.inf}, "nu must be finite"),
        ({"Delta": 0.0}, "Delta"),
    ],
)
def test_bad_sampling_input_is_refused_by_the_public_entry(given, named):
    """The sampling settings are checked once, where the options are resolved (the samplers below
    trust them): one ConfigError naming the setting, before any draw."""
    with pytest.raises(ConfigError, match=named):
        bayes_slr.posterior(progress=False, **given)


def test_informed_start_without_teacher_is_refused(data):
    _, batch = data
    with pytest.raises(ConfigError, match="teacher"):
        sample_posterior(jax.random.PRNGKey(0), SPIKED, batch, init="informed")
