"""Gradient training of attention on data, logged as a trajectory (docs/dynamics.md).

Two methods, each optionally projected on the sphere:

- ``gd``: full-batch gradient descent on the ERM objective of docs/model.md section 5 (per sample,
  :func:`~bayes_slr.attention.training.objective`) over ``N = round(alpha D)`` sequences;
- ``sgd``: online SGD, a fresh batch of ``B`` sequences at every step (each drawn and read once;
  by default through the span of ``k*, v*, k, v``, :data:`TOKEN_DRAWS`), on the batch's mean
  ``(y - f)^2 / 2``.

One update rule and one clock for both, shared with the order-parameter ODEs of
:mod:`bayes_slr.formulas.flow`: ``theta <- theta - h P grad``, with ``P = D`` on ``k`` and ``v`` and
``1`` on the erf offset ``c`` (``f`` sees ``k``, ``v`` through ``X k / sqrt(D)``, so the curvature
of the risk is ``O(1/D)`` per coordinate; ``P`` makes overlaps move by ``O(1)`` per unit time at
any ``D``), and ``h = eta`` for ``gd``, ``h = eta / D`` for ``sgd``. A step advances the time by
``h``. So ``gd`` with small ``eta`` follows the gradient flow of the empirical risk, and an ``sgd``
step moves ``k`` and ``v`` by ``eta`` times the gradient of the batch's mean ``(y - f)^2 / 2``
(the erf offset ``c`` by ``eta / D`` times it) while the time advances by ``eta / D``. One
sequence's gradient in ``k`` has squared norm ``V_k`` on average (``D -> inf``), the batch
mean's fluctuation ``V_k / B``, so a step adds ``eta^2 V_k / (B D)`` to ``q_k = |k|^2 / D``:
``eta V_k / B`` per unit time, the ODE's variance term, which vanishes only as ``eta / B -> 0``.

``sphere=True`` is the projected gradient descent of the ICLR 2025 predecessor: the gradients of
``k`` and ``v`` are projected on the tangent space of the sphere of their starting norm, and the
iterate is put back on it after the step; ``c`` is free.

**Student heads.** The same run trains ``H_s`` student heads (``student_heads``; docs/multihead.md,
"Dynamics"), on an ``H``-head task (``config.heads``, ``config.presence``) or a one-head one: the
parameters take a head axis (:func:`~bayes_slr.attention.estimators.predict` sums the heads), the
start is random (every ``k_j``, ``v_j`` i.i.d. ``N(0, RANDOM_INIT_SCALE^2 I_D)``, as one head's),
the update rule and clock are the ones above (the same step, so the overlaps follow the SGD ODE of
:mod:`bayes_slr.formulas.multihead_flow` as ``D -> inf``), online SGD draws its tokens ``full``
(the projection on the span is one head's four directions), and a logged point is a
:class:`~bayes_slr.attention.trajectory.HeadsPoint`: the overlap matrices with the teacher heads
and the test error on the run's fixed test sequences, scored directly (the exact 4-dimensional
reduction is one head's). One student head on one-head SLR is the one-head run.

A run is one seed x setting x method (:class:`TrainingRun`), deterministic given its seed: the
teacher, training set, start, test set and the SGD stream (step ``s`` reads
``fold_in(stream, s)``) come from the seed. It logs at log-spaced steps (overlaps, cross
overlaps, the loss, and the test error on a fixed test set through the exact 4-dimensional
reduction of :mod:`bayes_slr.attention.span`), calls ``on_log`` with a resumable
:class:`~bayes_slr.attention.trajectory.Checkpoint` after each point, and continues exactly from
one given as ``resume``. A loss that becomes NaN or exceeds :data:`LOSS_LIMIT` stops the run with
:class:`~bayes_slr.attention.trajectory.DivergenceError`, which keeps the last finite iterate.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayes_slr.attention.activations import activation_accepted
from bayes_slr.attention.estimators import (
    AttentionParams,
    informed_params,
    predict,
    random_params,
)
from bayes_slr.attention.projected_tokens import projected_value_and_grad
from bayes_slr.attention.span import span_test_error
from bayes_slr.attention.training import RANDOM_INIT_SCALE, objective
from bayes_slr.attention.trajectory import (
    OVERLAP_NAMES,
    Checkpoint,
    DivergenceError,
    HeadsPoint,
    OnLog,
    Trajectory,
    TrajectoryPoint,
    as_matrix,
    log_spaced_steps,
)
from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Integer,
    Number,
    OneOf,
    validate_fields,
)
from bayes_slr.models.scoring import ExcessError, direction_overlaps
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_task_teacher, draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.numerics.record import Record

METHODS = ("gd", "sgd")
"""Training methods on data: full-batch gradient descent, online SGD."""
STARTS = ("random", "sphere", "informed")
"""Starts: ``k, v ~ N(0, RANDOM_INIT_SCALE^2 I)`` (the ERM start), uniform on the sphere
``|k|^2 = |v|^2 = D`` (the predecessor's start), or the teacher (``k = c_nu k*``, ``v = v*``)."""
LOSS_LIMIT = 1e6
"""A loss above this (per sequence; the zero predictor scores about 1/2) counts as exploding."""
SGD_TOKEN_DTYPE = "float32"
"""Precision in which online SGD draws its ``D``-dimensional Gaussian numbers (``simulate``'s
``token_dtype``: the fresh tokens of a ``full`` draw, the rest of the gradient of a ``projected``
one, :data:`TOKEN_DRAWS`): the Gaussian law rounded to 24 bits, three to eight times cheaper to
draw than float64 on a CPU, where the draw bounds a step (docs/dynamics.md, speed); the step
itself runs in float64."""
TOKEN_DRAWS = ("projected", "full")
"""How online SGD draws a step's fresh tokens: ``projected``, their projections on the span of
``k*, v*, k, v`` and two Gaussian ``D``-vectors for the rest of the gradient
(:mod:`~bayes_slr.attention.projected_tokens`; exact in law, ``4 B Lbar + 2 D`` numbers a step),
or ``full``, all ``B Lbar D`` entries; the ``D``-dimensional draws in :data:`SGD_TOKEN_DTYPE`."""


RUN_ACCEPTS: dict[str, Accepts] = {
    "activation": activation_accepted,
    "method": OneOf(METHODS),
    "eta": Number(0.0, strict=True),
    "steps": Integer(1),
    "seed": Integer(0),
    "batch": Integer(1),
    "lam": Number(0.0),
    "start": OneOf(STARTS),
    "token_draws": OneOf(TOKEN_DRAWS),
    "log_points": Integer(2),
    "N_test": Integer(2),
    "student_heads": Integer(1),
}
"""The accepted range of each setting of :class:`TrainingRun`, checked when it is built."""


@dataclasses.dataclass(frozen=True)
class TrainingRun(Record):
    """One training run: setting, method, step, seed. Checked on creation (``ConfigError``).

    Attributes
    ----------
    config : the task (``D``, variant, ``nu``, length law, label noise ``Delta``).
    activation : a registered activation.
    method : ``"gd"`` or ``"sgd"`` (module docstring).
    eta : step size, ``> 0`` (the time per step is ``eta`` for gd, ``eta / D`` for sgd).
    steps : number of steps, an integer ``>= 1``.
    seed : root seed of the teacher, data, start, test set and SGD stream.
    batch : sequences per SGD step, an integer ``>= 1`` (sgd only).
    alpha : samples per dimension, ``N = round(alpha D)`` (gd only, required).
    lam : ridge of the ERM objective, ``>= 0`` (gd only).
    start : one of :data:`STARTS`.
    sphere : projected (spherical) gradient descent: ``|k|`` and ``|v|`` keep their start values.
    log_points : about this many log-spaced points (an integer ``>= 2``).
    N_test : test sequences per logged point, an integer ``>= 2``.
    exact_teacher : ``|k*|^2 = |v*|^2 = D`` and ``k* . v* = 0`` (the population teacher the ODEs
        assume); else the prior ``N(0, I_D)``.
    token_draws : one of :data:`TOKEN_DRAWS` (sgd only: how a step draws its fresh tokens;
        ``full`` with student heads).
    student_heads : ``H_s >= 1`` student heads (module docstring); a run of heads (several, or
        on a multi-head task) starts at random, unprojected.
    """

    config: SLRConfig
    activation: str
    method: str
    eta: float
    steps: int
    seed: int = 0
    batch: int = 1
    alpha: float | None = None
    lam: float = 0.0
    start: str = "random"
    sphere: bool = False
    log_points: int = 64
    N_test: int = 20_000
    exact_teacher: bool = True
    token_draws: str = "projected"
    student_heads: int = 1

    def __post_init__(self) -> None:
        if not isinstance(self.config, SLRConfig):
            raise ConfigError(f"config must be an SLRConfig, got {type(self.config).__name__}")
        validate_fields(self, RUN_ACCEPTS)
        if self.heads_run:
            self._check_heads()
        if self.method == "gd":
            if self.alpha is None:
                raise ConfigError("alpha (samples per dimension, > 0) is required for method gd")
            training_size(self.alpha, self.config.D)
            if self.batch != 1:
                raise ConfigError(
                    "batch applies to method sgd only (gd uses the whole training set)"
                )
        elif self.alpha is not None or self.lam != 0.0:
            raise ConfigError(
                "alpha and lam apply to method gd only (sgd draws fresh sequences, without ridge)"
            )

    def _check_heads(self) -> None:
        """``ConfigError`` on a setting a run of student heads does not take."""
        if self.start != "random" or self.sphere:
            raise ConfigError(
                "start and sphere: a run of student heads starts at random "
                f"(k_j, v_j ~ N(0, {RANDOM_INIT_SCALE**2:g} I)), unprojected; got start "
                f"{self.start!r}, sphere {self.sphere}"
            )
        if self.method == "sgd" and self.token_draws != "full":
            raise ConfigError(
                "token_draws must be 'full' with student heads (the projected draw spans one "
                f"head's k*, v*, k, v), got {self.token_draws!r}"
            )
        if self.exact_teacher and self.config.multihead and self.config.D < 2 * self.config.heads:
            raise ConfigError(
                f"D must be an integer >= {2 * self.config.heads}, got {self.config.D}"
            )

    @property
    def heads_run(self) -> bool:
        """Whether the run trains student heads (several, or on a multi-head task): its
        parameters carry a head axis and its points are
        :class:`~bayes_slr.attention.trajectory.HeadsPoint`."""
        return self.student_heads > 1 or self.config.multihead

    @property
    def time_per_step(self) -> float:
        """ODE time of one step: ``eta`` (gd) or ``eta / D`` (sgd)."""
        return self.eta if self.method == "gd" else self.eta / self.config.D


class RunKeys(NamedTuple):
    """The independent PRNG keys of a run."""

    teacher: jax.Array
    data: jax.Array
    start: jax.Array
    test: jax.Array
    stream: jax.Array


def run_keys(seed: int) -> RunKeys:
    """Keys of the teacher, training set, start, test set and SGD stream of seed ``seed``."""
    return RunKeys(*jax.random.split(jax.random.PRNGKey(seed), 5))


def seed_teacher(run: TrainingRun) -> Teacher:
    """The teacher of ``run``'s seed (exact or from the prior, as ``run.exact_teacher`` says;
    directions ``(H, D)`` on a multi-head task)."""
    return draw_task_teacher(run_keys(run.seed).teacher, run.config, exact=run.exact_teacher)


def head_axis(teacher: Teacher) -> Teacher:
    """``teacher``'s directions with a head axis, ``(H, D)`` (one head: ``(1, D)``)."""
    return Teacher(jnp.atleast_2d(teacher.k_star), jnp.atleast_2d(teacher.v_star))


def seed_heads_start(run: TrainingRun) -> HeadsPoint:
    """The point at step 0 of the run of student heads ``run`` (its seed's random start
    against its seed's teacher, without training; the test error ``nan``): the start of the
    multi-head ODEs of the same seed."""
    params = start_params(run_keys(run.seed).start, run.config, run.start, None, run.student_heads)
    return heads_point(params, head_axis(seed_teacher(run)), 0, 0.0, math.nan, math.nan)


def heads_point(
    params: AttentionParams,
    teacher: Teacher,
    step: int | None,
    time: float,
    error: float,
    stderr: float,
) -> HeadsPoint:
    """The logged point of student heads ``params`` (a head axis) against ``teacher``
    (directions ``(H, D)``): the overlap matrices, the offsets and the given test error."""
    k, v = np.asarray(params.k, float), np.asarray(params.v, float)
    k_star, v_star = np.asarray(teacher.k_star, float), np.asarray(teacher.v_star, float)
    D = k.shape[-1]
    return HeadsPoint(
        step=step,
        time=float(time),
        m_k=as_matrix(k @ k_star.T / D),
        q_k=as_matrix(k @ k.T / D),
        m_v=as_matrix(v @ v_star.T / D),
        q_v=as_matrix(v @ v.T / D),
        c=tuple(float(x) for x in np.asarray(params.c, float)),
        test_error=float(error),
        test_stderr=float(stderr),
        k_vstar=as_matrix(k @ v_star.T / D),
        v_kstar=as_matrix(v @ k_star.T / D),
        k_v=as_matrix(k @ v.T / D),
    )


def seed_start_overlaps(
    config: SLRConfig, start: str, seed: int, *, exact_teacher: bool = True
) -> dict[str, float]:
    """The overlaps of the start a run of seed ``seed`` at dimension ``config.D`` draws against
    that seed's teacher (:func:`start_params`, ``direction_overlaps``; ``c = 0``), without
    training: the first logged point of every such run, signs included.

    Parameters
    ----------
    config : the task (its ``D`` is the dimension of the run).
    start : one of :data:`STARTS`.
    seed : the run's seed.
    exact_teacher : as :class:`TrainingRun`'s.

    Returns
    -------
    dict
        ``m_k, q_k, m_v, q_v``, the cross overlaps ``k_vstar, v_kstar, k_v`` and ``c``.
    """
    keys = run_keys(seed)
    teacher = draw_teacher(keys.teacher, config.D, exact=exact_teacher)
    params = start_params(keys.start, config, start, teacher)
    overlaps = direction_overlaps(params.k, params.v, teacher)
    return {
        **{name: float(overlaps[name]) for name in OVERLAP_NAMES if name != "c"},
        "c": float(params.c),
    }


def seed_training_set(run: TrainingRun, teacher: Teacher) -> SLRBatch:
    """The gd training set of ``run``'s seed: ``N = round(alpha D)`` sequences of ``teacher``."""
    return simulate(
        run_keys(run.seed).data, run.config, teacher, training_size(run.alpha, run.config.D)
    )


def run_test_error(run: TrainingRun, teacher: Teacher, params: AttentionParams) -> ExcessError:
    """Test error of ``params`` on the test sequences of ``run``'s seed (the ones every logged
    point of the run is scored on, so two estimators compare on the same sequences)."""
    if run.heads_run:
        return _heads_scorer(run, teacher)(params)
    return span_test_error(
        run_keys(run.seed).test, run.config, teacher, params, run.activation, run.N_test
    )


def _heads_scorer(run: TrainingRun, teacher: Teacher) -> Callable[[AttentionParams], ExcessError]:
    """The test error of student heads on the ``N_test`` fresh sequences (``Delta`` excluded)
    of ``run``'s seed, drawn once (``teacher`` as ``simulate`` takes it for the task)."""
    test = simulate(run_keys(run.seed).test, run.config.replace(Delta=0.0), teacher, run.N_test)

    def score(params: AttentionParams) -> ExcessError:
        error, stderr = _test_error(params, test.X, test.lengths, test.y, activation=run.activation)
        return ExcessError(float(error), float(stderr), run.N_test)

    return score


@functools.partial(jax.jit, static_argnames=("activation",))
def _test_error(params, X, lengths, y, *, activation):
    errors = (y - predict(params, X, lengths, activation)) ** 2
    return jnp.mean(errors), jnp.std(errors, ddof=1) / jnp.sqrt(errors.size)


def start_params(
    key: jax.Array,
    config: SLRConfig,
    start: str,
    teacher: Teacher | None,
    student_heads: int | None = None,
) -> AttentionParams:
    """The start of a run (:data:`STARTS`); ``c = 0``. With ``student_heads``, the random start
    of that many heads (a head axis; module docstring)."""
    if student_heads is not None:
        k, v = RANDOM_INIT_SCALE * jax.random.normal(key, (2, student_heads, config.D))
        return AttentionParams(k, v, jnp.zeros(student_heads))
    if start == "informed":
        return informed_params(config, teacher)
    if start == "random":
        return random_params(key, config.D, RANDOM_INIT_SCALE)
    k, v = jax.random.normal(key, (2, config.D))
    radius = math.sqrt(config.D)
    return AttentionParams(
        radius * k / jnp.linalg.norm(k), radius * v / jnp.linalg.norm(v), jnp.zeros(())
    )


def _direction(grads: AttentionParams, params: AttentionParams, sphere: bool) -> AttentionParams:
    """The preconditioned gradient ``P grad`` (``D`` on ``k, v``), tangent to the spheres if
    asked."""
    D = params.k.shape[-1]
    k, v = D * grads.k, D * grads.v
    if sphere:
        k = k - (k @ params.k) / (params.k @ params.k) * params.k
        v = v - (v @ params.v) / (params.v @ params.v) * params.v
    return AttentionParams(k, v, grads.c)


def _step(
    params: AttentionParams, grads: AttentionParams, h: float, radii: jax.Array, sphere: bool
) -> AttentionParams:
    """One optax SGD step of size ``h`` along :func:`_direction`, retracted onto the spheres."""
    solver = optax.sgd(h)  # stateless: a constant step without momentum
    updates, _ = solver.update(_direction(grads, params, sphere), solver.init(params), params)
    new = optax.apply_updates(params, updates)
    if sphere:
        new = new._replace(
            k=optax.projections.projection_l2_sphere(new.k, radii[0]),
            v=optax.projections.projection_l2_sphere(new.v, radii[1]),
        )
    return new


def _all_finite(tree: Any) -> jax.Array:
    return jnp.all(
        jnp.stack([jnp.all(jnp.isfinite(leaf)) for leaf in jax.tree_util.tree_leaves(tree)])
    )


@functools.partial(
    jax.jit,
    static_argnames=(
        "activation",
        "method",
        "config",
        "batch",
        "sphere",
        "token_draws",
        "token_dtype",
    ),
)
def _advance(
    params: AttentionParams,
    step: jax.Array,
    end: jax.Array,
    data: tuple,
    h: jax.Array,
    lam: jax.Array,
    radii: jax.Array,
    *,
    activation: str,
    method: str,
    config: SLRConfig,
    batch: int,
    sphere: bool,
    token_draws: str = "projected",
    token_dtype: str = SGD_TOKEN_DTYPE,
) -> tuple[AttentionParams, jax.Array, jax.Array, jax.Array]:
    """Steps from ``step`` until ``end``, or until the loss turns non-finite or above the limit.

    ``data``: ``(X, lengths, y)`` for gd, ``(teacher, stream key)`` for sgd, whose fresh tokens
    are drawn as ``token_draws`` says (:data:`TOKEN_DRAWS`; ``full`` in ``token_dtype``,
    :data:`SGD_TOKEN_DTYPE`, the speed benchmark compares float64).
    Returns the last iterate with a finite loss, its step, that loss, and the loss that stopped
    the run (the same as the last if it reached ``end``).
    """

    def loss(p: AttentionParams, s: jax.Array) -> jax.Array:
        if method == "gd":
            return objective(p, *data, activation, lam)
        teacher, stream = data
        fresh = simulate(
            jax.random.fold_in(stream, s), config, teacher, batch, token_dtype=token_dtype
        )
        residual = fresh.y - predict(p, fresh.X, fresh.lengths, activation)
        return 0.5 * jnp.mean(residual**2)

    def projected(p: AttentionParams, s: jax.Array) -> tuple[jax.Array, AttentionParams]:
        teacher, stream = data
        step_key = jax.random.fold_in(stream, s)
        return projected_value_and_grad(
            p, step_key, config, teacher, batch, activation, token_dtype
        )

    if method == "sgd" and token_draws == "projected":
        value_and_grad = projected
    else:
        value_and_grad = jax.value_and_grad(loss)

    def keep_going(carry):
        _, _, s, _, _, stopped = carry
        return (s < end) & ~stopped

    def body(carry):
        p, grads, s, value, _, _ = carry
        new = _step(p, grads, h, radii, sphere)
        new_value, new_grads = value_and_grad(new, s + 1)
        bad = _exploding(new_value) | ~_all_finite(new_grads)
        keep = functools.partial(jnp.where, bad)
        return (
            jax.tree_util.tree_map(keep, p, new),
            jax.tree_util.tree_map(keep, grads, new_grads),
            jnp.where(bad, s, s + 1),
            jnp.where(bad, value, new_value),
            new_value,
            bad,
        )

    value, grads = value_and_grad(params, step)
    carry = (params, grads, step, value, value, _exploding(value))
    params, _, step, value, stop_value, _ = jax.lax.while_loop(keep_going, body, carry)
    return params, step, value, stop_value


def _exploding(value: jax.Array) -> jax.Array:
    return ~jnp.isfinite(value) | (value > LOSS_LIMIT)


def train_dynamics(
    run: TrainingRun,
    *,
    teacher: Teacher | None = None,
    training_set: SLRBatch | None = None,
    on_log: OnLog | None = None,
    resume: Checkpoint | None = None,
) -> Trajectory:
    """Train as ``run`` says and return its trajectory (module docstring).

    Parameters
    ----------
    run : TrainingRun
    teacher : a given teacher instead of the seed's (the SGD stream and test set are drawn from
        it; required with ``training_set``).
    training_set : a given training set for gd (``N = round(alpha D)`` sequences of ``config``),
        e.g. the one another estimator saw.
    on_log : called with a :class:`Checkpoint` after every logged point (progress, checkpoints).
    resume : a checkpoint of this run (from ``on_log`` or a :class:`DivergenceError`): the run
        continues from it and returns what an uninterrupted run returns.

    Returns
    -------
    Trajectory
        ``final`` is the last iterate (``AttentionParams``).

    Raises
    ------
    DivergenceError
        The loss became NaN or exceeded :data:`LOSS_LIMIT`; it keeps the last finite iterate.
    ConfigError
        Given data that does not match the run.
    """
    if not isinstance(run, TrainingRun):
        raise ConfigError(f"run must be a TrainingRun, got {type(run).__name__}")
    config, keys = run.config, run_keys(run.seed)
    teacher, data = _teacher_and_data(run, keys, teacher, training_set)
    heads = run.student_heads if run.heads_run else None
    start = start_params(keys.start, config, run.start, teacher, heads)
    radii = jnp.stack([jnp.linalg.norm(start.k), jnp.linalg.norm(start.v)])
    if resume is None:
        params, step, points = start, 0, []
    else:
        params, step, points = resume.state, int(resume.step), list(resume.points)
    advance = _advancer(run, data, radii)
    measure = _measurer(run, teacher)
    schedule = log_spaced_steps(run.steps, run.log_points)
    if not points:
        params, _, value, _ = advance(params, jnp.asarray(0), jnp.asarray(0))
        if not math.isfinite(float(value)) or float(value) > LOSS_LIMIT:
            raise DivergenceError(run.method, run.eta, float(value), 0, None)
        points.append(measure(params, 0, float(value)))
        _notify(on_log, Checkpoint(0, params, tuple(points)))
    for target in schedule[schedule > step]:
        params, reached, value, stop_value = advance(params, jnp.asarray(step), jnp.asarray(target))
        step = int(reached)
        if step < target:
            if points[-1].step != step:
                points.append(measure(params, step, float(value)))
            raise DivergenceError(
                run.method,
                run.eta,
                float(stop_value),
                step + 1,
                Checkpoint(step, params, tuple(points)),
            )
        points.append(measure(params, step, float(value)))
        _notify(on_log, Checkpoint(step, params, tuple(points)))
    return Trajectory(run, tuple(points), params)


def _advancer(run: TrainingRun, data: tuple, radii: jax.Array) -> Callable[..., tuple]:
    """:func:`_advance` with ``run``'s settings: ``(params, step, end)`` to its next iterate."""
    return functools.partial(
        _advance,
        data=data,
        h=jnp.asarray(run.time_per_step),
        lam=jnp.asarray(run.lam),
        radii=radii,
        activation=run.activation,
        method=run.method,
        config=run.config,
        batch=run.batch,
        sphere=run.sphere,
        token_draws=run.token_draws,
    )


def _teacher_and_data(
    run: TrainingRun,
    keys: RunKeys,
    teacher: Teacher | None,
    training_set: SLRBatch | None,
) -> tuple[Teacher, tuple]:
    """The run's teacher (given, or the seed's) and what its steps read: gd's training set (given,
    or the seed's) as ``(X, lengths, y)``, or the teacher and the key of SGD's stream; given ones
    are checked against the run."""
    config = run.config
    if training_set is not None and (teacher is None or run.method != "gd"):
        raise ConfigError("training_set goes with method gd and needs its teacher")
    if teacher is None:
        teacher = seed_teacher(run)
    shape = (config.heads, config.D) if config.multihead else (config.D,)
    if jnp.shape(teacher.k_star) != shape:
        raise ConfigError(f"teacher must have directions of shape {shape} (D = {config.D})")
    if run.method != "gd":
        return teacher, (teacher, keys.stream)
    N = training_size(run.alpha, config.D)
    if training_set is None:
        training_set = seed_training_set(run, teacher)
    if training_set.X.shape[0] != N or training_set.X.shape[1:] != (config.Lbar, config.D):
        raise ConfigError(
            f"training_set must hold N = round(alpha D) = {N} sequences of shape "
            f"({config.Lbar}, {config.D})"
        )
    return teacher, (training_set.X, training_set.lengths, training_set.y)


def _measurer(
    run: TrainingRun, teacher: Teacher
) -> Callable[[AttentionParams, int, float], TrajectoryPoint | HeadsPoint]:
    """What logs the iterate ``p`` at step ``s`` with training loss ``value``: its overlaps with
    the teacher and its test error (student heads: their matrices, module docstring)."""
    if not run.heads_run:
        return functools.partial(_measure, run, teacher)
    score, directions = _heads_scorer(run, teacher), head_axis(teacher)

    def measure(p: AttentionParams, s: int, value: float) -> HeadsPoint:
        error = score(p)
        return heads_point(p, directions, s, s * run.time_per_step, error.value, error.stderr)

    return measure


def _measure(
    run: TrainingRun, teacher: Teacher, p: AttentionParams, s: int, value: float
) -> TrajectoryPoint:
    """The logged point of one head's iterate ``p`` at step ``s`` with training loss
    ``value``."""
    overlaps = direction_overlaps(p.k, p.v, teacher)
    error = run_test_error(run, teacher, p)
    return TrajectoryPoint(
        step=s,
        time=s * run.time_per_step,
        **{name: float(overlaps[name]) for name in OVERLAP_NAMES if name != "c"},
        c=float(p.c),
        test_error=error.value,
        test_stderr=error.stderr,
        loss=value,
    )


def _notify(on_log: OnLog | None, checkpoint: Checkpoint) -> None:
    if on_log is not None:
        on_log(checkpoint)
