"""Vectorised, jitted SLR simulator (docs/model.md section 1).

Locations ``eps`` are 0-based token indices. Batches are padded to ``Lbar``: padded
tokens are zero and carry ``mask = False``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Iterator
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.models.batch import MultiHeadBatch, SLRBatch, Teacher, token_mask
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import TokenLaw
from bayes_slr.numerics.devices import leading_axis_sharding


def draw_teacher(key: jax.Array, D: int, *, exact: bool = False) -> Teacher:
    """Draw ``(k*, v*)``.

    Parameters
    ----------
    key : PRNG key.
    D : int
        Dimension, ``>= 1``.
    exact : bool
        ``False``: i.i.d. ``N(0, I_D)`` (the prior). ``True``: the population limit,
        ``|k*|^2 = |v*|^2 = D`` and ``k* . v* = 0`` (needs ``D >= 2``).
    """
    k, v = jax.random.normal(key, (2, D))
    if exact:
        k = k / jnp.linalg.norm(k) * math.sqrt(D)
        v = v - (v @ k) / D * k
        v = v / jnp.linalg.norm(v) * math.sqrt(D)
    return Teacher(k, v)


def draw_head_teachers(key: jax.Array, D: int, heads: int, *, exact: bool = False) -> Teacher:
    """Draw ``(k_h*, v_h*)`` of ``heads`` heads, each ``(heads, D)``.

    ``exact=False``: i.i.d. ``N(0, I_D)`` (the prior). ``True``: the population limit, the ``2
    heads`` keys and values orthogonal with squared norms ``D`` (needs ``D >= 2 heads``).
    """
    k, v = jax.random.normal(key, (2, heads, D))
    if exact:
        basis, _ = jnp.linalg.qr(jnp.concatenate([k, v]).T)
        k, v = math.sqrt(D) * basis.T[:heads], math.sqrt(D) * basis.T[heads:]
    return Teacher(k, v)


def draw_task_teacher(key: jax.Array, config: SLRConfig, *, exact: bool = False) -> Teacher:
    """The teacher of ``config``: :func:`draw_teacher` for one-head SLR, else
    :func:`draw_head_teachers` of its heads."""
    if config.multihead:
        return draw_head_teachers(key, config.D, config.heads, exact=exact)
    return draw_teacher(key, config.D, exact=exact)


def _token_entries(
    key: jax.Array, shape: tuple[int, int, int], dtype: str, coordinates_first: bool
) -> jax.Array:
    """The i.i.d. ``N(0, 1)`` token entries of :func:`simulate`, shape ``(N, Lbar, D)``, drawn in
    ``dtype`` and returned in float64: one draw, or (``coordinates_first``) coordinate ``j`` from
    the key ``fold_in(key, j)``."""
    if not coordinates_first:
        return jax.random.normal(key, shape, dtype=dtype).astype(jnp.float64)
    columns = [
        jax.random.normal(jax.random.fold_in(key, j), shape[:2], dtype=dtype)
        for j in range(shape[2])
    ]
    return jnp.stack(columns, axis=-1).astype(jnp.float64)


class _Shape(NamedTuple):
    """What of a task fixes a shape or a branch of :func:`simulate`'s program (static; the
    presence too: its scale of ``y`` folds into XLA's constants as it did when the whole task
    was static)."""

    law: TokenLaw
    D: int
    Lbar: int
    heads: int
    presence: float
    multihead: bool
    infinite_nu: bool


class _Strengths(NamedTuple):
    """The task's numbers that fix neither (traced): one program serves every value. The noise's
    scale ``sqrt(Delta)`` is taken on the host, as the static task took it."""

    nu: float
    noise_scale: float
    probs: np.ndarray


def simulate(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    N: int,
    sharding: jax.sharding.Sharding | None = None,
    token_dtype: str = "float64",
    coordinates_first: bool = False,
) -> SLRBatch | MultiHeadBatch:
    """Draw ``N`` i.i.d. samples from the SLR law of ``config`` given a teacher.

    Parameters
    ----------
    key : PRNG key.
    config : SLRConfig
        The task. What fixes a shape or a branch (the variant, ``D``, ``Lbar``, the heads and
        their presence, whether ``nu`` is infinite) selects the compiled program; a finite
        ``nu``, ``Delta`` and the length probabilities are traced: one program serves every value
        of them, and draws what a program of its own would (to the last bit, but for the
        ``y`` of a single multi-head sequence, within one unit in the last place).
    teacher : Teacher
        ``(k*, v*)``, each of shape ``(D,)``; ``(H, D)`` for a multi-head task
        (:func:`draw_task_teacher`).
    N : int
        Number of sequences (static).
    sharding : jax.sharding.Sharding, optional
        Layout of every array of the batch (e.g. the sequences split over the devices,
        :func:`~bayes_slr.numerics.devices.leading_axis_sharding`); the random numbers are
        drawn where they land and are the same as without it (JAX's partitionable
        Threefry, the default).
    token_dtype : str
        Precision in which the i.i.d. ``N(0, 1)`` token entries are drawn (static): ``"float64"``
        (the default; every batch a seed draws elsewhere in the toolkit), or ``"float32"``, the
        same law rounded to 24 bits (tails beyond about 5.4 standard deviations, a mass of
        ``6e-8``, clipped there) and about three times cheaper on a CPU, where the draw bounds a
        step of online SGD. Either way the tokens are returned in float64.
    coordinates_first : bool
        Draw the token entries coordinate by coordinate (static): coordinate ``j`` of every
        token from its own key ``fold_in(k, j)``, so that it has the same numbers at every
        ``D > j`` (the same key and ``N``, ``Lbar``), instead of one ``(N, Lbar, D)`` draw,
        whose numbers all move with ``D``. The same law: tasks of different dimensions whose
        first coordinates mean the same thing then draw those the same (ERM's test sequences
        in the span of the teacher and the fits, :func:`~bayes_slr.attention.span.span_reduction`,
        the teacher's coordinates first). Meant for small ``D`` (one draw a coordinate); there
        it is also about half the CPU time of one draw (``D = 12``, ``N = 10 000``,
        ``Lbar = 30``: 74 ms against 169 ms, docs/performance.md).

    Returns
    -------
    SLRBatch, or MultiHeadBatch for a multi-head task (``config.multihead``; docs/multihead.md:
    ``y = (rho H)^(-1/2) sum_h b_h z*_{h, eps_h} + sqrt(Delta) xi``).
    """
    shape = _Shape(
        config.law,
        config.D,
        config.Lbar,
        config.heads,
        config.presence,
        config.multihead,
        math.isinf(config.nu),
    )
    nu = 0.0 if shape.infinite_nu else config.nu
    strengths = _Strengths(nu, math.sqrt(config.Delta), np.asarray(config.length.probs))
    return _simulate(key, shape, strengths, teacher, N, sharding, token_dtype, coordinates_first)


@functools.partial(
    jax.jit, static_argnames=("shape", "N", "sharding", "token_dtype", "coordinates_first")
)
def _simulate(
    key: jax.Array,
    shape: _Shape,
    strengths: _Strengths,
    teacher: Teacher,
    N: int,
    sharding: jax.sharding.Sharding | None,
    token_dtype: str,
    coordinates_first: bool,
) -> SLRBatch | MultiHeadBatch:
    """:func:`simulate` of the task ``shape`` and ``strengths``."""
    D, Lbar = shape.D, shape.Lbar
    nu = math.inf if shape.infinite_nu else strengths.nu
    k_len, k_tok, k_loc, k_noise = jax.random.split(key, 4)
    lengths = jax.random.choice(k_len, Lbar, (N,), p=strengths.probs) + 1
    mask = token_mask(lengths, Lbar)
    X = _token_entries(k_tok, (N, Lbar, D), token_dtype, coordinates_first)
    if shape.multihead:
        X, eps, present = shape.law.draw_heads(k_loc, X, mask, teacher.k_star, nu, shape.presence)
        X = X * mask[..., None]
        chi_star = jnp.einsum("nld,hd->nhl", X, teacher.k_star) / math.sqrt(D)
        z_star = jnp.einsum("nld,hd->nhl", X, teacher.v_star) / math.sqrt(D)
        z_at_eps = jnp.take_along_axis(z_star, eps[..., None], axis=-1)[..., 0]
        signal = jnp.sum(jnp.where(present, z_at_eps, 0.0), axis=1)
        y = signal / math.sqrt(shape.presence * shape.heads)
        y = y + strengths.noise_scale * jax.random.normal(k_noise, (N,))
        batch = MultiHeadBatch(X, lengths.astype(jnp.int32), y, eps, present, chi_star, z_star)
        return batch if sharding is None else jax.lax.with_sharding_constraint(batch, sharding)
    X, eps = shape.law.draw_tokens_and_location(k_loc, X, mask, teacher.k_star, nu)
    X = X * mask[..., None]
    chi_star = X @ teacher.k_star / math.sqrt(D)
    z_star = X @ teacher.v_star / math.sqrt(D)
    z_at_eps = jnp.take_along_axis(z_star, eps[:, None], axis=1)[:, 0]
    y = z_at_eps + strengths.noise_scale * jax.random.normal(k_noise, (N,))
    batch = SLRBatch(X, lengths.astype(jnp.int32), y, eps, chi_star, z_star)
    return batch if sharding is None else jax.lax.with_sharding_constraint(batch, sharding)


CHUNK_BYTES = 2**26
"""Bytes of float64 tokens in one simulation chunk sized by :func:`chunk_sequences` (64 MiB)."""
DEFAULT_CHUNK = 10_000
"""Sequences per chunk of :func:`iterate_batches` by default, and the most :func:`chunk_sequences`
gives.
"""


def chunk_sequences(config: SLRConfig, budget: int = CHUNK_BYTES) -> int:
    """Sequences per simulation chunk whose float64 tokens fit ``budget`` bytes, at most
    :data:`DEFAULT_CHUNK`.

    ``min(DEFAULT_CHUNK, max(1, budget // (8 Lbar D)))``: the chunks are drawn in float64 whatever
    the
    working precision, so this does not depend on it and a seed draws the same data in every dtype.
    Up to ``Lbar D = budget / 80000`` (``D = 279`` at ``L = 3``) it is :data:`DEFAULT_CHUNK`: the
    chunks, hence the data a seed draws (chunk ``i`` uses ``fold_in(key, i)``), are the default
    ones.
    """
    return min(DEFAULT_CHUNK, max(1, budget // (8 * config.Lbar * config.D)))


def iterate_batches(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    N: int,
    chunk_size: int = DEFAULT_CHUNK,
    coordinates_first: bool = False,
) -> Iterator[SLRBatch]:
    """Yield ``N`` samples in chunks of at most ``chunk_size`` (memory stays flat).

    Chunk ``i`` uses ``fold_in(key, i)``; all full chunks share one compiled shape. Each
    chunk's sequences are split evenly over the devices (when their number is a multiple
    of the device count; otherwise that chunk stays on one device), so what is computed
    from a chunk runs where its sequences lie; the values do not depend on the layout.
    ``coordinates_first``: the tokens drawn coordinate by coordinate (:func:`simulate`).
    """
    for i, start in enumerate(range(0, N, chunk_size)):
        n = min(chunk_size, N - start)
        yield simulate(
            jax.random.fold_in(key, i),
            config,
            teacher,
            n,
            sharding=leading_axis_sharding(n),
            coordinates_first=coordinates_first,
        )


class StreamedMean(NamedTuple):
    """Mean of a per-sample statistic with its standard error."""

    mean: np.ndarray
    stderr: np.ndarray
    count: int


def streamed_mean(
    statistic: Callable[[SLRBatch], jax.Array],
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    N: int,
    chunk_size: int = 10_000,
) -> StreamedMean:
    """Mean and standard error of ``statistic(batch)`` (shape ``(n, ...)``) over ``N`` samples.

    The samples are generated chunk by chunk and never held together; per-sample
    values are accumulated as sums and sums of squares in float64.
    """
    total, total_sq, count = 0.0, 0.0, 0
    for batch in iterate_batches(key, config, teacher, N, chunk_size):
        values = np.asarray(statistic(batch), dtype=np.float64)
        if values.shape[:1] != batch.y.shape:
            raise ConfigError(
                "statistic must return one value (or array) per sample, leading axis N"
            )
        total = total + values.sum(axis=0)
        total_sq = total_sq + (values**2).sum(axis=0)
        count += values.shape[0]
    return mean_from_sums(total, total_sq, count)


def mean_from_sums(
    total: np.ndarray | float, total_sq: np.ndarray | float, count: int
) -> StreamedMean:
    """Mean and standard error from the sum and the sum of squares of ``count`` i.i.d. values."""
    total, total_sq = np.asarray(total, dtype=np.float64), np.asarray(total_sq, dtype=np.float64)
    mean = total / count
    var = np.maximum(total_sq / count - mean**2, 0.0) * count / max(count - 1, 1)
    return StreamedMean(mean, np.sqrt(var / count), count)
