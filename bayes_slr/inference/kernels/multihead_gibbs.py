"""Exact Gibbs sampler of multi-head spiked SLR (kernel ``"multihead-gibbs"``,
docs/multihead.md section 8).

The state holds the directions ``k``, ``v`` (``(H, D)`` each) and every sequence's head states
``s`` (``(N, H)``: the token of a present head, or ``Lbar`` for an absent one). One step:

1. for each head ``h`` in turn, ``s_h | s_{-h}, k, v``: independent categoricals over the
   ``Lbar + 1`` states, with logits ``w_h(s)`` (presence and spike,
   :func:`~bayes_slr.models.head_states.head_state_log_weights`), the cross term of a spike on
   the token of another present head, and ``log N(y; rest + (rho H)^(-1/2) z_{h, s},
   Delta)``, ``rest`` the other heads' signal (the heads are coupled through ``y`` and
   through shared tokens);
2. ``k | s``: Gaussian, precision ``P (x) I_D`` with ``P = I_H + (a^2/D) sum_mu G_mu``,
   ``G_mu[h, h'] = [s_h = s_h' < Lbar]``, mean ``P^-1 (a / sqrt(D)) T``,
   ``T_h = sum_mu [s_h < Lbar] x_{mu, s_h}`` (the spikes' log-density is quadratic in ``k``);
3. for each head ``h`` in turn, ``v_h | v_{-h}, s``: the Bayesian linear regression of the
   residual ``y - (rho H)^(-1/2) sum_{h' != h} z_{h', s_h'}`` on the ``D`` regressors
   ``(rho H)^(-1/2) [s_h < Lbar] x_{mu, s_h} / sqrt(D)`` (noise ``Delta``, prior ``N(0, I)``):
   ``H`` regressions in ``D`` dimensions, a cost linear in ``H``, where the joint law of the
   values is a regression in ``H D`` dimensions (cubic in ``H``). The heads' values are nearly
   independent given the states (their regressors are different tokens), so the blocked draw
   mixes as well (docs/performance.md, "Multi-head cost").

Each move leaves ``p(k, v, s | data)`` invariant; no adaptation (``warmup`` unused). A chain
starts with every head absent (the first sweep draws the states from the start's ``k, v``).

Why a kernel of its own, not the one-head Gibbs kernel with a head axis: the latent state is a
tuple of head states per sequence, not one location, so the conditionals differ (the cross term
of two spikes on one token, the coupling of the heads' values through ``y``, the key's precision
``P`` mixing the heads), and ``H = 1``, ``rho = 1`` reduces to the one-head chain only in law
(tests/inference/test_multihead_posterior.py checks it), not in its steps.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.inference.kernels.base import Kernel, SamplerData
from bayes_slr.inference.kernels.conditionals import GaussianLaw, draw_gaussian, value_conditional
from bayes_slr.models.head_states import (
    check_head_states_law,
    head_state_log_weights,
    head_state_values,
    output_log_likelihood,
    spike_cross_terms,
)
from bayes_slr.models.spec import SLRConfig

NAME = "multihead-gibbs"
"""Its name in the sampler registry; it serves multi-head tasks of laws that plant a spike."""


class MultiHeadGibbsState(NamedTuple):
    k: jax.Array
    v: jax.Array
    states: jax.Array
    data: SamplerData


def draw_head_states(
    key: jax.Array,
    data: SamplerData,
    k: jax.Array,
    v: jax.Array,
    states: jax.Array,
    config: SLRConfig,
) -> jax.Array:
    """One systematic sweep over the heads of ``s_h ~ p(s_h | s_{-h}, k, v, data)``: the new
    states ``(N, H)`` from the current ones (``k``, ``v``: ``(H, D)``)."""
    log_w = head_state_log_weights(data.X, data.lengths, k, config)  # (N, H, Lbar + 1)
    values = head_state_values(data.X, v, config)
    cross = spike_cross_terms(k, config)
    tokens = jnp.arange(config.Lbar + 1) < config.Lbar  # False at the absent state
    at = jax.nn.one_hot(states, config.Lbar + 1) * tokens  # (N, H, Lbar + 1): present heads
    signal = jnp.take_along_axis(values, states[..., None], axis=-1)[..., 0]  # (N, H)
    for h, key_h in enumerate(jax.random.split(key, config.heads)):
        shared = jnp.einsum("nhs,h->ns", at, cross[h])  # cross[h, h] = 0
        rest = jnp.sum(signal, axis=1) - signal[:, h]
        logits = (
            log_w[:, h]
            + shared
            + output_log_likelihood(data.y[:, None], rest[:, None] + values[:, h], config.Delta)
        )
        drawn = jax.random.categorical(key_h, logits, axis=-1).astype(states.dtype)
        states = states.at[:, h].set(drawn)
        at = at.at[:, h].set(jax.nn.one_hot(drawn, config.Lbar + 1) * tokens)
        signal = signal.at[:, h].set(
            jnp.take_along_axis(values[:, h], drawn[:, None], axis=-1)[:, 0]
        )
    return states


def located_head_tokens(X: jax.Array, states: jax.Array) -> jax.Array:
    """``[s_h < Lbar] x_{mu, s_h}``, ``(N, H, D)`` (zero for an absent head)."""
    Lbar = X.shape[1]
    tokens = jnp.take_along_axis(X, jnp.minimum(states, Lbar - 1)[..., None], axis=1)
    return jnp.where((states < Lbar)[..., None], tokens, 0.0)


def key_conditional(
    X: jax.Array, states: jax.Array, config: SLRConfig
) -> tuple[jax.Array, jax.Array]:
    """Mean ``(H, D)`` and Cholesky factor of the head precision ``P`` (``(H, H)``) of
    ``k | s``."""
    amplitude = config.law.amplitude(config.nu)
    present = states < config.Lbar
    shared = (states[:, :, None] == states[:, None, :]) & present[:, :, None]
    precision = jnp.eye(config.heads) + amplitude**2 / config.D * jnp.sum(shared, axis=0)
    cholesky = jnp.linalg.cholesky(precision)
    total = jnp.sum(located_head_tokens(X, states), axis=0)  # (H, D)
    mean = jax.scipy.linalg.cho_solve((cholesky, True), amplitude / math.sqrt(config.D) * total)
    return mean, cholesky


def head_value_conditional(
    scaled: jax.Array, signal: jax.Array, y: jax.Array, head: int, config: SLRConfig
) -> GaussianLaw:
    """:class:`GaussianLaw` of head ``head``'s value ``v_h`` (``D``) given the other heads' values
    and the states: the regression of ``y`` less the other heads' signal on the head's located
    tokens.

    ``scaled``: every head's located tokens times ``(rho H)^(-1/2)``, ``(N, H, D)``; ``signal``:
    every head's signal ``scaled_h . v_h / sqrt(D)``, ``(N, H)`` (column ``head`` unused)."""
    residual = y - (jnp.sum(signal, axis=1) - signal[:, head])
    return value_conditional(scaled[:, head], residual, config.Delta)


