"""The simulator draws from the SLR law of docs/model.md section 1.

Tolerances are 4.5 standard errors of the Monte Carlo statistic (a false alarm rate
below 1e-5 per check), computed from the sample size of each test.
"""

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.models.simulate import (
    CHUNK_BYTES,
    DEFAULT_CHUNK,
    chunk_sequences,
    draw_teacher,
    iterate_batches,
    simulate,
    streamed_mean,
)

Z = 4.5
D = 40


def at_location(values, eps):
    return np.asarray(values)[np.arange(len(eps)), np.asarray(eps)]


@pytest.fixture(scope="module")
def teacher():
    return draw_teacher(jax.random.PRNGKey(7), D, exact=True)


def test_exact_teacher_is_normalised_and_orthogonal(teacher):
    assert float(teacher.k_star @ teacher.k_star) == pytest.approx(D, rel=1e-12)
    assert float(teacher.v_star @ teacher.v_star) == pytest.approx(D, rel=1e-12)
    assert abs(float(teacher.k_star @ teacher.v_star)) < 1e-10


@pytest.mark.parametrize("token_dtype", ["float64", "float32"])
@pytest.mark.parametrize("length", [LengthLaw.fixed(4), LengthLaw.uniform(4)])
def test_spiked_location_token_is_shifted_and_others_are_standard(teacher, length, token_dtype):
    """In either precision of the token draw (float32: online SGD's), returned in float64."""
    nu, N = 2.0, 20_000
    config = SLRConfig("spiked", D, length, nu, 0.0)
    batch = simulate(jax.random.PRNGKey(1), config, teacher, N, token_dtype=token_dtype)
    assert batch.X.dtype == jnp.float64
    chi_loc = at_location(batch.chi_star, batch.eps)
    assert abs(chi_loc.mean() - math.sqrt(nu)) < Z / math.sqrt(N)
    assert abs(chi_loc.var() - 1.0) < Z * math.sqrt(2.0 / N)
    others = np.asarray(batch.chi_star)[
        np.asarray(batch.mask) & ~np.asarray(jax.nn.one_hot(batch.eps, 4), bool)
    ]
    n = others.size
    assert abs(others.mean()) < Z / math.sqrt(n)
    assert abs(others.var() - 1.0) < Z * math.sqrt(2.0 / n)
    # with Delta = 0, y is exactly z* at the location
    np.testing.assert_allclose(batch.y, at_location(batch.z_star, batch.eps), atol=1e-12)


def test_lengths_follow_the_law_and_padding_is_zero(teacher):
    probs = (0.1, 0.2, 0.3, 0.4)
    N = 20_000
    config = SLRConfig("spiked", D, LengthLaw(probs), 1.0, 0.5)
    batch = simulate(jax.random.PRNGKey(2), config, teacher, N)
    counts = np.bincount(np.asarray(batch.lengths) - 1, minlength=4)
    chi2 = stats.chisquare(counts, np.asarray(probs) * N)
    assert chi2.pvalue > 1e-5
    assert np.all(np.asarray(batch.eps) < np.asarray(batch.lengths))
    assert np.all(np.asarray(batch.X)[~np.asarray(batch.mask)] == 0.0)


def test_max_slr_infinite_signal_puts_location_at_argmax(teacher):
    config = SLRConfig("max", D, LengthLaw.uniform(6), math.inf, 0.1)
    batch = simulate(jax.random.PRNGKey(3), config, teacher, 5_000)
    masked = jnp.where(batch.mask, batch.chi_star, -jnp.inf)
    np.testing.assert_array_equal(batch.eps, jnp.argmax(masked, axis=1))


def test_max_slr_location_frequencies_match_softmax(teacher):
    nu, N, Lbar = 1.5, 20_000, 5
    config = SLRConfig("max", D, LengthLaw.uniform(Lbar), nu, 0.1)
    batch = simulate(jax.random.PRNGKey(4), config, teacher, N)
    p = np.asarray(jax.nn.softmax(jnp.where(batch.mask, nu * batch.chi_star, -jnp.inf), axis=1))
    hit = np.asarray(jax.nn.one_hot(batch.eps, Lbar))
    # per position: sum of (hit - p) has variance sum p (1 - p)
    z_positions = (hit - p).sum(0) / np.sqrt((p * (1 - p)).sum(0))
    assert np.all(np.abs(z_positions) < Z)
    # calibration: bin the (sequence, token) pairs by predicted probability, chi-square over bins
    real = np.asarray(batch.mask)
    bins = np.minimum((p[real] * 10).astype(int), 9)
    observed = np.bincount(bins, weights=hit[real], minlength=10)
    expected = np.bincount(bins, weights=p[real], minlength=10)
    variance = np.bincount(bins, weights=(p * (1 - p))[real], minlength=10)
    used = variance > 0
    statistic = (((observed - expected) ** 2)[used] / variance[used]).sum()
    assert stats.chi2.sf(statistic, used.sum()) > 1e-5


def test_noise_has_variance_delta(teacher):
    Delta, N = 0.3, 20_000
    config = SLRConfig("spiked", D, LengthLaw.fixed(3), 1.0, Delta)
    batch = simulate(jax.random.PRNGKey(5), config, teacher, N)
    residual = np.asarray(batch.y) - at_location(batch.z_star, batch.eps)
    assert abs(residual.var() / Delta - 1.0) < Z * math.sqrt(2.0 / N)


def test_same_seed_same_data_and_other_seed_other_data(teacher):
    config = SLRConfig("max", D, LengthLaw.uniform(3), 2.0, 0.1)
    first = simulate(jax.random.PRNGKey(11), config, teacher, 50)
    again = simulate(jax.random.PRNGKey(11), config, teacher, 50)
    other = simulate(jax.random.PRNGKey(12), config, teacher, 50)
    for a, b in zip(first, again):
        np.testing.assert_array_equal(a, b)
    assert not np.allclose(first.X, other.X)


def test_streamed_mean_covers_many_chunks_with_correct_error(teacher):
    nu, N = 3.0, 30_000
    config = SLRConfig("spiked", D, LengthLaw.fixed(3), nu, 0.0)
    result = streamed_mean(
        lambda b: b.chi_star[jnp.arange(b.y.shape[0]), b.eps],
        jax.random.PRNGKey(6),
        config,
        teacher,
        N,
        7_000,
    )
    assert result.count == N
    assert float(result.stderr) == pytest.approx(1 / math.sqrt(N), rel=0.05)
    assert abs(float(result.mean) - math.sqrt(nu)) < Z * float(result.stderr)
    sizes = [
        b.y.shape[0] for b in iterate_batches(jax.random.PRNGKey(6), config, teacher, N, 7_000)
    ]
    assert sizes == [7_000] * 4 + [2_000]


def test_chunk_sequences_follows_a_byte_budget():
    """At most ``DEFAULT_CHUNK`` sequences (small ``D``: the default chunks, the same data as
    before), else
    as many float64 sequences as fit the budget, at least one; no dtype enters."""
    config = SLRConfig("spiked", 200, LengthLaw.fixed(3), 2.0, 0.1)
    assert chunk_sequences(config) == DEFAULT_CHUNK
    big = config.replace(D=4000)
    assert chunk_sequences(big) == CHUNK_BYTES // (8 * 3 * 4000)
    assert chunk_sequences(big) * 8 * 3 * 4000 <= CHUNK_BYTES
    assert chunk_sequences(big, budget=1) == 1
