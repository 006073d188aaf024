"""Gradient training on data (gd, sgd, projected) and its trajectory.

Independent routes: the 4-dimensional reduction of the test error against the plain estimator at
the full dimension (Monte Carlo, four combined standard errors); gradient descent against
SciPy's L-BFGS-B on the same training set and objective (the same minimum of a smooth
objective); exact invariants (norms on the sphere, monotone
descent at a small step, a resumed run equal bit for bit to an uninterrupted one in one process).
"""

from __future__ import annotations

import dataclasses
import json
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import optimize

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.dynamics import (
    LOSS_LIMIT,
    SGD_TOKEN_DTYPE,
    TOKEN_DRAWS,
    TrainingRun,
    run_keys,
    seed_start_overlaps,
    start_params,
    train_dynamics,
)
from bayes_slr.attention.estimators import AttentionParams, attention_predictor, predict
from bayes_slr.attention.projected_tokens import projected_value_and_grad
from bayes_slr.attention.span import span_test_error
from bayes_slr.attention.training import objective
from bayes_slr.attention.trajectory import (
    Checkpoint,
    DivergenceError,
    Trajectory,
    TrajectoryPoint,
    first_crossing,
    log_spaced_times,
)
from bayes_slr.models.scoring import excess_test_error
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.records import json_text

SPIKED = SLRConfig("spiked", 24, LengthLaw.fixed(3), 2.0)
MAX = SLRConfig("max", 24, LengthLaw.uniform(4), math.inf, Delta=0.1)


@pytest.mark.parametrize(
    "config, activation", [(MAX, "softmax"), (SPIKED, "erf")], ids=["max-variable", "spiked"]
)
def test_span_test_error_is_the_test_error(config: SLRConfig, activation: str, key) -> None:
    """Off the manifold (cross overlaps and an unaligned teacher from the prior): the reduced
    problem's error equals the full-dimensional one within four combined standard errors."""
    keys = jax.random.split(key, 4)
    teacher = draw_teacher(keys[0], config.D)
    noise = jax.random.normal(keys[1], (2, config.D))
    params = AttentionParams(
        0.8 * teacher.k_star + 0.4 * teacher.v_star + noise[0],
        0.7 * teacher.v_star + 0.3 * teacher.k_star + 0.5 * noise[1],
        jnp.asarray(0.2),
    )
    full = excess_test_error(
        keys[2], config, teacher, attention_predictor(params, activation), N_test=40_000
    )
    reduced = span_test_error(keys[3], config, teacher, params, activation, 40_000)
    assert abs(full.value - reduced.value) <= 4.0 * math.hypot(full.stderr, reduced.stderr)


def small_run(**changes) -> TrainingRun:
    settings = dict(
        config=SPIKED,
        activation="softmax",
        method="gd",
        eta=0.5,
        steps=400,
        alpha=8.0,
        lam=1.0,
        log_points=8,
        N_test=2000,
    )
    settings.update(changes)
    return TrainingRun(**settings)


@pytest.mark.parametrize("token_draws", TOKEN_DRAWS)
def test_an_sgd_step_moves_by_eta_times_the_batch_mean_gradient(token_draws: str) -> None:
    """The convention of docs/dynamics.md, against a gradient written out here: one online-SGD
    step moves ``k`` and ``v`` by ``eta`` times the gradient of the batch's mean ``(y - f)^2 / 2``
    (the batch of step 0 is drawn from ``fold_in(stream, 0)``: all its tokens, or through the
    span, ``projected_value_and_grad``; the ``D``-dimensional numbers in ``SGD_TOKEN_DTYPE``),
    the erf offset by ``eta / D`` times it, and advances the time by ``eta / D``; the first logged
    point is the seed's start, signs included (``seed_start_overlaps``, what the ODEs of
    ``bayes-slr dynamics`` start at)."""
    eta, batch = 0.7, 8
    run = small_run(
        activation="erf",
        method="sgd",
        eta=eta,
        steps=1,
        batch=batch,
        alpha=None,
        lam=0.0,
        seed=3,
        token_draws=token_draws,
    )
    trajectory = train_dynamics(run)
    keys = run_keys(run.seed)
    teacher = draw_teacher(keys.teacher, SPIKED.D, exact=True)
    start = start_params(keys.start, SPIKED, "random", teacher)
    step_key = jax.random.fold_in(keys.stream, 0)
    if token_draws == "full":
        fresh = simulate(step_key, SPIKED, teacher, batch, token_dtype=SGD_TOKEN_DTYPE)
        gradient = jax.grad(
            lambda p: 0.5 * jnp.mean((fresh.y - predict(p, fresh.X, fresh.lengths, "erf")) ** 2)
        )(start)
    else:
        _, gradient = projected_value_and_grad(
            start, step_key, SPIKED, teacher, batch, "erf", SGD_TOKEN_DTYPE
        )
    D = SPIKED.D
    np.testing.assert_allclose(trajectory.final.k, start.k - eta * gradient.k, atol=1e-13)
    np.testing.assert_allclose(trajectory.final.v, start.v - eta * gradient.v, atol=1e-13)
    assert float(trajectory.final.c) == pytest.approx(-eta / D * float(gradient.c), abs=1e-15)
    assert trajectory.last.time == pytest.approx(eta / D, rel=1e-15)
    first = dataclasses.asdict(trajectory.points[0])
    for name, value in seed_start_overlaps(SPIKED, "random", run.seed).items():
        assert value == pytest.approx(first[name], abs=1e-15), name