def draw_values(
    key: jax.Array, tokens: jax.Array, y: jax.Array, v: jax.Array, config: SLRConfig
) -> jax.Array:
    """One systematic sweep over the heads of ``v_h ~ p(v_h | v_{-h}, s, data)``: the new values
    ``(H, D)`` from the current ones, the states given by their located tokens ``tokens``
    (``(N, H, D)``, :func:`located_head_tokens`); the signal of every head is kept up to date
    as the heads are drawn."""
    scaled = tokens / math.sqrt(config.presence * config.heads)
    signal = jnp.einsum("nhd,hd->nh", scaled, v) / math.sqrt(config.D)  # (N, H)
    for h, key_h in enumerate(jax.random.split(key, config.heads)):
        v_h = draw_gaussian(key_h, head_value_conditional(scaled, signal, y, h, config))
        v = v.at[h].set(v_h)
        signal = signal.at[:, h].set(scaled[:, h] @ v_h / math.sqrt(config.D))
    return v


def draw_key(key: jax.Array, X: jax.Array, states: jax.Array, config: SLRConfig) -> jax.Array:
    """One draw of ``k | s``, ``(H, D)``."""
    mean, cholesky = key_conditional(X, states, config)
    noise = jax.random.normal(key, mean.shape)
    return mean + jax.scipy.linalg.solve_triangular(cholesky.T, noise, lower=False)


@functools.lru_cache(maxsize=32)
def make_kernel(config: SLRConfig, warmup: int = 0) -> Kernel:
    """The multi-head Gibbs kernel for ``config`` (no adaptation: ``warmup`` is unused)."""
    check_head_states_law(config)

    def init(
        key: jax.Array, data: SamplerData, start: tuple[jax.Array, jax.Array]
    ) -> MultiHeadGibbsState:
        absent = jnp.full((data.y.shape[0], config.heads), config.Lbar, dtype=jnp.int32)
        return MultiHeadGibbsState(start[0], start[1], absent, data)

    def step(
        key: jax.Array, state: MultiHeadGibbsState
    ) -> tuple[MultiHeadGibbsState, dict[str, jax.Array]]:
        data = state.data
        key_s, key_k, key_v = jax.random.split(key, 3)
        states = draw_head_states(key_s, data, state.k, state.v, state.states, config)
        k = draw_key(key_k, data.X, states, config)
        tokens = located_head_tokens(data.X, states)
        v = draw_values(key_v, tokens, data.y, state.v, config)
        return MultiHeadGibbsState(k, v, states, data), {}

    return Kernel(NAME, init, step, lambda state: (state.k, state.v))
