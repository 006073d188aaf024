"""The validation path leaves out candidates whose solution another one already holds, and
chooses the same ridge as the path that walks every candidate."""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm


def test_distinct_keeps_the_lowest_objective_of_coinciding_solutions_and_diverged_ones():
    base = np.linspace(1.0, 2.0, 6)
    k = np.stack(
        [
            base,  # kept: the lowest objective
            base * (1 + 1e-5),  # the same solution, higher objective: left out
            -base,  # another solution: kept
            base * 1.5,  # another solution: kept
            base,  # diverged: kept (it starts again from its previous solution)
        ]
    )[None, None]
    params = AttentionParams(jnp.asarray(k), jnp.asarray(k), jnp.zeros((1, 1, 5)))
    values = np.array([[[0.1, 0.1 + 1e-12, 0.3, 0.2, np.nan]]])
    assert erm._distinct(params, values).tolist() == [[[True, False, True, True, True]]]


@pytest.mark.parametrize(
    "variant, nu, activation",
    [
        ("spiked", 2.0, "softmax"),
        pytest.param("max", float("inf"), "softplus", marks=pytest.mark.full_size_only),
    ],
)
def test_pruned_path_chooses_the_same_ridge(monkeypatch, variant, nu, activation):
    """``lam="auto"`` with coinciding candidates left out against every candidate walked: the
    same ridge at every seed, validation errors equal to L-BFGS's accuracy, the same row."""
    config = SLRConfig(variant, 20, LengthLaw.fixed(3), nu, 0.1)
    options = dict(alpha=8.0, seeds=2, starts=3, N_test=4000, predict_population=False)
    pruned = erm.erm_study(config, ERMSettings(activation=activation, **options), 0)
    monkeypatch.setattr(erm, "_distinct", lambda params, values: np.ones(values.shape, bool))
    walked = erm.erm_study(config, ERMSettings(activation=activation, **options), 0)
    assert pruned.lam == walked.lam
    assert pruned.notes == walked.notes
    for a, b in zip(pruned.per_seed, walked.per_seed, strict=True):
        walked_scores = np.array(
            [np.nan if x is None else x for x in b.validation.validation_error]
        )
        pruned_scores = np.array(
            [np.nan if x is None else x for x in a.validation.validation_error]
        )
        # two solutions to |grad| <= tol differ most at the smallest ridge (a flat objective):
        # 7e-5 relative measured at lam = 1e-3; the ridge is still chosen the same
        np.testing.assert_allclose(pruned_scores, walked_scores, rtol=1e-3)
    assert f"{pruned.test_error:.6f}" == f"{walked.test_error:.6f}"


def test_coinciding_starts_share_one_refit_and_report_the_same_minimum(monkeypatch):
    """Where every random start reached one solution at the chosen ridge on the path, the refit
    trains the first and the others share it: against refitting every start, the same ridge, the
    reported objective within the stopping rule's bound ``tol^2 N / lam`` (two points with
    ``|grad| <= tol`` of an objective of curvature ``>= lam / N``), the same test error to a
    thousandth of its Monte Carlo error, the same notes. The second seed is kept from sharing:
    its starts are all refitted (each seed's own choice). The shared starts are scored once (the
    test sequences drawn in the span of the distinct fits: other random numbers than with every
    start's own fit), so the refit of every start is scored the same way, its selected fit
    standing for the random starts, to compare the fits on the same sequences."""
    config = SLRConfig("spiked", 20, LengthLaw.fixed(3), 2.0, 0.1)
    options = dict(
        alpha=8.0,
        seeds=2,
        starts=3,
        N_test=4000,
        predict_population=False,
        lam_grid=(100.0,),  # the first value of the path: every start trained there
    )
    coinciding = erm._coinciding
    monkeypatch.setattr(
        erm, "_coinciding", lambda *args: coinciding(*args) & np.array([True, False])
    )
    shared = erm.erm_study(config, ERMSettings(activation="softmax", **options), 0)
    monkeypatch.setattr(erm, "_coinciding", lambda *args: np.zeros(2, bool))
    train_every_start = erm._train_every_start

    def scored_as_one_fit(*args):
        trained = train_every_start(*args)
        fit_of = trained.fit_of.copy()
        fit_of[0, :3] = trained.selected[0]
        return trained._replace(fit_of=fit_of)

    monkeypatch.setattr(erm, "_train_every_start", scored_as_one_fit)
    every = erm.erm_study(config, ERMSettings(activation="softmax", **options), 0)
    assert shared.lam == every.lam
    assert shared.notes == every.notes
    # the shared refit happened at the first seed: its starts' objectives are one number
    # (starts trained each on their own differ in their last digits); the second is unchanged
    assert len(set(shared.per_seed[0].starts.train_loss)) == 1
    assert len(set(shared.per_seed[0].starts.test_error)) == 1
    assert len(set(every.per_seed[0].starts.train_loss)) > 1
    assert shared.per_seed[1] == every.per_seed[1]
    N, tol = round(8.0 * 20), 1e-6
    a, b = shared.per_seed[0], every.per_seed[0]
    assert abs(a.train_loss - b.train_loss) <= tol**2 * N / a.lam
    assert abs(a.test_error - b.test_error) <= 1e-3 * a.stderr
    assert a.selected_start == 0
