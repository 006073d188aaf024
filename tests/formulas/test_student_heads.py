"""Students with missing or extra heads on a multi-head teacher (docs/multihead.md section 6):
the quadrature of :func:`student_heads_error` against the Monte Carlo of
:func:`student_heads_error_mc`, and the optimum of ``H_s`` heads.

Tolerances: Monte Carlo comparisons allow 4 standard errors plus the quadrature bound; the
optimum's closed form ``1 - (min(H_s, H)/H)(1 - E_H)`` against the quadrature at its heads allows
the quadrature bound.
"""

from __future__ import annotations

import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.formulas.population_mc import (
    BATCH,
    population_error_mc,
    student_heads_error_mc,
)
from bayes_slr.formulas.student_heads import student_heads_error, student_heads_optimum
from bayes_slr.formulas.student_heads_records import StudentHead

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
