"""Online SGD of an ``H_s``-head attention student on ``H``-head SLR (docs/multihead.md,
"Dynamics").

The student ``f(X) = sum_j sum_l s(chi_j)_l z_{j,l}`` (parameters with a head axis,
:func:`~bayes_slr.attention.estimators.predict`) starts at random, every ``k_j``, ``v_j`` i.i.d.
``N(0, init_scale^2 I_D)`` (the one-head ERM and dynamics start, ``q = 0.01``, by default), and
takes the steps of one-head online SGD (:mod:`bayes_slr.attention.dynamics`): a fresh batch of
``B`` sequences per step (each drawn and read once, tokens drawn in float32), ``k_j <- k_j - eta
g``, ``v_j <- v_j - eta g``, ``c_j <- c_j - (eta / D) g`` with ``g`` the gradient of the batch's
mean ``(y - f)^2 / 2``, and time ``eta / D`` per step, so that the overlaps follow the SGD ODE of
:mod:`bayes_slr.formulas.multihead_flow` as ``D -> inf``. At log-spaced steps it records the
overlap matrices with the teacher heads and the test error on a fixed set of fresh sequences.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import get_activation
from bayes_slr.attention.dynamics import SGD_TOKEN_DTYPE
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.attention.multihead_trajectory import HeadsPoint, HeadsTrajectory, as_matrix
from bayes_slr.attention.training import RANDOM_INIT_SCALE
from bayes_slr.attention.trajectory import log_spaced_steps
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.models.simulate import Teacher, draw_task_teacher, simulate
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class HeadsSGDRun(Record):
    """One online-SGD run of ``H_s`` heads. Checked on creation (``ConfigError``).

    Attributes
    ----------
    config : the task (``heads`` is the teacher's ``H``, ``presence``, ``D``, ``Delta``, the token
        law).
    activation : any activation (registered, or ``softmax1``, ``bayes_softmax``).
    student_heads : ``H_s >= 1``.
    eta : step per sequence, ``> 0`` (time ``eta / D`` per step).
    steps : number of steps, ``>= 1``.
    batch : fresh sequences per step, ``>= 1``.
    seed : root seed of the teacher, the start, the test set and the stream of batches.
    init_scale : standard deviation of the start's coordinates, ``> 0``.
    log_points : about this many log-spaced logged steps, ``>= 2``.
    N_test : fresh test sequences (one set for every logged point), ``>= 2``.
    exact_teacher : the ``2H`` teacher directions orthogonal with squared norms ``D`` (the
        population teacher the ODEs assume; needs ``D >= 2H``), else drawn from the prior.
    """

    config: SLRConfig
    activation: str
    student_heads: int
    eta: float
    steps: int
    batch: int = 1
    seed: int = 0
    init_scale: float = RANDOM_INIT_SCALE
    log_points: int = 48
    N_test: int = 10_000
    exact_teacher: bool = True

    def __post_init__(self) -> None:
        if not isinstance(self.config, SLRConfig):
            raise ConfigError(f"config must be an SLRConfig, got {type(self.config).__name__}")
        object.__setattr__(self, "activation", get_activation(self.activation).name)
        object.__setattr__(self, "student_heads", check_int("student_heads", self.student_heads, 1))
        object.__setattr__(self, "eta", check_real("eta", self.eta, minimum=0.0, strict=True))
        object.__setattr__(self, "steps", check_int("steps", self.steps, 1))
        object.__setattr__(self, "batch", check_int("batch", self.batch, 1))
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))
        scale = check_real("init_scale", self.init_scale, minimum=0.0, strict=True)
        object.__setattr__(self, "init_scale", scale)
        object.__setattr__(self, "log_points", check_int("log_points", self.log_points, 2))
        object.__setattr__(self, "N_test", check_int("N_test", self.N_test, 2))

    @property
    def time_per_step(self) -> float:
        """ODE time of one step, ``eta / D``."""
        return self.eta / self.config.D


class HeadsRunKeys(NamedTuple):
    """The independent PRNG keys of a run."""

    teacher: jax.Array
    start: jax.Array
    test: jax.Array
    stream: jax.Array


def heads_run_keys(seed: int) -> HeadsRunKeys:
    """Keys of the teacher, start, test set and stream of batches of seed ``seed``."""
    return HeadsRunKeys(*jax.random.split(jax.random.PRNGKey(check_int("seed", seed, 0)), 4))


def run_teacher(run: HeadsSGDRun) -> Teacher:
    """The teacher of ``run``'s seed, its directions with a head axis ``(H, D)``."""
    teacher = draw_task_teacher(
        heads_run_keys(run.seed).teacher, run.config, exact=run.exact_teacher
    )
    return Teacher(jnp.atleast_2d(teacher.k_star), jnp.atleast_2d(teacher.v_star))


