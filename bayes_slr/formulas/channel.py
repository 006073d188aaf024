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
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.errors import check_int
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
    n = check_int("mc_samples", n, 2)
    key_data, key_xi = jax.random.split(key)
    teacher = Teacher(jnp.array([math.sqrt(2.0), 0.0]), jnp.array([0.0, math.sqrt(2.0)]))
    batch = simulate(key_data, config.replace(D=2), teacher, n)
    h_star = jnp.stack([batch.chi_star, batch.z_star], axis=-1) * batch.mask[..., None]
    xi = jax.random.normal(key_xi, h_star.shape) * batch.mask[..., None]
    return ChannelDraws(h_star, batch.y, batch.mask, xi)


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
