"""Online SGD of ``H_s`` student heads (docs/multihead.md, "Dynamics"): one step against a
gradient written out head by head, the logged overlap matrices against the teacher, the
refusals."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.dynamics import SGD_TOKEN_DTYPE
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.attention.multihead_sgd import (
    HeadsSGDRun,
    heads_point,
    heads_run_keys,
    run_start,
    run_teacher,
    train_heads_sgd,
)
from bayes_slr.models.simulate import simulate

TASK = SLRConfig("spiked", 12, LengthLaw.uniform(3), 2.0, Delta=0.1, heads=2, presence=0.5)


def test_an_sgd_step_moves_by_eta_times_the_batch_mean_gradient() -> None:
    """One step of three Bayes-softmax heads moves every ``k_j``, ``v_j`` by ``eta`` times the
    gradient of the batch's mean ``(y - f)^2 / 2`` and ``c_j`` by ``eta / D`` times it, with ``f``
    written here as a sum over heads of ``e^chi / (e^-c + sum e^chi)`` (the batch of step 0 from
    ``fold_in(stream, 0)``); the logged overlaps are those of the stepped parameters, the time is
    ``eta / D``."""
    eta, batch = 0.6, 5
    run = HeadsSGDRun(TASK, "bayes_softmax", 3, eta=eta, steps=1, batch=batch, seed=2, N_test=8)
    trajectory = train_heads_sgd(run)
    teacher = run_teacher(run)
    fresh = simulate(
        jax.random.fold_in(heads_run_keys(run.seed).stream, 0),
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

    start = run_start(run)
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
    the same permutation; the first logged point is the seed's start."""
    run = HeadsSGDRun(TASK, "softmax", 3, eta=0.1, steps=2, seed=1, N_test=8)
    teacher = run_teacher(run)
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
    first = train_heads_sgd(run).points[0]
    start = heads_point(run_start(run), teacher, 0, 0.0, 0.0, 0.0)
    assert first.m_k == start.m_k and first.q_v == start.q_v
    assert np.allclose(np.diag(first.q_k), run.init_scale**2, rtol=0.9)


@pytest.mark.parametrize(
    ("field", "value"),
    [("eta", 0.0), ("student_heads", 0), ("steps", 0), ("batch", 0), ("init_scale", -1.0)],
)
def test_bad_settings_are_refused(field: str, value: float) -> None:
    settings = dict(config=TASK, activation="softmax", student_heads=2, eta=1.0, steps=10)
    with pytest.raises(ConfigError, match=field):
        HeadsSGDRun(**{**settings, field: value})


def test_the_cross_overlaps_are_read() -> None:
    """Student keys along the teacher values and values along the teacher keys: the cross
    overlaps ``k.v*``, ``v.k*`` are the identity, ``k.v`` zero, and the largest is 1."""
    run = HeadsSGDRun(TASK, "softmax", 2, eta=0.1, steps=2, seed=1, N_test=8)
    teacher = run_teacher(run)
    params = AttentionParams(teacher.v_star, teacher.k_star, jnp.zeros(2))
    point = heads_point(params, teacher, 0, 0.0, 0.0, 0.0)
    np.testing.assert_allclose(point.k_vstar, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(point.v_kstar, np.eye(2), atol=1e-12)
    np.testing.assert_allclose(point.k_v, np.zeros((2, 2)), atol=1e-12)
    np.testing.assert_allclose(point.m_k, np.zeros((2, 2)), atol=1e-12)
    assert point.largest_cross_overlap == pytest.approx(1.0)
