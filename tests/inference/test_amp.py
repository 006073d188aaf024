"""Bayes-optimal GAMP (bayes_slr/inference/amp.py, docs/theory.md part C).

References that do not go through AMP: the state evolution of the Bayes-optimal theory
(``bayes_replica_point``, ``bayes_state_evolution_history``), solved in the test, and the exact
Gibbs sampler on the same data. Tolerances are finite-size fluctuations measured over seeds
(docs/theory.md part C), scaled by ``1/sqrt(D)`` and by the number of seeds averaged.
"""

from __future__ import annotations

import functools
import json
import math

import arviz as az
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.amp import AMPOptions
from bayes_slr.formulas.replica_bayes import bayes_state_evolution_history
from bayes_slr.inference import amp, posterior_io
from bayes_slr.inference.predictive import posterior_mean_predictor, thin_draws
from bayes_slr.inference.samplers import run_gibbs
from bayes_slr.models.scoring import excess_error_given_teacher
from bayes_slr.models.simulate import (
    chunk_sequences,
    draw_teacher,
    iterate_batches,
    simulate,
    streamed_mean,
)
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.numerics import location_integrals
from bayes_slr.studies.amp import amp_point
from bayes_slr.studies.amp_records import AMPSettings

SPIKED = SLRConfig("spiked", 200, LengthLaw.fixed(3), 2.0, 0.1)
FLUCTUATION = {"overlap": 1.5, "error": 0.6}
"""Seed-to-seed standard deviation of (AMP - state evolution) times ``sqrt(D)``, spiked ``nu = 2``,
``L = 3``, ``Delta = 0.1`` (docs/theory.md part C): overlaps 0.04 at D = 1000 (1.3), 0.016 at 2000
(0.7), 0.009 at 4000 (0.6); test errors 0.015 at D = 1000 (0.5). Rounded up."""
SE_SAMPLES = 16384
SE_ERROR = 0.005
"""Monte Carlo error of the state evolution at ``SE_SAMPLES`` draws (seed-to-seed spread of ``q_v``:
0.0044 at alpha = 1, docs/theory.md part B)."""


def small_run(
    config: SLRConfig, alpha: float, seed: int = 0, **options
) -> tuple[amp.AMPResult, amp.AMPData]:
    """GAMP on one exact teacher's data; returns the result and the data."""
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(seed), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(
        key_data, config, teacher, round(alpha * config.D), dtype=options.pop("dtype", "float64")
    )
    return amp.run_amp(key_start, data, config, teacher=teacher, **options), data


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: AMPOptions(D=1, alpha=1.0), "D"),
        (lambda: AMPOptions(alpha=0.0), "alpha"),
        (lambda: AMPOptions(D=100, alpha=1e-4), "alpha"),
        (lambda: AMPOptions(alpha=-1.0), "alpha"),
        (lambda: AMPSettings(dtype="int8"), "dtype"),
        (lambda: AMPSettings(dtype="float16"), "dtype"),
        (lambda: AMPSettings(damping=0.0), "damping"),
        (lambda: AMPSettings(damping=1.5), "damping"),
        (lambda: AMPSettings(damping=float("nan")), "damping"),
        (lambda: AMPSettings(tol=0.0), "tol"),
        (lambda: AMPSettings(max_iter=0), "max_iter"),
        (lambda: AMPSettings(init="uninformed"), "init"),
        (lambda: AMPSettings(N_test=1), "N_test"),
        (lambda: AMPSettings(mc_samples=1), "mc_samples"),
        (lambda: AMPOptions(variant="max", nu=200.0, D=200, alpha=1.0), "nu"),
        (lambda: AMPOptions(D=1000, alpha=4.0, memory_limit=1000), "GiB"),
    ],
)
def test_bad_input_raises_config_error_naming_the_parameter(make, name):
    """Every option out of range is refused before any work, with a message naming it."""
    with pytest.raises(ConfigError, match=name):
        make()