def test_gradient_descent_reaches_the_quasi_newton_minimum() -> None:
    """Same training set and ridge: GD from the random start ends where SciPy's L-BFGS-B (from
    the same start, gradient tolerance 1e-10) ends: objectives within 1e-9 (GD's remaining
    linear-rate error after these steps is below 1e-11), parameters within 1e-4; a small step
    descends monotonically."""
    run = small_run(steps=1500, log_points=4)
    keys = run_keys(run.seed)
    teacher = draw_teacher(keys.teacher, SPIKED.D, exact=True)
    batch = simulate(keys.data, SPIKED, teacher, round(run.alpha * SPIKED.D))
    trajectory = train_dynamics(run, teacher=teacher, training_set=batch)

    D = SPIKED.D
    value_and_grad = jax.jit(
        jax.value_and_grad(
            lambda x: objective(
                AttentionParams(x[:D], x[D:], jnp.zeros(())),
                batch.X,
                batch.lengths,
                batch.y,
                "softmax",
                run.lam,
            )
        )
    )
    start = start_params(keys.start, SPIKED, "random", teacher)
    result = optimize.minimize(
        lambda x: tuple(np.asarray(a, dtype=float) for a in value_and_grad(jnp.asarray(x))),
        np.concatenate([start.k, start.v]),
        jac=True,
        method="L-BFGS-B",
        options={"gtol": 1e-10, "ftol": 0.0, "maxiter": 5000},
    )
    assert result.success
    assert trajectory.last.loss == pytest.approx(result.fun, abs=1e-9)
    np.testing.assert_allclose(trajectory.final.k, result.x[:D], atol=1e-4)
    np.testing.assert_allclose(trajectory.final.v, result.x[D:], atol=1e-4)
    assert np.all(np.diff(trajectory.column("loss")) <= 1e-12)


def test_a_resumed_projected_run_equals_an_uninterrupted_one() -> None:
    """Projected SGD (its stream keyed by step): stopping after the third logged point and
    resuming from that checkpoint gives the same trajectory, bit for bit (one process); the norms
    stay on the sphere to rounding and the overlaps move."""
    run = small_run(
        method="sgd",
        alpha=None,
        lam=0.0,
        eta=1.0,
        steps=300,
        batch=2,
        log_points=6,
        sphere=True,
        start="sphere",
    )
    seen: list[Checkpoint] = []
    whole = train_dynamics(run, on_log=seen.append)
    assert [c.step for c in seen] == [p.step for p in whole.points]
    resumed = train_dynamics(run, resume=seen[2])
    assert resumed.points == whole.points
    np.testing.assert_array_equal(resumed.final.k, whole.final.k)
    np.testing.assert_allclose(whole.column("q_k"), 1.0, atol=1e-12)
    np.testing.assert_allclose(whole.column("q_v"), 1.0, atol=1e-12)
    assert abs(whole.last.m_v - whole.points[0].m_v) > 0.05


def test_projected_gradient_descent_stays_on_the_sphere() -> None:
    trajectory = train_dynamics(small_run(sphere=True, start="sphere", steps=40, log_points=3))
    np.testing.assert_allclose(trajectory.column("q_k"), 1.0, atol=1e-12)
    np.testing.assert_allclose(trajectory.column("q_v"), 1.0, atol=1e-12)


