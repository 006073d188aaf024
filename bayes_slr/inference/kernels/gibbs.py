"""Exact blocked Gibbs sampler of spiked SLR (kernel ``"gibbs"``).

One step draws ``eps_mu | k, v`` (independent categoricals), then ``k | eps`` and
``v | eps`` (independent Gaussians):

* ``k | eps ~ N(sqrt(nu/D) S / p, I / p)`` with ``p = 1 + N nu / D`` and
  ``S = sum_mu x_{mu, eps_mu}`` (the spike factor ``sqrt(nu) x.k/sqrt(D) - nu|k|^2/(2D)``
  is Gaussian in ``k``);
* ``v | eps``: :func:`~bayes_slr.inference.kernels.conditionals.value_conditional`.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.inference.kernels.base import Kernel, SamplerData
from bayes_slr.inference.kernels.conditionals import (
    GaussianLaw,
    draw_gaussian,
    draw_locations,
    located_tokens,
    value_conditional,
)
from bayes_slr.models.spec import SLRConfig

NAME = "gibbs"
"""Its name in the sampler registry; it serves laws whose ``k | eps`` is Gaussian (a planted
spike)."""


class DirectionConditionals(NamedTuple):
    """Gaussian laws of ``k`` and ``v`` given the locations (spiked SLR).

    ``k ~ N(k_mean, I / k_precision)``; ``v ~ N(v_mean, P^-1)`` with ``P = v_cholesky
    v_cholesky^T``.
    """

    k_mean: jax.Array
    k_precision: jax.Array
    v_mean: jax.Array
    v_cholesky: jax.Array


def direction_conditionals(
    tokens: jax.Array, y: jax.Array, config: SLRConfig
) -> DirectionConditionals:
    """Conditional laws of ``k`` and ``v`` given the token at each sequence's location
    (``(N, D)``).
    """
    N, D = tokens.shape
    amplitude = config.c_nu  # the spike a(nu) k / sqrt(D): sqrt(nu) for spiked SLR
    k_precision = jnp.asarray(1.0 + N * amplitude**2 / D)
    k_mean = amplitude / math.sqrt(D) * jnp.sum(tokens, axis=0) / k_precision
    value = value_conditional(tokens, y, config.Delta)
    return DirectionConditionals(k_mean, k_precision, value.mean, value.cholesky)


def draw_directions(
    key_k: jax.Array, key_v: jax.Array, law: DirectionConditionals
) -> tuple[jax.Array, jax.Array]:
    """One draw of ``(k, v)`` from :class:`DirectionConditionals`."""
    k = law.k_mean + jax.random.normal(key_k, law.k_mean.shape) / jnp.sqrt(law.k_precision)
    return k, draw_gaussian(key_v, GaussianLaw(law.v_mean, law.v_cholesky))


class GibbsState(NamedTuple):
    k: jax.Array
    v: jax.Array
    data: SamplerData


@functools.lru_cache(maxsize=32)
def make_kernel(config: SLRConfig, warmup: int = 0) -> Kernel:
    """The spiked Gibbs kernel for ``config`` (no adaptation: ``warmup`` is unused)."""

    def init(key: jax.Array, data: SamplerData, start: tuple[jax.Array, jax.Array]) -> GibbsState:
        return GibbsState(start[0], start[1], data)

    def step(key: jax.Array, state: GibbsState) -> tuple[GibbsState, dict[str, jax.Array]]:
        X, lengths, y = state.data
        key_eps, key_k, key_v = jax.random.split(key, 3)
        eps = draw_locations(key_eps, config, X, lengths, y, state.k, state.v)
        k, v = draw_directions(
            key_k, key_v, direction_conditionals(located_tokens(X, eps), y, config)
        )
        return GibbsState(k, v, state.data), {}

    return Kernel(NAME, init, step, lambda state: (state.k, state.v))