def test_data_of_the_wrong_shape_is_refused():
    key = jax.random.PRNGKey(0)
    data = amp.AMPData(jnp.zeros((10, 3, 50)), jnp.zeros(10), jnp.ones((10, 3), bool))
    with pytest.raises(ConfigError, match="shape"):
        amp.run_amp(key, data, SPIKED)
    with pytest.raises(ConfigError, match="informed"):
        amp.amp_init(key, data, SPIKED.replace(D=50), "informed")


def test_non_converging_run_reports_converged_false_and_last_residual():
    """Too few iterations: ``converged`` is False and the last residual is reported
    (above ``tol``).
    """
    result, _ = small_run(SPIKED, 2.0, max_iter=3, tol=1e-9)
    assert int(result.state.iteration) == 3
    assert not bool(result.converged)
    residual = float(result.state.residual)
    assert math.isfinite(residual) and residual > 1e-9
    assert float(result.residual_history[3]) == residual
    assert np.all(np.isnan(np.asarray(result.history[4:])))


def test_converged_run_meets_its_tolerance_and_stays_a_fixed_point():
    """A converged run's last residual is below ``tol``; one more step moves ``W`` by about as
    little.
    """
    config = SPIKED
    result, data = small_run(config, 2.0, tol=1e-8)
    assert bool(result.converged)
    assert float(result.state.residual) <= 1e-8
    step = jax.jit(amp.amp_step, static_argnums=2)  # one program, not one per operation
    state, info = step(result.state, data, config, amp.DEFAULT_DAMPING)
    assert float(info["residual"]) < 1e-7


def test_padded_tokens_are_inert():
    """Variable length: garbage in the padded token slots changes nothing (mask everywhere)."""
    config = SLRConfig("spiked", 150, LengthLaw.uniform(3), 2.0, 0.1)
    key_teacher, key_data, key_start, key_junk = jax.random.split(jax.random.PRNGKey(3), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, 300)
    assert not bool(jnp.all(data.mask))
    junk = jax.random.normal(key_junk, data.X.shape) * 5.0
    dirty = data._replace(X=jnp.where(data.mask[..., None], data.X, junk))
    clean_result = amp.run_amp(key_start, data, config, teacher=teacher, max_iter=40)
    dirty_result = amp.run_amp(key_start, dirty, config, teacher=teacher, max_iter=40)
    np.testing.assert_allclose(dirty_result.state.W, clean_result.state.W, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dirty_result.state.C, clean_result.state.C, rtol=0, atol=1e-12)
    predict = amp.amp_predictor(config, clean_result.state)
    lengths = jnp.sum(data.mask, axis=1)
    np.testing.assert_allclose(
        predict(dirty.X, lengths), predict(data.X, lengths), rtol=0, atol=1e-10
    )


def test_float32_reaches_the_float64_fixed_point():
    """Same data in float32: the fixed point moves by float32 rounding amplified by the iteration
    only.

    The overlaps agree to 1e-4 (float32 resolution 1e-7 times the condition of the damped map;
    measured 1e-6 at D = 200).
    """
    r64, data64 = small_run(SPIKED, 2.0, tol=1e-6)
    r32, data32 = small_run(SPIKED, 2.0, tol=1e-5, dtype="float32")
    assert data32.X.dtype == jnp.float32 and r32.state.W.dtype == jnp.float32
    assert bool(r64.converged) and bool(r32.converged)
    o64 = np.asarray(r64.history[int(r64.state.iteration)])
    o32 = np.asarray(r32.history[int(r32.state.iteration)])
    np.testing.assert_allclose(o32, o64, atol=1e-4)


