"""ERM experiments: training over several seeds at once, and test error on fresh samples.

:func:`fit_erm` (one training set) lives in :mod:`bayes_slr.attention.training` and is
re-exported here. :func:`erm_experiment` draws a teacher and ``N = round(alpha D)``
training samples per seed, trains all seeds together (``jax.vmap``), and reports the
test error of each fit (fresh samples, Monte Carlo) beside the population error that
MODEL.md section 4 predicts from its overlaps.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import check_activation
from bayes_slr.attention.estimators import AttentionParams, overlaps, predict
from bayes_slr.attention.training import (
    ERMFit,
    check_training_options,
    default_learning_rate,
    fit_erm,
    initial_params,
    train,
)
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import SLRConfig
from bayes_slr.theory.population import population_error

__all__ = ["ERMFit", "ERMSummary", "erm_experiment", "fit_erm", "squared_errors", "test_error"]


@functools.partial(jax.jit, static_argnames=("activation",))
def squared_errors(params: AttentionParams, batch: SLRBatch, activation: str) -> jax.Array:
    """Per-sample ``(z*_{eps*} - f(X))^2``: its mean is the excess error ``E[(y - f)^2] - Delta``.

    The noise of ``y`` is independent of ``X`` with mean zero, so leaving it out keeps
    the expectation and lowers the Monte Carlo variance.
    """
    target = jnp.take_along_axis(batch.z_star, batch.eps[:, None], axis=1)[:, 0]
    return (target - predict(params, batch.X, batch.lengths, activation)) ** 2


def test_error(
    key: jax.Array,
    params: AttentionParams,
    config: SLRConfig,
    teacher: Teacher,
    activation: str,
    N_test: int = 100_000,
) -> tuple[float, float]:
    """Excess test error ``E[(y - f(X))^2] - Delta`` of ``params`` and its standard error.

    Estimated on ``N_test`` fresh samples of the task ``config`` with ``teacher``,
    generated in chunks (memory stays flat).

    Returns
    -------
    (error, stderr)
    """
    check_activation(activation)
    N_test = check_int("N_test", N_test, 2)
    if jnp.shape(params.k)[-1] != config.D:
        raise ConfigError(f"params have D = {jnp.shape(params.k)[-1]} but config.D = {config.D}; they must match")
    result = streamed_mean(lambda batch: squared_errors(params, batch, activation), key, config, teacher, N_test)
    return float(result.mean), float(result.stderr)


class ERMSummary(NamedTuple):
    """Result of :func:`erm_experiment`.

    Attributes
    ----------
    test_error : mean over seeds of the per-seed test error.
    stderr : its standard error (see :func:`erm_experiment`).
    per_seed : one dict per seed: ``seed``, ``test_error``, ``stderr`` (Monte Carlo),
        ``train_loss``, ``grad_norm``, ``iterations``, ``converged``, ``overlaps``
        (:func:`~bayes_slr.attention.estimators.overlaps`) and
        ``predicted_population_error`` (MODEL.md section 4 at those overlaps, rescaled for
        the teacher norms: :func:`predicted_population_error`; ``None`` if not asked for).
    """

    test_error: float
    stderr: float
    per_seed: list[dict[str, Any]]


@functools.partial(jax.jit, static_argnames=("activation", "optimizer"))
def _train_seeds(starts, X, lengths, y, lam, tol, max_iter, learning_rate, *, activation, optimizer):
    def train_one(params, X_s, lengths_s, y_s):
        return train(params, X_s, lengths_s, y_s, activation=activation, optimizer=optimizer,
                     lam=lam, tol=tol, max_iter=max_iter, learning_rate=learning_rate)

    return jax.vmap(train_one)(starts, X, lengths, y)


def seed_keys(seed: int, index: int | jax.Array) -> jax.Array:
    """The four PRNG keys of seed ``index`` of an experiment: teacher, training set, start, test samples."""
    return jax.random.split(jax.random.fold_in(jax.random.PRNGKey(seed), index), 4)


def seed_mean(errors: np.ndarray, stderrs: np.ndarray) -> tuple[float, float]:
    """Mean of per-seed estimates and its standard error.

    With several seeds the spread across seeds (which contains each seed's Monte Carlo
    error) gives the standard error; it is floored by the pooled Monte Carlo error, so
    that a few seeds agreeing by chance cannot report less than the Monte Carlo noise.
    One seed: its Monte Carlo standard error.
    """
    errors, stderrs = np.asarray(errors, float), np.asarray(stderrs, float)
    seeds = errors.size
    pooled_mc = float(np.mean(stderrs**2) / seeds)
    if seeds == 1:
        return float(errors[0]), float(stderrs[0])
    return float(errors.mean()), float(np.sqrt(max(errors.var(ddof=1) / seeds, pooled_mc)))


def erm_experiment(
    config: SLRConfig,
    activation: str,
    *,
    alpha: float,
    lam: float,
    seeds: int,
    seed: int = 0,
    init: str = "random",
    optimizer: str = "lbfgs",
    N_test: int = 20_000,
    tol: float = 1e-6,
    max_iter: int = 2000,
    exact_teacher: bool = False,
    predict_population: bool = True,
) -> ERMSummary:
    """Train ERM on ``seeds`` independent tasks and report the test error.

    Seed ``s`` draws its teacher, training set, random start and test samples from
    :func:`seed_keys` ``(seed, s)``. All seeds are trained together with ``jax.vmap``.

    Parameters
    ----------
    config : SLRConfig
        The task; ``D`` is the dimension.
    activation : str
        ``softmax``, ``linear``, ``erf`` or ``softplus``.
    alpha : float
        Samples per dimension, ``> 0``: ``N = max(1, round(alpha D))``.
    lam : float
        Ridge strength, ``>= 0``.
    seeds : int
        Number of independent teachers and training sets, ``>= 1``.
    seed : int
        Root seed.
    init, optimizer, tol, max_iter :
        As in :func:`fit_erm`.
    N_test : int
        Fresh test samples per seed, ``>= 2``.
    exact_teacher : bool
        ``False`` (default): teachers from the prior ``N(0, I_D)``. ``True``: the
        population limit ``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``, which removes the
        teacher-norm part of the finite-``D`` fluctuation.
    predict_population : bool
        Whether to evaluate ``predicted_population_error`` per seed (quadrature; slow for
        softmax on max-SLR with ``nu = inf`` at large key norms). ``False`` records ``None``.

    Returns
    -------
    ERMSummary
        ``stderr`` combines the spread over seeds with the Monte Carlo error (:func:`seed_mean`).
    """
    check_training_options(activation, lam, optimizer, init, tol, max_iter)
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    seeds = check_int("seeds", seeds, 1)
    seed = check_int("seed", seed, 0)
    N_test = check_int("N_test", N_test, 2)
    N = max(1, round(alpha * config.D))

    keys = jax.vmap(lambda s: seed_keys(seed, s))(jnp.arange(seeds))
    teachers = jax.vmap(lambda k: draw_teacher(k, config.D, exact=exact_teacher))(keys[:, 0])
    batches = jax.vmap(lambda k, t: simulate(k, config, t, N))(keys[:, 1], teachers)
    starts = jax.vmap(lambda k, t: initial_params(k, config, init, t))(keys[:, 2], teachers)
    params, values, grad_norms, counts = _train_seeds(
        starts, batches.X, batches.lengths, batches.y, lam, tol, max_iter,
        default_learning_rate(config, activation), activation=activation, optimizer=optimizer,
    )

    per_seed = []
    for s in range(seeds):
        fitted = jax.tree_util.tree_map(lambda leaf: leaf[s], params)
        teacher = jax.tree_util.tree_map(lambda leaf: leaf[s], teachers)
        error, stderr = test_error(keys[s, 3], fitted, config, teacher, activation, N_test)
        fitted_overlaps = overlaps(fitted, teacher)
        per_seed.append({
            "seed": s,
            "test_error": error,
            "stderr": stderr,
            "train_loss": float(values[s]),
            "grad_norm": float(grad_norms[s]),
            "iterations": int(counts[s]),
            "converged": bool(grad_norms[s] <= tol),
            "overlaps": fitted_overlaps,
            "predicted_population_error": (
                predicted_population_error(activation, config, fitted_overlaps) if predict_population else None
            ),
        })
    mean, stderr = seed_mean(np.array([r["test_error"] for r in per_seed]), np.array([r["stderr"] for r in per_seed]))
    return ERMSummary(mean, stderr, per_seed)


def predicted_population_error(activation: str, config: SLRConfig, fitted_overlaps: dict[str, float]) -> float:
    """Population error (MODEL.md section 4) predicted from the overlaps of a fit.

    MODEL.md's formula assumes ``|k*|^2 = |v*|^2 = D``. A teacher with
    ``rho_k = |k*|^2/D`` and ``rho_v = |v*|^2/D`` is rescaled onto it exactly: with
    ``chi*' = chi*/sqrt(rho_k)`` and ``z*' = z*/sqrt(rho_v)`` standard, the location law
    has ``c_nu' = c_nu sqrt(rho_k)`` (``nu' = nu rho_k`` spiked, ``nu sqrt(rho_k)`` max),
    the key overlap is ``m_k / sqrt(rho_k)`` (``q_k`` unchanged), and the error is
    ``rho_v`` times that of the value overlaps ``m_v / rho_v``, ``q_v / rho_v``. What is
    left out are the cross overlaps (``k.v*``, ``v.k*``, ``k.v``, ``k*.v*``): the finite-``D`` effect.
    ``nan`` if a fit diverged (non-finite overlaps).
    """
    o = fitted_overlaps
    if not all(np.isfinite(value) for value in o.values()):
        return float("nan")  # a diverged fit: its test error is reported as it is
    rho_k, rho_v = o["rho_k"], o["rho_v"]
    nu = config.nu * (rho_k if config.variant == "spiked" else np.sqrt(rho_k))
    error = population_error(
        activation, config.replace(nu=float(nu)), o["m_k"] / np.sqrt(rho_k), o["q_k"], o["m_v"] / rho_v,
        o["q_v"] / rho_v, c=o["c"],
    )
    return float(rho_v * error)
