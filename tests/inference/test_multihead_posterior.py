"""The multi-head posterior: the joint state weights against the Gaussian token density, the Gibbs
conditionals against the joint, Gibbs against NUTS, one head against the one-head sampler.

Tolerances: float64 rounding for identities; 4 combined MCSEs (ArviZ) of posterior means and 4
combined standard errors of test errors for agreements between samplers.
"""

from __future__ import annotations

import itertools
import math

import arviz_stats
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import bayes_slr
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.inference.kernels import multihead_gibbs, run_chains
from bayes_slr.inference.kernels.base import SamplerData
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import (
    MATCHED_OVERLAPS,
    draw_evidence_and_prediction,
    matched_overlaps,
    posterior_errors,
)
from bayes_slr.inference.sampler_registry import check_sampling_arguments, resolve_sampler
from bayes_slr.inference.samplers import run_gibbs, sample_posterior
from bayes_slr.models.head_states import (
    joint_head_states,
    joint_state_log_weights,
    sequence_evidence_and_prediction,
)
from bayes_slr.models.numpyro_models import marginal_log_density
from bayes_slr.models.scoring import direction_overlaps
from bayes_slr.models.simulate import draw_task_teacher, draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig

TWO_HEADS = SLRConfig("spiked", 6, LengthLaw.fixed(3), 2.0, 0.5, heads=2, presence=0.5)
VARIABLE = SLRConfig("spiked", 4, LengthLaw.uniform(3), 3.0, 0.3, heads=3, presence=0.7)


@pytest.fixture(scope="module")
def data():
    """An exact teacher of two heads and ``N = 12 D`` training sequences."""
    teacher = draw_task_teacher(jax.random.PRNGKey(0), TWO_HEADS, exact=True)
    return teacher, simulate(jax.random.PRNGKey(1), TWO_HEADS, teacher, 12 * TWO_HEADS.D)


def direct_log_joint(config, X, lengths, y, k, v, states):
    """``log p(X, y, states | k, v)`` from the Gaussian tokens and output, written out."""
    a, D, c = math.sqrt(config.nu), config.D, 1 / math.sqrt(config.presence * config.heads)
    total = 0.0
    for mu in range(X.shape[0]):
        L = int(lengths[mu])
        means = np.zeros((L, D))
        signal = 0.0
        for h, s in enumerate(states[mu]):
            if s < config.Lbar:
                means[s] += a * k[h] / math.sqrt(D)
                signal += c * X[mu, s] @ v[h] / math.sqrt(D)
                total += math.log(config.presence / L)
            else:
                total += math.log1p(-config.presence)
        total += -0.5 * np.sum((X[mu, :L] - means) ** 2) - 0.5 * L * D * math.log(2 * math.pi)
        total += -0.5 * (y[mu] - signal) ** 2 / config.Delta - 0.5 * math.log(
            2 * math.pi * config.Delta
        )
    return total


def test_summed_out_density_against_the_gaussian_tokens():
    """The NumPyro model's ``log p(k, v, X, y)`` is the log-sum-exp over every joint state of the
    densities written out (spikes add on a shared token), three heads, variable lengths."""
    config = VARIABLE
    teacher = draw_task_teacher(jax.random.PRNGKey(3), config)
    batch = simulate(jax.random.PRNGKey(4), config, teacher, 3)
    X, lengths, y = (np.asarray(x, float) for x in (batch.X, batch.lengths, batch.y))
    k, v = np.asarray(jax.random.normal(jax.random.PRNGKey(5), (2, config.heads, config.D)))
    per_sequence = []
    for mu in range(3):
        options = [*range(int(lengths[mu])), config.Lbar]
        terms = [
            direct_log_joint(
                config, X[mu : mu + 1], lengths[mu : mu + 1], y[mu : mu + 1], k, v, [states]
            )
            for states in itertools.product(options, repeat=config.heads)
        ]
        per_sequence.append(np.logaddexp.reduce(terms))
    prior = -0.5 * (np.sum(k**2) + np.sum(v**2)) - config.heads * config.D * math.log(2 * math.pi)
    expected = prior + sum(per_sequence)
    got = marginal_log_density({"k": k, "v": v}, config, batch.X, batch.lengths, batch.y)
    assert abs(float(got) - expected) < 1e-9 * abs(expected)


