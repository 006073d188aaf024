"""The population test error of attention students by Monte Carlo: the second route that checks
the quadrature of :mod:`bayes_slr.formulas.population` (docs/multihead.md section 4).

Each sequence draws every teacher head's scores, location and presence from their population
law (:func:`~bayes_slr.inference.bayes_risk.draw_population_heads`), the student's scores
``chi_h = m_k chi*_h + r u_h`` and values ``z_h = m_v z*_h + sqrt(q_v - m_v^2) w_h`` on the
overlap manifold, and scores ``(y - f)^2`` with ``y = (rho H)^(-1/2) sum_h b_h z*_{h, eps_h}``
and ``f = sum_j sum_l s(chi_j)_l z_{j,l}``: nothing is integrated out by hand. The student
has one head per teacher head (:func:`population_error_mc`), heads aligned with distinct teacher
heads or with none (:func:`student_heads_error_mc`, docs/multihead.md section 6), or heads with
any overlaps, mixing teacher heads (:func:`mixed_heads_error_mc`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np
from numpy.typing import ArrayLike

from bayes_slr.attention.activations import Activation, get_activation
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.optimum import check_student_heads
from bayes_slr.formulas.optimum_record import StudentHead
from bayes_slr.inference.bayes_risk import draw_population_heads
from bayes_slr.memory import MC_SEQUENCES_PER_BATCH
from bayes_slr.models.simulate import StreamedMean, mean_from_sums
from bayes_slr.models.spec import SLRConfig

BATCH = MC_SEQUENCES_PER_BATCH
"""Sequences per compiled step."""


@functools.partial(jax.jit, static_argnames=("record", "config", "n"))
def _squared_errors(
    key: jax.Array,
    record: Activation,
    config: SLRConfig,
    n: int,
    overlaps: tuple[jax.Array, ...],
) -> tuple[jax.Array, jax.Array]:
    """Sum and sum of squares of ``(y - f)^2`` over ``n`` sequences; ``overlaps`` is
    ``(m_k, r, m_v, value noise, c)``: student head ``j``'s scores are
    ``sum_h m_k[j, h] chi*_h + r[j] u_j`` and its values ``sum_h m_v[j, h] z*_h + noise[j] w_j``."""
    m_k, r, m_v, value_noise, c = overlaps
    key_heads, key_u, key_z, key_w = jax.random.split(key, 4)
    chi_star, lengths, eps, present = draw_population_heads(key_heads, config, n)
    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    shape = (n, m_k.shape[0], config.Lbar)
    chi = jnp.einsum("jh,nhl->njl", m_k, chi_star) + r[:, None] * jax.random.normal(key_u, shape)
    z_star = jax.random.normal(key_z, chi_star.shape)
    z = jnp.einsum("jh,nhl->njl", m_v, z_star)
    z = z + value_noise[:, None] * jax.random.normal(key_w, shape)
    weights = record.weights(chi, jnp.broadcast_to(mask, shape), c[:, None])
    at_location = jnp.take_along_axis(z_star, eps[..., None], axis=-1)[..., 0]
    y = jnp.sum(jnp.where(present, at_location, 0.0), axis=-1)
    y = y / math.sqrt(config.presence * config.heads)
    f = jnp.sum(weights * z, axis=(-2, -1))
    values = (y - f) ** 2
    return jnp.sum(values), jnp.sum(values**2)


def _residual(name: str, matrix: np.ndarray, norms: np.ndarray) -> np.ndarray:
    """``sqrt(q - sum_h m_h^2)`` per student head; ``ConfigError`` where it is negative."""
    overlap = np.sum(matrix**2, axis=1)
    if np.any(norms < overlap * (1.0 - 1e-12)):
        raise ConfigError(
            f"q_{name} must be >= the sum over teacher heads of m_{name}^2 (Cauchy-Schwarz), got "
            f"q_{name} = {norms.tolist()} for {overlap.tolist()}"
        )
    return np.sqrt(np.maximum(norms - overlap, 0.0))


def mixed_heads_error_mc(
    activation: str,
    config: SLRConfig,
    m_k: ArrayLike,
    q_k: ArrayLike,
    m_v: ArrayLike,
    q_v: ArrayLike,
    c: ArrayLike = 0.0,
    samples: int = 100_000,
    seed: int = 0,
) -> StreamedMean:
    """Excess population test error of student heads with any overlaps with the teacher heads
    (heads mixing several teacher heads included), by Monte Carlo.

    The student's keys and values are taken orthogonal across heads beyond their overlaps with
    the teacher (their residuals independent), the teacher's ``2H`` directions orthogonal.

    Parameters
    ----------
    activation : any activation (registered or selected by name); no theory terms needed.
    config : the task (``heads`` is the teacher's ``H``, ``presence``, variant, length law,
        ``nu``); ``D`` and ``Delta`` are ignored.
    m_k, m_v : ``(H_s, H)`` overlaps ``k_j.k_h*/D`` and ``v_j.v_h*/D``.
    q_k, q_v : ``(H_s,)`` squared norms over ``D``, ``q_j >= sum_h m_{jh}^2``.
    c : ``(H_s,)`` (or one) trained offset of the activations that have one.
    samples : number of sequences, ``>= 2``, rounded up to whole batches of :data:`BATCH`.
    seed : seed of the draws (the same seed draws the same sequences for any overlaps).

    Returns
    -------
    StreamedMean
        The mean of ``(y - f)^2`` and its standard error.
    """
    record = get_activation(activation)
    m_k, m_v = (np.atleast_2d(np.asarray(x, dtype=float)) for x in (m_k, m_v))
    if m_k.shape != m_v.shape or m_k.shape[1] != config.heads:
        raise ConfigError(
            f"m_k and m_v must both have shape (H_s, H = {config.heads}), got {m_k.shape} and "
            f"{m_v.shape}"
        )
    heads = m_k.shape[0]
    q_k, q_v, c = (np.broadcast_to(np.asarray(x, dtype=float), (heads,)) for x in (q_k, q_v, c))
    overlaps = tuple(
        jnp.asarray(x)
        for x in (m_k, _residual("k", m_k, q_k), m_v, _residual("v", m_v, q_v), np.array(c))
    )
    batches = -(-samples // BATCH)
    batch = -(-samples // batches)
    shape = config.replace(D=1, Delta=0.0)
    total, total_sq = 0.0, 0.0
    for key in jax.random.split(jax.random.PRNGKey(seed), batches):
        batch_sum, batch_sq = _squared_errors(key, record, shape, batch, overlaps)
        total, total_sq = total + float(batch_sum), total_sq + float(batch_sq)
    return mean_from_sums(np.float64(total), np.float64(total_sq), batches * batch)


def student_heads_error_mc(
    activation: str,
    config: SLRConfig,
    heads: Sequence[StudentHead],
    samples: int = 100_000,
    seed: int = 0,
) -> StreamedMean:
    """Excess population test error of the student ``heads`` on the teacher of ``config``, by
    Monte Carlo: the second route to
    :func:`~bayes_slr.formulas.optimum.student_heads_error`.

    Parameters
    ----------
    activation : any activation (registered or selected by name); no theory terms needed.
    config : the task (``heads`` is the teacher's ``H``, ``presence``, variant, length law,
        ``nu``); ``D`` and ``Delta`` are ignored.
    heads : the student heads, each aligned with a distinct teacher head or extra
        (:class:`~bayes_slr.formulas.optimum_record.StudentHead`).
    samples, seed : as in :func:`mixed_heads_error_mc`.

    Returns
    -------
    StreamedMean
        The mean of ``(y - f)^2`` and its standard error (:func:`mixed_heads_error_mc` with one
        nonzero overlap per aligned head's row, none for an extra head).
    """
    heads = check_student_heads(config, heads)
    m_k, m_v = np.zeros((2, len(heads), config.heads))
    for j, head in enumerate(heads):
        if head.teacher is not None:
            m_k[j, head.teacher], m_v[j, head.teacher] = head.m_k, head.m_v
    return mixed_heads_error_mc(
        activation,
        config,
        m_k,
        [head.q_k for head in heads],
        m_v,
        [head.q_v for head in heads],
        [head.c for head in heads],
        samples,
        seed,
    )


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
        The mean of ``(y - f)^2`` and its standard error (:func:`student_heads_error_mc` with
        student head ``h`` aligned with teacher head ``h``).
    """
    heads = tuple(StudentHead(h, m_k, q_k, m_v, q_v, c) for h in range(config.heads))
    return student_heads_error_mc(activation, config, heads, samples, seed)