def test_divergence_stops_with_the_step_size_and_a_finite_iterate() -> None:
    run = small_run(eta=200.0, steps=200)
    with pytest.raises(DivergenceError, match="eta = 200") as raised:
        train_dynamics(run)
    error = raised.value
    assert error.eta == 200.0 and not (math.isfinite(error.loss) and error.loss <= LOSS_LIMIT)
    checkpoint = error.checkpoint
    assert all(np.all(np.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(checkpoint.state))
    assert checkpoint.points[-1].step == checkpoint.step == error.at - 1
    assert math.isfinite(checkpoint.points[-1].loss)


@pytest.mark.parametrize(
    "changes, message",
    [
        (dict(eta=0.0), "eta"),
        (dict(eta=-1.0), "eta"),
        (dict(eta=math.nan), "eta"),
        (dict(steps=0), "steps"),
        (dict(steps=2.5), "steps"),
        (dict(method="sgd", alpha=None, lam=0.0, batch=0), "batch"),
        (dict(method="sgd", alpha=None, lam=0.0, batch=1.5), "batch"),
        (dict(alpha=None), "alpha"),
        (dict(method="sgd"), "alpha"),
        (dict(alpha=0.0), "alpha"),
        (dict(lam=-1.0), "lam"),
        (dict(method="adam"), "method"),
        (dict(start="zero"), "start"),
        (dict(method="sgd", alpha=None, lam=0.0, token_draws="half"), "token_draws"),
        (dict(activation="relu"), "activation"),
        (dict(log_points=1), "log_points"),
        (dict(N_test=1), "N_test"),
    ],
)
def test_bad_settings_raise_config_error(changes: dict, message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        small_run(**changes)


def test_trajectory_records_and_crossing_times() -> None:
    """A point survives its JSON record (non-finite values included); crossing times interpolate
    linearly in time and report ``nan`` when the level is never reached."""
    points = tuple(
        TrajectoryPoint(
            step=s,
            time=t,
            m_k=m,
            q_k=1.0,
            m_v=0.0,
            q_v=1.0,
            k_vstar=0.0,
            v_kstar=0.0,
            k_v=0.0,
            c=0.0,
            test_error=1.0,
            test_stderr=0.0,
            loss=math.inf if s == 3 else 0.5,
        )
        for s, t, m in ((0, 0.0, 0.0), (1, 1.0, 0.1), (2, 4.0, 0.5), (3, 16.0, 0.9))
    )
    trajectory = Trajectory(small_run(), points)
    assert trajectory.crossing_time("m_k", 0.3) == pytest.approx(2.5)  # halfway between 1 and 4
    assert math.isnan(trajectory.crossing_time("m_k", 2.0))
    stored = Trajectory.from_dict(json.loads(json_text(trajectory.to_dict())), TrainingRun)
    assert stored.settings == trajectory.settings and stored.points == points
    with pytest.raises(ConfigError, match="name"):
        trajectory.column("overlap")


def test_crossing_time_is_exact_to_the_interpolation_error() -> None:
    """A trajectory with a known crossing, logged as the ODEs log (40 log-spaced times): an
    escape ``m(t) = 0.01 exp(t)`` reaches 0.4 at ``log 40``; the linear reading between the two
    logged points around it is off by at most ``dt^2 max m'' / (8 min m')``, and on the early side
    (the chord of a convex curve reaches the level first); a linear trajectory is read exactly."""
    times = log_spaced_times(40.0, 1e-2, 40)
    exact = math.log(40.0)
    found = first_crossing(times, 0.01 * np.exp(times), 0.4)
    i = int(np.searchsorted(times, exact))
    dt = times[i] - times[i - 1]
    bound = dt**2 / 8.0 * math.exp(dt)  # max m'' / min m' over the interval
    assert bound < 0.3 * dt  # finer than the nearest logged point (error up to dt / 2)
    assert -bound <= found - exact <= 0.0
    assert first_crossing(times, 0.1 * times - 0.2, 0.4) == pytest.approx(6.0, abs=1e-12)


def test_starts() -> None:
    teacher = draw_teacher(jax.random.PRNGKey(0), SPIKED.D, exact=True)
    sphere = start_params(jax.random.PRNGKey(1), SPIKED, "sphere", teacher)
    assert float(sphere.k @ sphere.k) == pytest.approx(SPIKED.D)
    informed = start_params(jax.random.PRNGKey(1), SPIKED, "informed", teacher)
    np.testing.assert_allclose(informed.k, math.sqrt(2.0) * teacher.k_star)
    assert dataclasses.is_dataclass(small_run())
