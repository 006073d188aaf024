"""Paired differences of scored predictors (``pairs=`` of ``held_out_error`` and
``excess_test_error``).

Checked against a direct NumPy computation, against the unpaired values (same sequences: the
difference of the means), for the standard error gained by pairing correlated predictors, and
for the draw jackknife of replicate predictors.
"""

from __future__ import annotations

import math

import jax
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.errors import ConfigError
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.models.scoring import (
    difference_name,
    excess_test_error,
    held_out_error,
    zero_predictor,
)
from bayes_slr.models.simulate import draw_teacher, simulate

CONFIG = SLRConfig("spiked", 6, LengthLaw.uniform(4), 2.0, 0.1)
TEACHER = draw_teacher(jax.random.PRNGKey(3), CONFIG.D)


def _two(X, lengths):
    return {"a": 0.3 * X[:, 0, 0], "b": X[:, 0] @ TEACHER.v_star / math.sqrt(CONFIG.D)}


def test_paired_difference_is_the_numpy_mean_of_per_sequence_differences():
    """(d) and (a): mean and stderr of (y - f_a)^2 - (y - f_b)^2 by NumPy; the value is the
    difference of the values.
    """
    n = 200
    batch = simulate(jax.random.PRNGKey(2), CONFIG, TEACHER, n)
    y = np.asarray(batch.y, np.float64)
    errors = held_out_error(CONFIG, batch, _two, chunk_size=64, pairs=[("a", "b")])
    f_a, f_b = (np.asarray(f, np.float64) for f in _two(batch.X, batch.lengths).values())
    d = (y - f_a) ** 2 - (y - f_b) ** 2
    paired = errors[difference_name("a", "b")]
    assert paired.value == pytest.approx(d.mean(), rel=1e-6, abs=1e-9) and paired.n_test == n
    assert paired.stderr == pytest.approx(d.std(ddof=1) / math.sqrt(n), rel=1e-5)
    assert paired.value == pytest.approx(errors["a"].value - errors["b"].value, abs=1e-12)


@pytest.mark.parametrize("test_set", ["held-out", "fresh"])
def test_pairing_correlated_predictors_shrinks_the_stderr(test_set):
    """(b): Var(a - b) = Var a + Var b - 2 Cov(a, b) is below Var a + Var b whenever the
    per-sequence errors
    covary positively, as they do: the noise and the part of y no predictor sees are common to both
    squares.
    For the known-direction predictor and its shrunk copy (which err on the same sequences) the
    paired stderr
    is under half the unpaired one; for it and the zero predictor (error y^2, still sharing the
    noise) it is
    below it. The difference is the difference of the values, on either test set."""
    oracle = known_directions_predictor(CONFIG, TEACHER)

    def predict(X, lengths):
        f = oracle(X, lengths)
        return {"oracle": f, "shrunk": 0.8 * f, "zero": zero_predictor(X, lengths)}

    pairs = [("shrunk", "oracle"), ("oracle", "zero")]
    if test_set == "held-out":
        errors = held_out_error(
            CONFIG, simulate(jax.random.PRNGKey(5), CONFIG, TEACHER, 2000), predict, pairs=pairs
        )
    else:
        errors = excess_test_error(
            jax.random.PRNGKey(6), CONFIG, TEACHER, predict, N_test=2000, pairs=pairs
        )
    for a, b in pairs:
        paired, unpaired = (
            errors[difference_name(a, b)],
            math.hypot(errors[a].stderr, errors[b].stderr),
        )
        assert paired.value == pytest.approx(errors[a].value - errors[b].value, abs=1e-12)
        assert paired.stderr < (0.5 if a == "shrunk" else 1.0) * unpaired, (
            a,
            b,
            paired.stderr,
            unpaired,
        )


def test_replicates_are_paired_with_their_draw_jackknife():
    """A draw-free predictor adds no draw noise: the difference's jackknife is the replicate
    predictor's own;
    two replicate predictors need the same number of groups; an unknown name is refused."""
    batch = simulate(jax.random.PRNGKey(7), CONFIG, TEACHER, 300)

    def predict(X, lengths):
        return {"replicates": X[:, 0, :4], "fewer": X[:, 0, :3], "single": 0.3 * X[:, 0, 0]}

    errors = held_out_error(CONFIG, batch, predict, pairs=[("replicates", "single")])
    paired, replicates = errors[difference_name("replicates", "single")], errors["replicates"]
    assert paired.value == pytest.approx(replicates.value - errors["single"].value, abs=1e-12)
    assert paired.stderr_draws == pytest.approx(replicates.stderr_draws, rel=1e-9)
    assert paired.stderr == pytest.approx(math.hypot(paired.stderr_test, paired.stderr_draws))
    with pytest.raises(ConfigError, match="4 and 3 replicate groups"):
        held_out_error(CONFIG, batch, predict, pairs=[("replicates", "fewer")])
    with pytest.raises(ConfigError, match="no prediction named 'bayes'"):
        held_out_error(CONFIG, batch, predict, pairs=[("bayes", "single")])
