"""The population optimum of ``H_s`` student heads over all their overlaps with the ``H`` teacher
heads (heads may mix teacher heads), by search on common random numbers, certified by several
starts and a paired Monte Carlo against the aligned optimum (docs/multihead.md section 6).

**Overlaps.** Student head ``j``'s scores are ``chi_j = sum_h M[j, h] chi*_h + sum_i R[j, i]
u_i`` (``M = K K*^T / D``; ``R`` lower triangular with ``R R^T = Q_k - M M^T``, ``Q_k`` the
keys' Gram matrix, so the residuals may be correlated across heads) and its values
``z_j = sum_h V[j, h] z*_h``. The student's keys do not overlap the teacher's values nor its
values the teacher's keys (the manifold of docs/model.md section 4). A value residual is pure
noise (it adds ``E[tr(C G)] >= 0``, ``C`` its Gram matrix, ``G`` below), so the optimum has none
and ``Q_v = V V^T``.

**The values in closed form.** Averaging over the teacher's values ``z*`` given the scores
(Rao-Blackwell), the error of a sequence is ``sum_{h,l} (t_{h,l} - sum_j s_{j,l} V[j,h])^2`` with
``t_{h,l} = b_h 1[l = eps_h] / sqrt(rho H)`` (its mean is the population error: nothing else is
integrated by hand). It is quadratic in ``V``: with ``a[j, h] = E[sum_l s_{j,l} t_{h,l}]`` and
``G[j, j'] = E[sum_l s_{j,l} s_{j',l}]`` the best values are ``V = G^{-1} a`` and the error
``1 - tr(a^T G^{-1} a)``. On one fixed sample of sequences (common random numbers) ``a`` and
``G`` are smooth in the keys, so L-BFGS with exact gradients (JAX) minimises the sample's error
over ``(M, R[, c])`` from several starts: the aligned optimum, a mixing start (each head half
as much on the other teacher heads) and random ones.

**The certificate.** The starts' final errors on the search sample (how many reach the best);
then the error at the best point (its ``V`` fixed) and at the aligned optimum of
:func:`~bayes_slr.formulas.optimum.optimal_population_error` on the same fresh sequences: each
an unbiased Monte Carlo estimate of the population error at a fixed point, and their paired
difference with its standard error. The point found on ``n`` search sequences is off the true
optimum by ``O(n^-1/2)``, which costs ``O(1/n)`` in error: where the aligned optimum is the
optimum (linear attention) the point found scores ``O(1/n)`` above it on fresh sequences, and
the optimum reported is then the aligned point's (the better of two fixed points on the same
sequences: a selection bias below the paired standard error).

A module of its own, as different mathematics from the quadratures of :mod:`~bayes_slr.formulas.
optimum`: heads that mix teacher heads have no closed form (the joint law of several spikes in one
sequence), so the optimum is a Monte Carlo search over the overlap matrices on common random
numbers with a paired certificate; for one head it is the aligned optimum (nothing to mix).
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.optimize import minimize

from bayes_slr.attention.activations import Activation, get_activation
from bayes_slr.errors import check_int
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.optimum_record import (
    CHECK_SEQUENCES,
    SEARCH_SEQUENCES,
    AllOverlapsOptimum,
    OptimalOverlaps,
)
from bayes_slr.formulas.population import check_config
from bayes_slr.inference.bayes_risk import draw_population_heads
from bayes_slr.memory import MC_SEQUENCES_PER_BATCH
from bayes_slr.models.simulate import StreamedMean, mean_from_sums
from bayes_slr.models.spec import SLRConfig

RANDOM_STARTS = 2
"""Random starts beside the aligned and the symmetric mixing one."""
AGREEMENT = 1e-4
"""A start agrees with the best when its sample error is within this of the best's."""
OFFSET_RANGE = 20.0
"""The offset ``c`` of activations that have one is searched in ``[-20, 20]``."""


class Draws(NamedTuple):
    """One sample of sequences: teacher scores, mask, targets ``t`` and the students' key noise."""

    chi_star: jax.Array  # (n, H, Lbar)
    mask: jax.Array  # (n, 1, Lbar)
    target: jax.Array  # (n, H, Lbar)
    noise: jax.Array  # (n, H_s, Lbar)


