"""The paired difference of per-teacher Monte Carlo estimates against simulated draws whose true
mean difference and teacher luck are known."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.numerics.paired import PairedDifference, paired_difference, teacher_mean

DELTA = -0.09
"""The true mean difference ``a - b`` of the simulations."""


def draws(rng, teachers, luck=0.1, interaction=0.02, shared=True):
    """Per-teacher estimates of two estimators: a teacher's luck (``luck``, the same for both
    when ``shared``), a per-teacher part of the difference (``interaction``) and Monte Carlo noise
    of a known standard error per teacher."""
    u = rng.normal(0.0, luck, teachers)
    u_b = u if shared else rng.normal(0.0, luck, teachers)
    w = rng.normal(0.0, interaction, teachers)
    se_a, se_b = rng.uniform(0.005, 0.015, teachers), rng.uniform(0.005, 0.015, teachers)
    a = 0.5 + DELTA + u + w + rng.normal(0.0, se_a)
    b = 0.5 + u_b + rng.normal(0.0, se_b)
    return a, b, se_a, se_b


@pytest.mark.parametrize("teachers, low", [(20, 0.92), (1, 0.935)])
def test_two_stderr_intervals_cover_the_true_difference(teachers, low):
    """Over 2000 simulated studies the interval of 2 stderr covers ``DELTA`` as often as it
    should: 20 teachers, between Student's t with 19 degrees of freedom (0.940) and the normal
    (0.954, where the Monte Carlo floor binds); one teacher, the normal (0.954) of its Monte
    Carlo error. The bounds are 4 binomial standard errors (0.005) beyond those, so an interval
    that ignores the pairing (about 1.0) or the Monte Carlo error fails."""
    rng = np.random.default_rng(3)
    interaction = 0.02 if teachers > 1 else 0.0
    hits = 0
    for _ in range(2000):
        a, b, se_a, se_b = draws(rng, teachers, interaction=interaction)
        d = paired_difference(a, b, se_a, se_b)
        assert d.n == teachers
        hits += abs(d.value - DELTA) <= 2 * d.stderr
    assert low <= hits / 2000 <= 0.975


def test_pairing_shrinks_the_stderr_when_teacher_luck_is_shared():
    """Shared luck (sd 0.1) cancels in the difference: the paired stderr is below the unpaired
    one in every study, near the ratio of the two standard deviations
    ``sqrt((0.02^2 + 2 x 0.01^2) / (2 x 0.1^2))`` (about 0.17); luck drawn apart for each side
    does not cancel, and the two agree (mean ratio near 1)."""
    rng = np.random.default_rng(4)
    shared = [paired_difference(*draws(rng, 8)) for _ in range(500)]
    assert all(d.stderr < d.unpaired_stderr for d in shared)
    ratio = np.mean([d.stderr / d.unpaired_stderr for d in shared])
    assert 0.1 < ratio < 0.3
    apart = [paired_difference(*draws(rng, 8, shared=False)) for _ in range(500)]
    assert 0.85 < np.mean([d.stderr / d.unpaired_stderr for d in apart]) < 1.15


def test_one_teacher_is_its_monte_carlo_error():
    """One teacher: the per-sequence error of the difference when the sequences are shared, else
    the two errors combined; its value is ``a - b``."""
    d = paired_difference([0.4], [0.5], [0.03], [0.04])
    assert d == PairedDifference(pytest.approx(-0.1), pytest.approx(0.05), 1, pytest.approx(0.05))
    shared = paired_difference([0.4], [0.5], [0.03], [0.04], stderr_difference=[0.002])
    assert shared.stderr == pytest.approx(0.002)


def test_the_spread_is_floored_by_the_monte_carlo_error():
    """Teachers that agree by chance report the pooled Monte Carlo error, not less."""
    value, stderr = teacher_mean([0.3, 0.3, 0.3, 0.3], [0.02] * 4)
    assert (value, stderr) == (pytest.approx(0.3), pytest.approx(0.01))
    d = paired_difference([0.3] * 4, [0.2] * 4, [0.03] * 4, [0.04] * 4)
    assert d.stderr == pytest.approx(0.05 / 2)


@pytest.mark.parametrize(
    "value, stderr, n, sign",
    [
        (0.3, 0.1, 1, 1),  # normal: 1.96 stderr
        (-0.3, 0.1, 1, -1),
        (0.15, 0.1, 1, 0),
        (0.3, 0.1, 3, 0),  # Student t with 2 degrees of freedom: 4.30 stderr
        (0.45, 0.1, 3, 1),
        (-0.33, 0.1, 4, -1),  # 3 degrees of freedom: 3.18 stderr
        (0.0, 0.0, 3, 0),
    ],
)
def test_sign_is_decided_beyond_the_critical_value(value, stderr, n, sign):
    """The sign is decided beyond Student's t quantile over the teachers (normal for one)."""
    assert PairedDifference(value, stderr, n).sign() == sign


def test_the_decision_level_keeps_its_promise():
    """A true difference of zero is called decided in about 5% of simulated studies of 4
    teachers without Monte Carlo noise (Student's t is exact there): within 4 binomial standard
    errors (0.005 over 2000)."""
    rng = np.random.default_rng(6)
    wrong = 0
    for _ in range(2000):
        a, b = rng.normal(0.0, 0.1, 4), np.zeros(4)
        wrong += paired_difference(a, b, np.zeros(4), np.zeros(4)).sign() != 0
    assert abs(wrong / 2000 - 0.05) < 4 * math.sqrt(0.05 * 0.95 / 2000)


@pytest.mark.parametrize(
    "args",
    [
        ([0.1, 0.2], [0.1], [0.01, 0.01], [0.01]),
        ([], [], [], []),
        ([0.1], [0.2], [-0.01], [0.01]),
        ([0.1, 0.2], [0.1, 0.2], [0.01], [0.01, 0.01]),
    ],
    ids=["lengths", "none", "negative", "stderrs"],
)
def test_bad_input_is_refused(args):
    with pytest.raises(ConfigError, match="teacher"):
        paired_difference(*args)
