"""Training runs of ``H_s`` student heads (``TrainingRun(student_heads=...)``, docs/multihead.md,
"Dynamics"): one online-SGD step against a gradient written out head by head, the logged overlap
matrices against the teacher, full-batch gradient descent of heads, divergence, the refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.dynamics import (
    SGD_TOKEN_DTYPE,
    TrainingRun,
    head_axis,
    heads_point,
    run_keys,
    seed_teacher,
    start_params,
    train_dynamics,
)
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.attention.training import RANDOM_INIT_SCALE
from bayes_slr.attention.trajectory import DivergenceError, HeadsPoint
from bayes_slr.models.simulate import simulate

TASK = SLRConfig("spiked", 12, LengthLaw.uniform(3), 2.0, Delta=0.1, heads=2, presence=0.5)
ONE_STEP = dict(eta=0.6, steps=1, batch=5, seed=2, N_test=8)
"""One online-SGD step of a small batch: the run of the tests that read a run's first points."""


def heads_run(activation: str, student_heads: int, **settings) -> TrainingRun:
    """An online-SGD run of ``student_heads`` heads on :data:`TASK`."""
    return TrainingRun(
        TASK, activation, "sgd", token_draws="full", student_heads=student_heads, **settings
    )


def seed_start(run: TrainingRun) -> AttentionParams:
    """The random start of ``run``'s seed."""
    return start_params(run_keys(run.seed).start, run.config, "random", None, run.student_heads)


def test_an_sgd_step_moves_by_eta_times_the_batch_mean_gradient() -> None:
    """One step of three Bayes-softmax heads moves every ``k_j``, ``v_j`` by ``eta`` times the
    gradient of the batch's mean ``(y - f)^2 / 2`` and ``c_j`` by ``eta / D`` times it, with ``f``
    written here as a sum over heads of ``e^chi / (e^-c + sum e^chi)`` (the batch of step 0 from
    ``fold_in(stream, 0)``); the logged overlaps are those of the stepped parameters, the time is
    ``eta / D``."""
    eta, batch = ONE_STEP["eta"], ONE_STEP["batch"]
    run = heads_run("bayes_softmax", 3, **ONE_STEP)
    trajectory = train_dynamics(run).heads
    teacher = seed_teacher(run)
    fresh = simulate(
        jax.random.fold_in(run_keys(run.seed).stream, 0),
        TASK,
        teacher,
        batch,
        token_dtype=SGD_TOKEN_DTYPE,
    )
    mask = jnp.arange(TASK.Lbar) < fresh.lengths[:, None]

    def loss(p: AttentionParams) -> jax.Array:
        f = 0.0
        for j in range(3):
            chi = fresh.X @ p.k[j] / jnp.sqrt(TASK.D)
            z = fresh.X @ p.v[j] / jnp.sqrt(TASK.D)
            e = jnp.where(mask, jnp.exp(chi), 0.0)
            f = f + jnp.sum(e * z, -1) / (jnp.exp(-p.c[j]) + jnp.sum(e, -1))
        return 0.5 * jnp.mean((fresh.y - f) ** 2)

    start = seed_start(run)
    gradient = jax.grad(loss)(start)
    stepped = AttentionParams(
        start.k - eta * gradient.k, start.v - eta * gradient.v, -eta / TASK.D * gradient.c
    )
    expected = heads_point(stepped, teacher, 1, eta / TASK.D, 0.0, 0.0)
    last = trajectory.last
    assert last.step == 1 and last.time == pytest.approx(eta / TASK.D, rel=1e-15)
    for name in ("m_k", "q_k", "m_v", "q_v"):
        np.testing.assert_allclose(getattr(last, name), getattr(expected, name), atol=1e-12)
    np.testing.assert_allclose(last.c, expected.c, atol=1e-15)
    assert np.all(np.asarray(start.c) == 0.0) and np.any(np.asarray(last.c) != 0.0)


def test_the_logged_overlaps_read_a_permuted_teacher() -> None:
    """Student heads equal to the teacher heads in reverse order, plus a zero head: ``m`` is the
    reversed identity (exact teacher, squared norms ``D``), ``q`` the Gram matrix, the cosines
    the same permutation; the first logged point is the seed's start (of the run of the test
    above: its compiled program)."""
    run = heads_run("bayes_softmax", 3, **ONE_STEP)
    teacher = seed_teacher(run)
    zero = jnp.zeros((1, TASK.D))
    params = AttentionParams(
        jnp.concatenate([teacher.k_star[::-1], zero]),
        jnp.concatenate([teacher.v_star[::-1], zero]),
        jnp.zeros(3),
    )
    point = heads_point(params, teacher, 0, 0.0, 0.0, 0.0)
    reversed_identity = np.array([[0.0, 1.0], [1.0, 0.0], [0.0, 0.0]])
    np.testing.assert_allclose(point.m_k, reversed_identity, atol=1e-12)
    np.testing.assert_allclose(point.m_v, reversed_identity, atol=1e-12)
    np.testing.assert_allclose(point.q_k, np.diag([1.0, 1.0, 0.0]), atol=1e-12)
    np.testing.assert_allclose(point.cosines("v"), reversed_identity, atol=1e-12)
    first = train_dynamics(run).points[0]
    start = heads_point(seed_start(run), teacher, 0, 0.0, 0.0, 0.0)
    assert isinstance(first, HeadsPoint)
    assert first.m_k == start.m_k and first.q_v == start.q_v
    assert np.allclose(np.diag(first.q_k), RANDOM_INIT_SCALE**2, rtol=0.9)


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("eta", 0.0),
        ("student_heads", 0),
        ("steps", 0),
        ("batch", 0),
        ("start", "sphere"),
        ("sphere", True),
        ("token_draws", "projected"),
    ],
)
def test_bad_settings_are_refused(field: str, value: object) -> None:
    settings = dict(
        config=TASK,
        activation="softmax",
        method="sgd",
        student_heads=2,
        eta=1.0,
        steps=10,
        token_draws="full",
    )
    with pytest.raises(ConfigError, match=field):
        TrainingRun(**{**settings, field: value})
    with pytest.raises(ConfigError, match="D must be an integer >= 4"):
        TrainingRun(**{**settings, "config": TASK.replace(D=3)})


