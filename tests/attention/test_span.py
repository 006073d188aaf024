"""The test sequences of ERM's starts drawn in the span of the teacher and the fits: the same
Gram matrix, and every start's, the zero predictor's and the oracle's error equal to the ones on
full-dimensional sequences (two routes)."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.attention.span import span_reduction
from bayes_slr.models.scoring import fresh_sample_scorer
from bayes_slr.models.simulate import draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm

STARTS = 3


def off_manifold_fits(key: jax.Array, teacher, D: int) -> AttentionParams:
    """``STARTS`` fits with cross overlaps and noise, an erf-like offset each."""
    noise = jax.random.normal(key, (2, STARTS, D))
    scale = jnp.linspace(0.5, 1.0, STARTS)[:, None]
    return AttentionParams(
        scale * (0.8 * teacher.k_star + 0.4 * teacher.v_star) + noise[0],
        scale * (0.7 * teacher.v_star + 0.3 * teacher.k_star) + 0.5 * noise[1],
        jnp.linspace(-0.2, 0.2, STARTS),
    )


def gram(teacher, fits: AttentionParams, D: int) -> np.ndarray:
    vectors = np.concatenate([np.stack([teacher.k_star, teacher.v_star]), fits.k, fits.v])
    return vectors @ vectors.T / D


def test_the_span_keeps_every_scalar_product_over_the_dimension() -> None:
    config = SLRConfig("spiked", 40, LengthLaw.fixed(3), 2.0)
    keys = jax.random.split(jax.random.PRNGKey(3))
    teacher = draw_teacher(keys[0], config.D)
    fits = off_manifold_fits(keys[1], teacher, config.D)
    small_config, small_teacher, small_fits = span_reduction(config, teacher, fits)
    assert small_config.D == 2 + 2 * STARTS and small_config.replace(D=config.D) == config
    np.testing.assert_allclose(
        gram(small_teacher, small_fits, small_config.D),
        gram(teacher, fits, config.D),
        atol=1e-12,
    )
    np.testing.assert_array_equal(small_fits.c, fits.c)
    # nothing to gain at D <= 2 + 2 S: the task is kept
    small = config.replace(D=2 + 2 * STARTS)
    assert span_reduction(small, teacher, fits)[0] is small


@pytest.mark.parametrize(
    "config, activation",
    [
        (SLRConfig("spiked", 40, LengthLaw.fixed(3), 2.0), "softmax"),
        (SLRConfig("max", 40, LengthLaw.uniform(5), math.inf, Delta=0.1), "erf"),
    ],
    ids=["spiked", "max-variable"],
)
def test_span_drawn_errors_are_the_full_dimensional_ones(config, activation) -> None:
    """Every start, the zero predictor and the oracle, each within four combined standard errors
    of its error on full-dimensional sequences (independent draws)."""
    keys = jax.random.split(jax.random.PRNGKey(11), 4)
    teacher = draw_teacher(keys[0], config.D)
    fits = off_manifold_fits(keys[1], teacher, config.D)
    N_test = 40_000
    full = erm._start_test_errors(
        fresh_sample_scorer(keys[2], config, teacher, N_test),
        fits,
        activation,
        (config, teacher),
        0,
    )
    small_config, small_teacher, small_fits = span_reduction(config, teacher, fits)
    reduced = erm._start_test_errors(
        fresh_sample_scorer(keys[3], small_config, small_teacher, N_test),
        small_fits,
        activation,
        (small_config, small_teacher),
        0,
    )
    errors, stderrs = full[0], full[1]
    small_errors, small_stderrs = reduced[0], reduced[1]
    assert np.all(np.abs(errors - small_errors) <= 4 * np.hypot(stderrs, small_stderrs))
    for a, b in zip(full[2:4], reduced[2:4], strict=True):  # the zero predictor, the oracle
        assert abs(a.value - b.value) <= 4 * math.hypot(a.stderr, b.stderr)
    for name, part in (("zero", full[2]), ("oracle", full[3])):  # start 0 paired with each
        paired = full[4][name]
        assert paired.value == pytest.approx(errors[0] - part.value, abs=1e-12)
        assert paired.stderr <= math.hypot(stderrs[0], part.stderr)


def test_a_start_sharing_another_fit_gets_its_figures_and_the_span_of_the_distinct_fits() -> None:
    """Starts whose fit is another's (``fit_of``, the shared refit) are not scored again: their
    figures are that start's, and every figure is the one of the distinct fits scored alone, on
    the sequences drawn in their span (``2 + 2 x 2`` numbers a token, not ``2 + 2 x 3``). The
    zero predictor and the oracle score the same in either span (paired across activations)."""
    config = SLRConfig("spiked", 40, LengthLaw.fixed(3), 2.0)
    settings = erm.ERMSettings(activation="softmax", alpha=4.0, N_test=4000)
    keys = jax.random.split(jax.random.PRNGKey(5), 3)
    teacher = draw_teacher(keys[0], config.D)
    fits = off_manifold_fits(keys[1], teacher, config.D)  # start 1 reports start 0's fit
    fits = jax.tree_util.tree_map(lambda leaf: leaf.at[1].set(leaf[0]), fits)
    shared = erm._test_errors(
        config, settings, fits, "softmax", teacher, (keys[2], None), 1, np.array([0, 0, 2])
    )
    alone = erm._test_errors(
        config,
        settings,
        jax.tree_util.tree_map(lambda leaf: leaf[np.array([0, 2])], fits),
        "softmax",
        teacher,
        (keys[2], None),
        0,
        np.arange(2),
    )
    np.testing.assert_array_equal(shared[0], alone[0][np.array([0, 0, 1])])
    np.testing.assert_array_equal(shared[1], alone[1][np.array([0, 0, 1])])
    assert shared[2:4] == alone[2:4] and shared[4] == alone[4]
    every = erm._test_errors(
        config, settings, fits, "softmax", teacher, (keys[2], None), 1, np.arange(3)
    )
    # other sequences (the span of three fits), drawn coordinate by coordinate: the teacher's
    # coordinates, all that the zero predictor and the oracle read, are the same numbers
    assert every[0][0] != shared[0][0]
    for a, b in zip(every[2:4], shared[2:4], strict=True):
        assert a.value == pytest.approx(b.value, abs=1e-12)
        assert a.stderr == pytest.approx(b.stderr, abs=1e-12)
