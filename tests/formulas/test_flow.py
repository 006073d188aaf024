"""The order-parameter ODEs of training (docs/dynamics.md).

Independent routes: the Monte Carlo risk that the ODE descends against the quadrature of
``formulas/population.py`` (four standard errors); the end of the flow against the population
optimum (``formulas/optimum.py``: the Bayes error for softmax, the closed form for linear); the
escape rate at the saddle against its linearisation written out by hand with SciPy quadrature;
exact properties of a gradient flow (the risk never increases; the sphere keeps its norms).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate, special, stats

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.activations import (
    register_activation,
    sphere_erf,
    unregister_activation,
)
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.flow import (
    FlowRun,
    Overlaps,
    _gradient_noise,
    draw_scores,
    escape_rate,
    solve_flow,
)
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population import population_error

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
MAX = SLRConfig("max", 1, LengthLaw.fixed(3), math.inf)
LAMBDA = 0.5


@pytest.fixture(scope="module")
def erf_sphere():
    name = register_activation(sphere_erf(LAMBDA)).name
    yield name
    unregister_activation(name)


def flow_run(activation: str, config: SLRConfig = SPIKED, **changes) -> FlowRun:
    settings = dict(
        start=Overlaps.typical_start("random", 1000, config),
        t_max=60.0,
        log_points=12,
        mc_samples=2**14,
    )
    settings.update(changes)
    return FlowRun(config, activation, **settings)


@pytest.fixture(scope="module")
def softmax_flow():
    return solve_flow(flow_run("softmax", t_max=300.0))


def test_the_flow_descends_its_risk(softmax_flow) -> None:
    """Gradient flow of a fixed function (the draws are fixed): the risk never increases (up to
    the integration tolerance, relative 1e-7)."""
    risks = softmax_flow.column("test_error")
    assert np.all(np.diff(risks) <= 1e-6)


def test_monte_carlo_risk_matches_quadrature(softmax_flow) -> None:
    """At logged points of the flow, the draws' risk and the quadrature's agree within four
    standard errors (plus the quadrature's 1e-7)."""
    for point in softmax_flow.points[::4]:
        exact = population_error(
            "softmax", SPIKED, point.m_k, point.q_k, point.m_v, point.q_v, c=point.c
        )
        assert abs(point.test_error - exact) <= 4.0 * point.test_stderr + 1e-7


def test_softmax_flow_from_a_random_start_reaches_the_bayes_error(softmax_flow) -> None:
    """Spiked ``nu = 2``, ``L = 3``: the end of the flow has the Bayes error (softmax's
    population optimum, at ``m_k = sqrt(nu)``) up to the draws' shift of the optimum: the
    error is quadratic there, so a shift of order 1e-2 costs below 1e-3."""
    end = softmax_flow.last
    exact = population_error("softmax", SPIKED, end.m_k, end.q_k, end.m_v, end.q_v)
    bayes = bayes_error_exact(SPIKED).value
    assert bayes <= exact <= bayes + 1e-3
    assert end.m_k == pytest.approx(math.sqrt(2.0), abs=0.05)


def test_linear_flow_ends_at_the_closed_form_optimum() -> None:
    """Linear attention has closed-form terms (no Monte Carlo): the flow ends at the population
    optimum ``L(L-1)/(L^2 + (L-1) nu)`` of docs/model.md section 4 (integration tolerance)."""
    trajectory = solve_flow(flow_run("linear", t_max=400.0))
    assert trajectory.last.test_stderr == 0.0
    optimum = optimal_population_error("linear", SPIKED)
    assert trajectory.last.test_error == pytest.approx(6.0 / 13.0, abs=1e-6)
    assert trajectory.last.m_k == pytest.approx(optimum.overlaps.m_k, abs=1e-4)


def _second_derivative_of_the_second_moment(lam: float, sigma: float) -> float:
    """``d^2/dmu^2 E[erf(lam (mu + sigma Z))^2]`` at ``mu = 0``, by SciPy quadrature."""

    def integrand(z: float) -> float:
        x = lam * sigma * z
        d1 = 2.0 / math.sqrt(math.pi) * math.exp(-(x**2))
        return lam**2 * (2.0 * d1**2 + 2.0 * special.erf(x) * (-2.0 * x * d1)) * stats.norm.pdf(z)

    value, _ = integrate.quad(integrand, -12.0, 12.0, epsabs=1e-14)
    return value


def test_escape_rate_matches_the_linearisation(erf_sphere) -> None:
    """``erf_sphere`` on the sphere ``q = 1``: at ``m = 0``, ``dm_k/dt = A' m_v - a m_k`` and
    ``dm_v/dt = A' m_k`` with ``A' = 2 lam sqrt(nu) / sqrt(pi (1 + 2 lam^2))`` and
    ``a = (nu / 2) d^2/dmu^2 E[erf(lam (mu + Z))^2]``: the rate is the positive eigenvalue."""
    nu = SPIKED.nu
    slope = 2.0 * LAMBDA * math.sqrt(nu) / math.sqrt(math.pi * (1.0 + 2.0 * LAMBDA**2))
    a = 0.5 * nu * _second_derivative_of_the_second_moment(LAMBDA, 1.0)
    expected = 0.5 * (-a + math.sqrt(a**2 + 4.0 * slope**2))
    start = Overlaps.typical_start("sphere", 1000, SPIKED)
    rate = escape_rate(flow_run(erf_sphere, start=start, sphere=True))
    assert rate == pytest.approx(expected, rel=1e-8)


def test_escape_time_grows_like_log_d(erf_sphere) -> None:
    """From ``m = 1/sqrt(D)``, four times ``D`` delays the escape by ``log(4) / (2 mu)`` (the
    linear phase scales exactly; the nonlinear start adds ``O(1/D)``, below 1% here)."""
    times = []
    for D in (500, 2000, 8000):
        run = flow_run(
            erf_sphere,
            start=Overlaps.typical_start("sphere", D, SPIKED),
            sphere=True,
            t_max=40.0,
            log_points=400,
        )
        trajectory = solve_flow(run)
        np.testing.assert_allclose(trajectory.column("q_k"), 1.0, atol=1e-12)
        times.append(trajectory.crossing_time("m_k", 0.5, magnitude=True))
    step = math.log(4.0) / (2.0 * escape_rate(run))
    np.testing.assert_allclose(np.diff(times), step, rtol=1e-2)


def test_sgd_noise_slows_the_escape(erf_sphere) -> None:
    """The variance term of a finite step shrinks ``m`` on the sphere: the escape rate falls as
    ``eta / B`` grows, and a large enough step makes the saddle stable."""
    start = Overlaps.typical_start("sphere", 1000, SPIKED)
    rates = [
        escape_rate(flow_run(erf_sphere, start=start, sphere=True, method="sgd", eta=eta))
        for eta in (0.05, 0.5, 4.0)
    ]
    assert rates[0] > rates[1] > 0 > rates[2]


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(eta=0.5), "eta"),
        (dict(method="sgd"), "eta"),
        (dict(method="sgd", eta=-1.0), "eta"),
        (dict(method="sgd", eta=1.0, batch=0), "batch"),
        (dict(t_max=0.0), "t_max"),
        (dict(t_min=100.0), "t_min"),
        (dict(mc_samples=1001), "mc_samples"),
        (dict(method="gd"), "method"),
        (dict(terms="closed_form"), "closed_form"),
    ],
)
def test_bad_flow_settings_raise_config_error(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        flow_run("softmax", **changes)


def test_bad_overlaps_raise_config_error() -> None:
    with pytest.raises(ConfigError, match="q_k"):
        Overlaps(1.0, 0.5, 0.0, 1.0)
    with pytest.raises(ConfigError, match="m_v"):
        Overlaps(0.0, 1.0, math.nan, 1.0)


def test_the_variance_term_is_one_sequences_squared_gradient() -> None:
    """``V_k`` and ``V_v`` of the SGD ODE against gradients on data written out here: at ``D =
    400``, on the manifold (``m_k = 0.5``, ``q_k = 0.5``, ``m_v = 0.4``, ``q_v = 0.3``, softmax,
    ``Delta = 0.1``), the squared norm of one sequence's gradient of ``(y - f)^2 / 2`` in ``k``
    (in ``v``) averages ``V_k`` (``V_v``), not ``D`` times it: within four standard errors of the
    data's mean plus ``2/D`` (the ``x_l.x_l'/D`` cross terms) relative."""
    from bayes_slr.attention.estimators import AttentionParams, predict
    from bayes_slr.models.simulate import draw_teacher, simulate

    D, n, (m_k, q_k, m_v, q_v) = 400, 8192, (0.5, 0.5, 0.4, 0.3)
    config = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, Delta=0.1)
    keys = jax.random.split(jax.random.PRNGKey(3), 3)
    teacher = draw_teacher(keys[0], D, exact=True)
    basis, _ = jnp.linalg.qr(
        jnp.concatenate(
            [jnp.stack([teacher.k_star, teacher.v_star], 1), jax.random.normal(keys[1], (D, 2))],
            1,
        )
    )
    e_k, e_v = math.sqrt(D) * basis[:, 2], math.sqrt(D) * basis[:, 3]
    params = AttentionParams(
        m_k * teacher.k_star + math.sqrt(q_k - m_k**2) * e_k,
        m_v * teacher.v_star + math.sqrt(q_v - m_v**2) * e_v,
        jnp.zeros(()),
    )
    data = simulate(keys[2], config, teacher, n)

    def loss(p, X, length, y):
        return 0.5 * (y - predict(p, X[None], length[None], "softmax")[0]) ** 2

    grads = jax.vmap(jax.grad(loss), in_axes=(None, 0, 0, 0))(params, data.X, data.lengths, data.y)
    theta = jnp.array([m_k, math.sqrt(q_k - m_k**2), m_v, math.sqrt(q_v - m_v**2), 0.0])
    draws = draw_scores(jax.random.PRNGKey(0), config.replace(D=1), 2**16)
    for found, V in zip((grads.k, grads.v), _gradient_noise(theta, draws, "softmax", 0.1)):
        squared = np.asarray(jnp.sum(found**2, -1))
        error = squared.std(ddof=1) / math.sqrt(n)
        assert abs(squared.mean() - float(V)) <= 4.0 * error + 2.0 / D * float(V)
