"""Bayes risk with known directions by Monte Carlo: over the law of ``chi*``, and on simulated data.

Two routes, independent of the exact integrals in :mod:`bayes_slr.formulas.bayes`:

* :func:`bayes_risk_mc` draws ``chi*`` from its population law (no ``D``): spiked,
  ``chi*_eps ~ N(sqrt(nu), 1)`` and the other tokens ``N(0, 1)``; max, i.i.d. ``N(0, 1)``
  tokens and ``eps ~ softmax(nu chi*)`` (argmax at ``nu = inf``); the variant's object draws
  them. The per-sample
  statistic is ``1 - sum_l p_l^2`` (the error averaged over ``z*`` and ``eps*`` given
  ``chi*``), streamed in fixed-shape batches inside one compiled loop, so memory is
  flat in the number of samples. It also returns the Nishimori gap
  ``E[p_eps*] - E[sum_l p_l^2]``, which is zero for the true posterior. A multi-head task
  (docs/multihead.md) draws every head's scores and presence and averages the heads' terms.
* :func:`bayes_risk_empirical` simulates whole sequences at finite ``D`` from a teacher
  and measures ``(y - E[y | X])^2 - Delta``: it checks the pipeline end to end.

Errors follow docs/model.md section 2: excess squared error over the noise.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
from jax import lax
from jax.sharding import PartitionSpec as P

from bayes_slr.inference.location import bayes_estimator, location_posterior
from bayes_slr.models.simulate import (
    SLRBatch,
    StreamedMean,
    Teacher,
    draw_teacher,
    mean_from_sums,
    streamed_mean,
)
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.devices import AXIS, device_count, device_mesh

TOKENS_PER_BATCH = 2**18
"""Default batch budget: ``batch_size * Lbar`` scores are drawn per step."""


class PopulationMC(NamedTuple):
    """Monte Carlo estimates over the population law of ``chi*``.

    Attributes
    ----------
    bayes_error : StreamedMean
        ``E[1 - sum_l p_l^2]``, the Bayes error.
    nishimori_gap : StreamedMean
        ``E[p_eps*] - E[sum_l p_l^2]`` (paired, so its standard error is that of the
        difference); zero for the true posterior.
    """

    bayes_error: StreamedMean
    nishimori_gap: StreamedMean


def draw_lengths(key: jax.Array, config: SLRConfig, n: int) -> jax.Array:
    """``n`` sequence lengths from the length law of ``config``, int32 ``(n,)``."""
    if config.length.is_fixed:
        return jnp.full((n,), config.Lbar, dtype=jnp.int32)
    return (
        jax.random.choice(key, config.Lbar, (n,), p=jnp.asarray(config.length.probs)) + 1
    ).astype(jnp.int32)


def draw_population_scores(
    key: jax.Array, config: SLRConfig, n: int, nu: jax.Array | float | None = None
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """Draw ``n`` sequences of teacher scores ``chi*`` from their population law.

    Parameters
    ----------
    key : PRNG key.
    config : SLRConfig
        Variant, length law and ``nu`` (``D`` is not used).
    n : int
        Number of sequences (static under ``jit``).
    nu : optional
        Replaces a finite ``config.nu`` (e.g. by a traced value: one compilation then
        serves every finite ``nu``).

    Returns
    -------
    chi_star : (n, Lbar) scores, 0 on padded tokens.
    lengths : (n,) lengths drawn from the length law.
    eps : (n,) true locations, 0-based.
    """
    Lbar = config.Lbar
    nu = config.nu if nu is None else nu
    k_len, k_chi, k_loc = jax.random.split(key, 3)
    lengths = draw_lengths(k_len, config, n)
    mask = jnp.arange(Lbar) < lengths[:, None]
    chi, eps = config.law.draw_population_scores(
        k_loc, jax.random.normal(k_chi, (n, Lbar)), mask, nu
    )
    chi = jnp.where(mask, chi, 0.0)
    return chi, lengths, eps


def draw_population_heads(
    key: jax.Array, config: SLRConfig, n: int, nu: jax.Array | float | None = None
) -> tuple[jax.Array, jax.Array, jax.Array, jax.Array]:
    """Draw ``n`` sequences of the teacher scores of every head from their population law.

    In the population limit the heads' keys and values are orthogonal: head ``h``'s scores
    ``chi*_h`` see its own token only, so the heads are drawn independently, each as one head
    (:meth:`~bayes_slr.models.variants.TokenLaw.draw_heads` with a unit key in ``D = 1``),
    present with probability ``config.presence``.

    Returns
    -------
    chi_star : (n, H, Lbar) scores, 0 on padded tokens.
    lengths : (n,) lengths drawn from the length law.
    eps : (n, H) locations, 0-based (drawn for absent heads too).
    present : (n, H) booleans.
    """
    nu = config.nu if nu is None else nu
    key_lengths, key_heads = jax.random.split(key)
    lengths = draw_lengths(key_lengths, config, n)
    mask = jnp.arange(config.Lbar) < lengths[:, None]

    def one_head(head_key: jax.Array) -> tuple[jax.Array, jax.Array, jax.Array]:
        key_noise, key_draw = jax.random.split(head_key)
        tokens = jax.random.normal(key_noise, (n, config.Lbar, 1))
        X, eps, present = config.law.draw_heads(
            key_draw, tokens, mask, jnp.ones((1, 1)), nu, config.presence
        )
        return jnp.where(mask, X[..., 0], 0.0), eps[:, 0], present[:, 0]

    chi, eps, present = jax.vmap(one_head)(jax.random.split(key_heads, config.heads))
    return jnp.moveaxis(chi, 0, 1), lengths, eps.T, present.T


def _head_statistics(key: jax.Array, shape: SLRConfig, nu: jax.Array, n: int) -> jax.Array:
    """Per-sequence ``(1 - sum q^2 / (rho H), (sum_h b_h q_{h, eps_h} - sum q^2) / (rho H))`` of a
    multi-head task, ``(n, 2)`` (docs/multihead.md)."""
    chi, lengths, eps, present = draw_population_heads(key, shape, n, nu)
    mask = (jnp.arange(shape.Lbar) < lengths[:, None])[:, None, :]
    q = shape.law.head_location_posterior(chi, mask, nu, shape.presence)
    scale = shape.presence * shape.heads
    sum_sq = jnp.sum(q**2, axis=(1, 2)) / scale
    at_eps = jnp.take_along_axis(q, eps[..., None], axis=-1)[..., 0]
    agreement = jnp.sum(jnp.where(present, at_eps, 0.0), axis=1) / scale
    return jnp.stack([1.0 - sum_sq, agreement - sum_sq], axis=-1)


def _population_statistics(key: jax.Array, shape: SLRConfig, nu: jax.Array, n: int) -> jax.Array:
    """Per-sequence ``(1 - sum p^2, p_eps - sum p^2)``, shape ``(n, 2)`` (their multi-head forms
    for a multi-head task)."""
    nu = shape.nu if math.isinf(shape.nu) else nu  # the traced value stands for finite nu only
    if shape.multihead:
        return _head_statistics(key, shape, nu, n)
    chi, lengths, eps = draw_population_scores(key, shape, n, nu)
    p = location_posterior(chi, lengths, shape, nu=nu)
    sum_sq = jnp.sum(p**2, axis=-1)
    p_at_eps = jnp.take_along_axis(p, eps[:, None], axis=-1)[:, 0]
    return jnp.stack([1.0 - sum_sq, p_at_eps - sum_sq], axis=-1)


@functools.partial(jax.jit, static_argnames=("shape", "batch_size", "n_devices"))
def _streamed_population_sums(
    key: jax.Array,
    n_batches: jax.Array,
    nu: jax.Array,
    shape: SLRConfig,
    batch_size: int,
    n_devices: int,
) -> tuple[jax.Array, jax.Array]:
    """Sums and sums of squares of the statistics over ``n_batches`` batches, in one compiled loop
    per device.

    Batch ``i`` always uses ``fold_in(key, i)``; device ``d`` of ``n_devices``
    (:func:`~bayes_slr.numerics.devices.device_mesh`, ``jax.shard_map``) runs the batches
    ``i = d, d + n_devices, ...`` and the partial sums are added across devices, so the
    result is the same on any number of devices up to the order of the floating-point
    additions. ``shape`` fixes what needs recompiling (variant, length law, whether ``nu``
    is infinite); ``nu`` itself is traced.
    """

    def per_device(offset: jax.Array) -> tuple[jax.Array, jax.Array]:
        def accumulate(
            j: jax.Array, sums: tuple[jax.Array, jax.Array]
        ) -> tuple[jax.Array, jax.Array]:
            i = offset[0] + j * n_devices
            values = _population_statistics(jax.random.fold_in(key, i), shape, nu, batch_size)
            keep = (i < n_batches).astype(values.dtype)
            return sums[0] + keep * jnp.sum(values, axis=0), sums[1] + keep * jnp.sum(
                values**2, axis=0
            )

        zeros = jnp.zeros(2)
        sums = lax.fori_loop(
            0, (n_batches + n_devices - 1) // n_devices, accumulate, (zeros, zeros)
        )
        return jax.lax.psum(sums[0], AXIS), jax.lax.psum(sums[1], AXIS)

    sharded = jax.shard_map(
        per_device,
        mesh=device_mesh(n_devices),
        in_specs=P(AXIS),
        out_specs=(P(), P()),
        check_vma=False,
    )
    return sharded(jnp.arange(n_devices))


def bayes_risk_mc(
    config: SLRConfig, samples: int, key: jax.Array, *, batch_size: int | None = None
) -> PopulationMC:
    """Bayes error (and Nishimori gap) by Monte Carlo over the population law of ``chi*``.

    Parameters
    ----------
    config : SLRConfig
        Variant, length law and ``nu``.
    samples : int
        Number of sequences, ``>= 2``; rounded up to a whole number of equal batches
        (by less than the number of batches).
    key : PRNG key. The same key and ``samples`` give common random numbers across
        ``nu`` (same variant and length law).
    batch_size : int, optional
        Most sequences per compiled step; default ``TOKENS_PER_BATCH // Lbar`` (at least
        1). Memory is proportional to ``batch_size * Lbar`` only (per device).

    The batches are spread over every device JAX sees (``jax.devices()``, or the one
    chosen with ``jax.default_device``: :func:`~bayes_slr.numerics.devices.work_devices`);
    the numbers do not depend on how many there are, up to the order of the floating-point
    sums.

    Returns
    -------
    PopulationMC
        Means with standard errors, and the number of sequences used.
    """
    cap = max(1, TOKENS_PER_BATCH // config.Lbar) if batch_size is None else batch_size
    n_batches = -(-samples // cap)
    batch_size = -(-samples // n_batches)
    shape = config.replace(D=1, Delta=0.0, nu=config.nu if math.isinf(config.nu) else 1.0)
    nu = jnp.asarray(0.0 if math.isinf(config.nu) else config.nu)
    total, total_sq = _streamed_population_sums(
        key, jnp.asarray(n_batches), nu, shape, batch_size, device_count()
    )
    count = n_batches * batch_size
    estimate = mean_from_sums(jax.device_get(total), jax.device_get(total_sq), count)
    return PopulationMC(
        *(StreamedMean(estimate.mean[i], estimate.stderr[i], count) for i in range(2))
    )


@functools.partial(jax.jit, static_argnames=("config",))
def _excess_squared_error(batch: SLRBatch, config: SLRConfig, teacher: Teacher) -> jax.Array:
    """Per-sequence ``(y - E[y | X])^2 - Delta``."""
    return (batch.y - bayes_estimator(batch.X, batch.lengths, config, teacher)) ** 2 - config.Delta


def bayes_risk_empirical(
    config: SLRConfig,
    samples: int,
    key: jax.Array,
    *,
    teacher: Teacher | None = None,
    chunk_size: int | None = None,
) -> StreamedMean:
    """Excess squared error of the Bayes estimator on data simulated at finite ``D``.

    Parameters
    ----------
    config : SLRConfig
        The full task, ``D`` and ``Delta`` included.
    samples : int
        Number of simulated sequences, ``>= 2``; rounded up to a whole number of equal
        chunks (one compiled shape).
    key : PRNG key (split for the teacher and the data).
    teacher : Teacher, optional
        Default: the population limit ``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``
        (``draw_teacher(..., exact=True)``, needs ``D >= 2``), for which the scores
        follow their population law exactly and the result estimates the Bayes error.
        A prior draw deviates from it by ``O(1/sqrt(D))``.
    chunk_size : int, optional
        Most sequences simulated at once; default keeps about ``TOKENS_PER_BATCH`` token
        coordinates per chunk.

    Returns
    -------
    StreamedMean
        Mean of ``(y - E[y | X])^2 - Delta`` with its standard error.
    """
    key_teacher, key_data = jax.random.split(key)
    if teacher is None:
        teacher = draw_teacher(key_teacher, config.D, exact=True)
    cap = max(1, TOKENS_PER_BATCH // (config.Lbar * config.D)) if chunk_size is None else chunk_size
    n_chunks = -(-samples // cap)
    chunk_size = -(-samples // n_chunks)
    statistic = functools.partial(_excess_squared_error, config=config, teacher=teacher)
    return streamed_mean(
        statistic, key_data, config, teacher, n_chunks * chunk_size, chunk_size=chunk_size
    )