def test_training_data_is_the_same_in_every_dtype_across_chunks():
    """``amp_data`` over several chunks (the last one short): the float64 data is the concatenation
    of
    :func:`iterate_batches`'s chunks, and the float32 data is the same numbers rounded to float32.
    """
    config = SLRConfig("spiked", 40, LengthLaw.uniform(3), 2.0, 0.1)
    key_teacher, key_data = jax.random.split(jax.random.PRNGKey(5))
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    d64 = amp.amp_data(key_data, config, teacher, 23, chunk_size=5)
    d32 = amp.amp_data(key_data, config, teacher, 23, dtype="float32", chunk_size=5)
    chunks = list(iterate_batches(key_data, config, teacher, 23, 5))
    assert [b.y.shape[0] for b in chunks] == [5, 5, 5, 5, 3]
    for name, field in (("X", "X"), ("y", "y"), ("mask", "mask")):
        expected = np.concatenate([np.asarray(getattr(b, field)) for b in chunks])
        np.testing.assert_array_equal(np.asarray(getattr(d64, name)), expected)
        expected32 = expected if expected.dtype == bool else expected.astype(np.float32)
        np.testing.assert_array_equal(np.asarray(getattr(d32, name)), expected32)
    assert d32.X.dtype == jnp.float32 and d64.X.dtype == jnp.float64


def test_memory_bytes_counts_the_tokens_once_in_the_working_dtype():
    """``memory_bytes``: float64 needs exactly ``N Lbar D * 4`` bytes more than float32 (the stored
    tokens,
    once); the simulation chunk is sized by a byte budget, the same in both dtypes, so at large
    ``D`` the
    estimate is little more than the tokens."""
    config = SPIKED.replace(D=4000)
    N, tokens = 8000, 8000 * 3 * 4000
    b64, b32 = amp.memory_bytes(config, N, "float64"), amp.memory_bytes(config, N, "float32")
    assert b64 - b32 == tokens * 4
    chunk = chunk_sequences(config)
    assert chunk < N and amp.memory_bytes(config, N, "float32", chunk) == b32
    assert b32 - tokens * 4 == amp.memory_bytes(config, N, "float64", chunk) - tokens * 8
    assert (
        b32 - amp.RUNTIME_BYTES - tokens * 4 < tokens * 4
    )  # the transients are below the float32 tokens
    assert (
        amp.memory_bytes(config, N, "float32", N) > b32
    )  # one chunk of all N sequences: the old layout


def log_z_out(
    config: SLRConfig, omega: jax.Array, y: jax.Array, mask: jax.Array, V: jax.Array
) -> jax.Array:
    """``log Z_out(y, omega, V)`` up to a constant, written from its definition (docs/theory.md part
    C):
    ``sum_l P_l N(y; mean_l, Delta + V_vv)`` with the spiked tilt integrated exactly or max-SLR's
    location
    integrals (their values only). The independent check of the closed-form ``g``, ``dg``."""
    variance = config.Delta + V[1, 1]
    if config.law.tokens_carry_key:
        log_weights, mean = config.c_nu * omega[:, 0], omega[:, 1] + config.c_nu * V[0, 1]
    elif math.isinf(config.nu):
        log_weights, mean = (
            location_integrals.argmax_log_posterior(omega[:, 0], V[0, 0], mask),
            omega[:, 1],
        )
    else:
        log_weights = location_integrals.softmax_log_posterior(
            config.c_nu, omega[:, 0], V[0, 0], mask
        )
        mean = omega[:, 1]
    log_gauss = -0.5 * (y - mean) ** 2 / variance
    return jax.scipy.special.logsumexp(jnp.where(mask, log_weights + log_gauss, -jnp.inf))


