"""Students with missing or extra heads on a multi-head teacher (docs/multihead.md section 6):
the quadrature of :func:`student_heads_error` against the Monte Carlo of
:func:`student_heads_error_mc`, the optimum of ``H_s`` heads, and the Monte Carlo of a head mixing
teacher heads against simulated sequences.

Tolerances: Monte Carlo comparisons allow 4 standard errors plus the quadrature bound; the
optimum's closed form ``1 - (min(H_s, H)/H)(1 - E_H)`` against the quadrature at its heads allows
the quadrature bound.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.formulas.optimum import student_heads_error, student_heads_optimum
from bayes_slr.formulas.optimum_record import StudentHead
from bayes_slr.formulas.population_mc import (
    BATCH,
    mixed_heads_error_mc,
    population_error_mc,
    student_heads_error_mc,
)
from bayes_slr.models.batch import Teacher
from bayes_slr.models.simulate import streamed_mean

MC_SAMPLES = 2**15


def task(H: int, rho: float, variable: bool = False) -> SLRConfig:
    length = LengthLaw.uniform(4) if variable else LengthLaw.fixed(3)
    return SLRConfig("spiked", 1, length, 2.0, heads=H, presence=rho)


MISSING = (StudentHead(1, 1.2, 1.6, 0.5, 0.3),)
EXTRA = (
    StudentHead(0, 1.4, 2.1, 0.6, 0.4, -1.0),
    StudentHead(None, 0.0, 1.5, 0.0, 0.2, 0.5),
    StudentHead(1, 0.9, 1.0, 0.3, 0.1, -2.0),
)


@pytest.mark.parametrize(
    ("activation", "rho", "variable", "heads"),
    [
        ("softmax", 0.5, False, MISSING),
        ("bayes_softmax", 0.75, True, EXTRA),
        ("softmax1", 1.0, False, EXTRA),
        ("linear", 0.5, True, EXTRA[:2]),
    ],
)
def test_quadrature_matches_monte_carlo(activation, rho, variable, heads) -> None:
    config = task(2, rho, variable)
    exact = student_heads_error(activation, config, heads)
    mc = student_heads_error_mc(activation, config, heads, samples=MC_SAMPLES, seed=2)
    assert abs(float(mc.mean) - exact.value) <= 4 * float(mc.stderr) + exact.error_bound


def test_one_head_per_teacher_head_is_the_aligned_student() -> None:
    config = task(2, 0.5)
    heads = tuple(StudentHead(h, 1.2, 1.6, 0.5, 0.3) for h in range(2))
    mc = student_heads_error_mc("softmax1", config, heads, samples=BATCH, seed=3)
    aligned = population_error_mc("softmax1", config, 1.2, 1.6, 0.5, 0.3, samples=BATCH, seed=3)
    assert float(mc.mean) == float(aligned.mean)


def test_optimum_of_missing_and_extra_heads() -> None:
    """``H = 2``, ``rho = 0.5``, softmax: one head loses half the gain, a third head is silenced."""
    config = task(2, 0.5)
    optima = {H_s: student_heads_optimum("softmax", config, H_s) for H_s in (1, 3)}
    aligned = optima[3].aligned_error
    assert optima[3].error == pytest.approx(aligned, abs=1e-15)
    assert optima[1].error == pytest.approx((1.0 + aligned) / 2.0, abs=1e-15)
    assert [head.teacher for head in optima[3].heads] == [0, 1, None]
    assert optima[3].heads[2].q_v == 0.0
    for H_s, optimum in optima.items():
        exact = student_heads_error("softmax", config, optimum.heads)
        assert abs(exact.value - optimum.error) <= exact.error_bound + 1e-6, H_s
    mc = student_heads_error_mc("softmax", config, optima[1].heads, samples=MC_SAMPLES, seed=4)
    assert abs(float(mc.mean) - optima[1].error) <= 4 * float(mc.stderr) + 1e-6


def test_bad_student_heads_are_refused() -> None:
    config = task(2, 0.5)
    with pytest.raises(ConfigError, match="same teacher head"):
        student_heads_error("softmax", config, (MISSING[0], MISSING[0]))
    with pytest.raises(ConfigError, match="extra student head"):
        student_heads_error("softmax", config, (StudentHead(None, 0.5, 1.0, 0.0, 0.0),))
    with pytest.raises(ConfigError, match="teacher head's index in 0..1"):
        student_heads_error_mc("softmax", config, (StudentHead(2, 0.5, 1.0, 0.0, 0.0),))
    with pytest.raises(ConfigError, match="q_v must be"):
        student_heads_error("softmax", config, (StudentHead(0, 0.5, 1.0, 1.0, 0.5),))
    with pytest.raises(ConfigError, match="student_heads must be"):
        student_heads_optimum("softmax", config, 0)


def test_a_mixing_head_against_simulated_sequences() -> None:
    """One student head whose key and value mix both teacher heads: the population Monte Carlo
    of :func:`mixed_heads_error_mc` against the error of the estimator on simulated sequences of
    an exact teacher (``D = 12``: the population law holds exactly), within 4 combined standard
    errors."""
    config = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0, heads=2, presence=0.5)
    basis = np.sqrt(12) * np.linalg.qr(np.random.default_rng(0).normal(size=(12, 6)))[0].T
    teacher = Teacher(jnp.asarray(basis[:2]), jnp.asarray(basis[2:4]))
    m_k, m_v, r_k, r_v, c = np.array([0.9, 0.6]), np.array([0.5, 0.4]), 0.5, 0.3, -0.5
    params = AttentionParams(
        jnp.asarray([m_k @ basis[:2] + r_k * basis[4]]),
        jnp.asarray([m_v @ basis[2:4] + r_v * basis[5]]),
        jnp.asarray([c]),
    )
    simulated = streamed_mean(
        lambda batch: (batch.y - predict(params, batch.X, batch.lengths, "bayes_softmax")) ** 2,
        jax.random.PRNGKey(5),
        config,
        teacher,
        MC_SAMPLES,
    )
    population = mixed_heads_error_mc(
        "bayes_softmax",
        config,
        [m_k],
        m_k @ m_k + r_k**2,
        [m_v],
        m_v @ m_v + r_v**2,
        c,
        samples=MC_SAMPLES,
        seed=6,
    )
    difference = float(simulated.mean) - float(population.mean)
    assert abs(difference) <= 4 * math.hypot(float(simulated.stderr), float(population.stderr))
