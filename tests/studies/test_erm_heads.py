"""ERM with heads as an axis of :func:`~bayes_slr.studies.erm.erm_study` (docs/multihead.md
section 7).

``H = H_s = 2``, ``rho = 1``, softmax: the test error at ``alpha`` and ``2 alpha`` (4 seeds, 4
starts each, ``D = 6``, exact teacher, where the population error at given overlaps is exact at
any ``D``; ``lam = 1e-3``, whose effect ``lam / N`` vanishes beside the ``1/alpha`` being
extrapolated) extrapolated linearly in ``1/alpha`` (ERM's excess over the optimum falls as
``1/alpha``) matches the population optimum within 4 of its standard errors, no fit beats the
optimum by more than 4 standard errors, and at ``2 alpha`` every seed's cosine matrices are a
permutation within ``4/sqrt(2 alpha)`` entrywise (a fitted direction's error is of order
``1/sqrt(N/D)``). The oracle of a multi-head task (the known directions' predictor, the heads'
joint states summed out) scores the exact Bayes error of docs/multihead.md section 2 on the
test sequences, within 4 of its standard errors; ``lam = "auto"`` chooses from its grid with
heads too.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import student_heads_optimum
from bayes_slr.models.batch import Teacher
from bayes_slr.studies.erm import ERMSettings, erm_study, head_overlaps

ALPHA = 100.0
CONFIG = SLRConfig("spiked", 6, LengthLaw.fixed(3), 2.0, heads=2, presence=1.0)
HEADS = ERMSettings(lam=1e-3, seeds=4, exact_teacher=True, student_heads=2)


def test_erm_reaches_the_optimum_with_specialised_heads() -> None:
    optimum = student_heads_optimum("softmax", CONFIG, 2).error
    runs = [
        erm_study(CONFIG, HEADS.replace(activation="softmax", alpha=alpha), 0)
        for alpha in (ALPHA, 2 * ALPHA)
    ]
    for run in runs:
        assert run.test_error >= optimum - 4 * run.stderr
    extrapolated = 2 * runs[1].test_error - runs[0].test_error
    stderr = math.hypot(2 * runs[1].stderr, runs[0].stderr)
    assert abs(extrapolated - optimum) <= 4 * stderr
    tolerance = 4 / math.sqrt(2 * ALPHA)
    for seed in runs[1].per_seed:
        overlaps = seed.head_overlaps
        assert seed.converged and seed.overlaps is None and seed.informed is None
        assert sorted(overlaps.permutation) == [0, 1]
        permutation = np.eye(2)[list(overlaps.permutation)]
        for cosines in (overlaps.cosine_k, overlaps.cosine_v):
            np.testing.assert_array_less(np.abs(np.asarray(cosines) - permutation), tolerance)


def test_the_oracle_of_two_heads_scores_the_bayes_error_and_auto_chooses_a_ridge() -> None:
    config = CONFIG.replace(presence=0.5, Delta=0.0)
    settings = HEADS.replace(lam="auto", seeds=2, starts=1, N_test=20_000)
    run = erm_study(config, settings.replace(activation="linear", alpha=8.0), 0)
    bayes = presence_bayes_error_exact(config).value
    assert abs(run.oracle_error - bayes) <= 4 * run.oracle_stderr
    for seed in run.per_seed:
        assert seed.lam in settings.lam_grid and seed.validation is not None
        assert seed.minus_oracle.value > -4 * seed.minus_oracle.stderr  # no fit beats it


def test_head_overlaps_of_a_permuted_teacher() -> None:
    """The teacher's own (orthogonal) heads, swapped and with an extra zero head: the permutation
    and overlaps are read back exactly."""
    basis = np.linalg.qr(np.random.default_rng(0).normal(size=(5, 4)))[0].T
    k_star, v_star = basis[:2], basis[2:]
    params = AttentionParams(
        np.vstack([2 * k_star[::-1], np.zeros(5)]),
        np.vstack([v_star[::-1], np.zeros(5)]),
        np.zeros(3),
    )
    overlaps = head_overlaps(params, Teacher(k_star, v_star))
    assert overlaps.permutation == (1, 0, None)
    np.testing.assert_allclose(overlaps.m_k[0][1], 2 * k_star[1] @ k_star[1] / 5, rtol=1e-12)
    np.testing.assert_allclose(overlaps.cosine_v[:2], np.eye(2)[::-1], atol=1e-12)
    assert overlaps.q_v[2] == 0.0 and overlaps.cosine_k[2] == (0.0, 0.0)


def test_bad_settings_are_refused() -> None:
    with pytest.raises(ConfigError, match="student_heads must be"):
        erm_study(CONFIG, HEADS.replace(student_heads=0, alpha=10.0), 0)
    with pytest.raises(ConfigError, match="alpha"):
        erm_study(CONFIG, HEADS.replace(activation="softmax", alpha=0.0), 0)
    with pytest.raises(ConfigError, match="init: 'informed' is one-head only"):
        erm_study(
            CONFIG.replace(heads=1, presence=0.5),
            ERMSettings(activation="softmax", alpha=10.0, init="informed"),
            0,
        )