def run_start(run: HeadsSGDRun) -> AttentionParams:
    """The random start of ``run``'s seed: every ``k_j``, ``v_j`` i.i.d.
    ``N(0, init_scale^2 I_D)``, every offset 0."""
    k, v = run.init_scale * jax.random.normal(
        heads_run_keys(run.seed).start, (2, run.student_heads, run.config.D)
    )
    return AttentionParams(k, v, jnp.zeros(run.student_heads))


def _teacher_shaped(config: SLRConfig, teacher: Teacher) -> Teacher:
    """The teacher as :func:`~bayes_slr.models.simulate.simulate` takes it for ``config``."""
    return teacher if config.multihead else Teacher(teacher.k_star[0], teacher.v_star[0])


@functools.partial(jax.jit, static_argnames=("activation", "config", "batch"))
def _advance(params, start, end, teacher, stream, eta, *, activation, config, batch):
    """SGD steps ``start .. end - 1``; step ``s`` reads the batch of ``fold_in(stream, s)``."""

    def loss(p: AttentionParams, s: jax.Array) -> jax.Array:
        fresh = simulate(
            jax.random.fold_in(stream, s), config, teacher, batch, token_dtype=SGD_TOKEN_DTYPE
        )
        return 0.5 * jnp.mean((fresh.y - predict(p, fresh.X, fresh.lengths, activation)) ** 2)

    def body(s, p):
        g = jax.grad(loss)(p, s)
        return AttentionParams(p.k - eta * g.k, p.v - eta * g.v, p.c - eta / config.D * g.c)

    return jax.lax.fori_loop(start, end, body, params)


@functools.partial(jax.jit, static_argnames=("activation",))
def _test_error(params, X, lengths, y, *, activation):
    errors = (y - predict(params, X, lengths, activation)) ** 2
    return jnp.mean(errors), jnp.std(errors, ddof=1) / jnp.sqrt(errors.size)


def heads_point(
    params: AttentionParams, teacher: Teacher, step: int | None, time: float, error, stderr
) -> HeadsPoint:
    """The logged point of ``params`` against ``teacher`` (directions ``(H, D)``)."""
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


def train_heads_sgd(run: HeadsSGDRun) -> HeadsTrajectory:
    """Run ``run`` (module docstring) and return its logged points.

    Parameters
    ----------
    run : HeadsSGDRun

    Returns
    -------
    HeadsTrajectory
        Points at step 0 and about ``log_points`` log-spaced steps up to ``steps``; the test
        error of each on the same ``N_test`` fresh sequences (``Delta`` excluded).
    """
    if not isinstance(run, HeadsSGDRun):
        raise ConfigError(f"run must be a HeadsSGDRun, got {type(run).__name__}")
    config, keys = run.config, heads_run_keys(run.seed)
    teacher = run_teacher(run)
    shaped = _teacher_shaped(config, teacher)
    test = simulate(keys.test, config.replace(Delta=0.0), shaped, run.N_test)
    params = run_start(run)
    advance = functools.partial(
        _advance,
        teacher=shaped,
        stream=keys.stream,
        eta=jnp.asarray(run.eta),
        activation=run.activation,
        config=config,
        batch=run.batch,
    )
    score = functools.partial(
        _test_error, X=test.X, lengths=test.lengths, y=test.y, activation=run.activation
    )
    points, done = [], 0
    for target in log_spaced_steps(run.steps, run.log_points):
        params = advance(params, done, int(target))
        done = int(target)
        error, stderr = score(params)
        if not math.isfinite(float(error)):
            raise ConfigError(
                f"online SGD diverged before step {done} (eta = {run.eta:g}); take a smaller eta"
            )
        points.append(heads_point(params, teacher, done, done * run.time_per_step, error, stderr))
    return HeadsTrajectory(tuple(points))
