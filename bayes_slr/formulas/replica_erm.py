"""Replica-symmetric equations for ridge-regularised square-loss ERM of attention (docs/theory.md).

Six order parameters, ``(m_a, q_a, V_a)`` for ``a in {k, v}`` (cross overlaps vanish by
the ``v* -> -v*`` reflection symmetry), plus the erf offset ``c``. The ridge side is
closed form; the channel side is a Monte Carlo average, over fixed draws, of the
per-sample proximal problem over the ``L x 2`` matrix of student projections (value
projections in closed form, key projections by a batched Newton method with a
Gershgorin shift and backtracking). Derivatives of the proximal map
come from the implicit function theorem at the solution. Each point reports the
replicon (de Almeida-Thouless) eigenvalue: above 1 the replica-symmetric fixed point is
unstable and its numbers are not the ERM's (docs/theory.md, "What is verified").
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import attention_weights, get_activation, theory_terms_of
from bayes_slr.errors import check_int, check_real
from bayes_slr.formulas.channel import ChannelDraws, quasi_random_channel, student_fields
from bayes_slr.formulas.fixed_point import (
    FixedPointResult,
    damped_fixed_point,
    damped_or_chord_fixed_point,
    difference_inverse,
    host_map,
    replicate_stderr,
)
from bayes_slr.formulas.population import population_error
from bayes_slr.formulas.result import (
    REPLICA_DRAWS,
    REPLICA_MAX_DRAWS,
    REPLICA_REPLICATES,
    ERMTheoryDiagnostics,
    TheoryPoint,
    check_solver_options,
)
from bayes_slr.memory import channel_chunk
from bayes_slr.models.spec import SLRConfig

NEWTON_STEPS = 12
BACKTRACK_STEPS = 20
VHAT_FLOOR = 1e-3
DEFAULT_DRAWS = REPLICA_DRAWS
DEFAULT_REPLICATES = REPLICA_REPLICATES
OFFSET_STEP_MAX = 1.0
"""Trust radius of one step on the erf offset ``c``: the scale of the activation's argument
``c + chi`` (``erf`` goes from linear to saturated over about one unit of it)."""


class ERMOrderParameters(NamedTuple):
    """Order parameters of the ERM fixed point, each ``(2,)`` ordered ``(k, v)``, and the erf
    offset.

    Attributes
    ----------
    m : overlaps with the teacher, ``k.k*/D`` and ``v.v*/D``.
    q : self-overlaps ``|k|^2/D`` and ``|v|^2/D``.
    V : susceptibilities (the ridge-side variances of the proximal problem).
    c : erf offset (0 and unused for the other activations).
    """

    m: jax.Array
    q: jax.Array
    V: jax.Array
    c: jax.Array


def _sample_loss(
    h: jax.Array, c: jax.Array, y: jax.Array, mask: jax.Array, activation: str
) -> jax.Array:
    """Square loss of one sample for student projections ``h`` of shape ``(Lbar, 2)``."""
    weights = attention_weights(activation, h[:, 0], mask, c)
    return 0.5 * (y - jnp.sum(weights * h[:, 1])) ** 2


def _prox_objective(z: jax.Array, y, omega, inv_V, mask, activation: str) -> jax.Array:
    """Proximal objective of ``z = (h.ravel(), c)``: loss plus ``sum (h - omega)^2 / (2 V)``."""
    h = z[:-1].reshape(omega.shape)
    return _sample_loss(h, z[-1], y, mask, activation) + 0.5 * jnp.sum((h - omega) ** 2 * inv_V)


def _value_projections(h_k, y, omega, V, mask, activation: str, c) -> tuple[jax.Array, jax.Array]:
    """Minimise the proximal objective over the value projections in closed form.

    The loss is quadratic in ``h_v`` given ``h_k``: with ``a = s(h_k)``,
    ``h_v = omega_v + V_v r a`` and ``r = (y - a.omega_v) / (1 + V_v |a|^2)``; the
    minimum is ``(y - a.omega_v)^2 / (2 (1 + V_v |a|^2))``. Returns ``(h_v, minimum)``.
    """
    weights = attention_weights(activation, h_k, mask, c)
    spread = 1.0 + V[1] * jnp.sum(weights**2)
    residual = (y - jnp.sum(weights * omega[:, 1])) / spread
    return omega[:, 1] + V[1] * residual * weights, 0.5 * residual**2 * spread


class ProxSolution(NamedTuple):
    """Per-sample output of the proximal solve (leading axis: samples)."""

    f_out: jax.Array  # (Lbar, 2): (hhat - omega) / V
    df_out: jax.Array  # (Lbar, 2): diagonal of d f_out / d omega
    jacobian_square: jax.Array  # (4, 4): sum_{l,l'} J_{la,l'c} J_{lb,l'd}, J = d f_out / d omega
    grad_c: jax.Array  # (): d(Moreau envelope)/dc
    curv_c: jax.Array  # (): d^2(Moreau envelope)/dc^2 (Schur complement)
    stationarity: jax.Array  # (): max |gradient| at the solution, times V_k
    min_curvature: (
        jax.Array
    )  # (): smallest eigenvalue of the full Hessian at the solution, times max V


def _newton_direction(g: jax.Array, hessian: jax.Array) -> jax.Array:
    """Newton direction, or a Gershgorin-shifted one where the Hessian is not positive definite."""
    factor = jnp.linalg.cholesky(hessian)
    newton = jax.scipy.linalg.cho_solve((factor, True), -g[:, None])[:, 0]
    radius = jnp.sum(jnp.abs(hessian), axis=1) - jnp.abs(jnp.diag(hessian))
    shift = jnp.maximum(0.0, jnp.max(radius - jnp.diag(hessian))) + 1e-3 * jnp.max(
        jnp.abs(jnp.diag(hessian))
    )
    shifted = jnp.linalg.solve(hessian + shift * jnp.eye(g.size), -g)
    return jnp.where(jnp.all(jnp.isfinite(newton)), newton, shifted)


def _solve_prox(y, omega, mask, V, c, activation: str) -> ProxSolution:
    """Minimise the proximal objective of one sample (``c`` fixed), starting at ``omega``.

    Newton's method on the key projections ``h_k`` (the value projections are
    eliminated in closed form), with a backtracking search over step sizes.
    """

    def reduced(h_k: jax.Array) -> jax.Array:
        _, loss = _value_projections(h_k, y, omega, V, mask, activation, c)
        return loss + 0.5 * jnp.sum((h_k - omega[:, 0]) ** 2) / V[0]

    gradient, hessian = jax.grad(reduced), jax.hessian(reduced)
    scales = 0.5 ** jnp.arange(BACKTRACK_STEPS)

    def newton_step(h_k: jax.Array, _: None) -> tuple[jax.Array, None]:
        direction = _newton_direction(gradient(h_k), hessian(h_k))
        trial = jax.vmap(lambda t: reduced(h_k + t * direction))(scales)
        best = jnp.argmin(trial)
        return jnp.where(trial[best] < reduced(h_k), h_k + scales[best] * direction, h_k), None

    h_k, _ = jax.lax.scan(newton_step, omega[:, 0], None, length=NEWTON_STEPS)
    h_v, _ = _value_projections(h_k, y, omega, V, mask, activation, c)
    inv_V = jnp.broadcast_to(1.0 / V, omega.shape)
    objective = functools.partial(
        _prox_objective, y=y, omega=omega, inv_V=inv_V, mask=mask, activation=activation
    )
    z = jnp.concatenate([jnp.stack([h_k, h_v], axis=-1).ravel(), jnp.atleast_1d(c)])
    size = omega.size
    full_hessian = jax.hessian(objective)(z)
    h_hess, hc, cc = full_hessian[:size, :size], full_hessian[:size, -1], full_hessian[-1, -1]
    h_inv = jnp.linalg.inv(h_hess)
    inv_V_flat = inv_V.ravel()
    f_out = ((z[:size] - omega.ravel()) * inv_V_flat).reshape(omega.shape)
    jacobian = inv_V_flat[:, None] * (h_inv * inv_V_flat[None, :] - jnp.eye(size))
    J = jacobian.reshape(omega.shape + omega.shape)
    return ProxSolution(
        f_out=f_out,
        df_out=jnp.diag(jacobian).reshape(omega.shape),
        jacobian_square=jnp.einsum("lamc,lbmd->abcd", J, J).reshape(4, 4),
        grad_c=jax.grad(objective)(z)[-1],
        curv_c=cc - hc @ h_inv @ hc,
        stationarity=jnp.max(jnp.abs(gradient(h_k))) * V[0],
        min_curvature=jnp.min(jnp.linalg.eigvalsh(h_hess)) * jnp.max(V),
    )


def _channel_average(
    params: ERMOrderParameters, draws: ChannelDraws, activation: str
) -> ProxSolution:
    """Proximal solutions for every draw at the fields of ``params``, solved
    :func:`~bayes_slr.memory.channel_chunk` draws at a time (each holds ``(2 Lbar + 1)^2``-sized
    Hessians: the memory of one chunk, whatever the number of draws)."""
    omega = student_fields(draws, params.m, params.q)

    def solve(sample: tuple[jax.Array, jax.Array, jax.Array]) -> ProxSolution:
        return _solve_prox(*sample, params.V, params.c, activation)

    chunk = channel_chunk(omega.shape[1])
    return jax.lax.map(solve, (draws.y, omega, draws.mask), batch_size=chunk)


def _offset_step(gradient: jax.Array, curvature: jax.Array) -> jax.Array:
    """Safeguarded Newton step on the erf offset: a descent step on ``E[M]`` within a trust radius.

    ``E[M]`` is not convex in ``c``: towards saturation (below ``c ~ -1.2`` and above ``0.6``
    at the spiked fixed point of docs/theory.md) its curvature is negative, and far from it (the
    uninformed start's ``q = 1``) it is small, so a plain Newton step can climb (the
    informed start: ``+560``) or overshoot (the uninformed start: ``-6.4``) into the
    saturated plateau ``c -> -inf``, where every weight and every ``f_out`` vanishes and the
    iteration is absorbed by the zero predictor. Here the Newton step is taken only where
    the curvature is positive, else a step of :data:`OFFSET_STEP_MAX` downhill, and is
    clipped to that radius. The fixed points (``E[dM/dc] = 0``) are unchanged.

    Parameters
    ----------
    gradient : ``E[dM/dc]``.
    curvature : ``E[d^2M/dc^2]`` (Schur complement of the ``(h, c)`` Hessian).

    Returns
    -------
    jax.Array
        The increment of ``c``.
    """
    newton = -gradient / jnp.where(curvature > 0, curvature, 1.0)
    step = jnp.where(curvature > 0, newton, -jnp.sign(gradient) * OFFSET_STEP_MAX)
    return jnp.clip(step, -OFFSET_STEP_MAX, OFFSET_STEP_MAX)


def _update(
    params: ERMOrderParameters, draws: ChannelDraws, activation: str, alpha, lam
) -> ERMOrderParameters:
    """One application of the replica map: channel averages, then the ridge side."""
    sol = _channel_average(params, draws, activation)
    qhat = alpha * jnp.mean(jnp.sum(sol.f_out**2, axis=1), axis=0)
    Vhat = -alpha * jnp.mean(jnp.sum(sol.df_out, axis=1), axis=0)
    mhat = alpha * jnp.mean(jnp.sum(sol.f_out * draws.h_star, axis=1), axis=0) + params.m * Vhat
    # A non-convex proximal problem far from the fixed point can give Vhat < -lam; the
    # floor keeps the transient iterates physical (V > 0) and is inactive at a fixed point
    # with lam + Vhat > VHAT_FLOOR * alpha (a point where it is active is not converged).
    V = 1.0 / jnp.maximum(lam + Vhat, VHAT_FLOOR * alpha)
    m = mhat * V
    q = (mhat**2 + qhat) * V**2
    if get_activation(activation).has_offset:
        c = params.c + _offset_step(jnp.mean(sol.grad_c), jnp.mean(sol.curv_c))
    else:
        c = params.c
    return ERMOrderParameters(m, q, V, c)


def _replicon(params: ERMOrderParameters, sol: ProxSolution, alpha) -> jax.Array:
    """Largest replicon eigenvalue of the RS fixed point.

    A replica-symmetry-breaking perturbation ``dq_{ab}`` (``a, b in {k, v}``) of the
    off-diagonal overlaps is mapped, through the channel and the ridge side, to
    ``T dq`` with ``T[(ab),(cd)] = alpha V_a V_b E[sum_{l,l'} J_{la,l'c} J_{lb,l'd}]``,
    ``J = d f_out / d omega``; RS is stable iff every eigenvalue is below 1 (the
    de Almeida-Thouless condition; for plain ridge regression ``alpha V^2/(1+V)^2``).
    ``J = V^{-1} H^{-1} V^{-1} - V^{-1}`` is symmetric, so is the average ``K`` above, and
    ``T = W K`` (``W = diag(V_a V_b)``) is similar to the symmetric ``W^{1/2} K W^{1/2}``:
    its eigenvalues are real.
    """
    root_w = jnp.sqrt(params.V[:, None] * params.V[None, :]).ravel()
    per_draw = alpha * sol.jacobian_square
    per_draw = per_draw * root_w[None, :, None] * root_w[None, None, :]
    mean = jnp.mean(per_draw, axis=0)
    return jnp.linalg.eigvalsh(0.5 * (mean + mean.T))[-1]


def _flat(params: ERMOrderParameters, offset: bool) -> jax.Array:
    """The order parameters as one vector ``(m_k, m_v, q_k, q_v, V_k, V_v[, c])`` (``c`` only for
    an activation with an offset: elsewhere it is constant and would make ``I - J`` singular)."""
    parts = [params.m, params.q, params.V, jnp.atleast_1d(params.c)]
    return jnp.concatenate(parts if offset else parts[:3])


def _unflat(x: jax.Array) -> ERMOrderParameters:
    """Inverse of :func:`_flat` (``c = 0`` for a vector of six)."""
    c = x[6] if x.size == 7 else jnp.zeros((), x.dtype)
    return ERMOrderParameters(x[0:2], x[2:4], x[4:6], c)


def _map(x: jax.Array, draws: ChannelDraws, activation: str, alpha, lam) -> jax.Array:
    """The replica map on the flat order parameters."""
    return _flat(_update(_unflat(x), draws, activation, alpha, lam), x.size == 7)


PILOT_POINTS = 1024
"""Points of the pilot solve (the first of the first replicate's scrambled Sobol sequence): its
damped iteration starts the chord iteration on all the points, and its Jacobian steers it."""
JACOBIAN_STEP = 1e-5
"""Relative step of the central differences of :func:`_chord_inverse` (the map is smooth in the
order parameters: its draws are fixed and each proximal problem is solved to machine precision)."""


@functools.partial(jax.jit, static_argnames=("activation", "max_iter"))
def _damped(draws, start, activation, alpha, lam, damping, tol, max_iter) -> FixedPointResult:
    """The damped iteration of the replica map on ``draws`` from the order parameters ``start``
    (the pilot's solve, and the fallback where the chord iteration fails)."""
    return damped_fixed_point(
        lambda p: _update(p, draws, activation, alpha, lam),
        start,
        damping=damping,
        tol=tol,
        max_iter=max_iter,
    )


@functools.partial(jax.jit, static_argnames=("activation",))
def _run(draws, x0, inverse, chord, activation, alpha, lam, damping, tol, max_iter):
    """The chord iteration of the replica map on ``draws`` from the flat ``x0`` where ``chord``,
    else the damped one (:func:`~bayes_slr.formulas.fixed_point.damped_or_chord_fixed_point`).

    The chord iteration, one chord step (a replicate's first-order fixed point) and one
    evaluation of the map (the Jacobian's central differences: one damped step with damping 1)
    are this one program, its arguments traced: one compilation per shape of the draws and
    activation instead of three, each some seconds of XLA's time for the proximal solves inside
    (:func:`_iterate_on_draws` chooses the arguments). The damped iteration of the pilot stays
    :func:`_damped`: the same steps, but in this program XLA sums the draws in another order,
    which moved the pilot's fixed point by 1e-10 and, through the central differences, the
    replicates' standard errors by up to 1e-5 relative (the golden ``theory_small``: 6.6e-6)."""
    return damped_or_chord_fixed_point(
        lambda x: _map(x, draws, activation, alpha, lam),
        x0,
        chord=chord,
        inverse=inverse,
        damping=damping,
        tol=tol,
        max_iter=max_iter,
    )


def _iterate_on_draws(
    draws: ChannelDraws,
    x: jax.Array,
    equations: tuple[str, float, float],
    *,
    inverse: jax.Array | None = None,
    damping: float = 1.0,
    tol: float = 0.0,
    max_iter: int = 1,
) -> FixedPointResult:
    """:func:`_run` on ``draws`` from the flat ``x`` (``equations``: the activation, ``alpha``,
    ``lam``): the chord iteration with ``inverse`` where one is given, else the damped iteration
    with ``damping``; by default one step, so ``F(x)`` itself without ``inverse`` (damping 1) and
    the fixed point to first order about ``x`` with it (``x + (I - J)^{-1} (F(x) - x)``)."""
    chord = inverse is not None
    if not chord:
        inverse = np.zeros((x.size, x.size))
    return _run(draws, x, inverse, chord, *equations, damping, tol, max_iter)


def _chord_inverse(draws: ChannelDraws, x: jax.Array, equations: tuple[str, float, float]):
    """``(I - J)^{-1}``, ``J`` the Jacobian of the replica map on ``draws`` at the flat ``x``, by
    central differences (``2 k`` evaluations of the map, each a call of :func:`_run`)."""
    return difference_inverse(
        lambda y: _iterate_on_draws(draws, y, equations).x, x, step=JACOBIAN_STEP, mapper=host_map
    )


@functools.partial(jax.jit, static_argnames=("activation",))
def _diagnose(draws, params, activation, alpha, lam) -> dict[str, jax.Array]:
    """The checks and numbers of ``params`` on ``draws``: the proximal solutions' stationarity and
    curvature, the training objective and the replicon."""
    sol = _channel_average(params, draws, activation)
    fitted = student_fields(draws, params.m, params.q) + sol.f_out * params.V
    losses = jax.vmap(_sample_loss, in_axes=(0, None, 0, 0, None))(
        fitted, params.c, draws.y, draws.mask, activation
    )
    return {
        "train_objective": jnp.mean(losses) + lam / (2 * alpha) * jnp.sum(params.q),
        "prox_max_stationarity": jnp.max(sol.stationarity),
        "prox_min_curvature": jnp.min(sol.min_curvature),
        "replicon": _replicon(params, sol, alpha),
    }


def _start(init: str, alpha: float, lam: float) -> ERMOrderParameters:
    """Starting order parameters: at the teacher (informed) or nearly orthogonal to it."""
    V = jnp.full(2, 1.0 / (lam + alpha))
    if init == "informed":
        return ERMOrderParameters(jnp.ones(2), jnp.full(2, 1.0 + 1e-3), V, jnp.asarray(0.0))
    return ERMOrderParameters(jnp.full(2, 1e-2), jnp.ones(2), V, jnp.asarray(0.0))


def erm_replica_point(
    config: SLRConfig,
    activation: str,
    *,
    alpha: float,
    lam: float,
    init: str = "random",
    mc_samples: int = DEFAULT_DRAWS,
    replicates: int = DEFAULT_REPLICATES,
    seed: int = 0,
    damping: float = 0.5,
    tol: float = 1e-7,
    max_iter: int = 500,
    target_stderr: float | None = None,
    max_samples: int = REPLICA_MAX_DRAWS,
) -> TheoryPoint:
    """Solve the replica-symmetric ERM equations at one ``alpha`` and report the test error with
    its standard error.

    The channel averages are randomised quasi-Monte Carlo: ``replicates`` independent
    scramblings of a Sobol sequence, ``mc_samples / replicates`` points each
    (:func:`~bayes_slr.formulas.channel.quasi_random_channel`). The point is the fixed point of
    all the points together (a fixed point's bias falls like the inverse of its points): the
    damped iteration on a pilot (the first :data:`PILOT_POINTS` points) from ``init``, then the
    chord method on all the points with the pilot's Jacobian (the damped iteration on all the
    points where either fails). Each replicate's fixed point is taken to first order about the
    point (:func:`_replicate`): the spread of their numbers over ``sqrt(replicates)`` is the
    point's standard error, the fixed point's movement with the draws included (NaN where the
    pooled iteration did not converge). The proximal checks are the pooled solve's.

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` is ignored).
    activation : a registered activation with theory terms.
    alpha : float
        Samples per dimension ``N / D``, ``> 0``.
    lam : float
        Ridge strength, ``>= 0``.
    init : {"random", "informed"}: the uninformed (random) or the informed start
        Start of the iteration: at the teacher, or with overlaps ``0.01``.
    mc_samples, replicates, seed :
        Channel points, all replicates together, at least two per replicate (a power of two
        each keeps the Sobol sequences balanced); independent scramblings, ``>= 2``; their seed.
    damping, tol, max_iter :
        Of the damped fixed-point iteration (see :func:`damped_fixed_point`); ``tol`` and
        ``max_iter`` also of the chord iteration.
    target_stderr, max_samples :
        A standard error of the test error to reach (``> 0``; ``None``: ``mc_samples`` points
        whatever it is) on more points of the same scramblings, up to ``max_samples`` in all
        (:func:`_points_for_target`; above it there, reported as it is: the caller warns).

    Returns
    -------
    TheoryPoint
        ``test_error`` is docs/model.md section 4 at the fixed-point overlaps, with ``stderr``;
        ``converged`` is False if the iteration did not reach ``tol``, a replicate's fixed point
        is not finite or a proximal problem was left unsolved (``test_error`` is then reported
        but not to be trusted). ``diagnostics``
        (:class:`~bayes_slr.formulas.result.ERMTheoryDiagnostics`): ``train_objective`` is the
        RS prediction of the per-sample training objective of
        :func:`bayes_slr.attention.training.objective` (mean loss at the proximal solutions plus
        ``lam (q_k + q_v) / (2 alpha)``). ``replicon`` (with ``replicon_stderr``) is the de
        Almeida-Thouless eigenvalue and ``rs_stable`` whether it is below 1 (false when the
        iteration broke down and left no replicon, NaN): an unstable replica-symmetric point is
        a converged solution of the RS equations that does not describe ERM (docs/theory.md).
    """
    activation = theory_terms_of(activation).name
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    lam = check_real("lam", lam, minimum=0.0)
    init, mc_samples, damping, max_iter = check_solver_options(init, mc_samples, damping, max_iter)
    replicates = check_int("replicates", replicates, 2)
    points = check_int("mc_samples", mc_samples, 2 * replicates) // replicates
    if target_stderr is not None:
        target_stderr = check_real("target_stderr", target_stderr, minimum=0.0, strict=True)
    most = check_int("max_samples", max_samples, 2 * replicates) // replicates
    keys = np.random.SeedSequence(seed).spawn(replicates)
    equations, iteration = (activation, alpha, lam), (damping, tol, max_iter)
    target = (target_stderr, most)
    return _solve_to_target(config, keys, points, init, equations, iteration, target)


def _solve_to_target(
    config: SLRConfig,
    keys: list[np.random.SeedSequence],
    points: int,
    init: str,
    equations: tuple[str, float, float],
    iteration: tuple[float, float, int],
    target: tuple[float | None, int],
) -> TheoryPoint:
    """The point on ``points`` of each scrambling (``keys``), solved again on more of them while
    its standard error is above ``target`` (the error, and the most points per scrambling)."""
    target_stderr, most = target
    while True:
        solved = _solve(config, keys, points, init, equations, iteration, target_stderr)
        more = _points_for_target(points, solved, target_stderr, most)
        if more == points:
            return solved
        points = more


def _solve(
    config: SLRConfig,
    keys: list[np.random.SeedSequence],
    points: int,
    init: str,
    equations: tuple[str, float, float],
    iteration: tuple[float, float, int],
    target_stderr: float | None,
) -> TheoryPoint:
    """The point on the first ``points`` of each scrambling (``keys``) with its errors."""
    channels = [quasi_random_channel(config, points, key) for key in keys]
    point, solves = _point_and_replicates(config, channels, init, equations, iteration)
    sizes = (points * len(keys), len(keys))
    return _with_errors(point, solves, equations, init, sizes, target_stderr)


def _points_for_target(
    points: int, solved: TheoryPoint, target_stderr: float | None, most: int
) -> int:
    """Points per replicate to solve ``solved`` again on: ``points`` times the power of two at
    least ``(stderr / target_stderr)^2`` (the error falls like ``n^(-1/2)`` or faster), at most
    ``most``; ``points`` (no new solve) where there is no target, it is met, the point did not
    converge or ``most`` is reached."""
    stderr = solved.stderr
    if target_stderr is None or not solved.converged or not stderr > target_stderr:
        return points
    factor = 2 ** max(1, math.ceil(math.log2((stderr / target_stderr) ** 2)))
    return min(points * factor, max(most, points))


def _point_and_replicates(
    config: SLRConfig,
    channels: list[ChannelDraws],
    init: str,
    equations: tuple[str, float, float],
    iteration: tuple[float, float, int],
) -> tuple[_Solve, list[_Solve]]:
    """The fixed point on all the ``channels`` together from ``init``, and each channel's to first
    order (``equations``: the activation, ``alpha``, ``lam``; ``iteration``: ``damping``,
    ``tol``, ``max_iter``)."""
    start = _start(init, *equations[1:])
    pooled = jax.tree_util.tree_map(lambda *parts: jnp.concatenate(parts), *channels)
    pilot = jax.tree_util.tree_map(lambda part: part[:PILOT_POINTS], channels[0])
    result = _pooled_fixed_point(pilot, pooled, start, equations, iteration)
    x = _flat(result.x, get_activation(equations[0]).has_offset)
    inverse = _chord_inverse(pilot, x, equations)
    point = _Solve.of(config, pooled, result.x, equations, result)
    if not bool(result.converged):
        # no fixed point, no movement of it to measure: its error is NaN, and each replicate's
        # damped iteration (as long again as the pooled one) is not run
        return point, []
    return point, [
        _replicate(config, draws, x, inverse, equations, iteration) for draws in channels
    ]


def _replicate(
    config: SLRConfig,
    draws: ChannelDraws,
    x: jax.Array,
    inverse: jax.Array,
    equations: tuple[str, float, float],
    iteration: tuple[float, float, int],
) -> _Solve:
    """A replicate's fixed point on ``draws``: one chord step from the flat point ``x``, or, where
    that step leaves the physical region (``q < m^2`` or ``V <= 0``: a replicate far from the
    point, few points at small ridge), the damped iteration on its draws from ``x``."""
    first_order = _unflat(_iterate_on_draws(draws, x, equations, inverse=inverse).x)
    if bool(jnp.all(first_order.q >= first_order.m**2) & jnp.all(first_order.V > 0)):
        return _Solve.of(config, draws, first_order, equations)
    result = _damped(draws, _unflat(x), *equations, *iteration)
    return _Solve.of(config, draws, result.x, equations, result)


def _pooled_fixed_point(
    pilot: ChannelDraws,
    pooled: ChannelDraws,
    start: ERMOrderParameters,
    equations: tuple[str, float, float],
    iteration: tuple[float, float, int],
) -> FixedPointResult:
    """The fixed point on the ``pooled`` draws: the damped iteration on the ``pilot`` draws, then
    the chord iteration on all of them with the pilot's Jacobian; where either fails, the damped
    iteration on all the draws (``equations``: the activation, ``alpha``, ``lam``;
    ``iteration``: ``damping``, ``tol``, ``max_iter``)."""
    damping, tol, max_iter = iteration
    first = _damped(pilot, start, *equations, damping, tol, max_iter)
    x = _flat(first.x, get_activation(equations[0]).has_offset)
    inverse = _chord_inverse(pilot, x, equations)
    if bool(first.converged) and bool(jnp.all(jnp.isfinite(inverse))):
        chord = _iterate_on_draws(pooled, x, equations, inverse=inverse, tol=tol, max_iter=max_iter)
        if bool(chord.converged):
            iterations = first.iterations + chord.iterations
            return chord._replace(x=_unflat(chord.x), iterations=iterations)
    return _damped(pooled, start, *equations, damping, tol, max_iter)


def _with_errors(
    point: _Solve,
    solves: list[_Solve],
    equations: tuple[str, float, float],
    init: str,
    sizes: tuple[int, int],
    target_stderr: float | None,
) -> TheoryPoint:
    """The pooled solve ``point`` as a :class:`TheoryPoint`, each number's standard error the
    spread of the replicates' ``solves`` over ``sqrt(replicates)`` (``equations``: the activation,
    ``alpha``, ``lam``; ``sizes``: the points, all replicates together, and the replicates)."""
    activation, alpha, lam = equations
    mc_samples, replicates = sizes
    stderr = {
        name: replicate_stderr([s.numbers[name] for s in solves]) if solves else math.nan
        for name in point.numbers
    }
    overlaps = {name: value for name, value in point.numbers.items() if name in OVERLAP_NAMES}
    return TheoryPoint(
        alpha=alpha,
        estimator=activation,
        test_error=point.numbers["test_error"],
        stderr=stderr["test_error"],
        overlaps=overlaps,
        converged=point.converged and bool(solves) and all(s.finite for s in solves),
        init=init,
        diagnostics=ERMTheoryDiagnostics(
            residual=point.residual,
            iterations=point.iterations,
            prox_max_stationarity=point.stationarity,
            prox_min_curvature=point.curvature,
            train_objective=point.numbers["train_objective"],
            replicon=point.numbers["replicon"],
            replicon_stderr=stderr["replicon"],
            rs_stable=point.numbers["replicon"] < 1.0,
            test_error_stderr=stderr["test_error"],
            overlaps_stderr={name: stderr[name] for name in overlaps},
            mc_samples=mc_samples,
            replicates=replicates,
            lam=lam,
            target_stderr=math.nan if target_stderr is None else target_stderr,
        ),
    )


OVERLAP_NAMES = ("m_k", "q_k", "V_k", "m_v", "q_v", "V_v", "c")


class _Solve(NamedTuple):
    """One fixed point (of all the draws, or a replicate's to first order): its numbers (the
    overlaps, the test error, the training objective and the replicon) and its checks
    (``converged``: the iteration reached its tolerance with every proximal problem solved;
    ``finite``: its numbers are finite and its iteration, if any, reached its tolerance)."""

    numbers: dict[str, float]
    converged: bool
    finite: bool
    residual: float
    iterations: int
    stationarity: float
    curvature: float

    @classmethod
    def of(
        cls,
        config: SLRConfig,
        draws: ChannelDraws,
        params: ERMOrderParameters,
        equations: tuple[str, float, float],
        result: FixedPointResult | None = None,
    ) -> _Solve:
        """The numbers of ``params`` on ``draws`` (``equations``: the activation, ``alpha``,
        ``lam``), and the checks of the iteration ``result`` that reached them (none for a
        replicate)."""
        activation, alpha, _ = equations
        diagnostics = _diagnose(draws, params, *equations)
        numbers = {
            f"{name}_{a}": float(getattr(params, name)[i])
            for i, a in enumerate("kv")
            for name in ("m", "q", "V")
        }
        if get_activation(activation).has_offset:
            numbers["c"] = float(params.c)
        finite = all(math.isfinite(x) for x in numbers.values())
        overlaps = (numbers[name] for name in ("m_k", "q_k", "m_v", "q_v"))
        numbers["test_error"] = (
            float(population_error(activation, config, *overlaps, numbers.get("c", 0.0)))
            if finite
            else math.nan
        )
        numbers["train_objective"] = float(diagnostics["train_objective"])
        numbers["replicon"] = float(diagnostics["replicon"])
        V_max = max(numbers["V_k"], numbers["V_v"])
        return cls(
            numbers,
            finite and result is not None and _solved(result, diagnostics, V_max, alpha),
            finite and (result is None or bool(result.converged)),
            math.nan if result is None else float(result.residual),
            0 if result is None else int(result.iterations),
            float(diagnostics["prox_max_stationarity"]),
            float(diagnostics["prox_min_curvature"]),
        )


def _solved(
    result: FixedPointResult, diagnostics: dict[str, jax.Array], V_max: float, alpha: float
) -> bool:
    """Whether the iteration reached its tolerance with every proximal problem solved (stationary,
    convex) and the floor on ``hat V`` inactive (``V_max``: the larger ``V``)."""
    floor_active = V_max * VHAT_FLOOR * alpha > 1.0 - 1e-9
    return (
        bool(result.converged)
        and float(diagnostics["prox_max_stationarity"]) < 1e-6
        and float(diagnostics["prox_min_curvature"]) > 0
        and not floor_active
    )