def test_gibbs_conditionals_match_the_joint(data):
    """Given the states (and the other heads' values), ``log N(k | ...) + log N(v_h | ...)``
    differs from the direct joint by a constant, for each head ``h`` (float64 rounding)."""
    teacher, batch = data
    config = TWO_HEADS
    states = jnp.where(batch.present, batch.eps, config.Lbar)
    mean_k, chol_k = multihead_gibbs.key_conditional(batch.X, states, config)
    precision_k = chol_k @ chol_k.T
    tokens = multihead_gibbs.located_head_tokens(batch.X, states)
    X, lengths, y = (np.asarray(x, float) for x in (batch.X, batch.lengths, batch.y))
    others = np.asarray(jax.random.normal(jax.random.PRNGKey(16), (config.heads, config.D)))
    scaled = tokens / math.sqrt(config.presence * config.heads)
    signal = np.einsum("nhd,hd->nh", scaled, others) / math.sqrt(config.D)
    for head in range(config.heads):
        law_v = multihead_gibbs.head_value_conditional(scaled, signal, batch.y, head, config)
        precision_v = law_v.cholesky @ law_v.cholesky.T
        offsets = []
        for k, v_h in jax.random.normal(jax.random.PRNGKey(6), (4, 2, config.heads, config.D)):
            k, v = np.asarray(k), others.copy()
            v[head] = np.asarray(v_h[0])
            dk, dv = k - mean_k, v[head] - law_v.mean
            conditional = -0.5 * np.sum(dk * (precision_k @ dk)) - 0.5 * dv @ precision_v @ dv
            joint = direct_log_joint(config, X, lengths, y, k, v, np.asarray(states))
            joint -= 0.5 * (np.sum(k**2) + np.sum(v**2))
            offsets.append(joint - float(conditional))
        assert np.ptp(offsets) < 1e-8 * max(1.0, abs(offsets[0])), head


def test_one_head_prediction_is_the_one_head_code():
    """At ``H = 1``, ``rho = 1`` the joint-state evidence and prediction are the one-head ones."""
    one = SLRConfig("spiked", 5, LengthLaw.uniform(4), 2.0, 0.1)
    teacher = draw_teacher(jax.random.PRNGKey(7), one.D)
    batch = simulate(jax.random.PRNGKey(8), one, teacher, 50)
    k, v = jax.random.normal(jax.random.PRNGKey(9), (2, one.D))
    expected = draw_evidence_and_prediction(one, batch.X, batch.lengths, k, v)
    log_w, signal = joint_state_log_weights(batch.X, batch.lengths, k[None], v[None], one)
    log_px = jax.nn.logsumexp(log_w, axis=-1)
    got = (log_px, jnp.sum(jnp.exp(log_w - log_px[:, None]) * signal, axis=-1))
    for a, b in zip(expected, got, strict=True):
        np.testing.assert_allclose(np.asarray(b), np.asarray(a), rtol=1e-10, atol=1e-12)
    assert joint_head_states(2, 3).shape == (16, 2)


def summary(draws, teacher):
    """Posterior mean and MCSE of each matched overlap, and the worst R-hat."""
    overlaps = matched_overlaps(draws.k, draws.v, teacher)
    table = {name: (float(x.mean()), float(arviz_stats.mcse(x))) for name, x in overlaps.items()}
    return table, max(float(arviz_stats.rhat(x)) for x in overlaps.values())


@pytest.mark.slow
def test_gibbs_and_nuts_agree(data, full_size):
    """Two heads, ``rho = 0.5``: the exact Gibbs sampler and NUTS with the states summed out agree
    on the matched overlaps within 4 combined MCSEs and on the Bayes error within 4 combined
    standard errors (the same test sequences, so the bound is loose)."""
    teacher, batch = data
    samples = 2000 if full_size else 1000
    gibbs = sample_posterior(
        jax.random.PRNGKey(10),
        TWO_HEADS,
        batch,
        sampler="multihead-gibbs",
        chains=4,
        warmup=200,
        samples=samples,
        init="informed",
        teacher=teacher,
    )
    nuts = sample_posterior(
        jax.random.PRNGKey(11),
        TWO_HEADS,
        batch,
        sampler="nuts",
        chains=4,
        warmup=200,
        samples=samples // 8,
        init="informed",
        teacher=teacher,
    )
    assert gibbs.sampler == "multihead-gibbs" and gibbs.k.shape == (4, samples, 2, TWO_HEADS.D)
    (g, rhat_g), (n, rhat_n) = summary(gibbs, teacher), summary(nuts, teacher)
    assert max(rhat_g, rhat_n) < 1.05
    for name in MATCHED_OVERLAPS:
        assert abs(g[name][0] - n[name][0]) < 4 * math.hypot(g[name][1], n[name][1]), name
    known = {"known": known_directions_predictor(TWO_HEADS, teacher)}
    errors = [
        posterior_errors(
            jax.random.PRNGKey(12),
            TWO_HEADS,
            teacher,
            d.k,
            d.v,
            N_test=4000,
            max_draws=200,
            others=known,
            pairs=[("bayes", "known")],
        )
        for d in (gibbs, nuts)
    ]
    assert abs(errors[0].bayes.value - errors[1].bayes.value) < 4 * math.hypot(
        errors[0].bayes.stderr, errors[1].bayes.stderr
    )
    assert 0 < errors[0].bayes.value < 1
    for e in errors:  # no predictor beats the known directions
        over_known = e.others["bayes - known"]
        assert over_known.value > -4 * over_known.stderr


