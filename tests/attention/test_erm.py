"""ERM training and its test error, tied to the population theory (docs/model.md sections 4-5).

Routes compared: the Monte Carlo test error of trained estimators; the population
error (quadrature, ``bayes_slr.formulas``) at their overlaps; the population optimum of
each activation plus the classical M-estimation excess risk ``tr(H^-1 G) / N``
(sandwich formula) evaluated at the population optimum.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.estimators import AttentionParams, overlaps, predict
from bayes_slr.attention.training import fit_erm, initial_params, objective_and_grad_norm
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.optimum import PopulationOptimum, optimal_population_error
from bayes_slr.models.simulate import Teacher, draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm

ALPHA, LAM, TOL = 64.0, 0.01, 1e-6


@pytest.fixture(scope="module")
def size(full_size) -> dict:
    """CI size, or the full size with ``BAYES_SLR_FULL=1``."""
    return (
        {"D": 60, "seeds": 16, "N_test": 50_000}
        if full_size
        else {"D": 30, "seeds": 8, "N_test": 20_000}
    )


@pytest.fixture(scope="module")
def task(size) -> SLRConfig:
    return SLRConfig("spiked", size["D"], LengthLaw.fixed(3), 2.0)


@pytest.fixture(scope="module")
def large_alpha(task, size) -> dict[str, erm.ERMSummary]:
    """ERM at ``alpha = 64`` with exact teachers (``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``), per
    activation.
    """
    return {
        activation: erm.erm_study(
            task,
            ERMSettings(
                activation=activation,
                alpha=ALPHA,
                lam=LAM,
                seeds=size["seeds"],
                N_test=size["N_test"],
                tol=TOL,
                exact_teacher=True,
                starts=2,
            ),
            0,
        )
        for activation in activation_names()
    }


def optimum_params(optimum: PopulationOptimum, teacher: Teacher, key: jax.Array) -> AttentionParams:
    """Parameters with the optimal overlaps and no cross overlaps, for an exact teacher."""
    k_star, v_star = teacher
    D = k_star.shape[0]
    u = jax.random.normal(key, (D,))
    u = u - (u @ k_star) / D * k_star - (u @ v_star) / D * v_star
    u = u / jnp.linalg.norm(u) * math.sqrt(D)
    k = (
        optimum.overlaps.m_k * k_star
        + math.sqrt(max(optimum.overlaps.q_k - optimum.overlaps.m_k**2, 0.0)) * u
    )
    return AttentionParams(k, optimum.overlaps.m_v * v_star, jnp.asarray(optimum.overlaps.c))


def sandwich_excess(
    activation: str,
    config: SLRConfig,
    optimum: PopulationOptimum,
    N: int,
    key: jax.Array,
    n_mc: int = 10_000,
) -> float:
    """Asymptotic excess test error of ERM over the population optimum: ``tr(H^-1 G) / N``.

    For the loss ``l = (y - f)^2 / 2`` at the population minimiser ``theta*``,
    ``H = E[hess l]``, ``G = E[grad l grad l^T]``; ``theta_hat - theta* ~ N(0, H^-1 G H^-1 / N)``
    gives ``E[2 (R(theta_hat) - R(theta*))] = tr(H^-1 G) / N`` to leading order in ``1/N``.
    Estimated on ``n_mc`` fresh samples with an exact teacher (where the finite-``D`` risk at
    ``theta*`` is the population optimum). The erf offset is a parameter for erf only.
    """
    k_teacher, k_params, k_data = jax.random.split(key, 3)
    teacher = draw_teacher(k_teacher, config.D, exact=True)
    flat, unravel = ravel_pytree(optimum_params(optimum, teacher, k_params))
    batch = simulate(k_data, config, teacher, n_mc)

    def sample_loss(theta, X, length, y):
        return 0.5 * (y - predict(unravel(theta), X[None], length[None], activation)[0]) ** 2

    def mean_loss(theta):
        return jnp.mean(
            jax.vmap(sample_loss, (None, 0, 0, 0))(theta, batch.X, batch.lengths, batch.y)
        )

    hessian = np.asarray(jax.hessian(mean_loss)(flat))
    grads = np.asarray(
        jax.vmap(jax.grad(sample_loss), (None, 0, 0, 0))(flat, batch.X, batch.lengths, batch.y)
    )
    free = slice(None) if activation == "erf" else slice(0, 2 * config.D)
    gram = grads[:, free].T @ grads[:, free] / n_mc
    return float(np.trace(np.linalg.solve(hessian[free, free], gram)) / N)


def test_lbfgs_reaches_the_gradient_tolerance(large_alpha):
    for activation, summary in large_alpha.items():
        for record in summary.per_seed:
            assert record.converged and record.grad_norm <= TOL, (activation, record)
            assert record.iterations < 2000
            assert all(record.starts.converged) and record.informed.converged


def test_random_and_informed_starts_agree_at_large_alpha(large_alpha):
    """Two independent routes to the minimum: random starts and the teacher. At ``alpha = 64`` and
    ``lam = 0.01`` every activation has one basin: the random starts agree with each other
    (``restarts_agree``) and with the informed start, within the agreement tolerance."""
    for activation, summary in large_alpha.items():
        assert summary.restarts_agree, (activation, [r.start_spread for r in summary.per_seed])
        for record in summary.per_seed:
            assert abs(record.test_error - record.informed.test_error) <= record.agreement_tolerance
            assert record.selected_start != "informed"


def test_oracle_meets_the_population_bayes_error_and_no_fit_beats_it(large_alpha, task):
    """The oracle (each teacher's own Bayes predictor) against two routes. With exact teachers
    (``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``) its expected error is the population Bayes error
    ``1 - E[sum_l p_l^2]`` (quadrature, bound ~1e-7): the mean over seeds within four of its
    standard errors. Scored on the same sequences as every start and the zero predictor, it
    minimises ``sum_l p*_l (z*_l - f)^2`` on each sequence, so it is below all of them exactly
    (up to float64 summation, 1e-12). Every activation's run draws the same teachers and test
    sequences: the same oracle, bit for bit."""
    exact = bayes_error_exact(task).value
    reference = large_alpha["softmax"]
    assert abs(reference.oracle_error - exact) < 4 * reference.oracle_stderr
    for activation, summary in large_alpha.items():
        assert summary.oracle_error == reference.oracle_error, activation
        for record in summary.per_seed:
            others = [
                *record.starts.test_error,
                record.informed.test_error,
                record.zero_error,
            ]
            assert min(others) >= record.oracle.test_error - 1e-12, (activation, record)


@pytest.mark.slow
def test_test_error_matches_population_error_at_learned_overlaps(large_alpha):
    """Monte Carlo test error vs quadrature at the learned ``m_k, q_k, m_v, q_v (, c)``.

    With exact teachers the only neglected terms are the learned cross overlaps
    (``k.v*``, ``v.k*``, ``k.v`` of order ``D^-1/2``); the risk is even in them (flip
    ``v, v*`` together), so their effect is second order, measured below the Monte
    Carlo error here: the tolerance is four combined standard errors over the seeds.
    """
    for activation, summary in large_alpha.items():
        diffs = np.array([r.test_error - r.predicted_population_error for r in summary.per_seed])
        stderr = math.sqrt(sum(r.stderr**2 for r in summary.per_seed)) / len(diffs)
        assert abs(diffs.mean()) < 4 * stderr, (activation, diffs, stderr)


@pytest.mark.slow
def test_large_alpha_erm_meets_population_optimum_plus_sandwich_excess(large_alpha, task, key):
    """``E[test error] = optimum + tr(H^-1 G)/N + O(N^-2)``.

    Tolerance: four standard errors over seeds, plus 20% of the leading excess for the
    higher-order terms and the ridge (``lam/N`` per sample), plus 0.001 for the Monte
    Carlo error of the sandwich estimate. With the excess left out the check would fail
    (at the CI size ERM sits 8-12 standard errors above the optimum). Measured at the CI
    size: ERM is above optimum + excess by 0.005-0.009 for all four activations (2-3
    standard errors, 25-35% of the excess): the next order in ``1/N`` is visible.
    """
    N = round(ALPHA * task.D)
    for activation, summary in large_alpha.items():
        optimum = optimal_population_error(activation, task)
        excess = sandwich_excess(
            activation,
            task,
            optimum,
            N,
            jax.random.fold_in(key, activation_names().index(activation)),
        )
        assert 0 < excess < 0.1
        gap = summary.test_error - (optimum.error + excess)
        assert abs(gap) < 4 * summary.stderr + 0.2 * excess + 1e-3, (
            activation,
            optimum,
            excess,
            summary,
        )


def test_prior_teachers_match_the_rescaled_population_error(task, size):
    """Teachers from the prior (``|k*|^2/D``, ``|v*|^2/D`` off one by ``O(D^-1/2)``): the
    rescaling in ``predicted_population_error`` absorbs the teacher norms."""
    summary = erm.erm_study(
        task,
        ERMSettings(
            activation="softmax", alpha=ALPHA, lam=LAM, seeds=size["seeds"], N_test=size["N_test"]
        ),
        0,
    )
    diffs = np.array([r.test_error - r.predicted_population_error for r in summary.per_seed])
    stderr = math.sqrt(sum(r.stderr**2 for r in summary.per_seed)) / len(diffs)
    assert abs(diffs.mean()) < 4 * stderr, (diffs, stderr)
    assert np.std([r.overlaps.rho_v for r in summary.per_seed]) > 0.05  # the norms did vary


@pytest.fixture(scope="module")
def training_set(task):
    teacher = draw_teacher(jax.random.PRNGKey(1), task.D, exact=True)
    return teacher, simulate(jax.random.PRNGKey(2), task, teacher, round(ALPHA * task.D))


@pytest.mark.parametrize("init", ["random", "informed"])
def test_lbfgs_solution_is_stationary_and_beats_the_teacher(task, training_set, init):
    teacher, batch = training_set
    fit = fit_erm(
        jax.random.PRNGKey(3), batch, task, "softmax", lam=LAM, init=init, teacher=teacher, tol=TOL
    )
    value, grad_norm = objective_and_grad_norm(fit.params, batch, "softmax", LAM)
    assert fit.converged and float(grad_norm) <= TOL
    assert float(value) == pytest.approx(fit.train_loss, rel=1e-12)
    at_teacher, _ = objective_and_grad_norm(
        initial_params(None, task, "informed", teacher), batch, "softmax", LAM
    )
    assert fit.train_loss < float(at_teacher)


def test_vmapped_seeds_train_like_fit_erm(task, size, large_alpha):
    """Seed 0 of the vectorised experiment (seeds x starts), its selected start retrained alone
    with ``fit_erm``, lands on the same minimum."""
    record = large_alpha["softmax"].per_seed[0]
    k_teacher, k_data, k_start, _ = erm.seed_keys(0, 0)
    teacher = draw_teacher(k_teacher, task.D, exact=True)
    batch = simulate(k_data, task, teacher, round(ALPHA * task.D))
    fit = fit_erm(
        jax.random.split(k_start, 2)[record.selected_start],
        batch,
        task,
        "softmax",
        lam=LAM,
        tol=TOL,
    )
    # two minimisers stopped at |grad| <= TOL = 1e-6 (other kernels: vmapped and not): their losses
    # differ by about TOL^2 / curvature (1e-12 here), their parameters by about TOL / curvature
    assert fit.train_loss == pytest.approx(record.train_loss, rel=1e-9)
    for name, value in overlaps(fit.params, teacher).items():
        assert value == pytest.approx(getattr(record.overlaps, name), abs=1e-4), name


def test_seed_mean_floors_the_spread_by_the_monte_carlo_error():
    mean, stderr = erm.seed_mean(np.array([0.3, 0.3, 0.3, 0.3]), np.array([0.02] * 4))
    assert mean == pytest.approx(0.3) and stderr == pytest.approx(0.01)
    mean, stderr = erm.seed_mean(np.array([0.1, 0.2, 0.3, 0.4]), np.array([1e-3] * 4))
    assert stderr == pytest.approx(np.std([0.1, 0.2, 0.3, 0.4], ddof=1) / 2)
    assert erm.seed_mean(np.array([0.5]), np.array([0.03])) == (0.5, 0.03)


@pytest.mark.parametrize("activation", activation_names())
def test_one_pass_sgd_decreases_the_loss(task, training_set, activation):
    teacher, batch = training_set
    start = initial_params(jax.random.PRNGKey(4), task, "random", None)
    fit = fit_erm(jax.random.PRNGKey(4), batch, task, activation, lam=LAM, optimizer="sgd")
    at_start, _ = objective_and_grad_norm(start, batch, activation, LAM)
    assert fit.iterations == batch.y.shape[0]
    assert np.isfinite(fit.train_loss) and fit.train_loss < 0.9 * float(at_start)
    assert (float(fit.params.c) != 0.0) == (activation == "erf")


SMALL_POINT = ERMSettings(
    activation="softmax", alpha=8.0, seeds=2, starts=3, N_test=4000, predict_population=False
)
SMALL_AUTO = SMALL_POINT.replace(lam="auto", lam_grid=(0.01, 0.1, 1.0, 10.0))


@pytest.fixture(scope="module")
def small_multistart():
    """A small point with a fixed ridge and one with ``lam="auto"``: spiked ``nu = 2``, ``L = 3``,
    ``D = 20``.
    """
    config = SLRConfig("spiked", 20, LengthLaw.fixed(3), 2.0)
    fixed = erm.erm_study(config, SMALL_POINT.replace(lam=0.1), 0)
    auto = erm.erm_study(config, SMALL_AUTO, 0)
    return config, fixed, auto


def test_the_lowest_training_loss_random_start_is_reported(small_multistart):
    _, fixed, _ = small_multistart
    for record in fixed.per_seed:
        losses = record.starts.train_loss
        chosen = record.selected_start
        assert chosen == int(np.argmin(losses)) and record.train_loss == losses[chosen]
        assert record.test_error == record.starts.test_error[chosen]
        spread = max(record.starts.test_error) - min(record.starts.test_error)
        assert record.start_spread == pytest.approx(spread)
        assert record.restarts_agree == (spread <= record.agreement_tolerance)
        assert record.agreement_tolerance >= max(2 * record.stderr, erm.AGREEMENT_FLOOR)
        assert record.lam == 0.1 and record.validation is None
    assert fixed.lam == (0.1, 0.1)
    assert fixed.restarts_agree == all(r.restarts_agree for r in fixed.per_seed)


def test_zero_predictor_error_is_the_teacher_value_norm(small_multistart):
    """``E[z*^2]`` on the test samples (Monte Carlo) against the teacher's closed form: the
    location's token is ``g + a k* / sqrt(D)`` (spiked, ``a = c_nu``), so ``E[z*^2] = |v*|^2 / D
    + a^2 (k* . v* / D)^2``: two routes.
    """
    config, fixed, _ = small_multistart
    for record in fixed.per_seed:
        o = record.overlaps
        expected = o.rho_v + config.c_nu**2 * o.kstar_vstar**2
        assert abs(record.zero_error - expected) < 4 * record.zero_stderr


def test_informed_start_is_a_reference_unless_asked_for(small_multistart):
    config, fixed, _ = small_multistart
    assert all(r.selected_start != "informed" for r in fixed.per_seed)
    informed = erm.erm_study(config, SMALL_POINT.replace(lam=0.1, init="informed"), 0)
    for a, b in zip(informed.per_seed, fixed.per_seed):
        assert a.selected_start == "informed"
        assert a.test_error == pytest.approx(b.informed.test_error, rel=1e-9)


def test_lam_auto_chooses_the_best_validation_error(small_multistart):
    config, _, auto = small_multistart
    N = round(8.0 * config.D)
    for record in auto.per_seed:
        validation = record.validation
        assert validation.lam_grid == (0.01, 0.1, 1.0, 10.0)
        assert validation.n_validation == round(erm.VALIDATION_FRACTION * N)
        scores = [np.inf if x is None else x for x in validation.validation_error]
        assert record.lam == validation.lam_grid[int(np.argmin(scores))]
        assert validation.validation_error[-1] is not None  # the path starts at the largest lam
    assert auto.lam == tuple(r.lam for r in auto.per_seed)


def test_lam_auto_does_not_look_at_the_test_set(small_multistart):
    """The choice uses the training set only: other test samples, same ``lam`` and fit."""
    config, _, auto = small_multistart
    again = erm.erm_study(config, SMALL_AUTO.replace(N_test=2000), 0)
    assert again.lam == auto.lam
    for a, b in zip(again.per_seed, auto.per_seed):
        assert a.train_loss == b.train_loss


@pytest.mark.slow
def test_erf_random_starts_reach_the_informed_basin(full_size):
    """The erf failure of issue 12: from ``N(0, I)`` starts the offset ran to about -13 and the fits
    ended worse than the zero predictor (spiked ``nu = 2``, ``L = 5``, ``D = 100``,
    ``lam = 1e-3``, seeds 1 and 3 of root seed 0: test errors 1.6-3.9 against 0.75-0.91 from
    the informed start). From the small start the random starts reach the informed start's
    basin (two independent routes): the selected start's training objective is within 2% of the
    informed start's (the bad basins were 40-60% above it; distinct minima of the good basin
    differ by under 1%, measured), its test error within 10% (the bad basins: 2-5 times; at
    this small ridge the good basin holds several nearby minima, test errors measured up to
    4% apart), and none is above the zero predictor beyond 4 standard errors. At this ridge
    erf overfits even from the teacher (seed 0: 0.95 from the informed start, zero predictor
    1.07): that is the ridge's doing, which ``lam="auto"`` fixes, not the start's. CI size: seeds 0
    and 1 (1 is a failing one)."""
    config = SLRConfig("spiked", 100, LengthLaw.fixed(5), 2.0)
    summary = erm.erm_study(
        config,
        ERMSettings(
            activation="erf",
            alpha=16.0,
            lam=1e-3,
            seeds=4 if full_size else 2,
            starts=2,
            N_test=5000,
            predict_population=False,
        ),
        0,
    )
    for record in summary.per_seed:
        assert record.test_error < record.zero_error + 4 * record.stderr, record
        assert record.train_loss <= 1.02 * record.informed.train_loss, record
        gap = abs(record.test_error - record.informed.test_error)
        assert gap <= 0.1 * record.informed.test_error, record


@pytest.mark.parametrize(
    "changes, message",
    [
        ({"lam": "best"}, "lam must be a number >= 0 or 'auto'"),
        ({"starts": 0}, "starts must be"),
        ({"activation": "relu"}, "activation must be one of"),
        ({"alpha": 0.0}, "alpha must be"),
        ({"alpha": -1.0}, "alpha must be"),
        ({"lam": -0.1}, "lam must be"),
        ({"seeds": 0}, "seeds must be"),
        ({"optimizer": "adam"}, "optimizer must be one of"),
        ({"init": "zeros"}, "init must be one of"),
        ({"N_test": 1}, "N_test must be"),
    ],
)
def test_bad_input_is_a_config_error(task, changes, message):
    arguments = {"activation": "softmax", "alpha": 2.0, "lam": 0.1, "seeds": 2} | changes
    activation = arguments.pop("activation")
    with pytest.raises(ConfigError, match=message):
        erm.erm_study(task, ERMSettings(activation=activation, **arguments), 0)


def test_bad_dimension_and_missing_teacher_are_config_errors(task, training_set):
    with pytest.raises(ConfigError, match="D must be an integer >= 1"):
        SLRConfig("spiked", 0, LengthLaw.fixed(3), 2.0)
    _, batch = training_set
    with pytest.raises(ConfigError, match="needs the teacher"):
        fit_erm(jax.random.PRNGKey(0), batch, task, "linear", lam=0.1, init="informed")
    with pytest.raises(ConfigError, match="must match"):
        fit_erm(jax.random.PRNGKey(0), batch, task.replace(D=task.D + 1), "linear", lam=0.1)