@pytest.mark.parametrize(
    "variant, nu",
    [
        ("spiked", 2.0),
        ("max", math.inf),
        pytest.param("max", 2.0, marks=pytest.mark.full_size_only),
        pytest.param("max", 20.0, marks=pytest.mark.full_size_only),
    ],
)
def test_closed_form_output_denoiser_matches_automatic_differentiation(variant, nu):
    """``g`` and the diagonal ``2 x 2`` blocks of ``dg`` against ``jax.grad`` / ``jax.hessian`` of
    ``log Z_out``
    at random fields, outputs and covariances, with and without a padded token.

    Both sides evaluate the same quadrature rules, so they agree to float64 rounding (measured: at
    most
    1.3e-14, the largest derivative being about 1e2): tolerance 1e-10.
    """
    config = SLRConfig(variant, 10, LengthLaw.fixed(4), nu, 0.1)
    k_omega, k_y, k_v = jax.random.split(jax.random.PRNGKey(7), 3)
    points = 12
    omega = 1.5 * jax.random.normal(k_omega, (points, 4, 2))
    y = 1.5 * jax.random.normal(k_y, (points,))
    mask = jnp.ones((points, 4), bool).at[::2, 3].set(False)
    a = jax.random.uniform(k_v, (points, 3), minval=0.05, maxval=0.95)
    V = jnp.stack(
        [
            jnp.stack([a[:, 0], 0.1 * (a[:, 2] - 0.5)], -1),
            jnp.stack([0.1 * (a[:, 2] - 0.5), a[:, 1]], -1),
        ],
        -2,
    )

    def reference(omega, y, mask, V):
        f = functools.partial(log_z_out, config, y=y, mask=mask, V=V)
        tokens = jnp.arange(4)
        return (
            jnp.where(mask[:, None], jax.grad(f)(omega), 0.0),
            jnp.where(mask[:, None, None], jax.hessian(f)(omega)[tokens, :, tokens, :], 0.0),
        )

    g, dg = jax.jit(jax.vmap(functools.partial(amp.output_denoiser, config)))(omega, y, mask, V)
    expected_g, expected_dg = jax.jit(jax.vmap(reference))(omega, y, mask, V)
    np.testing.assert_allclose(g, expected_g, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dg, expected_dg, rtol=0, atol=1e-10)
    assert np.all(np.asarray(dg)[~np.asarray(mask)] == 0.0) and float(jnp.max(jnp.abs(dg))) > 0.1


def test_progress_runs_in_chunks_to_the_same_fixed_point(capsys):
    """With ``progress`` the loop runs ``ITERATION_CHUNK`` iterations per compiled call and shows a
    bar on
    stderr; the iterates are the same as one compiled loop (same operations, same order)."""
    plain, _ = small_run(SPIKED, 2.0, tol=1e-6)
    shown, _ = small_run(SPIKED, 2.0, tol=1e-6, progress=True)
    assert int(shown.state.iteration) == int(plain.state.iteration) > amp.ITERATION_CHUNK
    np.testing.assert_array_equal(shown.state.W, plain.state.W)
    np.testing.assert_array_equal(shown.history, plain.history)
    assert "GAMP iterations" in capsys.readouterr().err


def gibbs_comparison(config: SLRConfig, alpha: float, seed: int) -> dict[str, float]:
    """AMP and the exact Gibbs sampler on the same training set (one exact teacher).

    Returns the squared distance ``|W_hat - <W>|^2 / D`` per direction relative to ``|<W>|^2 / D``
    (the Gibbs mean's Monte Carlo noise removed by two independent halves of the chains), and the
    difference of the test errors of the two training-set posterior means of ``f`` on one test set.
    """
    key_teacher, key_data, key_start, key_gibbs, key_test = jax.random.split(
        jax.random.PRNGKey(100 + seed), 5
    )
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, round(alpha * config.D))
    result = amp.run_amp(
        key_start, amp.AMPData(batch.X, batch.y, batch.mask), config, teacher=teacher, tol=1e-8
    )
    assert bool(result.converged)
    draws = run_gibbs(key_gibbs, config, batch, chains=4, warmup=300, samples=300)
    half = draws.k.shape[0] // 2
    overlaps = posterior_io.overlaps(draws.k, draws.v, teacher)
    row = {"gibbs_rhat": max(float(az.rhat(overlaps[name])) for name in ("m_k", "m_v"))}
    for column, name in enumerate(("k", "v")):
        x = getattr(draws, name)
        first, second = x[:half].mean(axis=(0, 1)), x[half:].mean(axis=(0, 1))
        w = np.asarray(result.state.W[column])
        row[f"distance_{name}"] = float((w - first) @ (w - second)) / float(first @ second)
    k_draws, v_draws = thin_draws(draws.k, 200), thin_draws(draws.v, 200)
    predict = amp.amp_predictor(config, result.state, own_tilt=False)

    def difference(test):
        errors = [
            excess_error_given_teacher(config, teacher, test, f)
            for f in (
                predict(test.X, test.lengths),
                posterior_mean_predictor(config, k_draws, v_draws, test.X, test.lengths),
            )
        ]
        return errors[0] - errors[1]

    row["error_difference"] = float(
        streamed_mean(difference, key_test, config, teacher, 10_000).mean
    )
    return row


