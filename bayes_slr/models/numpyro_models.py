"""The SLR likelihood as NumPyro models with latent ``k*, v* ~ N(0, I_D)`` (docs/model.md section
5).

Two forms of the same joint law:

* :func:`slr_model_marginal` sums the location out exactly (masked log-sum-exp in a
  ``numpyro.factor``); used by NUTS.
* :func:`multihead_model_marginal`: multi-head SLR (docs/multihead.md), the heads' joint
  states (``(Lbar + 1)^H`` per sequence) summed out; used by NUTS for a multi-head task.
* :func:`slr_model_enumerated` keeps the location as a discrete site ``eps`` marked
  for parallel enumeration; it is generative (prior predictive draws ``X``, ``eps``,
  ``y``) and serves ``infer_discrete`` for per-sequence location posteriors.

With the location summed out both give the same log-density. The token factor
``prod_l N(x_l; 0, I_D)`` over real tokens is included in both, so the densities are
the full joint; padded tokens contribute nothing.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpyro
import numpyro.distributions as dist
from numpyro.contrib.funsor import config_enumerate, enum
from numpyro.contrib.funsor import log_density as funsor_log_density
from numpyro.infer.util import log_density

from bayes_slr.models.head_states import joint_state_log_weights
from bayes_slr.models.simulate import token_mask
from bayes_slr.models.spec import SLRConfig

ENUM_DIM = -2  # first dimension free for enumerating the location (the data plate is -1)


def _sample_directions(*shape: int) -> tuple[jax.Array, jax.Array]:
    k = numpyro.sample("k", dist.Normal(jnp.zeros(shape), 1.0).to_event(len(shape)))
    v = numpyro.sample("v", dist.Normal(jnp.zeros(shape), 1.0).to_event(len(shape)))
    return k, v


def location_log_weights(
    X: jax.Array, lengths: jax.Array, k: jax.Array, config: SLRConfig
) -> jax.Array:
    """``log P(eps = l | L) + log g_nu(l, chi)``: the location-dependent token factor, ``(N,
    Lbar)``.

    Asked of the variant (:meth:`~bayes_slr.models.variants.TokenLaw.location_log_weights`) at
    ``chi = X k / sqrt(D)`` with the tilt's normaliser at ``|k|^2 / D``; ``-inf`` on padded tokens.
    """
    chi = X @ k / math.sqrt(config.D)
    return config.law.location_log_weights(
        chi, token_mask(lengths, config.Lbar), config.nu, jnp.sum(k**2) / config.D
    )


def location_joint_log_weights(
    X: jax.Array, lengths: jax.Array, y: jax.Array, k: jax.Array, v: jax.Array, config: SLRConfig
) -> jax.Array:
    """``log P(eps = l, y | X, k, v)`` up to the token base density, ``(N, Lbar)``.

    :func:`location_log_weights` plus ``log N(y; z_l, Delta)`` with ``z = X v / sqrt(D)``;
    ``-inf`` on padded tokens. Its log-sum-exp over tokens is the per-sequence likelihood
    with the location summed out; its softmax is the location posterior given ``(k, v)``.
    """
    log_w = location_log_weights(X, lengths, k, config)
    z = X @ v / math.sqrt(config.D)
    log_lik_y = dist.Normal(z, math.sqrt(config.Delta)).log_prob(y[:, None])
    return jnp.where(jnp.isfinite(log_w), log_w + log_lik_y, -jnp.inf)


def _base_token_log_density(X: jax.Array, lengths: jax.Array, Lbar: int) -> jax.Array:
    """``sum over real tokens of log N(x_l; 0, I)`` (constant in the latents)."""
    per_token = jnp.sum(dist.Normal(0.0, 1.0).log_prob(X), axis=-1)
    return jnp.sum(jnp.where(token_mask(lengths, Lbar), per_token, 0.0))


def slr_model_marginal(config: SLRConfig, X: jax.Array, lengths: jax.Array, y: jax.Array) -> None:
    """SLR posterior model with the location summed out.

    Parameters
    ----------
    config : SLRConfig
        Task (``Delta > 0``).
    X : (N, Lbar, D) observed tokens, zero-padded.
    lengths : (N,) sequence lengths.
    y : (N,) observed outputs.
    """
    assert config.Delta > 0, "a likelihood needs Delta > 0 (checked with the sampling options)"
    k, v = _sample_directions(config.D)
    per_sequence = jax.nn.logsumexp(
        location_joint_log_weights(X, lengths, y, k, v, config), axis=-1
    )
    numpyro.factor("tokens", _base_token_log_density(X, lengths, config.Lbar))
    numpyro.factor("location_and_y", jnp.sum(per_sequence))


def multihead_model_marginal(
    config: SLRConfig, X: jax.Array, lengths: jax.Array, y: jax.Array
) -> None:
    """Multi-head SLR posterior model (docs/multihead.md): ``k_h, v_h ~ N(0, I_D)`` (sites ``k``,
    ``v`` of shape ``(H, D)``), every sequence's joint head states summed out exactly
    (:func:`~bayes_slr.models.head_states.joint_state_log_weights`, log-sum-exp over the
    ``(Lbar + 1)^H`` states). Planted laws (spiked); arguments as :func:`slr_model_marginal`.
    """
    assert config.Delta > 0, "a likelihood needs Delta > 0 (checked with the sampling options)"
    assert config.law.gaussian_key_given_locations, "the options refuse this law with heads"
    k, v = _sample_directions(config.heads, config.D)
    log_w, _ = joint_state_log_weights(X, lengths, k, v, config, y)
    numpyro.factor("tokens", _base_token_log_density(X, lengths, config.Lbar))
    numpyro.factor("states_and_y", jnp.sum(jax.nn.logsumexp(log_w, axis=-1)))


def slr_model_enumerated(
    config: SLRConfig,
    lengths: jax.Array,
    X: jax.Array | None = None,
    y: jax.Array | None = None,
) -> None:
    """Generative SLR model with the location as an enumerated discrete site ``eps``.

    Parameters
    ----------
    config : SLRConfig
        Task (``Delta > 0``).
    lengths : (N,) sequence lengths (fix ``N`` and the padding).
    X : (N, Lbar, D) tokens, or None to sample them (prior predictive).
    y : (N,) outputs, or None to sample them.
    """
    assert config.Delta > 0, "a likelihood needs Delta > 0 (checked with the sampling options)"
    D, Lbar = config.D, config.Lbar
    N = lengths.shape[0]
    mask = token_mask(lengths, Lbar)
    k, v = _sample_directions(D)
    with numpyro.plate("data", N, dim=-1):
        X, eps = config.law.sample_tokens_and_location(k, mask, config.nu, X)
        z = X @ v / math.sqrt(D)
        z_at_eps = jnp.sum(jax.nn.one_hot(eps, Lbar) * z, axis=-1)
        numpyro.sample("y", dist.Normal(z_at_eps, math.sqrt(config.Delta)), obs=y)


@functools.partial(jax.jit, static_argnames=("config",))
def marginal_log_density(
    params: dict[str, jax.Array], config: SLRConfig, X: jax.Array, lengths: jax.Array, y: jax.Array
) -> jax.Array:
    """Joint log-density ``log p(k, v, X, y)`` from the summed-out model
    (:func:`multihead_model_marginal` for a multi-head task). Jitted (``config`` static): one
    program, where the model's operations run one by one would each be one."""
    model = multihead_model_marginal if config.multihead else slr_model_marginal
    value, _ = log_density(model, (config, X, lengths, y), {}, params)
    return value


@functools.partial(jax.jit, static_argnames=("config",))
def enumerated_log_density(
    params: dict[str, jax.Array], config: SLRConfig, X: jax.Array, lengths: jax.Array, y: jax.Array
) -> jax.Array:
    """Joint log-density ``log p(k, v, X, y)`` from the enumerated model, location
    summed by funsor (jitted, ``config`` static).
    """
    model = enum(config_enumerate(slr_model_enumerated), first_available_dim=ENUM_DIM)
    value, _ = funsor_log_density(model, (config, lengths), {"X": X, "y": y}, params)
    return value
