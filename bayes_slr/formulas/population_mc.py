"""The population test error of attention students by Monte Carlo: the second route that checks
the quadrature of :mod:`bayes_slr.formulas.population` (docs/multihead.md section 4).

Each sequence draws every teacher head's scores, location and presence from their population
law (:func:`~bayes_slr.inference.bayes_risk.draw_population_heads`), the student's scores
``chi_h = m_k chi*_h + r u_h`` and values ``z_h = m_v z*_h + sqrt(q_v - m_v^2) w_h`` on the
overlap manifold, and scores ``(y - f)^2`` with ``y = (rho H)^(-1/2) sum_h b_h z*_{h, eps_h}``
and ``f = sum_j sum_l s(chi_j)_l z_{j,l}``: nothing is integrated out by hand. The student
has one head per teacher head (:func:`population_error_mc`) or any heads, aligned with distinct
teacher heads or with none (:func:`student_heads_error_mc`, docs/multihead.md section 6).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.attention.activations import Activation, get_activation
from bayes_slr.errors import check_int
from bayes_slr.formulas.population import check_config
from bayes_slr.formulas.student_heads import check_student_heads
from bayes_slr.formulas.student_heads_records import StudentHead
from bayes_slr.inference.bayes_risk import draw_population_heads
from bayes_slr.models.simulate import StreamedMean, mean_from_sums
from bayes_slr.models.spec import SLRConfig

BATCH = 20_000
"""Sequences per compiled step."""


@functools.partial(jax.jit, static_argnames=("record", "config", "n", "teachers"))
def _squared_errors(
    key: jax.Array,
    record: Activation,
    config: SLRConfig,
    n: int,
    teachers: tuple[int, ...],
    overlaps: jax.Array,
) -> tuple[jax.Array, jax.Array]:
    """Sum and sum of squares of ``(y - f)^2`` over ``n`` sequences; student head ``j`` reads
    teacher head ``teachers[j]`` with the overlaps ``overlaps[j] = (m_k, r, m_v, value noise,
    c)`` (an extra head reads any teacher head with ``m_k = m_v = 0``)."""
    m_k, r, m_v, value_noise, c = (column[:, None] for column in overlaps.T)
    key_heads, key_u, key_z, key_w = jax.random.split(key, 4)
    chi_star, lengths, eps, present = draw_population_heads(key_heads, config, n)
    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    index = jnp.asarray(teachers)
    shape = (n, len(teachers), config.Lbar)
    chi = m_k * chi_star[:, index] + r * jax.random.normal(key_u, shape)
    z_star = jax.random.normal(key_z, chi_star.shape)
    z = m_v * z_star[:, index] + value_noise * jax.random.normal(key_w, shape)
    weights = record.weights(chi, jnp.broadcast_to(mask, shape), c)
    at_location = jnp.take_along_axis(z_star, eps[..., None], axis=-1)[..., 0]
    y = jnp.sum(jnp.where(present, at_location, 0.0), axis=-1)
    y = y / math.sqrt(config.presence * config.heads)
    f = jnp.sum(weights * z, axis=(-2, -1))
    values = (y - f) ** 2
    return jnp.sum(values), jnp.sum(values**2)


def student_heads_error_mc(
    activation: str,
    config: SLRConfig,
    heads: Sequence[StudentHead],
    samples: int = 100_000,
    seed: int = 0,
) -> StreamedMean:
    """Excess population test error of the student ``heads`` on the teacher of ``config``, by
    Monte Carlo: the second route to
    :func:`~bayes_slr.formulas.student_heads.student_heads_error`.

    Parameters
    ----------
    activation : any activation (registered or selected by name); no theory terms needed.
    config : the task (``heads`` is the teacher's ``H``, ``presence``, variant, length law,
        ``nu``); ``D`` and ``Delta`` are ignored.
    heads : the student heads, each aligned with a distinct teacher head or extra
        (:class:`~bayes_slr.formulas.student_heads_records.StudentHead`).
    samples : number of sequences, ``>= 2``, rounded up to whole batches of :data:`BATCH`.
    seed : seed of the draws.

    Returns
    -------
    StreamedMean
        The mean of ``(y - f)^2`` and its standard error.
    """
    record = get_activation(activation)
    config = check_config(config)
    heads = check_student_heads(config, heads)
    samples = check_int("samples", samples, 2)
    batches = -(-samples // BATCH)
    batch = -(-samples // batches)
    shape = config.replace(D=1, Delta=0.0)
    teachers = tuple(0 if head.teacher is None else head.teacher for head in heads)
    overlaps = jnp.asarray(
        [
            [
                head.m_k,
                math.sqrt(max(head.q_k - head.m_k**2, 0.0)),
                head.m_v,
                math.sqrt(max(head.q_v - head.m_v**2, 0.0)),
                head.c,
            ]
            for head in heads
        ],
        dtype=float,
    )
    total, total_sq = 0.0, 0.0
    for key in jax.random.split(jax.random.PRNGKey(check_int("seed", seed, 0)), batches):
        batch_sum, batch_sq = _squared_errors(key, record, shape, batch, teachers, overlaps)
        total, total_sq = total + float(batch_sum), total_sq + float(batch_sq)
    return mean_from_sums(np.float64(total), np.float64(total_sq), batches * batch)


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
    config = check_config(config)
    heads = tuple(StudentHead(h, m_k, q_k, m_v, q_v, c) for h in range(config.heads))
    return student_heads_error_mc(activation, config, heads, samples, seed)