@pytest.mark.slow
def test_amp_agrees_with_the_exact_gibbs_posterior_on_the_same_data(full_size):
    """Spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1``, alpha = 2: AMP's posterior mean against
    Gibbs's.

    AMP is exact only as ``D -> inf``. Measured (docs/theory.md part C, 3-4 teachers each): the
    relative squared distance ``|W_hat - <W>|^2 / |<W>|^2`` is at most 1.1e-3 at D = 50 and 100;
    the test-error difference of the two training-set posterior means of ``f`` (same test set) has
    root mean square 0.36/D at D = 50 and 0.22/D at D = 100. Tolerances: a relative distance of
    1e-2 per teacher, and a root-mean-square error difference of 1/D (3x the largest measured).
    """
    D, teachers = (100, 4) if full_size else (50, 3)
    config = SPIKED.replace(D=D)
    every = [gibbs_comparison(config, 2.0, seed) for seed in range(teachers)]
    # the reference only where its chains agree: at D = 50 one teacher's Gibbs chains sit in two
    # modes (m_v 0.38 and 0.78 after 2000 sweeps), a finite-D metastability that r_hat reveals
    rows = [row for row in every if row["gibbs_rhat"] < 1.05]
    assert len(rows) >= 2, every
    for row in rows:
        assert row["distance_k"] < 1e-2 and row["distance_v"] < 1e-2, row
    rms = math.sqrt(np.mean([row["error_difference"] ** 2 for row in rows]))
    assert rms < 1.0 / D, rows


def tolerance(kind: str, D: int, seeds: int, se_samples: int = SE_SAMPLES) -> float:
    """Four standard errors of a mean over ``seeds`` runs (finite-size spread), plus the theory's
    error
    (``SE_ERROR`` scaled to ``se_samples`` draws)."""
    return 4 * FLUCTUATION[kind] / math.sqrt(D * seeds) + SE_ERROR * math.sqrt(
        SE_SAMPLES / se_samples
    )


@pytest.mark.slow
def test_amp_iterates_follow_the_state_evolution(full_size):
    """Plain GAMP (damping 1, no adaptation) from the random start, spiked alpha = 1: the overlaps
    ``m_k, q_k, m_v, q_v`` of the first four iterates against the state evolution's iterates from
    ``q = START_OVERLAP`` (Nishimori: ``m = q``). Beyond about six steps plain GAMP leaves the
    state evolution (the oscillating finite-size mode), so only the transient is compared.
    """
    D, seeds = (4000, 4) if full_size else (2000, 3)
    config = SPIKED.replace(D=D)
    start = amp.START_OVERLAP
    theory = bayes_state_evolution_history(
        config, alpha=1.0, start=(start, start), iterations=4, damping=1.0, mc_samples=SE_SAMPLES
    )
    expected = theory[:, [0, 0, 1, 1]]
    runs = []
    for seed in range(seeds):
        result, _ = small_run(config, 1.0, seed, damping=1.0, adaptive=False, max_iter=4, tol=1e-12)
        runs.append(np.asarray(result.history[:5]))
    mean = np.mean(runs, axis=0)
    assert np.all(np.abs(mean - expected) < tolerance("overlap", D, seeds)), (mean, expected)
    assert np.all(
        np.diff(mean[:, [0, 2]], axis=0) > 0
    )  # the overlaps grow, as the state evolution's