@pytest.mark.slow
def test_one_head_reproduces_the_one_head_sampler(full_size):
    """``H = 1``, ``rho = 1``: the multi-head Gibbs kernel and the one-head Gibbs sampler agree on
    the posterior means of the overlaps within 4 combined MCSEs."""
    config = SLRConfig("spiked", 8, LengthLaw.fixed(3), 4.0, 0.1)
    teacher = draw_teacher(jax.random.PRNGKey(13), config.D)
    batch = simulate(jax.random.PRNGKey(14), config, teacher, 8 * config.D)
    samples = 1500 if full_size else 600
    one = run_gibbs(
        jax.random.PRNGKey(15),
        config,
        batch,
        chains=4,
        warmup=200,
        samples=samples,
        init="informed",
        teacher=teacher,
    )
    starts = tuple(jnp.broadcast_to(x, (4, 1, config.D)) for x in teacher)
    positions, _ = run_chains(
        jax.random.PRNGKey(16),
        multihead_gibbs.make_kernel(config),
        SamplerData.of(batch),
        starts,
        warmup=200,
        samples=samples,
    )
    multi = {name: x[:, 200:, 0] for name, x in positions.items()}
    a = direction_overlaps(one.k, one.v, teacher)
    b = direction_overlaps(multi["k"], multi["v"], teacher)
    for name in ("m_k", "m_v", "q_k", "q_v"):
        x, y = np.asarray(a[name]), np.asarray(b[name])
        tolerance = 4 * math.hypot(arviz_stats.mcse(x), arviz_stats.mcse(y))
        assert abs(x.mean() - y.mean()) < tolerance, name


def test_multi_head_sampling_choices(data):
    """``auto`` is NUTS for a multi-head task (registered before the multi-head Gibbs sampler);
    a one-head sampler, the multi-head one on a one-head task, and the max law's multi-head
    posterior are refused."""
    assert resolve_sampler(TWO_HEADS, "auto") == "nuts"
    assert resolve_sampler(TWO_HEADS.replace(heads=1, presence=1.0), "auto") == "gibbs"
    options = {"chains": 1, "warmup": 0, "samples": 1, "init": "random"}
    with pytest.raises(ConfigError, match="does not support the multi-head spiked variant"):
        check_sampling_arguments(TWO_HEADS, sampler="gibbs", **options)
    with pytest.raises(
        ConfigError,
        match="not support the one-head spiked variant .*use sampler auto or gibbs or nuts",
    ):
        check_sampling_arguments(
            TWO_HEADS.replace(heads=1, presence=1.0), sampler="multihead-gibbs", **options
        )
    maximum = SLRConfig("max", 6, LengthLaw.fixed(3), 2.0, 0.5, heads=2)
    with pytest.raises(ConfigError, match="no registered sampler supports the multi-head max"):
        resolve_sampler(maximum, "auto")
    with pytest.raises(ConfigError, match="nuts does not support the multi-head max variant"):
        bayes_slr.posterior(variant="max", nu=2.0, heads=2, sampler="nuts", progress=False)


def test_matched_overlaps_do_not_depend_on_the_labels(data):
    """Swapping the heads of every draw leaves the matched overlaps as they are; at the exact
    teacher they are ``1``; a draw near a permuted teacher is matched to it."""
    teacher, _ = data
    draws = jax.random.normal(jax.random.PRNGKey(17), (2, 3, 5, 2, TWO_HEADS.D))
    k, v = np.array(draws[0]), np.array(draws[1])
    k[1, 2], v[1, 2] = np.asarray(teacher.k_star)[::-1], np.asarray(teacher.v_star)[::-1]
    plain = matched_overlaps(k, v, teacher)
    swapped = matched_overlaps(k[..., ::-1, :], v[..., ::-1, :], teacher)
    for name in MATCHED_OVERLAPS:
        np.testing.assert_allclose(swapped[name], plain[name], rtol=1e-12)
        assert plain[name].shape == (3, 5)
        assert abs(plain[name][1, 2] - 1.0) < 1e-12


@pytest.mark.parametrize("presence", [1.0, 0.5])
def test_known_directions_predictor_scores_the_population_bayes_error(presence):
    """The joint-state predictor at an exact teacher's ``(k*, v*)`` on simulated sequences scores
    the population Bayes error of the quadrature within 4 standard errors (two codes: joint
    states with spike cross terms, and the per-head quadrature)."""
    config = TWO_HEADS.replace(D=8, presence=presence)
    teacher = draw_task_teacher(jax.random.PRNGKey(18), config, exact=True)
    k, v = jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star)

    def squared_error(batch):
        _, known = sequence_evidence_and_prediction(batch.X, batch.lengths, k, v, config)
        return (batch.y - known) ** 2

    key = jax.random.PRNGKey(19)
    mean = streamed_mean(squared_error, key, config.replace(Delta=0.0), teacher, 40_000, 20_000)
    exact = presence_bayes_error_exact(config)
    assert abs(float(mean.mean) - exact.value) < 4 * float(mean.stderr) + exact.error_bound
