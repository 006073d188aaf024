"""Monte Carlo draws of the one-sample channel of the replica equations (docs/theory.md), and the
Bayes-optimal output channel's log-partition on them.

In the limit ``N, D -> inf`` every replica equation is an average over one SLR
sample seen through its ``L x 2`` teacher projections ``h*_l = (chi*_l, z*_l)`` (drawn
from the SLR law, tilt included), its output ``y``, and fresh standard normals ``xi``
(the part of a student field orthogonal to the teacher). The draws are made once per
solve (common random numbers), so every average is a smooth deterministic function of
the order parameters and a damped iteration can converge to machine precision.
"""

from __future__ import annotations

import math
import warnings
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special, stats

from bayes_slr.models.simulate import Teacher, simulate
from bayes_slr.models.spec import SLRConfig


class ChannelDraws(NamedTuple):
    """``n`` channel samples, padded to ``Lbar`` tokens.

    Attributes
    ----------
    h_star : (n, Lbar, 2) teacher projections ``(chi*_l, z*_l)``, zero on padding.
    y : (n,) outputs (noise of variance ``Delta`` included).
    mask : (n, Lbar) True on real tokens.
    xi : (n, Lbar, 2) standard normals, independent of everything else.
    """

    h_star: jax.Array
    y: jax.Array
    mask: jax.Array
    xi: jax.Array


def draw_channel(key: jax.Array, config: SLRConfig, n: int) -> ChannelDraws:
    """Draw ``n`` channel samples from the SLR law of ``config`` (``D`` is ignored).

    The teacher projections are produced by the project simulator in dimension 2 with
    the exact teacher ``k* = sqrt(2) e_1``, ``v* = sqrt(2) e_2``, for which
    ``chi*_l = x_{l,1}`` and ``z*_l = x_{l,2}`` exactly.
    """
    key_data, key_xi = jax.random.split(key)
    teacher = Teacher(jnp.array([math.sqrt(2.0), 0.0]), jnp.array([0.0, math.sqrt(2.0)]))
    batch = simulate(key_data, config.replace(D=2), teacher, n)
    h_star = jnp.stack([batch.chi_star, batch.z_star], axis=-1) * batch.mask[..., None]
    xi = jax.random.normal(key_xi, h_star.shape) * batch.mask[..., None]
    return ChannelDraws(h_star, batch.y, batch.mask, xi)


def quasi_random_channel(
    config: SLRConfig, n: int, seed: int | np.random.SeedSequence
) -> ChannelDraws:
    """``n`` channel samples from one scrambled Sobol sequence (randomised quasi-Monte Carlo).

    The same law as :func:`draw_channel`, each sample a smooth function of a point of
    ``[0, 1)^d`` where the law allows, so that averages of smooth integrands converge faster than
    ``n^(-1/2)``; every scrambling (``seed``) gives an unbiased average, and the spread over
    independent scramblings is their error. Coordinates, most important first: the length
    (inverse distribution function; only for a variable length), the location given the tokens
    (:meth:`~bayes_slr.models.variants.TokenLaw.channel_location`), the ``L x 2`` teacher
    projections, the output noise, the ``L x 2`` normals ``xi``. ``n`` a power of two keeps the
    sequence's balance (any ``n >= 2`` is accepted).
    """
    Lbar = config.Lbar
    probs = np.asarray(config.length.probs)
    lead = 2 if len(probs) > 1 else 1
    sobol = stats.qmc.Sobol(lead + 4 * Lbar + 1, scramble=True, seed=np.random.default_rng(seed))
    with warnings.catch_warnings():
        warnings.filterwarnings("ignore", "The balance properties of Sobol", UserWarning)
        u = sobol.random(n)
    u = np.clip(u, 2.0**-60, 1.0 - 2.0**-53)
    if lead == 2:
        lengths = np.searchsorted(np.cumsum(probs) / np.sum(probs), u[:, 0], side="right") + 1
        lengths = np.minimum(lengths, Lbar)
    else:
        lengths = np.full(n, Lbar)
    mask = jnp.asarray(np.arange(Lbar)[None, :] < lengths[:, None])
    gauss = special.ndtri(u[:, lead:])
    tokens = jnp.asarray(gauss[:, : 2 * Lbar].reshape(n, Lbar, 2)) * mask[..., None]
    chi, eps = config.law.channel_location(
        config.nu, tokens[..., 0], mask, jnp.asarray(u[:, lead - 1])
    )
    h_star = jnp.stack([chi * mask, tokens[..., 1]], axis=-1)
    z_at_eps = jnp.take_along_axis(h_star[..., 1], eps[:, None], axis=1)[:, 0]
    y = z_at_eps + math.sqrt(config.Delta) * jnp.asarray(gauss[:, 2 * Lbar])
    xi = jnp.asarray(gauss[:, 2 * Lbar + 1 :].reshape(n, Lbar, 2)) * mask[..., None]
    return ChannelDraws(h_star, y, mask, xi)


def student_fields(draws: ChannelDraws, m: jax.Array, q: jax.Array) -> jax.Array:
    """``omega_{l,a} = m_a h*_{l,a} + sqrt(q_a - m_a^2) xi_{l,a}``, shape ``(n, Lbar, 2)``.

    ``m`` and ``q`` are ``(2,)`` arrays ordered ``(k, v)``; zero on padded tokens.
    """
    spread = jnp.sqrt(jnp.maximum(q - m**2, 0.0))
    return (m * draws.h_star + spread * draws.xi) * draws.mask[..., None]


def log_output_partition(
    omega: jax.Array, y: jax.Array, mask: jax.Array, q: jax.Array, config: SLRConfig
) -> jax.Array:
    """``log Z_out(y, omega, 1 - q)`` of one sample of the Bayes-optimal state evolution
    (docs/theory.md part B), ``omega`` of shape ``(Lbar, 2)`` ordered ``(k, v)``.

    ``Z_out = sum_l W_l N(y; omega_{l,v}, Delta + 1 - q_v)`` with the location factor ``W_l`` of
    the variant (:meth:`~bayes_slr.models.variants.TokenLaw.gaussian_location_log_weights`).
    """
    V = 1.0 - q
    variance = config.Delta + V[1]
    log_gauss = -0.5 * (y - omega[:, 1]) ** 2 / variance - 0.5 * jnp.log(2 * math.pi * variance)
    log_weights = config.law.gaussian_location_log_weights(config.nu, omega[:, 0], V[0], mask)
    return jax.scipy.special.logsumexp(jnp.where(mask, log_weights + log_gauss, -jnp.inf))