@pytest.mark.slow
@pytest.mark.parametrize("alpha", [1.0, 4.0])
def test_amp_fixed_point_matches_the_state_evolution(alpha, full_size):
    """Spiked ``nu = 2``, ``L = 3``, ``Delta = 0.1``: AMP's test error and overlaps at convergence
    (random start) against the state evolution's fixed point, averaged over exact teachers.
    Tolerance: :func:`tolerance` (measured finite-size spread, 4 standard errors)."""
    D, seeds = (2000, 4) if full_size else (1000, 2)
    settings = AMPSettings(alpha=alpha, N_test=10_000, mc_samples=SE_SAMPLES, history=False)
    rows = [amp_point(SPIKED.replace(D=D), settings, seed) for seed in range(seeds)]
    assert all(row.converged for row in rows)
    theory = rows[0].state_evolution
    assert theory.converged
    error = np.mean([row.test_error for row in rows])
    assert abs(error - theory.test_error) < tolerance("error", D, seeds)
    for name in ("m_k", "q_k", "m_v", "q_v"):
        value = np.mean([row.overlaps[name] for row in rows])
        assert abs(value - getattr(theory, "q_" + name[-1])) < tolerance("overlap", D, seeds), (
            name,
            value,
            theory,
        )


@pytest.mark.slow
@pytest.mark.parametrize("nu", [2.0, math.inf])
def test_amp_max_slr_matches_the_state_evolution(nu, full_size):
    """Max-SLR, ``L = 3``, ``Delta = 0.1``, alpha = 4: the location integrals shared with the state
    evolution (argmax probit at ``nu = inf``, Laplace-table softmax at ``nu = 2``) inside GAMP.

    Same tolerance rule as the spiked test (measured at D = 1000, nu = inf: overlaps within 0.017
    of the theory, errors within 0.01, docs/theory.md part C); the ``nu = inf`` theory's error is a
    Monte Carlo value, its standard error is added (4x).
    """
    D, seeds, se_samples = (1000, 2, SE_SAMPLES) if full_size else (200, 1, 2048)
    config = SLRConfig("max", D, LengthLaw.fixed(3), nu, 0.1)
    settings = AMPSettings(
        alpha=4.0,
        N_test=5_000 if full_size else 2_000,
        mc_samples=se_samples,
        history=False,
        tol=1e-6 if full_size else 1e-4,
    )  # 1e-4: far below the tolerance, half the iterations
    rows = [amp_point(config, settings, seed) for seed in range(seeds)]
    assert all(row.converged for row in rows)
    theory = rows[0].state_evolution
    assert theory.converged
    error = np.mean([row.test_error for row in rows])
    allowed = tolerance("error", D, seeds, se_samples) + 4 * theory.test_error_stderr
    assert abs(error - theory.test_error) < allowed, (error, theory)
    for name in ("m_k", "q_k", "m_v", "q_v"):
        value = np.mean([row.overlaps[name] for row in rows])
        assert abs(value - getattr(theory, "q_" + name[-1])) < tolerance(
            "overlap", D, seeds, se_samples
        ), (
            name,
            value,
            theory,
        )