class OverlapPoint(NamedTuple):
    """A student: key overlaps ``m_k`` (``H_s x H``), key residual factor ``r`` (lower
    triangular ``H_s x H_s``), offsets ``c`` (``H_s``) and values ``v`` (``H_s x H``)."""

    m_k: np.ndarray
    r: np.ndarray
    c: np.ndarray
    v: np.ndarray


@functools.partial(jax.jit, static_argnames=("config", "student_heads", "n"))
def _draws(key: jax.Array, config: SLRConfig, student_heads: int, n: int) -> Draws:
    """``n`` sequences from the population law (:func:`draw_population_heads`)."""
    key_heads, key_u = jax.random.split(key)
    chi_star, lengths, eps, present = draw_population_heads(key_heads, config, n)
    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    at = jax.nn.one_hot(eps, config.Lbar) * present[..., None]
    target = at / math.sqrt(config.presence * config.heads)
    noise = jax.random.normal(key_u, (n, student_heads, config.Lbar))
    return Draws(chi_star, mask, target, noise)


def _weights(
    record: Activation, draws: Draws, m_k: jax.Array, r: jax.Array, c: jax.Array
) -> jax.Array:
    """``(n, H_s, Lbar)`` weights of the student heads."""
    chi = jnp.einsum("jh,nhl->njl", m_k, draws.chi_star)
    chi = chi + jnp.einsum("ji,nil->njl", r, draws.noise)
    return record.weights(chi, jnp.broadcast_to(draws.mask, chi.shape), c[:, None])


