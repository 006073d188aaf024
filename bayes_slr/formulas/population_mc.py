"""The population test error of attention students by Monte Carlo: the second route that checks
the quadrature of :mod:`bayes_slr.formulas.population` (docs/multihead.md section 4).

Each sequence draws every teacher head's scores, location and presence from their population
law (:func:`~bayes_slr.inference.bayes_risk.draw_population_heads`), the student's scores
``chi_h = m_k chi*_h + r u_h`` and values ``z_h = m_v z*_h + sqrt(q_v - m_v^2) w_h`` on the
overlap manifold, and scores ``(y - f)^2`` with ``y = (rho H)^(-1/2) sum_h b_h z*_{h, eps_h}``
and ``f = sum_h sum_l s(chi_h)_l z_{h,l}``: nothing is integrated out by hand.
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import Activation, get_activation
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.formulas.population import check_config, check_key_overlaps
from bayes_slr.inference.bayes_risk import draw_population_heads
from bayes_slr.models.simulate import StreamedMean, mean_from_sums
from bayes_slr.models.spec import SLRConfig

BATCH = 20_000
"""Sequences per compiled step."""


@functools.partial(jax.jit, static_argnames=("record", "config", "n"))
def _squared_errors(
    key: jax.Array,
    record: Activation,
    config: SLRConfig,
    n: int,
    overlaps: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Sum and sum of squares of ``(y - f)^2`` over ``n`` sequences."""
    m_k, r, m_v, value_noise, c = overlaps
    key_heads, key_u, key_z, key_w = jax.random.split(key, 4)
    chi_star, lengths, eps, present = draw_population_heads(key_heads, config, n)
    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    shape = chi_star.shape
    chi = m_k * chi_star + r * jax.random.normal(key_u, shape)
    z_star = jax.random.normal(key_z, shape)
    z = m_v * z_star + value_noise * jax.random.normal(key_w, shape)
    weights = record.weights(chi, jnp.broadcast_to(mask, shape), c)
    at_location = jnp.take_along_axis(z_star, eps[..., None], axis=-1)[..., 0]
    y = jnp.sum(jnp.where(present, at_location, 0.0), axis=-1)
    y = y / math.sqrt(config.presence * config.heads)
    f = jnp.sum(weights * z, axis=(-2, -1))
    values = (y - f) ** 2
    return jnp.sum(values), jnp.sum(values**2)


def population_error_mc(
    activation: str,
    config: SLRConfig,
    m_k: float,
    q_k: float,
    m_v: float,
    q_v: float,
    c: float = 0.0,
    samples: int = 100_000,
    seed: int = 0,
) -> StreamedMean:
    """Excess population test error of ``H`` aligned student heads at the given overlaps, by
    Monte Carlo (one-head SLR when ``heads = 1`` and ``presence = 1``).

    Parameters
    ----------
    activation : any activation (registered or selected by name); no theory terms needed.
    config : the task (``heads``, ``presence``, variant, length law, ``nu``); ``D`` and
        ``Delta`` are ignored.
    m_k, q_k : per-head key overlaps, ``q_k >= m_k^2``.
    m_v, q_v : per-head value overlaps, ``q_v >= m_v^2``.
    c : trained offset of the activations that have one.
    samples : number of sequences, ``>= 2``, rounded up to whole batches of :data:`BATCH`.
    seed : seed of the draws.

    Returns
    -------
    StreamedMean
        The mean of ``(y - f)^2`` and its standard error.
    """
    record = get_activation(activation)
    config = check_config(config)
    m_k, r = check_key_overlaps(m_k, q_k)
    m_v = check_real("m_v", m_v)
    q_v = check_real("q_v", q_v, minimum=0.0)
    if q_v < m_v**2 * (1.0 - 1e-12):
        raise ConfigError(f"q_v must be >= m_v^2 = {m_v**2:.6g} (Cauchy-Schwarz), got {q_v!r}")
    samples = check_int("samples", samples, 2)
    batches = -(-samples // BATCH)
    batch = -(-samples // batches)
    shape = config.replace(D=1, Delta=0.0)
    overlaps = jnp.asarray(
        [m_k, r, m_v, math.sqrt(max(q_v - m_v**2, 0.0)), check_real("c", c)], dtype=float
    )
    total, total_sq = 0.0, 0.0
    for key in jax.random.split(jax.random.PRNGKey(check_int("seed", seed, 0)), batches):
        batch_sum, batch_sq = _squared_errors(key, record, shape, batch, overlaps)
        total, total_sq = total + float(batch_sum), total_sq + float(batch_sq)
    return mean_from_sums(np.float64(total), np.float64(total_sq), batches * batch)