def test_random_and_informed_starts_reach_the_same_fixed_point():
    """Spiked, alpha = 2 (no hard phase in the state evolution, docs/theory.md part B): both starts
    converge to one point, ``|W_random - W_informed|^2 / D`` below 1e-8 (the tolerance squared).
    The training set of the other runs at ``alpha = 2`` (their programs)."""
    config = SPIKED
    random_start, data = small_run(config, 2.0, tol=1e-7)
    key_teacher, _, key_start = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    informed = amp.run_amp(key_start, data, config, init="informed", teacher=teacher, tol=1e-7)
    assert bool(random_start.converged) and bool(informed.converged)
    gap = np.mean((np.asarray(random_start.state.W) - np.asarray(informed.state.W)) ** 2, axis=1)
    assert np.all(gap < 1e-8), gap


@pytest.mark.parametrize(
    "argv, name",
    [
        (["--damping", "0"], "damping"),
        (["--damping", "2"], "damping"),
        (["--alpha", "0"], "alpha"),
        (["--D", "1"], "D"),
        (["--seeds", "0"], "seeds"),
        (["--D", "100000", "--alpha", "64"], "GiB"),
    ],
)
def test_cli_refuses_bad_input_with_exit_2_and_writes_nothing(argv, name, tmp_path, capsys):
    out = tmp_path / "out"
    assert main(["amp", *argv, "--out", str(out), "--plot", str(tmp_path / "a.png")]) == 2
    assert name in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "a.png").exists()


def test_cli_json_rows_and_resume(tmp_path, capsys):
    """``bayes-slr amp --json``: one row per (alpha, seed) with the documented keys; a second run
    with
    the same ``--out`` reads the finished points back (same numbers, no recomputation)."""
    argv = [
        "amp",
        "--nu",
        "2",
        "--Delta",
        "0.1",
        "--D",
        "100",
        "--alpha",
        "2",
        "--seeds",
        "2",
        "--N-test",
        "2000",
        "--se-draws",
        "512",
        "--json",
        "--out",
        str(tmp_path),
    ]
    assert main(argv) == 0
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [(row["alpha"], row["seed"]) for row in rows] == [(2.0, 0), (2.0, 1)]
    for row in rows:
        assert {
            "alpha",
            "D",
            "seed",
            "test_error",
            "stderr",
            "overlaps",
            "iterations",
            "converged",
            "residual",
            "state_evolution",
        } <= set(row)
        assert set(row["overlaps"]) == {"m_k", "q_k", "m_v", "q_v"}
    assert main(argv) == 0
    assert json.loads(capsys.readouterr().out)["rows"] == rows
    assert (tmp_path / "amp.json").exists()


def test_cli_shows_the_iterations_bar_when_asked(capsys):
    """``bayes-slr amp`` shows a bar over the running point's iterations (besides the points bar) on
    stderr; ``--quiet`` shows neither."""
    argv = [
        "amp",
        "--nu",
        "2",
        "--Delta",
        "0.1",
        "--D",
        "100",
        "--alpha",
        "2",
        "--n-test",
        "1000",
        "--no-state-evolution",
        "--json",
    ]
    assert main([*argv, "--progress"]) == 0  # stderr is captured: bars only when asked
    err = capsys.readouterr().err
    assert "GAMP iterations" in err and "amp points" in err
    assert main(argv) == 0  # not a terminal: no bars by default
    err = capsys.readouterr().err
    assert "GAMP iterations" not in err and "amp points" not in err
    assert main([*argv, "--quiet"]) == 0
    err = capsys.readouterr().err
    assert "GAMP iterations" not in err and "amp points" not in err


def test_the_fewest_state_evolution_draws_fill_every_batch_of_the_standard_error():
    """``SE_DRAWS_MIN`` (importable without JAX) is two draws for each of the Bayes state
    evolution's replicates: the options refuse fewer, so the solver's batches hold two or more."""
    from bayes_slr.formulas.result import REPLICA_REPLICATES
    from bayes_slr.inference.amp_settings import SE_DRAWS_MIN

    assert SE_DRAWS_MIN == 2 * REPLICA_REPLICATES
    with pytest.raises(ConfigError, match="se_draws must be an integer >= 16"):
        AMPOptions(se_draws=SE_DRAWS_MIN - 1)
