"""The optimum of student heads over all overlaps (docs/multihead.md section 6): below the aligned
optimum where heads can share teacher heads (softmax at ``rho = 0.5``, one head on two teacher
heads), equal to it where nothing beats the aligned one (``rho = 1``: the aligned optimum is the
Bayes error; one teacher head: nothing to mix), and its Monte Carlo evaluator against the
independent route of :func:`mixed_heads_error_mc`.

Tolerances: 4 standard errors of the paired difference or of the Monte Carlo means; where the
truth is the aligned optimum, the point found on ``n`` search sequences may exceed it by
``O(1/n)``, far below the standard errors at these sizes.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.formulas.all_overlaps import (
    OverlapPoint,
    all_overlaps_optimum,
    paired_check,
)
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.population_mc import mixed_heads_error_mc

SEARCH, CHECK = 20_000, 100_000


def task(H: int, rho: float) -> SLRConfig:
    return SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=H, presence=rho)


@pytest.mark.parametrize("student_heads", [2, 1])
def test_heads_that_share_teacher_heads_beat_the_aligned_optimum(student_heads) -> None:
    """Softmax at ``rho = 0.5``: two heads that share teacher heads, and one head mixing both,
    score below the aligned optimum on the same fresh sequences; the aligned optimum's Monte
    Carlo is its quadrature, and the starts agree."""
    found = all_overlaps_optimum("softmax", task(2, 0.5), student_heads, SEARCH, CHECK)
    assert found.difference < -4 * found.difference_stderr
    assert abs(found.aligned_mc - found.aligned_error) <= 4 * found.aligned_mc_stderr
    assert found.error < found.aligned_error
    assert found.agreeing >= 2 and len(found.start_errors) == len(found.starts) == 4
    assert np.shape(found.m_k) == (student_heads, 2)
    assert np.shape(found.q_k) == (student_heads, student_heads)


@pytest.mark.parametrize(("activation", "H", "rho"), [("softmax", 2, 1.0), ("softmax1", 1, 0.5)])
def test_where_the_aligned_optimum_is_the_optimum_nothing_beats_it(activation, H, rho) -> None:
    """``rho = 1``: softmax's aligned optimum is the Bayes error, which no student beats. One
    teacher head: the aligned optimum is over all overlaps. The search, another route than the
    quadrature, ends at it within the paired error."""
    config = task(H, rho)
    found = all_overlaps_optimum(activation, config, None, SEARCH, CHECK, seed=3)
    assert abs(found.difference) <= 4 * found.difference_stderr + 1e-4
    assert abs(found.error - found.aligned_error) <= 4 * found.stderr
    if rho == 1.0:
        bayes = presence_bayes_error_exact(config).value
        assert found.error >= bayes - 4 * found.stderr
        assert found.aligned_error == pytest.approx(bayes, abs=1e-6)


def test_the_paired_check_matches_the_direct_monte_carlo() -> None:
    """The check's error (values averaged out given the scores) against
    :func:`mixed_heads_error_mc` (``(y - f)^2`` with every value drawn), on independent
    sequences, at a mixing point of two softmax-1 heads and at the aligned optimum."""
    config = task(2, 0.5)
    m_k = np.array([[1.0, 0.4], [0.3, 0.8]])
    r = np.diag([0.5, 0.2])
    m_v = np.array([[0.6, 0.2], [-0.1, 0.5]])
    mixing = OverlapPoint(m_k, r, np.zeros(2), m_v)
    o = optimal_population_error("softmax1", config).overlaps
    aligned = OverlapPoint(
        o.m_k * np.eye(2), math.sqrt(o.q_k - o.m_k**2) * np.eye(2), np.zeros(2), o.m_v * np.eye(2)
    )
    checked = paired_check("softmax1", config, mixing, aligned, CHECK, 5)
    for point, mc in ((mixing, checked[0]), (aligned, checked[1])):
        q_v = np.sum(point.v**2, axis=1)
        key_norms = np.sum(point.m_k**2, axis=1) + np.diag(point.r) ** 2
        direct = mixed_heads_error_mc(
            "softmax1", config, point.m_k, key_norms, point.v, q_v, samples=CHECK, seed=6
        )
        combined = math.hypot(float(direct.stderr), float(mc.stderr))
        assert abs(float(direct.mean) - float(mc.mean)) <= 4 * combined
    difference = float(checked[0].mean - checked[1].mean)
    assert float(checked[2].mean) == pytest.approx(difference, abs=1e-12)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"student_heads": 0}, "student_heads must be an integer >= 1"),
        ({"search_sequences": 1}, "search_sequences must be an integer >= 2"),
        ({"check_sequences": 1}, "check_sequences must be an integer >= 2"),
    ],
)
def test_bad_input_is_refused(kwargs, message) -> None:
    with pytest.raises(ConfigError, match=message.replace("(", r"\(")):
        all_overlaps_optimum("softmax", task(2, 0.5), **kwargs)