def test_the_cross_overlaps_are_read() -> None:
    """Student keys along the teacher values and values along the teacher keys: the cross
    overlaps ``k.v*``, ``v.k*`` are the identity, ``k.v`` zero, and the largest is 1."""
    run = heads_run("softmax", 2, eta=0.1, steps=2, seed=1, N_test=8)
    teacher = seed_teacher(run)
    params = AttentionParams(teacher.v_star, teacher.k_star, jnp.zeros(2))
    point = heads_point(params, teacher, 0, 0.0, 0.0, 0.0)
    np.testing.assert_allclose(point.k_vstar, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(point.v_kstar, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(point.k_v, np.zeros((2, 2)), atol=1e-12)
    np.testing.assert_allclose(point.m_k, np.zeros((2, 2)), atol=1e-12)
    assert point.largest_cross_overlap == pytest.approx(1.0)


def test_gradient_descent_of_heads_steps_on_the_objective_of_its_training_set() -> None:
    """Full-batch gradient descent of two heads on the seed's training set: a step of size
    ``eta`` moves ``k_j``, ``v_j`` by ``eta D`` times the gradient of the per-sample objective
    and ``c_j`` by ``eta`` times it (one head's rule); the objective falls along a longer run."""
    from bayes_slr.attention.dynamics import seed_training_set
    from bayes_slr.attention.training import objective

    settings = dict(alpha=4.0, lam=0.1, student_heads=2, N_test=8)
    run = TrainingRun(TASK, "softmax", "gd", eta=0.05, steps=1, **settings)
    data = seed_training_set(run, seed_teacher(run))
    start = seed_start(run)

    def loss(p: AttentionParams) -> jax.Array:
        return objective(p, data.X, data.lengths, data.y, "softmax", 0.1)

    gradient = jax.grad(loss)(start)
    D, eta = TASK.D, run.eta
    stepped = AttentionParams(
        start.k - eta * D * gradient.k, start.v - eta * D * gradient.v, -eta * gradient.c
    )
    final = train_dynamics(run).final
    for got, want in zip(final, stepped, strict=True):
        np.testing.assert_allclose(got, want, atol=1e-12)
    longer = train_dynamics(TrainingRun(TASK, "softmax", "gd", eta=0.05, steps=200, **settings))
    assert float(loss(longer.final)) < float(loss(start))
    assert longer.last.time == pytest.approx(200 * eta)


def test_a_diverging_run_of_heads_keeps_its_last_finite_iterate() -> None:
    """A step far too large: the run stops with ``DivergenceError`` naming the step size, its
    checkpoint the heads' last finite iterate and points."""
    run = heads_run("softmax", 2, eta=1e6, steps=50, N_test=8)
    with pytest.raises(DivergenceError, match="eta = 1e") as caught:
        train_dynamics(run)
    checkpoint = caught.value.checkpoint
    assert checkpoint is not None and np.shape(checkpoint.state.k) == (2, TASK.D)
    assert all(isinstance(p, HeadsPoint) for p in checkpoint.points)


def test_one_student_head_on_one_head_slr_is_the_one_head_run() -> None:
    """``student_heads=1`` on one-head SLR: scalar points, the parameters without a head axis;
    the same parameters given a head axis read the same overlaps as a point of heads."""
    config = TASK.replace(heads=1, presence=1.0)
    run = TrainingRun(config, "softmax", "sgd", eta=1.0, steps=3, N_test=8, student_heads=1)
    trajectory = train_dynamics(run)
    assert not run.heads_run and np.shape(trajectory.final.k) == (config.D,)
    params = trajectory.final
    as_heads = AttentionParams(params.k[None], params.v[None], params.c[None])
    point = heads_point(as_heads, head_axis(seed_teacher(run)), 3, 0.0, 0.0, 0.0)
    assert point.m_k[0][0] == pytest.approx(trajectory.last.m_k, abs=1e-12)
    assert point.q_v[0][0] == pytest.approx(trajectory.last.q_v, abs=1e-12)
