"""The finite-``D`` posterior against the state evolution with the teacher's luck removed
(:mod:`bayes_slr.studies.posterior_scaling`; docs/posterior.md, "Teacher's luck removed")."""

from __future__ import annotations

import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.amp_records import AMPSettings
from bayes_slr.studies.posterior_scaling import (
    ScalingSampling,
    ScalingSettings,
    ScalingStudy,
    TeacherErrors,
    fit_against_inverse_D,
    merge_studies,
    state_evolution_gap,
)


@pytest.mark.slow
def test_posterior_minus_oracle_meets_state_evolution_minus_population(full_size):
    """Prior-drawn teachers at ``D = 20`` (``N = 40``): each teacher's posterior error minus its
    own known-direction error, on the same test sequences, averages to the state evolution's
    error minus the population Bayes error within 4 standard errors (over teachers, with the
    draws' and the test set's noise): the law measured at ``D = 25..200`` (docs/posterior.md)
    holds down to this size, with no finite-``D`` offset beyond the teachers' spread. The raw
    error, without the oracle subtracted, carries the teachers' luck and has a larger standard
    error."""
    config = SLRConfig("spiked", 20, LengthLaw.fixed(3), 2.0, 0.1)
    sampling = ScalingSampling(
        chains=2, warmup=150, samples=200, N_test=4000, max_draws=100, exact_teacher=False
    )
    settings = ScalingSettings(
        2.0, (20,), 6 if full_size else 4, sampling, theory_samples=1024, theory_seeds=2
    )
    study = state_evolution_gap(config, settings, seed=1000)
    rows = {row.estimator: row for row in study.rows}
    paired = rows["bayes - oracle"]
    assert abs(paired.gap) < 4 * paired.stderr, paired
    assert paired.stderr < rows["bayes"].stderr, rows


def test_amp_minus_oracle_meets_state_evolution_minus_population():
    """GAMP's posterior on the same measure, at ``D = 300``, ``alpha = 4`` (``N = 1200``), four
    prior-drawn teachers run as two studies of two and pooled (:func:`merge_studies`): GAMP's
    error minus each teacher's oracle averages to the state evolution minus the population Bayes
    error within 4 standard errors (the law measured at ``D = 1000..4000``, docs/posterior.md),
    with a standard error smaller than the raw error's, which carries the teachers' luck."""
    config = SLRConfig("spiked", 300, LengthLaw.fixed(3), 2.0, 0.1)
    sampling = ScalingSampling(N_test=4000, exact_teacher=False)
    halves = [
        state_evolution_gap(
            config,
            ScalingSettings(
                4.0, (300,), 2, sampling, theory_samples=1024, theory_seeds=2, amp=AMPSettings()
            ),
            seed,
        )
        for seed in (1000, 1002)
    ]
    study = merge_studies(halves, theory_samples=1024, theory_seeds=2)
    assert [e.seed for e in study.teachers[300]] == [1000, 1001, 1002, 1003]
    assert all(e.converged for e in study.teachers[300])
    rows = {row.estimator: row for row in study.rows}
    paired = rows["bayes - oracle"]
    assert paired.teachers == 4
    assert abs(paired.gap) < 4 * paired.stderr, paired
    assert paired.stderr < rows["bayes"].stderr, rows


def test_merge_pools_teachers_and_refuses_a_repeated_seed():
    """Pooling two runs gives each ``D`` the teachers of both, with the rows and the ``1/D`` fit
    recomputed from all of them; a teacher's seed met twice at one ``D`` is refused."""
    config = SLRConfig("spiked", 10, LengthLaw.fixed(3), 2.0, 0.1)

    def errors(seed: int, gap: float) -> TeacherErrors:
        return TeacherErrors(seed, 0.5 + gap, 0.5 + gap, 0.4, 0.1 + gap, 0.01)

    def study(teachers: dict[int, tuple[TeacherErrors, ...]]) -> ScalingStudy:
        return ScalingStudy(config, 2.0, ScalingSampling(), teachers, (), {})

    first = study({10: (errors(0, 0.0), errors(1, 0.02)), 20: (errors(0, 0.01),)})
    second = study({20: (errors(1, 0.03),)})
    merged = merge_studies([first, second], theory_samples=256, theory_seeds=2)
    assert {D: [e.seed for e in es] for D, es in merged.teachers.items()} == {
        10: [0, 1],
        20: [0, 1],
    }
    paired = {row.D: row for row in merged.rows if row.estimator == "bayes - oracle"}
    assert paired[20].measured == pytest.approx(0.12)
    assert merged.fits["bayes - oracle"].intercept == pytest.approx(
        fit_against_inverse_D(
            [10, 20], [paired[10].gap, paired[20].gap], [paired[10].stderr, paired[20].stderr]
        ).intercept
    )
    with pytest.raises(ConfigError, match="seed"):
        merge_studies([first, first], theory_samples=256, theory_seeds=2)
