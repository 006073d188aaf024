"""The finite-``D`` posterior against the state evolution with the teacher's luck removed
(:mod:`bayes_slr.studies.posterior_scaling`; docs/posterior.md, "Teacher's luck removed")."""

from __future__ import annotations

import pytest

from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.posterior_scaling import ScalingSampling, state_evolution_gap


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
    study = state_evolution_gap(
        config,
        2.0,
        (20,),
        6 if full_size else 4,
        sampling,
        theory_samples=1024,
        theory_seeds=2,
    )
    rows = {row.estimator: row for row in study.rows}
    paired = rows["bayes - oracle"]
    assert abs(paired.gap) < 4 * paired.stderr, paired
    assert paired.stderr < rows["bayes"].stderr, rows
