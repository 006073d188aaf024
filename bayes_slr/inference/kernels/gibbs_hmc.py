"""Gibbs sampler with an HMC step for ``k`` (kernel ``"gibbs-hmc"``): max-SLR, finite ``nu``.

One step updates, in turn (each move leaves the posterior invariant):

1. ``eps_mu | k, v``: independent categoricals (exact);
2. ``v | eps``: Gaussian (exact, Bayesian linear regression);
3. ``k | eps``: one HMC transition (``N_LEAPFROG`` leapfrog steps, Metropolis correction) on
   ``log p(k | eps, X) = -|k|^2/2 + sum_mu [nu chi_{mu, eps_mu} - logsumexp_l nu chi_{mu, l}]``.

Why this mixes: given the locations, ``-log p(k | eps)`` is convex (a quadratic plus a
sum of log-sum-exps of linear functions), so the ``k`` move has no separated modes; the
discrete location moves, which NUTS on the summed-out posterior cannot make, carry the
chain between location configurations. The mass matrix is the Hessian of
``-log p(k | eps)`` at ``k = 0`` (uniform softmax),
``M = I + (nu^2/D) sum_mu X_mu^T (diag(u) - u u^T) X_mu`` with ``u`` uniform over the real
tokens: a constant, data-only preconditioner (it bounds the curvature at any ``k`` from
above in the typical case, because the softmax covariance of the scores is largest when
the weights are uniform). The step size is adapted during the warm-up (Robbins-Monro on
its logarithm, target acceptance ``TARGET_ACCEPT``) and then frozen; each transition
jitters it by +-20% to avoid periodic trajectories.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.inference.kernels.base import Kernel, SamplerData
from bayes_slr.inference.kernels.conditionals import draw_gaussian, draw_locations, located_tokens, value_conditional
from bayes_slr.models.numpyro_models import location_log_weights
from bayes_slr.models.simulate import token_mask
from bayes_slr.models.spec import SLRConfig

NAME = "gibbs-hmc"
VARIANTS = ("max",)
"""Token laws for which ``k | eps`` is log-concave and not Gaussian (any law would do, the
exact Gibbs kernel is better where ``k | eps`` is Gaussian)."""
N_LEAPFROG = 8
TARGET_ACCEPT = 0.8
INITIAL_STEP_SIZE = 0.5
BETA_START = 0.02
ANNEALED_FRACTION = 0.5


class GibbsHMCState(NamedTuple):
    k: jax.Array
    v: jax.Array
    log_step_size: jax.Array
    iteration: jax.Array
    mass_cholesky: jax.Array
    data: SamplerData


def mass_matrix(config: SLRConfig, X: jax.Array, lengths: jax.Array) -> jax.Array:
    """Hessian of ``-log p(k | eps)`` at ``k = 0`` (independent of ``eps``), ``(D, D)``."""
    D = config.D
    mask = token_mask(lengths, config.Lbar).astype(X.dtype)
    u = mask / jnp.sum(mask, axis=-1, keepdims=True)  # (N, Lbar) uniform weights
    mean_token = jnp.einsum("nl,nld->nd", u, X)
    second = jnp.einsum("nl,nld,nle->de", u, X, X)
    covariance = second - mean_token.T @ mean_token
    return jnp.eye(D) + config.nu**2 / D * covariance


def temperature(iteration: jax.Array, warmup: int) -> jax.Array:
    """Likelihood power ``beta`` at step ``iteration``: geometric from ``BETA_START`` to 1 over the
    first ``ANNEALED_FRACTION`` of the warm-up, then 1 (always 1 after the warm-up)."""
    ramp = max(int(ANNEALED_FRACTION * warmup), 1)
    progress = jnp.minimum(iteration / ramp, 1.0)
    return jnp.where(iteration >= ramp, 1.0, BETA_START ** (1.0 - progress))


@functools.lru_cache(maxsize=32)
def make_kernel(config: SLRConfig, warmup: int) -> Kernel:
    """The Gibbs-HMC kernel for ``config`` whose step size adapts during the first ``warmup`` steps."""

    def log_conditional(k: jax.Array, data: SamplerData, eps: jax.Array, beta: jax.Array) -> jax.Array:
        log_w = location_log_weights(data.X, data.lengths, k, config)  # log softmax(nu chi), -inf on padding
        at_eps = jnp.take_along_axis(log_w, eps[:, None], axis=1)[:, 0]
        return -0.5 * k @ k + beta * jnp.sum(at_eps)

    grad = jax.grad(log_conditional)

    def init(key: jax.Array, data: SamplerData, start: tuple[jax.Array, jax.Array]) -> GibbsHMCState:
        chol = jnp.linalg.cholesky(mass_matrix(config, data.X, data.lengths))
        return GibbsHMCState(start[0], start[1], jnp.log(INITIAL_STEP_SIZE), jnp.asarray(0), chol, data)

    def hmc_move(key, k, state: GibbsHMCState, eps, beta):
        key_p, key_jitter, key_accept = jax.random.split(key, 3)
        chol, data = state.mass_cholesky, state.data
        step_size = jnp.exp(state.log_step_size) * jax.random.uniform(key_jitter, minval=0.8, maxval=1.2)
        p = chol @ jax.random.normal(key_p, k.shape)  # p ~ N(0, M)

        def velocity(p):
            return jax.scipy.linalg.cho_solve((chol, True), p)

        def energy(k, p):
            return -log_conditional(k, data, eps, beta) + 0.5 * p @ velocity(p)

        def leapfrog(carry, _):
            k, p = carry
            p = p + 0.5 * step_size * grad(k, data, eps, beta)
            k = k + step_size * velocity(p)
            p = p + 0.5 * step_size * grad(k, data, eps, beta)
            return (k, p), None

        (k_new, p_new), _ = jax.lax.scan(leapfrog, (k, p), None, length=N_LEAPFROG)
        log_ratio = energy(k, p) - energy(k_new, p_new)
        accept_prob = jnp.where(jnp.isfinite(log_ratio), jnp.minimum(1.0, jnp.exp(log_ratio)), 0.0)
        accepted = jax.random.uniform(key_accept) < accept_prob
        return jnp.where(accepted, k_new, k), accept_prob

    def step(key: jax.Array, state: GibbsHMCState) -> tuple[GibbsHMCState, dict[str, jax.Array]]:
        X, lengths, y = state.data
        key_eps, key_v, key_k = jax.random.split(key, 3)
        beta = temperature(state.iteration, warmup)
        eps = draw_locations(key_eps, config, X, lengths, y, state.k, state.v, beta)
        v = draw_gaussian(key_v, value_conditional(located_tokens(X, eps), y, config.Delta / beta))
        k, accept_prob = hmc_move(key_k, state.k, state, eps, beta)
        adapting = state.iteration < warmup
        gain = 2.0 / (state.iteration + 10.0) ** 0.6
        log_step_size = jnp.where(adapting, state.log_step_size + gain * (accept_prob - TARGET_ACCEPT),
                                  state.log_step_size)
        new = GibbsHMCState(k, v, log_step_size, state.iteration + 1, state.mass_cholesky, state.data)
        return new, {"acceptance_rate": accept_prob, "step_size": jnp.exp(state.log_step_size)}

    return Kernel(NAME, init, step, lambda state: (state.k, state.v))
