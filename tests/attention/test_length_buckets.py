"""Sequences padded to a length bucket train and score as the unpadded ones.

The padded tokens are masked (weight 0 for every activation, value 0), so the objective and its
gradient agree with the unpadded batch's up to the order of summation, and an ERM point of
``gap`` (ridge chosen on the validation path) gives the same row.
"""

from __future__ import annotations

import jax
import numpy as np
import pytest
from jax.flatten_util import ravel_pytree

from bayes_slr.attention.activations import OPTIONAL_ACTIVATIONS, activation_names, sphere_erf
from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.attention.training import (
    LENGTH_BUCKETS,
    bucket_length,
    objective,
    padded_to_bucket,
)
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm

ACTIVATIONS = (*activation_names(), *OPTIONAL_ACTIVATIONS, sphere_erf(0.5).name)


def test_a_length_gets_the_smallest_bucket_that_holds_it():
    lengths = (1, 2, 3, 4, 5, 6, 10, 11, 30, 100, 101)
    assert [bucket_length(L) for L in lengths] == [3, 3, 3, 5, 5, 10, 10, 30, 30, 100, 101]
    assert all(bucket_length(b) == b for b in LENGTH_BUCKETS)


@pytest.mark.parametrize(
    "variant, nu, length",
    [
        ("spiked", 2.0, LengthLaw.uniform(4)),
        ("max", float("inf"), LengthLaw.fixed(2)),
        pytest.param("spiked", 2.0, LengthLaw.fixed(2), marks=pytest.mark.full_size_only),
        pytest.param("max", float("inf"), LengthLaw.uniform(4), marks=pytest.mark.full_size_only),
    ],
)
def test_padded_objective_and_gradient_equal_the_unpadded(variant, nu, length):
    """Every activation, on fixed and variable lengths: value and gradient to 1e-12 (float64),
    at a point away from the start (so that the weights are far from uniform)."""
    config = SLRConfig(variant, 20, length, nu, 0.1)
    keys = jax.random.split(jax.random.PRNGKey(3), 4)
    teacher = draw_teacher(keys[0], config.D)
    batch = simulate(keys[1], config, teacher, 64)
    padded = padded_to_bucket(batch)
    assert padded.X.shape[1] == bucket_length(batch.X.shape[1]) > batch.X.shape[1]
    assert np.all(np.asarray(padded.X[:, batch.X.shape[1] :]) == 0.0)
    k, v = 1.5 * jax.random.normal(keys[2], (2, config.D))
    params = AttentionParams(k, v, jax.numpy.asarray(0.3))
    for activation in ACTIVATIONS:
        (v0, g0), (v1, g1) = (
            jax.value_and_grad(objective)(params, b.X, b.lengths, b.y, activation, 0.1)
            for b in (batch, padded)
        )
        g0, g1 = ravel_pytree(g0)[0], ravel_pytree(g1)[0]
        assert abs(float(v1 - v0)) <= 1e-12 * abs(float(v0)), activation
        assert float(np.max(np.abs(g1 - g0))) <= 1e-12 * float(np.max(np.abs(g0))), activation


@pytest.mark.parametrize("variant, nu", [("spiked", 2.0), ("max", float("inf"))])
def test_a_gap_erm_point_gives_the_same_row_padded(monkeypatch, variant, nu):
    """``erm_study`` with ``lam="auto"`` at ``L = 2`` (padded to 3) against the same study with
    the padding switched off: the same ridge at every seed, the same training objectives to
    float rounding, the same test errors and notes."""
    config = SLRConfig(variant, 20, LengthLaw.fixed(2), nu, 0.1)
    options = dict(
        alpha=8.0, seeds=2, starts=2, N_test=4000, predict_population=False, lam_grid=(0.1, 1.0)
    )
    padded = erm.erm_study(config, ERMSettings(activation="softmax", **options), 0)
    monkeypatch.setattr(erm, "padded_to_bucket", lambda batch: batch)
    plain = erm.erm_study(config, ERMSettings(activation="softmax", **options), 0)
    assert padded.lam == plain.lam
    assert padded.notes == plain.notes
    for a, b in zip(padded.per_seed, plain.per_seed, strict=True):
        np.testing.assert_allclose(a.starts.train_loss, b.starts.train_loss, rtol=1e-9)
        assert a.selected_start == b.selected_start
        assert f"{a.test_error:.6f}" == f"{b.test_error:.6f}"
    assert (
        f"{padded.test_error:.6f} {padded.stderr:.6f}"
        == f"{plain.test_error:.6f} {plain.stderr:.6f}"
    )
