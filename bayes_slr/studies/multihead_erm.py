"""ERM with an ``H_s``-head attention student on ``H``-head SLR (docs/multihead.md section 7).

The estimator ``f(X) = sum_h sum_l s(chi_h)_l z_{h,l}`` (attention parameters with a head axis,
:func:`~bayes_slr.attention.estimators.predict`) is trained by the toolkit's L-BFGS
(:func:`~bayes_slr.attention.training.train_problems`, ridge ``lam`` on every key, value and
offset) from ``starts`` random starts per seed, all starts of a seed at once (``jax.vmap``); the
start with the lowest objective is the fit. Each seed draws its own teacher (the exact
teacher by default: the ``2H`` directions orthogonal with squared norms ``D``, where the
population error at given overlaps is exact at any ``D``), training set and test set. A fit is
reported with its excess test error on fresh sequences, its ``H_s x H`` overlap matrices with the
teacher heads and the permutation (student head to teacher head) it found.
"""

from __future__ import annotations

from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import linear_sum_assignment

from bayes_slr.attention.activations import get_activation
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.attention.training import train_problems
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.models.simulate import Teacher, draw_task_teacher, simulate, streamed_mean
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.studies.erm import seed_mean
from bayes_slr.studies.multihead_erm_records import HeadOverlaps, MultiHeadERM, MultiHeadERMSeed

DEFAULT_LAM = 1e-3
"""Ridge of the per-sample objective (its effect on the fit falls as ``lam / N``)."""
INIT_SCALE = 1.0
"""Standard deviation of the coordinates of every ``k_h``, ``v_h`` at a random start: the prior's.

Why not the one-head 0.1 (:data:`~bayes_slr.attention.training.RANDOM_INIT_SCALE`): from small
starts the heads first learn the same direction (the sum of the teacher heads) and stay alike.
Measured (spiked ``nu = 2``, ``L = 3``, ``H = H_s = 2``, ``rho = 1``, ``D = 8``, ``alpha = 250``,
softmax, 4 seeds of 4 starts): at 0.1 every start of one seed ended unspecialised (both keys
mixing both teacher keys, test error 0.391 against 0.364-0.374 for the other seeds); at 1 one of its
starts specialised (0.369), and the lowest objective picked it.
"""


class _Options(NamedTuple):
    """The checked settings of :func:`multihead_erm` besides the task, the student and ``alpha``."""

    starts: int
    lam: float
    tol: float
    max_iter: int
    N_test: int
    exact_teacher: bool
    scale: float

    @classmethod
    def checked(
        cls,
        starts: object,
        lam: object,
        tol: object,
        max_iter: object,
        N_test: object,
        exact_teacher: object,
        init_scale: object,
    ) -> _Options:
        """The settings as given, or ``ConfigError`` naming the first bad one."""
        return cls(
            check_int("starts", starts, 1),
            check_real("lam", lam, minimum=0.0),
            check_real("tol", tol, minimum=0.0, strict=True),
            check_int("max_iter", max_iter, 1),
            check_int("N_test", N_test, 2),
            bool(exact_teacher),
            check_real("init_scale", init_scale, minimum=0.0, strict=True),
        )


def random_heads(key: jax.Array, D: int, student_heads: int, scale: float) -> AttentionParams:
    """A random start of ``student_heads`` heads: every ``k_h``, ``v_h`` i.i.d.
    ``N(0, scale^2 I_D)``, every offset 0."""
    k, v = scale * jax.random.normal(key, (2, student_heads, D))
    return AttentionParams(k, v, jnp.zeros(student_heads))


def _cosines(student: np.ndarray, teacher: np.ndarray) -> np.ndarray:
    """``H_s x H`` cosines between the rows of ``student`` and ``teacher`` (0 for a zero row)."""
    norms = np.linalg.norm(student, axis=1)[:, None] * np.linalg.norm(teacher, axis=1)[None, :]
    dots = student @ teacher.T
    return np.divide(dots, norms, out=np.zeros_like(dots), where=norms > 0)


def head_overlaps(params: AttentionParams, teacher: Teacher) -> HeadOverlaps:
    """The overlaps of an ``H_s``-head fit with the teacher heads and the permutation it found
    (:class:`~bayes_slr.studies.multihead_erm_records.HeadOverlaps`)."""
    k, v = np.asarray(params.k, float), np.asarray(params.v, float)
    k_star = np.atleast_2d(np.asarray(teacher.k_star, float))
    v_star = np.atleast_2d(np.asarray(teacher.v_star, float))
    D = k.shape[-1]
    cosine_k, cosine_v = _cosines(k, k_star), _cosines(v, v_star)
    rows, cols = linear_sum_assignment(np.abs(cosine_k) + np.abs(cosine_v), maximize=True)
    permutation = [None] * k.shape[0]
    for row, col in zip(rows, cols, strict=True):
        permutation[int(row)] = int(col)

    def matrix(values: np.ndarray) -> tuple[tuple[float, ...], ...]:
        return tuple(tuple(float(x) for x in row) for row in values)

    return HeadOverlaps(
        m_k=matrix(k @ k_star.T / D),
        m_v=matrix(v @ v_star.T / D),
        q_k=tuple(float(x) for x in np.sum(k**2, axis=1) / D),
        q_v=tuple(float(x) for x in np.sum(v**2, axis=1) / D),
        c=tuple(float(x) for x in np.asarray(params.c, float)),
        cosine_k=matrix(cosine_k),
        cosine_v=matrix(cosine_v),
        permutation=tuple(permutation),
    )


