"""The joint law of the heads' states and the outputs of multi-head spiked SLR, given the
directions (docs/multihead.md section 8).

A head's state in a sequence is one of ``Lbar + 1`` values: present at token ``l < Lbar`` or
absent (the value ``Lbar``). Given the keys ``k`` (``(H, D)``), the log-density of the tokens and
the states, up to the base density ``prod_l N(x_l; 0, I)``, is

``sum_h w_h(s_h) - (a^2 / D) sum_{h < h'} [s_h = s_h' < Lbar] k_h . k_h'``

with ``w_h(l) = log rho + location_log_weights(chi_h)_l`` (``a chi_{h,l} - a^2 |k_h|^2/(2D) -
log L``) and ``w_h(absent) = log(1 - rho)``; the second term is the cross term of two spikes on
one token (spikes add). The output adds ``log N(y; (rho H)^(-1/2) sum_h z_{h, s_h}, Delta)``
(``z_{h, absent} = 0``). Only planted laws (a spike ``a k / sqrt(D)``) are served.

**Why a module of its own.** One head's location is summed out over ``Lbar`` tokens
(:mod:`bayes_slr.models.numpyro_models`); the heads' joint state is a tuple over ``(Lbar + 1)^H``
states with absence and the cross term of two spikes on one token, a different law (at ``H = 1``,
``rho = 1`` it reduces to the one-head sum, tests/inference/test_multihead_posterior.py). Every
multi-head consumer (the posterior predictor, the NUTS density, the Gibbs kernel, the training
state posterior) reads it from here.
"""

from __future__ import annotations

import itertools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.models.batch import token_mask
from bayes_slr.models.spec import SLRConfig


def check_head_states_law(config: SLRConfig) -> None:
    """``ConfigError`` unless the task's token law plants a spike (the law the joint state weights
    above are written for)."""
    if not config.law.gaussian_key_given_locations:
        raise ConfigError(
            f"the multi-head posterior is defined for laws that plant a spike (spiked), not for "
            f"the {config.variant} variant"
        )


def joint_head_states(heads: int, Lbar: int) -> np.ndarray:
    """Every joint state of ``heads`` heads, ``((Lbar + 1)^heads, heads)`` ints (``Lbar``:
    absent)."""
    return np.asarray(list(itertools.product(range(Lbar + 1), repeat=heads)), dtype=np.int32)


def head_state_log_weights(
    X: jax.Array, lengths: jax.Array, k: jax.Array, config: SLRConfig
) -> jax.Array:
    """``w_h(s)`` of every head and state, ``(N, H, Lbar + 1)`` (``-inf`` on padded tokens)."""
    chi = jnp.einsum("nld,hd->nhl", X, k) / math.sqrt(config.D)
    mask = token_mask(lengths, config.Lbar)[:, None, :]
    sq_norm = jnp.sum(k**2, axis=-1)[None, :, None] / config.D
    present = config.law.location_log_weights(chi, mask, config.nu, sq_norm)
    present = present + math.log(config.presence)
    absent = math.log1p(-config.presence) if config.presence < 1.0 else -math.inf
    return jnp.concatenate([present, jnp.full(present.shape[:2] + (1,), absent)], axis=-1)


def head_state_values(X: jax.Array, v: jax.Array, config: SLRConfig) -> jax.Array:
    """Each head's contribution to the signal in each state, ``(rho H)^(-1/2) z_{h, s}``,
    ``(N, H, Lbar + 1)`` (0 when absent)."""
    z = jnp.einsum("nld,hd->nhl", X, v) / math.sqrt(config.D * config.presence * config.heads)
    return jnp.concatenate([z, jnp.zeros(z.shape[:2] + (1,))], axis=-1)


def spike_cross_terms(k: jax.Array, config: SLRConfig) -> jax.Array:
    """``-(a^2 / D) k_h . k_h'`` for ``h != h'`` (0 on the diagonal), ``(H, H)``: the log-density
    term of two heads on one token."""
    amplitude = config.law.amplitude(config.nu)
    gram = k @ k.T
    return -(amplitude**2 / config.D) * (gram - jnp.diag(jnp.diag(gram)))


def output_log_likelihood(y: jax.Array, signal: jax.Array, Delta: float) -> jax.Array:
    """``log N(y; signal, Delta)`` (``y`` broadcast against ``signal``)."""
    return -0.5 * ((y - signal) ** 2 / Delta + math.log(2 * math.pi * Delta))


def joint_state_log_weights(
    X: jax.Array,
    lengths: jax.Array,
    k: jax.Array,
    v: jax.Array,
    config: SLRConfig,
    y: jax.Array | None = None,
) -> tuple[jax.Array, jax.Array]:
    """Log-weights of every joint state of the heads, ``(N, S)``, and the signal in each, ``(N,
    S)``.

    ``log p(X, states | k)`` up to the base token density (``y`` given: plus ``log p(y | X,
    states, v)``), in the order of :func:`joint_head_states`; ``-inf`` where a head sits on a
    padded token.
    """
    states = jnp.asarray(joint_head_states(config.heads, config.Lbar))
    heads = jnp.arange(config.heads)
    log_w = head_state_log_weights(X, lengths, k, config)[:, heads, states].sum(-1)
    signal = head_state_values(X, v, config)[:, heads, states].sum(-1)
    shared = (states[:, :, None] == states[:, None, :]) & (states[:, :, None] < config.Lbar)
    cross = 0.5 * jnp.sum(jnp.where(shared, spike_cross_terms(k, config), 0.0), axis=(1, 2))
    log_w = log_w + cross
    if y is not None:
        log_w = log_w + output_log_likelihood(y[:, None], signal, config.Delta)
    return log_w, signal


def sequence_evidence_and_prediction(
    X: jax.Array, lengths: jax.Array, k: jax.Array, v: jax.Array, config: SLRConfig
) -> tuple[jax.Array, jax.Array]:
    """``log p(X | k)`` (up to the base density) and ``E[y | X, k, v]`` of each sequence, ``(N,)``
    each: the heads' joint states summed out."""
    log_w, signal = joint_state_log_weights(X, lengths, k, v, config)
    log_px = jax.nn.logsumexp(log_w, axis=-1)
    return log_px, jnp.sum(jnp.exp(log_w - log_px[:, None]) * signal, axis=-1)
