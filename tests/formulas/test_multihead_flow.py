"""The ODEs of ``H_s`` student heads (docs/multihead.md, "Dynamics"): with ``H = H_s = 1`` they are
the one-head ODEs of :mod:`bayes_slr.formulas.flow`; their error at given overlap matrices is the
quadrature of aligned heads and the Monte Carlo of mixing heads; online SGD follows the SGD ODE.

Tolerances: Monte Carlo errors within 4 combined standard errors (plus the quadrature bound);
overlaps of the one-head comparison within 5% (the ODE's draws do not integrate the values, so
the relative Monte Carlo error of its rates at ``2^14`` draws is about 1%, and the flow integrates
it: measured 1.2% to 2.3% at ``t = 4.4``); overlaps of an online-SGD run at
dimension ``D`` within ``4/sqrt(D)`` of the ODE from its own start, as for one head
(tests/formulas/test_flow_vs_simulation.py).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.dynamics import (
    TrainingRun,
    head_axis,
    heads_point,
    run_keys,
    seed_teacher,
    start_params,
    train_dynamics,
)
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.attention.trajectory import HeadsPoint, as_matrix
from bayes_slr.formulas.flow import FlowRun, Overlaps, solve_flow
from bayes_slr.formulas.multihead_flow import HeadsFlowRun, heads_flow_error, solve_heads_flow
from bayes_slr.formulas.optimum import student_heads_error
from bayes_slr.formulas.optimum_record import StudentHead
from bayes_slr.formulas.population_mc import mixed_heads_error_mc
from bayes_slr.models.simulate import streamed_mean

ONE_HEAD = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0)
MATRICES = ("m_k", "q_k", "m_v", "q_v")


def point(m_k, q_k, m_v, q_v, c) -> HeadsPoint:
    """A logged point at time 0 with these overlaps, on the manifold (no error)."""
    m_k, q_k, m_v, q_v = (np.asarray(x, dtype=float) for x in (m_k, q_k, m_v, q_v))
    zeros = as_matrix(np.zeros_like(m_k))
    return HeadsPoint(
        None,
        0.0,
        *(as_matrix(x) for x in (m_k, q_k, m_v, q_v)),
        tuple(c),
        0.0,
        0.0,
        zeros,
        zeros,
        as_matrix(np.zeros_like(q_k)),
    )


@pytest.mark.parametrize(
    ("activation", "method", "t_max"), [("linear", "flow", 4.0), ("softmax", "sgd", 4.0)]
)
def test_one_head_is_the_one_head_flow(activation: str, method: str, t_max: float) -> None:
    """``H = H_s = 1`` from ``m = q = 0.01``: the linear flow against the one-head closed form
    (exact), the softmax SGD ODE (``eta = 1``, ``B = 8``) against the one-head Monte Carlo ODE;
    the overlaps within 5% at every logged time, the errors within 4 combined standard errors
    (of the error at the point) plus 5% of the distance travelled from the start's error (the
    path itself moves by the relative Monte Carlo error of the rates)."""
    step = dict(eta=1.0, batch=8) if method == "sgd" else {}
    settings = dict(t_max=t_max, method=method, log_points=10, mc_samples=2**14, **step)
    one = solve_flow(
        FlowRun(ONE_HEAD, activation, Overlaps(0.01, 0.01, 0.01, 0.01), seed=1, **settings)
    )
    start = point([[0.01]], [[0.01]], [[0.01]], [[0.01]], [0.0])
    heads = solve_heads_flow(HeadsFlowRun(ONE_HEAD, activation, start, **settings))
    assert np.allclose(heads.times(), [p.time for p in one.points])
    for a, b in zip(one.points, heads.points, strict=True):
        travelled = one.points[0].test_error - a.test_error
        tolerance = 4 * math.hypot(a.test_stderr, b.test_stderr) + 0.05 * abs(travelled)
        assert abs(a.test_error - b.test_error) <= tolerance
        for name in MATRICES:
            assert getattr(b, name)[0][0] == pytest.approx(getattr(a, name), rel=0.05), name
    assert heads.last.m_k[0][0] > 10 * start.m_k[0][0]  # it moved


def test_the_error_at_aligned_heads_is_the_quadrature() -> None:
    """Two teacher heads (``rho = 0.75``), three Bayes-softmax student heads, one of them extra
    (orthogonal to every teacher direction), the student's vectors orthogonal across heads: the
    ODE's error at these overlaps is :func:`student_heads_error`'s quadrature."""
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=0.75)
    heads = (
        StudentHead(1, 1.2, 1.6, 0.5, 0.3, -1.0),
        StudentHead(None, 0.0, 1.5, 0.0, 0.2, 0.5),
        StudentHead(0, 0.9, 1.0, 0.3, 0.1, -2.0),
    )
    m_k, m_v = np.zeros((2, 3, 2))
    for j, head in enumerate(heads):
        if head.teacher is not None:
            m_k[j, head.teacher], m_v[j, head.teacher] = head.m_k, head.m_v
    at = point(
        m_k,
        np.diag([h.q_k for h in heads]),
        m_v,
        np.diag([h.q_v for h in heads]),
        [h.c for h in heads],
    )
    run = HeadsFlowRun(config, "bayes_softmax", at, 1.0, mc_samples=2**15)
    error, stderr = heads_flow_error(run, at)
    exact = student_heads_error("bayes_softmax", config, heads)
    assert abs(error - exact.value) <= 4 * stderr + exact.error_bound


def test_the_error_at_mixing_heads_is_the_sequences_monte_carlo() -> None:
    """Two softmax heads each mixing both teacher heads (``rho = 0.5``, residuals orthogonal
    across heads): the ODE's error (values integrated) against
    :func:`mixed_heads_error_mc` (every value drawn), independent draws."""
    config = SLRConfig("spiked", 1, LengthLaw.uniform(4), 2.0, heads=2, presence=0.5)
    m_k = np.array([[1.0, 0.4], [0.3, 0.8]])
    m_v = np.array([[0.6, 0.2], [-0.1, 0.5]])
    residual_k, residual_v = np.array([0.5, 0.3]), np.array([0.2, 0.4])
    at = point(
        m_k, m_k @ m_k.T + np.diag(residual_k), m_v, m_v @ m_v.T + np.diag(residual_v), [0, 0]
    )
    error, stderr = heads_flow_error(
        HeadsFlowRun(config, "softmax", at, 1.0, mc_samples=2**14, seed=3), at
    )
    sequences = mixed_heads_error_mc(
        "softmax",
        config,
        m_k,
        np.diag(at.q_k),
        m_v,
        np.diag(at.q_v),
        samples=2**14,
    )
    assert abs(error - sequences.mean) <= 4 * math.hypot(stderr, sequences.stderr)


@pytest.mark.slow
def test_online_sgd_follows_its_ode(full_size: bool) -> None:
    """Two softmax heads on two teacher heads (``rho = 1``), ``eta = 1``, ``B = 32``, from the
    small random start: every entry of ``m_k, q_k, m_v, q_v`` of every seed within ``4/sqrt(D)``
    of the SGD ODE started at the seed's own start, at every logged time, through the plateau
    where both heads learn the sum of the teacher heads (full size: to ``t = 40``, past the
    heads' specialisation, at ``D = 100, 400``)."""
    sizes, seeds, t_max = ((100, 400), 2, 40.0) if full_size else ((100,), 1, 6.0)
    for D in sizes:
        config = SLRConfig("spiked", D, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2)
        for seed in range(seeds):
            run = TrainingRun(
                config,
                "softmax",
                "sgd",
                1.0,
                round(t_max * D),
                seed,
                batch=32,
                log_points=16,
                N_test=1000,
                token_draws="full",
                student_heads=2,
            )
            simulated = train_dynamics(run).heads
            ode = solve_heads_flow(
                HeadsFlowRun(
                    config,
                    "softmax",
                    simulated.points[0],
                    t_max,
                    method="sgd",
                    eta=1.0,
                    batch=32,
                    log_points=16,
                    t_min=simulated.points[1].time,
                    mc_samples=2**13,
                )
            )
            times = simulated.times()
            for name in MATRICES:
                reference = np.array(
                    [
                        np.interp(times, ode.times(), column)
                        for column in ode.stacked(name).reshape(len(ode.points), -1).T
                    ]
                ).T
                gap = simulated.stacked(name).reshape(len(times), -1) - reference
                assert np.max(np.abs(gap)) <= 4.0 / math.sqrt(D), (D, seed, name)


def test_a_start_off_the_manifold_is_refused() -> None:
    """``q < m m^T`` (Cauchy-Schwarz broken) has no frame; a start with the wrong number of
    teacher heads is refused."""
    bad = point([[0.5]], [[0.1]], [[0.1]], [[0.1]], [0.0])
    with pytest.raises(ConfigError, match="positive definite"):
        solve_heads_flow(HeadsFlowRun(ONE_HEAD, "softmax", bad, 1.0, mc_samples=8))
    with pytest.raises(ConfigError, match="teacher head"):
        HeadsFlowRun(ONE_HEAD.replace(heads=2), "softmax", bad, 1.0)


def test_the_error_off_the_manifold_is_the_simulated_error() -> None:
    """Two Bayes-softmax heads whose keys lean on the teacher values and values on the teacher keys
    (every cross overlap nonzero), on two teacher heads (``rho = 0.5``, exact teacher,
    ``D = 12``): the ODE's error at the heads' overlaps against the same heads' squared error
    on simulated sequences, within 4 combined standard errors."""
    config = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2, presence=0.5)
    run = TrainingRun(
        config, "bayes_softmax", "sgd", 1.0, 1, seed=4, token_draws="full", student_heads=2
    )
    teacher = head_axis(seed_teacher(run))
    noise = start_params(run_keys(run.seed).start, config, "random", None, 2)
    k = 0.9 * teacher.k_star + 0.4 * teacher.v_star[::-1] + 3.0 * noise.k
    v = 0.6 * teacher.v_star - 0.3 * teacher.k_star[::-1] + 3.0 * noise.v
    params = AttentionParams(k, v, jnp.array([-1.0, 0.5]))
    at = heads_point(params, teacher, 0, 0.0, 0.0, 0.0)
    assert at.largest_cross_overlap > 0.2
    error, stderr = heads_flow_error(
        HeadsFlowRun(config, "bayes_softmax", at, 1.0, mc_samples=2**15), at
    )
    simulated = streamed_mean(
        lambda batch: (batch.y - predict(params, batch.X, batch.lengths, "bayes_softmax")) ** 2,
        jax.random.PRNGKey(5),
        config,
        teacher,
        2**15,
    )
    assert abs(error - float(simulated.mean)) <= 4 * math.hypot(stderr, float(simulated.stderr))


@pytest.mark.parametrize("method", ["flow", "sgd"])
def test_a_start_on_the_manifold_stays_on_it(method: str) -> None:
    """Two heads on two teacher heads (``rho = 0.5``) from a start without cross overlaps: the
    value-flipped antithetic pairs make the manifold exactly invariant, so every cross overlap
    stays 0 (to rounding) while the overlaps move."""
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, heads=2, presence=0.5)
    m = np.array([[0.05, 0.02], [0.01, 0.04]])
    at = point(m, m @ m.T + 0.01 * np.eye(2), m[::-1], m @ m.T + 0.02 * np.eye(2), [0.0, 0.0])
    step = dict(eta=1.0, batch=4) if method == "sgd" else {}
    trajectory = solve_heads_flow(
        HeadsFlowRun(
            config, "softmax", at, 2.0, method=method, log_points=4, mc_samples=2**10, **step
        )
    )
    assert max(p.largest_cross_overlap for p in trajectory.points) < 1e-12
    assert np.max(np.abs(trajectory.stacked("m_v")[-1] - at.m_v)) > 0.05