def _seed_fit(
    config: SLRConfig,
    activation: str,
    student_heads: int,
    N: int,
    seed: int,
    options: _Options,
) -> MultiHeadERMSeed:
    """Draw the seed's teacher, training set and starts; train; score the best start."""
    key_teacher, key_train, key_starts, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_task_teacher(key_teacher, config, exact=options.exact_teacher)
    batch = simulate(key_train, config, teacher, N)
    starts = jax.vmap(lambda key: random_heads(key, config.D, student_heads, options.scale))(
        jax.random.split(key_starts, options.starts)
    )
    params, losses, grad_norms, _ = jax.tree_util.tree_map(
        lambda leaf: leaf[0, 0],
        train_problems(
            jax.tree_util.tree_map(lambda leaf: leaf[None, None], starts),
            jax.tree_util.tree_map(lambda leaf: leaf[None], batch),
            np.full((1, 1), options.lam),
            activation=activation,
            optimizer="lbfgs",
            tol=options.tol,
            max_iter=options.max_iter,
            vectorised=True,
        ),
    )
    losses = np.asarray(losses, float)
    best = int(np.nanargmin(np.where(np.isfinite(losses), losses, np.nan)))
    fit = jax.tree_util.tree_map(lambda leaf: leaf[best], params)
    signal = config.replace(Delta=0.0)  # y is the signal: the squared error is the excess error

    def squared_error(sample):
        return (sample.y - predict(fit, sample.X, sample.lengths, activation)) ** 2

    def scored(values):
        return streamed_mean(values, key_test, signal, teacher, options.N_test)

    test = scored(squared_error)
    # the zero predictor, and the paired difference, on the same test sequences (same key)
    zero = scored(lambda sample: sample.y**2)
    excess = scored(lambda sample: squared_error(sample) - sample.y**2)
    grad_norm = float(grad_norms[best])
    return MultiHeadERMSeed(
        seed=seed,
        N=N,
        test_error=float(test.mean),
        test_stderr=float(test.stderr),
        train_loss=float(losses[best]),
        grad_norm=grad_norm,
        converged=grad_norm <= options.tol,
        start_losses=tuple(float(x) for x in losses),
        overlaps=head_overlaps(fit, teacher),
        zero_error=float(zero.mean),
        excess_over_zero=float(excess.mean),
        excess_over_zero_stderr=float(excess.stderr),
    )


def _over_seeds(
    per_seed: tuple[MultiHeadERMSeed, ...], value: str, stderr: str
) -> tuple[float, float]:
    """The mean over seeds of the field ``value`` and its standard error (:func:`seed_mean`,
    each seed's error the field ``stderr``)."""
    return seed_mean(
        np.asarray([getattr(s, value) for s in per_seed]),
        np.asarray([getattr(s, stderr) for s in per_seed]),
    )


def multihead_erm(
    config: SLRConfig,
    activation: str,
    student_heads: int,
    alpha: float,
    *,
    seeds: int = 1,
    seed: int = 0,
    starts: int = 4,
    lam: float = DEFAULT_LAM,
    tol: float = 1e-6,
    max_iter: int = 2000,
    N_test: int = 20_000,
    exact_teacher: bool = True,
    init_scale: float = INIT_SCALE,
) -> MultiHeadERM:
    """ERM of an ``H_s``-head attention student on the multi-head task ``config``.

    Parameters
    ----------
    config : SLRConfig
        The task: ``heads`` (the teacher's ``H``), ``presence``, ``D``, ``Delta``, the token law.
    activation : str
        Any activation (registered, or ``softmax1``, ``bayes_softmax``; the offset ``c`` of
        every head is trained with the others).
    student_heads : int
        ``H_s >= 1``, the student's heads (may differ from ``H``).
    alpha : float
        Samples per dimension, ``N = round(alpha D)``.
    seeds : int
        Independent teachers and training sets, seeds ``seed .. seed + seeds - 1``.
    starts : int
        Random starts per training set (``k_h, v_h ~ N(0, init_scale^2 I_D)``); the fit is the
        one with the lowest objective.
    lam : float
        Ridge ``>= 0`` of the per-sample objective.
    tol, max_iter : L-BFGS stops at ``|grad| <= tol`` or after ``max_iter`` iterations.
    N_test : int
        Fresh test sequences per seed.
    exact_teacher : bool
        Orthogonal teacher directions with squared norms ``D`` (needs ``D >= 2 H``), else drawn
        from the prior.
    init_scale : float
        Standard deviation of the start's coordinates (:data:`INIT_SCALE`).

    Returns
    -------
    MultiHeadERM
        The mean test error over seeds, its standard error and one record per seed (test
        error, objective, overlap matrices and permutation).
    """
    if not isinstance(config, SLRConfig):
        raise ConfigError(f"config must be an SLRConfig, got {type(config).__name__}")
    activation = get_activation(activation).name
    student_heads = check_int("student_heads", student_heads, 1)
    N = training_size(alpha, config.D)
    options = _Options.checked(starts, lam, tol, max_iter, N_test, exact_teacher, init_scale)
    first = check_int("seed", seed, 0)
    per_seed = tuple(
        _seed_fit(config, activation, student_heads, N, first + offset, options)
        for offset in range(check_int("seeds", seeds, 1))
    )
    mean, stderr = _over_seeds(per_seed, "test_error", "test_stderr")
    excess, excess_stderr = _over_seeds(per_seed, "excess_over_zero", "excess_over_zero_stderr")
    return MultiHeadERM(
        activation,
        student_heads,
        float(alpha),
        options.lam,
        options.starts,
        mean,
        stderr,
        per_seed,
        float(np.mean([s.zero_error for s in per_seed])),
        excess,
        excess_stderr,
    )
