"""Population terms and optima of the attention activations (docs/model.md section 4).

Independent routes: the Bayes error (softmax's optimum), docs/model.md's closed forms
(linear), SciPy quadrature of the maximum of L normals, and the empirical error of
an estimator built from given overlaps on data from the simulator. With an exact
teacher (``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``) and the extra directions exactly
orthonormal, the scores ``(chi*, chi, z*, z)`` have exactly the population law at
any ``D``: the finite-size effect is zero, so the empirical comparison allows
4 Monte Carlo standard errors plus the stated quadrature bounds.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import pytest
from scipy import integrate, stats
from scipy.optimize import minimize_scalar

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.activations import activation_names, attention_weights
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population import population_error, population_terms, terms_with_bounds
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_teacher, streamed_mean

SPIKED = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0)
OPTIMISER_TOLERANCE = 1e-6
"""Nelder-Mead stops at ``xatol = 1e-7`` on the overlaps: the optimal error is met to
second order (1e-10); overlaps are compared to 1e-3 (flat directions are slower)."""


@functools.cache
def optimum(activation: str, cfg: SLRConfig):
    return optimal_population_error(activation, cfg)


def mean_of_max(L: int) -> float:
    """``E[max of L standard normals]`` by SciPy's adaptive quadrature (independent of
    the package).
    """
    value, _ = integrate.quad(
        lambda x: L * x * stats.norm.pdf(x) * stats.norm.cdf(x) ** (L - 1), -12, 12, epsabs=1e-13
    )
    return value


def student(
    teacher: Teacher, m_k: float, q_k: float, m_v: float, q_v: float
) -> tuple[jax.Array, jax.Array]:
    """``k = m_k k* + sqrt(q_k - m_k^2) sqrt(D) e1``, ``v = m_v v* + sqrt(q_v - m_v^2)
    sqrt(D) e2``.
    """
    D = teacher.k_star.shape[0]
    extra = jax.random.normal(jax.random.PRNGKey(1), (D, 2))
    basis, _ = jnp.linalg.qr(jnp.column_stack([teacher.k_star, teacher.v_star, extra]))
    e1, e2 = basis[:, 2], basis[:, 3]
    k = m_k * teacher.k_star + math.sqrt(max(q_k - m_k**2, 0.0) * D) * e1
    v = m_v * teacher.v_star + math.sqrt(max(q_v - m_v**2, 0.0) * D) * e2
    return k, v


def empirical_error(
    activation: str, cfg: SLRConfig, key: jax.Array, overlaps: tuple[float, ...], c: float, N: int
) -> tuple[float, float]:
    """Mean and standard error of ``(y - sum_l s_l z_l)^2`` on simulated data (``Delta = 0``)."""
    teacher = draw_teacher(key, cfg.D, exact=True)
    k, v = student(teacher, *overlaps)

    @jax.jit
    def squared_error(batch: SLRBatch) -> jax.Array:
        scale = math.sqrt(cfg.D)
        weights = attention_weights(activation, batch.X @ k / scale, batch.mask, c)
        return (batch.y - jnp.sum(weights * (batch.X @ v / scale), axis=-1)) ** 2

    result = streamed_mean(
        squared_error, jax.random.fold_in(key, 1), cfg, teacher, N, chunk_size=20_000
    )
    return float(result.mean), float(result.stderr)


@pytest.mark.parametrize(
    "cfg",
    [SPIKED, SLRConfig("spiked", 12, LengthLaw.uniform(4), 1.0)],
    ids=["spiked", "spiked-variable"],
)
def test_softmax_optimum_is_bayes(cfg: SLRConfig) -> None:
    best = optimum("softmax", cfg)
    bayes = bayes_error_exact(cfg)
    assert abs(best.error - bayes.value) <= bayes.error_bound + OPTIMISER_TOLERANCE
    assert best.overlaps.m_k == pytest.approx(cfg.c_nu, abs=1e-3)
    assert best.overlaps.q_k == pytest.approx(best.overlaps.m_k**2, abs=1e-3)
    assert best.overlaps.m_v == pytest.approx(1.0, abs=1e-3) and best.overlaps.q_v == pytest.approx(
        1.0, abs=2e-3
    )


def test_softmax_at_the_posterior_key_is_bayes_and_locally_best_on_max_slr() -> None:
    """max-SLR, finite ``nu``: at ``k = nu k*`` softmax attention is the Bayes estimator; moving
    ``k`` loses.
    """
    cfg = SLRConfig("max", 12, LengthLaw.fixed(3), 1.5)
    bayes = bayes_error_exact(cfg)

    def error(m_k: float, rho: float) -> tuple[float, float]:
        terms = terms_with_bounds("softmax", cfg, m_k, rho, 0.0, grid_norm=2.0)
        return 1.0 - terms.A**2 / terms.B, 2.0 * terms.A_bound + terms.B_bound

    at_posterior, bound = error(cfg.c_nu, 0.0)
    assert abs(at_posterior - bayes.value) <= bound + bayes.error_bound
    for m_k, rho in ((1.35, 0.0), (1.65, 0.0), (1.5, 0.3)):
        moved, moved_bound = error(m_k, rho)
        assert moved - at_posterior > bound + moved_bound


def test_softmax_with_argmax_location_tends_to_zero() -> None:
    cfg = SLRConfig("max", 12, LengthLaw.fixed(5), math.inf)
    best = optimum("softmax", cfg)
    assert best.error == 0.0 and math.isinf(best.overlaps.m_k) and "|k|" in best.overlaps.note
    gains = [terms_with_bounds("softmax", cfg, m, 0.0, 0.0, grid_norm=8.0) for m in (1.0, 3.0, 6.0)]
    errors = [1.0 - terms.A**2 / terms.B for terms in gains]
    assert errors[0] > errors[1] > errors[2] > 0.0
    assert f"{errors[0]:.4g} at |k|=1" in best.overlaps.note


@pytest.mark.parametrize(
    "cfg, expected",
    [
        (SPIKED, 3 * 2 / (3**2 + 2 * 2.0)),
        (SLRConfig("spiked", 12, LengthLaw.uniform(5), 1.5), 3.0 * 2.0 / (3.0**2 + 2.0 * 1.5)),
        (
            SLRConfig("max", 12, LengthLaw.fixed(5), math.inf),
            1.0 - (1.0 + mean_of_max(5) ** 2) / 5.0,
        ),
        (
            SLRConfig("max", 12, LengthLaw.uniform(5), math.inf),
            1.0 - (1.0 + (sum(mean_of_max(L) for L in range(2, 6)) / 5.0) ** 2) / 3.0,
        ),
    ],
    ids=["spiked", "spiked-variable", "max-inf", "max-inf-variable"],
)
def test_linear_optimum_matches_closed_forms(cfg: SLRConfig, expected: float) -> None:
    best = optimum("linear", cfg)
    assert best.error == pytest.approx(expected, abs=OPTIMISER_TOLERANCE)
    assert best.overlaps.q_k == pytest.approx(best.overlaps.m_k**2, abs=1e-3)


@pytest.mark.parametrize("activation", activation_names())
def test_optimal_overlaps_predict_the_empirical_error(
    activation: str, key: jax.Array, full_size: bool
) -> None:
    best = optimum(activation, SPIKED)
    overlaps = (best.overlaps.m_k, best.overlaps.q_k, best.overlaps.m_v, best.overlaps.q_v)
    predicted = population_error(activation, SPIKED, *overlaps, c=best.overlaps.c)
    mean, stderr = empirical_error(
        activation, SPIKED, key, overlaps, best.overlaps.c, 400_000 if full_size else 60_000
    )
    assert predicted == pytest.approx(best.error, abs=1e-12)
    assert abs(predicted - mean) <= 4.0 * stderr + 1e-7


@pytest.mark.parametrize(
    "activation, cfg",
    [
        (name, SLRConfig("max", 8, LengthLaw.uniform(4), 1.5))
        for name in ("softplus", "erf", "linear")
    ]
    + [
        (name, SLRConfig("max", 8, LengthLaw.fixed(4), math.inf))
        for name in ("softplus", "erf", "linear")
    ],
    ids=lambda value: (
        value if isinstance(value, str) else f"{value.length.describe()}-nu{value.nu:g}"
    ),
)
def test_off_optimum_overlaps_predict_the_empirical_error(
    activation: str, cfg: SLRConfig, key: jax.Array, full_size: bool
) -> None:
    """Away from the manifold ``q = m^2`` and with ``q_v > m_v^2``: every term of the formula is
    exercised.
    """
    overlaps, c = (1.2, 1.2**2 + 0.6**2, 0.8, 0.9), 0.3
    terms = terms_with_bounds(activation, cfg, 1.2, 0.6, c)
    predicted = 1.0 - 2.0 * 0.8 * terms.A + 0.9 * terms.B
    bound = 2.0 * 0.8 * terms.A_bound + 0.9 * terms.B_bound
    mean, stderr = empirical_error(
        activation, cfg, key, overlaps, c, 400_000 if full_size else 60_000
    )
    assert abs(predicted - mean) <= 4.0 * stderr + bound


def test_ordering_of_activations() -> None:
    errors = {name: optimum(name, SPIKED).error for name in activation_names()}
    bayes = bayes_error_exact(SPIKED).value
    assert errors["softmax"] <= errors["softplus"] + OPTIMISER_TOLERANCE
    assert errors["erf"] <= errors["linear"] + OPTIMISER_TOLERANCE
    assert all(error >= bayes - OPTIMISER_TOLERANCE for error in errors.values())


@pytest.mark.parametrize(
    "call, message",
    [
        (lambda: population_terms("relu", SPIKED, 1.0, 1.0), "activation"),
        (lambda: population_terms("softmax", SPIKED, 1.0, 0.5), "q_k"),
        (lambda: population_terms("softmax", SPIKED, math.nan, 1.0), "m_k"),
        (lambda: population_error("linear", SPIKED, 1.0, 1.0, 2.0, 1.0), "q_v"),
        (lambda: optimal_population_error("gelu", SPIKED), "activation"),
    ],
)
def test_bad_input_raises_config_error(call, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        call()


@pytest.mark.parametrize("m_k", [1.0, 3.0, 9.0])
def test_shifted_softmax_argmax_route_matches_scipy_for_two_tokens(m_k: float) -> None:
    """Softmax, aligned key, max-SLR ``nu = inf``, ``L = 2``: ``A = E[sigmoid(m |D|)]``, ``D ~ N(0,
    2)``.
    """
    cfg = SLRConfig("max", 8, LengthLaw.fixed(2), math.inf)
    terms = terms_with_bounds("softmax", cfg, m_k, 0.0, 0.0)
    expected, _ = integrate.quad(
        lambda d: stats.norm.pdf(d, scale=math.sqrt(2.0)) / (1.0 + math.exp(-m_k * abs(d))),
        -20.0,
        20.0,
        points=[0.0],
        epsabs=1e-14,
        limit=200,
    )
    assert abs(terms.A - expected) <= terms.A_bound + 1e-12


def test_shifted_softmax_argmax_route_matches_the_cumulative_route() -> None:
    """Two quadratures of ``A`` (shifted variables vs cumulative panels with a vanishing ``r``)
    agree within their bounds.
    """
    cfg, m_k = SLRConfig("max", 8, LengthLaw.uniform(6), math.inf), 2.5
    shifted = terms_with_bounds("softmax", cfg, m_k, 0.0, 0.0)
    cumulative = terms_with_bounds("softmax", cfg, m_k, 1e-9, 0.0)
    assert abs(shifted.A - cumulative.A) <= shifted.A_bound + cumulative.A_bound + 1e-8


def test_linear_optimum_on_max_slr_with_finite_nu_beats_a_scalar_search() -> None:
    """The closed-form key of linear attention is the maximiser of ``A^2 / B`` found by SciPy's
    bounded search.
    """
    cfg = SLRConfig("max", 8, LengthLaw.fixed(4), 1.5)
    best = optimum("linear", cfg)

    def error(m_k: float) -> float:
        terms = terms_with_bounds("linear", cfg, m_k, 0.0, 0.0)
        return 1.0 - terms.A**2 / terms.B

    searched = minimize_scalar(error, bounds=(0.0, 5.0), method="bounded", options={"xatol": 1e-8})
    assert best.error <= searched.fun + 1e-12
    assert best.overlaps.m_k == pytest.approx(searched.x, abs=1e-3)
    assert best.overlaps.q_k == pytest.approx(best.overlaps.m_k**2, abs=1e-12)