def _moments(
    record: Activation, draws: Draws, m_k: jax.Array, r: jax.Array, c: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``a`` (``H_s x H``) and ``G`` (``H_s x H_s``) on the sample (module docstring)."""
    s = _weights(record, draws, m_k, r, c)
    n = s.shape[0]
    return jnp.einsum("njl,nhl->jh", s, draws.target) / n, jnp.einsum("njl,nil->ji", s, s) / n


def _best_values(a: jax.Array, gram: jax.Array) -> jax.Array:
    """``V = G^{-1} a``, with a relative jitter of ``1e-12`` on the diagonal."""
    jitter = 1e-12 * jnp.trace(gram) * jnp.eye(gram.shape[0])
    return jnp.linalg.solve(gram + jitter, a)


def _sample_error(params: jax.Array, record: Activation, shape: tuple, draws: Draws) -> jax.Array:
    """The sample's error at the best values for the keys in ``params``."""
    m_k, r, c = _unpack(params, *shape)
    a, gram = _moments(record, draws, m_k, r, c)
    total = jnp.mean(jnp.sum(draws.target**2, axis=(1, 2)))
    return total - jnp.sum(a * _best_values(a, gram))


_error_and_gradient = jax.jit(
    jax.value_and_grad(_sample_error), static_argnames=("record", "shape")
)


def _unpack(
    params: jax.Array, heads: int, student_heads: int, offset: bool
) -> tuple[jax.Array, jax.Array, jax.Array]:
    """``(m_k, r, c)`` from the flat parameters."""
    size = student_heads * heads
    m_k = params[:size].reshape(student_heads, heads)
    rows, cols = np.tril_indices(student_heads)
    tri = params[size : size + rows.size]
    r = jnp.zeros((student_heads, student_heads)).at[rows, cols].set(tri)
    c = params[size + rows.size :] if offset else jnp.zeros(student_heads)
    return m_k, r, c


def _pack(m_k: np.ndarray, r: np.ndarray, c: np.ndarray, offset: bool) -> np.ndarray:
    rows, cols = np.tril_indices(r.shape[0])
    return np.concatenate([m_k.ravel(), r[rows, cols], c if offset else []])


def _starts(
    aligned: OverlapPoint, heads: int, student_heads: int, seed: int
) -> list[tuple[str, np.ndarray, np.ndarray, np.ndarray]]:
    """``(name, m_k, r, c)`` of each start: aligned; mixing (every head on its own teacher head
    and half as much on the others, a small ramp breaking the tie between heads); random."""
    scale = float(np.max(np.abs(aligned.m_k))) or 1.0
    mixing = np.full((student_heads, heads), 0.5 * scale / math.sqrt(heads))
    mixing[np.arange(min(heads, student_heads)), np.arange(min(heads, student_heads))] = scale
    mixing += 0.05 * scale * np.arange(student_heads * heads).reshape(mixing.shape) / mixing.size
    starts = [
        ("aligned", aligned.m_k, aligned.r, aligned.c),
        ("mixing", mixing, 0.1 * np.eye(student_heads), aligned.c),
    ]
    rng = np.random.default_rng(seed)
    for index in range(RANDOM_STARTS):
        m_k = scale * rng.normal(size=(student_heads, heads))
        r = np.tril(0.3 * scale * np.abs(rng.normal(size=(student_heads, student_heads))))
        starts.append((f"random {index}", m_k, r, aligned.c))
    return starts


def _aligned_point(o: OptimalOverlaps, heads: int, student_heads: int) -> OverlapPoint:
    """The aligned optimum's overlaps ``o`` as a point: one student head per teacher head (the
    first ``min(H_s, H)``), extra heads silenced (``V = 0``) with the same key norm."""
    m_k = min(float(o.m_k), 1e3)  # a large-norm limit (m_k = inf) taken at a large norm
    residual = math.sqrt(max(min(float(o.q_k), 1e6) - m_k**2, 0.0))
    matched = np.arange(min(heads, student_heads))
    point = OverlapPoint(
        np.zeros((student_heads, heads)),
        np.diag(np.full(student_heads, residual)),
        np.full(student_heads, float(o.c)),
        np.zeros((student_heads, heads)),
    )
    point.m_k[matched, matched] = m_k
    point.v[matched, matched] = float(o.m_v)
    point.r[np.arange(matched.size, student_heads), np.arange(matched.size, student_heads)] = (
        math.sqrt(m_k**2 + residual**2)
    )
    return point


def _search(
    record: Activation, config: SLRConfig, draws: Draws, start: tuple, offset: bool
) -> tuple[float, OverlapPoint]:
    """L-BFGS from one start on the sample's error; the point reached with its best values."""
    _, m_k, r, c = start
    shape = (config.heads, m_k.shape[0], offset)

    def objective(x: np.ndarray) -> tuple[float, np.ndarray]:
        value, grad = _error_and_gradient(jnp.asarray(x), record=record, shape=shape, draws=draws)
        return float(value), np.asarray(grad, dtype=float)

    x0 = _pack(m_k, r, c, offset)
    bounds = [(None, None)] * (x0.size - (m_k.shape[0] if offset else 0))
    bounds += [(-OFFSET_RANGE, OFFSET_RANGE)] * (m_k.shape[0] if offset else 0)
    found = minimize(
        objective, x0, jac=True, method="L-BFGS-B", bounds=bounds, options={"maxiter": 500}
    )
    m_k, r, c = (np.asarray(x) for x in _unpack(jnp.asarray(found.x), *shape))
    v = np.asarray(_best_values(*_moments(record, draws, m_k, r, c)))
    return float(found.fun), OverlapPoint(m_k, r, c, v)


@functools.partial(jax.jit, static_argnames=("record",))
def _paired_sums(
    record: Activation, draws: Draws, found: OverlapPoint, aligned: OverlapPoint
) -> jax.Array:
    """Sums of each point's per-sequence error, of their difference, and of their squares."""
    errors = []
    for point in (found, aligned):
        s = _weights(record, draws, point.m_k, point.r, point.c)
        predicted = jnp.einsum("njl,jh->nhl", s, point.v)
        errors.append(jnp.sum((draws.target - predicted) ** 2, axis=(1, 2)))
    stats = jnp.stack([errors[0], errors[1], errors[0] - errors[1]])
    return jnp.stack([jnp.sum(stats, axis=1), jnp.sum(stats**2, axis=1)])


def paired_check(
    activation: str,
    config: SLRConfig,
    found: OverlapPoint,
    aligned: OverlapPoint,
    sequences: int,
    seed: int,
) -> tuple[StreamedMean, StreamedMean, StreamedMean]:
    """The errors of ``found`` and ``aligned`` and their difference on the same ``sequences``
    fresh sequences: three :class:`~bayes_slr.models.simulate.StreamedMean`."""
    record = get_activation(activation)
    config = check_config(config)
    batches = -(-check_int("sequences", sequences, 2) // MC_SEQUENCES_PER_BATCH)
    batch = -(-sequences // batches)
    shape = config.replace(D=1, Delta=0.0)
    found, aligned = (OverlapPoint(*(jnp.asarray(x) for x in p)) for p in (found, aligned))
    sums = np.zeros((2, 3))
    for key in jax.random.split(jax.random.PRNGKey(check_int("seed", seed, 0)), batches):
        draws = _draws(key, shape, found.m_k.shape[0], batch)
        sums += np.asarray(_paired_sums(record, draws, found, aligned), dtype=float)
    mean = mean_from_sums(sums[0], sums[1], batches * batch)
    return tuple(StreamedMean(mean.mean[i], mean.stderr[i], mean.count) for i in range(3))


def all_overlaps_optimum(
    activation: str,
    config: SLRConfig,
    student_heads: int | None = None,
    search_sequences: int = SEARCH_SEQUENCES,
    check_sequences: int = CHECK_SEQUENCES,
    seed: int = 0,
) -> AllOverlapsOptimum:
    """The population optimum of ``student_heads`` heads over all their overlaps with the
    teacher heads of ``config``, by search, with its certificate (module docstring).

    Parameters
    ----------
    activation : any activation (registered or selected by name); its aligned optimum, the first
        start, needs theory terms.
    config : the task (``heads`` is the teacher's ``H``, ``presence``, variant, length law,
        ``nu``); ``D`` and ``Delta`` are ignored.
    student_heads : ``H_s >= 1`` (by default the teacher's ``H``).
    search_sequences : sequences of the fixed sample the search minimises on, ``>= 2``.
    check_sequences : fresh sequences of the paired check, ``>= 2``.
    seed : seed of the sample (``seed``), the random starts and the check (``seed + 1``).

    Returns
    -------
    AllOverlapsOptimum
        The error at the point found and at the aligned optimum on the same fresh sequences,
        their paired difference, the point's overlap matrices and every start's sample error.
    """
    record = get_activation(activation)
    config = check_config(config)
    student_heads = check_int(
        "student_heads", config.heads if student_heads is None else student_heads, 1
    )
    search_sequences = check_int("search_sequences", search_sequences, 2)
    check_int("check_sequences", check_sequences, 2)
    seed = check_int("seed", seed, 0)
    optimum = optimal_population_error(activation, config)
    aligned = _aligned_point(optimum.overlaps, config.heads, student_heads)
    matched = min(student_heads, config.heads)
    aligned_error = 1.0 - matched / config.heads * (1.0 - float(optimum.error))
    shape = config.replace(D=1, Delta=0.0)
    draws = _draws(jax.random.PRNGKey(seed), shape, student_heads, search_sequences)
    starts = _starts(aligned, config.heads, student_heads, seed)
    searched = [_search(record, shape, draws, s, record.has_offset) for s in starts]
    best_error, best = min(searched, key=lambda found: found[0])
    found, at_aligned, difference = paired_check(
        activation, config, best, aligned, check_sequences, seed + 1
    )
    searched_wins = bool(difference.mean < 0.0)
    if not searched_wins:  # the search's gain was its sample's: the aligned point is the best known
        best, found = aligned, at_aligned
    return AllOverlapsOptimum(
        error=float(found.mean),
        stderr=float(found.stderr),
        searched=searched_wins,
        aligned_error=aligned_error,
        aligned_mc=float(at_aligned.mean),
        aligned_mc_stderr=float(at_aligned.stderr),
        difference=float(difference.mean),
        difference_stderr=float(difference.stderr),
        sequences=int(found.count),
        m_k=_rows(best.m_k),
        q_k=_rows(best.m_k @ best.m_k.T + best.r @ best.r.T),
        m_v=_rows(best.v),
        q_v=_rows(best.v @ best.v.T),
        c=tuple(float(x) for x in best.c) if record.has_offset else (),
        starts=tuple(s[0] for s in starts),
        start_errors=tuple(error for error, _ in searched),
        agreeing=sum(error - best_error <= AGREEMENT for error, _ in searched),
        search_sequences=search_sequences,
    )


def _rows(matrix: np.ndarray) -> tuple[tuple[float, ...], ...]:
    return tuple(tuple(float(x) for x in row) for row in np.asarray(matrix))
