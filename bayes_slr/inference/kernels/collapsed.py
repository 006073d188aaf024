"""Collapsed Gibbs sampler for tilted laws (kernel ``"collapsed"``): max-SLR, finite ``nu``.

One step updates, in turn (each move leaves the posterior ``p(k, v, eps | data)`` invariant):

1. ``eps | k`` with ``v`` integrated out: a systematic sweep over the sequences, each
   location drawn from ``p(eps_mu | eps_-mu, k, data)``, proportional to its location weight
   ``softmax(c_nu chi_mu)`` times the predictive ``N(y_mu; a_l . m, Delta + a_l^T S a_l)``
   of the value regression fitted on the other sequences (mean ``m``, covariance ``S``,
   ``a_l = x_{mu, l} / sqrt(D)``); ``S`` and ``m`` follow the sweep by Sherman-Morrison
   rank-one down- and updates, ``O(Lbar D^2)`` per sequence, and are recomputed from the
   locations at every step (no drift);
2. ``v | eps``: Gaussian (exact Bayesian linear regression); with step 1 a draw of
   ``(eps, v) | k``;
3. ``k | eps``: one HMC transition on the log-concave ``-|k|^2/2 + sum_mu log
   softmax(c_nu chi_mu)_{eps_mu}`` (``v`` is independent of ``k`` given the locations), with
   the Gibbs-HMC kernel's mass matrix (the Hessian at ``k = 0``, any ``eps``), leapfrog count
   and step-size adaptation.

A chain starts with every location at the first token (the first sweep re-draws them).

Integrating ``v`` out removes the ``v``-``eps`` coupling that makes plain data augmentation
slow (with ``Delta`` small, ``v | eps`` barely moves once ``eps`` is fixed by ``v``). The
warm-up is annealed as in :mod:`.gibbs_hmc` (:func:`~.gibbs_hmc.temperature`): the
likelihood raised to ``beta`` (location logits times ``beta``, noise ``Delta / beta``).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.inference.kernels.base import Kernel, SamplerData
from bayes_slr.inference.kernels.conditionals import (
    draw_gaussian,
    located_tokens,
    value_conditional,
)
from bayes_slr.inference.kernels.gibbs_hmc import (
    INITIAL_STEP_SIZE,
    TARGET_ACCEPT,
    hmc_transition,
    mass_matrix,
    temperature,
)
from bayes_slr.models.numpyro_models import location_log_weights
from bayes_slr.models.spec import SLRConfig

NAME = "collapsed"
"""Its name in the sampler registry; it serves tilted laws (``k | eps`` log-concave, not
Gaussian)."""


class CollapsedState(NamedTuple):
    k: jax.Array
    v: jax.Array
    eps: jax.Array
    log_step_size: jax.Array
    iteration: jax.Array
    mass_cholesky: jax.Array
    data: SamplerData


def collapsed_location_sweep(
    key: jax.Array,
    A: jax.Array,
    y: jax.Array,
    log_w: jax.Array,
    eps: jax.Array,
    Delta: jax.Array | float,
) -> jax.Array:
    """One systematic sweep of ``eps_mu ~ p(eps_mu | eps_-mu, data)`` with ``v ~ N(0, I)``
    integrated out.

    Parameters
    ----------
    key : PRNG key.
    A : (N, Lbar, D) regressors ``x / sqrt(D)`` of every token.
    y : (N,) outputs.
    log_w : (N, Lbar) location log-weights (``-inf`` on padding), fixed during the sweep.
    eps : (N,) current locations.
    Delta : noise variance of the value regression.

    Returns
    -------
    (N,) the new locations.
    """
    located = A[jnp.arange(A.shape[0]), eps]
    D = A.shape[-1]
    covariance = jnp.linalg.inv(jnp.eye(D) + located.T @ located / Delta)
    shift = located.T @ y / Delta  # A^T y / Delta: the mean is covariance @ shift

    def one(carry, inputs):
        covariance, shift = carry
        key, a_seq, y_mu, log_w_mu, old = inputs
        a = a_seq[old]
        s = covariance @ a
        covariance = covariance + jnp.outer(s, s) / (Delta - a @ s)  # remove sequence mu
        shift = shift - a * y_mu / Delta
        spread = a_seq @ covariance  # (Lbar, D): S a_l
        variance = Delta + jnp.sum(spread * a_seq, axis=-1)
        mean = spread @ shift
        logits = log_w_mu - 0.5 * (jnp.log(variance) + (y_mu - mean) ** 2 / variance)
        new = jax.random.categorical(key, logits)
        s = spread[new]
        covariance = covariance - jnp.outer(s, s) / variance[new]  # add it back at its location
        shift = shift + a_seq[new] * y_mu / Delta
        return (covariance, shift), new

    keys = jax.random.split(key, A.shape[0])
    _, new_eps = jax.lax.scan(one, (covariance, shift), (keys, A, y, log_w, eps))
    return new_eps


@functools.lru_cache(maxsize=32)
def make_kernel(config: SLRConfig, warmup: int) -> Kernel:
    """The collapsed Gibbs kernel for ``config`` (annealing and step-size adaptation of the
    ``k`` move during the first ``warmup`` steps).
    """
    scale = 1.0 / math.sqrt(config.D)

    def init(
        key: jax.Array, data: SamplerData, start: tuple[jax.Array, jax.Array]
    ) -> CollapsedState:
        return CollapsedState(
            start[0],
            start[1],
            jnp.zeros(data.y.shape[0], dtype=int),  # the first token: real in every sequence
            jnp.log(INITIAL_STEP_SIZE),
            jnp.asarray(0),
            jnp.linalg.cholesky(mass_matrix(config, data.X, data.lengths)),
            data,
        )

    def step(key: jax.Array, state: CollapsedState) -> tuple[CollapsedState, dict[str, jax.Array]]:
        data = state.data
        key_eps, key_v, key_k = jax.random.split(key, 3)
        beta = temperature(state.iteration, warmup)
        Delta = config.Delta / beta
        log_w = beta * location_log_weights(data.X, data.lengths, state.k, config)
        eps = collapsed_location_sweep(key_eps, data.X * scale, data.y, log_w, state.eps, Delta)
        v = draw_gaussian(key_v, value_conditional(located_tokens(data.X, eps), data.y, Delta))
        rows = jnp.arange(eps.shape[0])

        def log_conditional(k: jax.Array) -> jax.Array:
            weights = location_log_weights(data.X, data.lengths, k, config)[rows, eps]
            return -0.5 * k @ k + beta * jnp.sum(weights)

        size = jnp.exp(state.log_step_size)
        k, accept = hmc_transition(key_k, state.k, log_conditional, state.mass_cholesky, size)
        gain = 2.0 / (state.iteration + 10.0) ** 0.6
        log_step_size = jnp.where(
            state.iteration < warmup,
            state.log_step_size + gain * (accept - TARGET_ACCEPT),
            state.log_step_size,
        )
        new = CollapsedState(
            k, v, eps, log_step_size, state.iteration + 1, state.mass_cholesky, data
        )
        return new, {"acceptance_rate": accept, "step_size": size}

    return Kernel(NAME, init, step, lambda state: (state.k, state.v))
