"""The mutual information of finite-``D`` spiked SLR by thermodynamic integration along ``alpha``.

With the training set grown one sequence at a time, the chain rule of the mutual information
between the teacher ``W* = (k*, v*)`` and the data is

    I(N) = sum_{n < N} g(n),   g(n) = E[log p(s | W*)] - E[log p(s | data_n)],

``s = (x, y)`` a fresh sequence of the teacher and ``data_n`` the first ``n`` training sequences:
``g(n) >= 0`` is the information the ``(n + 1)``-th sequence brings, the finite-``D`` counterpart of
the replica's ``d(I / D) / d alpha``. Both densities are of the whole sequence (the tokens carry
the key through the spike; the tokens' Gaussian base density divided out, as in
:mod:`bayes_slr.inference.evidence`). The first is exact; the second is the posterior predictive,
``E_post[p(s | W)]``, which is Rao-Blackwellised over the directions: given the training
locations ``eps`` the posterior of ``(k, v)`` is Gaussian (the exact Gibbs sampler's
conditionals, :func:`~bayes_slr.inference.kernels.gibbs.direction_conditionals`), so

    p(s | eps, data) = sum_l P(l | L) E_k[exp(a x_l.k / sqrt(D) - a^2 |k|^2 / (2 D))]
                       N(y; x_l.E[v] / sqrt(D), x_l^T Cov(v) x_l / D + Delta)

in closed form (``a = c_nu``; with ``k ~ N(m, I / p)``, ``P = p + a^2 / D`` and ``h = p m + a x_l /
sqrt(D)`` the key's factor is ``(P / p)^(-D/2) exp(|h|^2 / (2 P) - p |m|^2 / 2)``), and only the
locations are averaged over posterior draws. They are drawn by collapsed Gibbs
(:func:`location_draws`): each ``eps_mu`` given the others with both directions integrated out,
whose logits are the same closed form with sequence ``mu`` as the fresh one (the blocked Gibbs
sampler's ``eps``-``v`` coupling freezes its locations at small ``Delta``). The log of the
average over draws is biased low by about half its relative variance
(:attr:`InformationRate.draw_bias`, estimated by halving the draws), which biases ``g`` high.

:func:`information_rate` estimates ``g`` at one ``n`` from the posterior of the first ``n``
sequences (chains from uniform locations or from the true ones, with the teacher an exact
posterior draw);
:func:`integrate_rates` sums the rates of a grid of ``n`` into ``I(N) / D`` (the trapezoid rule
with the chain rule's endpoint term, ``sum_{n < N} g(n) = int_0^N g + (g(0) - g(N)) / 2 + ...``).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError, check_int
from bayes_slr.inference.evidence import check_evidence_task
from bayes_slr.inference.kernels.conditionals import located_tokens
from bayes_slr.inference.kernels.gibbs import DirectionConditionals, direction_conditionals
from bayes_slr.models.numpyro_models import location_joint_log_weights, location_log_weights
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class InformationRate(Record):
    """``g(n)`` of one teacher at one training-set size.

    Attributes
    ----------
    n : training sequences the posterior saw.
    init : the chains' start, ``"random"`` or ``"informed"`` (the teacher).
    rate : ``g(n)``, the mean over the fresh sequences of ``log p(s | W*) - log p_hat(s | data)``.
    stderr : its standard error over the fresh sequences.
    draw_bias : the estimated bias of ``rate`` from the finite number of location draws: the
        rate with half the draws minus the rate with all of them (the log-average's bias halves
        with twice the draws).
    draws : location draws averaged.
    match, agreement : of the location draws (:class:`LocationDraws`): which branch the chains
        are on, and whether they are in equilibrium (the two agree).
    """

    n: int
    init: str
    rate: float
    stderr: float
    draw_bias: float
    draws: int
    match: float
    agreement: float


@dataclasses.dataclass(frozen=True)
class InformationIntegral(Record):
    """``I(N) / D`` of one teacher from its rates on a grid of ``n`` (:func:`integrate_rates`)."""

    D: int
    N: int
    information: float
    stderr: float


def _key_log_factor(law: DirectionConditionals, tokens: jax.Array, a: float) -> jax.Array:
    """``log E_k[exp(a x.k / sqrt(D) - a^2 |k|^2 / (2 D))]`` for ``k ~ N(m, I / p)``, per token
    (``tokens`` ``(..., D)``; module docstring)."""
    D = tokens.shape[-1]
    p = law.k_precision
    precision = p + a**2 / D
    h = p * law.k_mean + a / math.sqrt(D) * tokens
    return (
        -0.5 * D * jnp.log(precision / p)
        + jnp.sum(h**2, axis=-1) / (2 * precision)
        - 0.5 * p * jnp.sum(law.k_mean**2)
    )


def _value_log_factor(
    law: DirectionConditionals, tokens: jax.Array, y: jax.Array, Delta: float
) -> jax.Array:
    """``log N(y; x.E[v] / sqrt(D), x^T Cov(v) x / D + Delta)`` per token (``tokens`` ``(n, Lbar,
    D)``, ``y`` ``(n,)``)."""
    D = tokens.shape[-1]
    mean = tokens @ law.v_mean / math.sqrt(D)
    whitened = jax.scipy.linalg.solve_triangular(
        law.v_cholesky, tokens.reshape(-1, D).T / math.sqrt(D), lower=True
    )
    variance = jnp.sum(whitened**2, axis=0).reshape(tokens.shape[:-1]) + Delta
    return -0.5 * (jnp.log(2 * math.pi * variance) + (y[:, None] - mean) ** 2 / variance)


@functools.partial(jax.jit, static_argnames=("config",))
def conditional_log_predictive(
    config: SLRConfig,
    train: tuple[jax.Array, jax.Array],
    new: tuple[jax.Array, jax.Array, jax.Array],
    eps: jax.Array,
) -> jax.Array:
    """``log p(s | eps, data)`` of each fresh sequence (module docstring), ``(n_new,)``.

    ``train``: ``(X, y)`` of the training set (``(N, Lbar, D)``, ``(N,)``); ``new``: ``(X, lengths,
    y)`` of the fresh sequences; ``eps``: ``(N,)`` training locations.
    """
    X, y = train
    X_new, lengths_new, y_new = new
    law = direction_conditionals(located_tokens(X, eps), y, config)
    base = location_log_weights(X_new, lengths_new, jnp.zeros(config.D), config)
    terms = (
        base
        + _key_log_factor(law, X_new, config.c_nu)
        + _value_log_factor(law, X_new, y_new, config.Delta)
    )
    return jax.nn.logsumexp(jnp.where(jnp.isfinite(base), terms, -jnp.inf), axis=-1)


def log_predictive(
    config: SLRConfig, batch: SLRBatch, new: SLRBatch, eps_draws: jax.Array
) -> np.ndarray:
    """``log p_hat(s | data)``: the log of the mean over the location draws ``eps_draws``
    (``(T, N)``) of :func:`conditional_log_predictive`, per fresh sequence of ``new``
    (``(n_new,)``)."""
    train = (jnp.asarray(batch.X), jnp.asarray(batch.y))
    fresh = (jnp.asarray(new.X), jnp.asarray(new.lengths), jnp.asarray(new.y))
    per_draw = jax.lax.map(
        lambda eps: conditional_log_predictive(config, train, fresh, eps), jnp.asarray(eps_draws)
    )
    return np.asarray(jax.nn.logsumexp(per_draw, axis=0) - math.log(per_draw.shape[0]))


def teacher_log_density(config: SLRConfig, teacher: Teacher, new: SLRBatch) -> np.ndarray:
    """``log p(s | W*)`` of each fresh sequence (the location summed out), ``(n_new,)``."""
    X, lengths, y = (jnp.asarray(x) for x in (new.X, new.lengths, new.y))
    weights = location_joint_log_weights(
        X, lengths, y, jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star), config
    )
    return np.asarray(jax.nn.logsumexp(weights, axis=-1))


@dataclasses.dataclass(frozen=True)
class LocationDraws:
    """Posterior draws of the training locations, ``eps`` ``(T, N)`` (``T`` = chains x samples,
    chain by chain), with ``match``, their mean agreement with the true locations, and
    ``agreement``, the mean agreement between draws of different chains (equal in equilibrium,
    by the Nishimori identity; ``nan`` without locations)."""

    eps: jax.Array
    match: float
    agreement: float


def _collapsed_sweep(
    key: jax.Array, config: SLRConfig, A: jax.Array, mask: jax.Array, y: jax.Array, eps: jax.Array
) -> jax.Array:
    """One sweep of collapsed Gibbs over the locations, ``eps_mu | eps_-mu`` for each ``mu`` in
    turn with both directions integrated out: the logits of ``eps_mu = l`` are
    :func:`conditional_log_predictive`'s terms of sequence ``mu`` given the others, kept by
    rank-one updates of ``v``'s posterior covariance and of the key's token sum. ``A``: the tokens
    over ``sqrt(D)``."""
    N, _, D = A.shape
    a, Delta = config.c_nu, config.Delta
    located = A[jnp.arange(N), eps]
    covariance = jnp.linalg.inv(jnp.eye(D) + located.T @ located / Delta)
    linear = located.T @ y / Delta
    p = 1.0 + (N - 1) * a**2 / D  # the key's precision without the sequence moved
    precision = p + a**2 / D
    base = jnp.where(mask, -jnp.log(jnp.sum(mask, axis=-1, keepdims=True)), -jnp.inf)

    def move(carry, inputs):
        covariance, linear, total, eps = carry
        key, mu = inputs
        old = A[mu, eps[mu]]
        shifted = covariance @ old
        covariance = covariance + jnp.outer(shifted, shifted) / (Delta - old @ shifted)
        linear, total = linear - old * y[mu] / Delta, total - old
        tokens = A[mu]
        variance = jnp.einsum("ld,de,le->l", tokens, covariance, tokens) + Delta
        mean = tokens @ (covariance @ linear)
        key_factor = (
            -0.5 * D * jnp.log(precision / p)
            + a**2 * jnp.sum((total + tokens) ** 2, axis=-1) / (2 * precision)
            - a**2 * jnp.sum(total**2) / (2 * p)
        )
        value_factor = -0.5 * (jnp.log(variance) + (y[mu] - mean) ** 2 / variance)
        new = jax.random.categorical(key, base[mu] + key_factor + value_factor)
        chosen = tokens[new]
        shifted = covariance @ chosen
        covariance = covariance - jnp.outer(shifted, shifted) / (Delta + chosen @ shifted)
        return (
            covariance,
            linear + chosen * y[mu] / Delta,
            total + chosen,
            eps.at[mu].set(new.astype(eps.dtype)),
        ), None

    start = (covariance, linear, jnp.sum(located, axis=0), eps)
    (_, _, _, eps), _ = jax.lax.scan(move, start, (jax.random.split(key, N), jnp.arange(N)))
    return eps


@functools.partial(jax.jit, static_argnames=("config", "warmup", "samples"))
def _collapsed_chains(key, config, X, mask, y, starts, warmup, samples):
    """Kept location draws ``(chains, samples, N)`` of collapsed Gibbs from ``starts``."""
    A = X / math.sqrt(config.D)

    def chain(key, eps):
        def sweep(eps, key):
            eps = _collapsed_sweep(key, config, A, mask, y, eps)
            return eps, eps

        _, kept = jax.lax.scan(sweep, eps, jax.random.split(key, warmup + samples))
        return kept[warmup:]

    return jax.vmap(chain)(jax.random.split(key, starts.shape[0]), starts)


def location_draws(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    init: str = "random",
    chains: int = 4,
    warmup: int = 100,
    samples: int = 100,
) -> LocationDraws:
    """Collapsed Gibbs over the training locations of ``batch`` (:func:`_collapsed_sweep`: no
    ``v``-``eps`` coupling to slow it at small ``Delta``), ``chains`` from ``init`` starts
    (uniform draws, or the true locations: with the teacher, an exact posterior draw), ``warmup``
    sweeps then ``samples`` kept per chain. An empty ``batch``: one empty draw (the posterior is
    the prior)."""
    N = batch.y.shape[0]
    if N == 0:
        return LocationDraws(jnp.zeros((1, 0), jnp.int32), math.nan, math.nan)
    lengths = jnp.asarray(batch.lengths)
    key_start, key_run = jax.random.split(key)
    if init == "informed":
        starts = jnp.broadcast_to(jnp.asarray(batch.eps), (chains, N))
    else:
        uniform = jax.random.uniform(key_start, (chains, N))
        starts = jnp.floor(uniform * lengths).astype(jnp.int32)
    mask = jnp.arange(config.Lbar) < lengths[:, None]
    kept = _collapsed_chains(
        key_run, config, jnp.asarray(batch.X), mask, jnp.asarray(batch.y), starts, warmup, samples
    )
    eps = np.asarray(kept)
    agreement = np.mean([(eps[i] == eps[j]).mean() for i in range(chains) for j in range(i)])
    return LocationDraws(
        jnp.asarray(eps.reshape(-1, N)),
        float((eps == np.asarray(batch.eps)).mean()),
        float(agreement),
    )


def information_rate(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    n: int,
    teacher: Teacher,
    new: SLRBatch,
    *,
    init: str = "random",
    chains: int = 4,
    warmup: int = 100,
    samples: int = 100,
) -> InformationRate:
    """``g(n)`` of ``teacher`` (module docstring): the posterior of ``batch``'s first ``n``
    sequences (:func:`location_draws`), scored on the fresh sequences ``new`` (two or more) of the
    same teacher. At ``n = 0`` the posterior is the prior and the predictive exact.
    """
    config = check_evidence_task(config)
    if n > batch.y.shape[0]:
        raise ConfigError(f"n must be at most the {batch.y.shape[0]} sequences given, got {n}")
    check_int("fresh sequences", new.y.shape[0], 2)
    train = SLRBatch(*(x[:n] for x in batch))
    draws = location_draws(
        key, config, train, init=init, chains=chains, warmup=warmup, samples=samples
    )
    own = teacher_log_density(config, teacher, new)
    rates = own - log_predictive(config, train, new, draws.eps)
    half = own - log_predictive(config, train, new, draws.eps[::2])
    return InformationRate(
        n=n,
        init=init,
        rate=float(rates.mean()),
        stderr=float(rates.std(ddof=1) / math.sqrt(rates.size)),
        draw_bias=float(half.mean() - rates.mean()),
        draws=int(draws.eps.shape[0]),
        match=draws.match,
        agreement=draws.agreement,
    )


def integrate_rates(D: int, rates: Sequence[InformationRate]) -> InformationIntegral:
    """``I(N) / D = (1 / D) sum_{n < N} g(n)`` from rates at increasing ``n`` starting at ``n =
    0`` and ending at ``N``: the trapezoid rule over the grid plus the chain rule's endpoint term
    ``(g(0) - g(N)) / 2`` (Euler-Maclaurin; exact for a ``g`` linear between grid points). The
    standard error propagates the rates' as independent."""
    n = np.array([r.n for r in rates], float)
    if n.size < 2 or n[0] != 0 or np.any(np.diff(n) <= 0):
        raise ConfigError("rates must be at increasing n starting at n = 0 (two or more)")
    g = np.array([r.rate for r in rates])
    stderr = np.array([r.stderr for r in rates])
    widths = np.diff(n)
    weights = np.zeros_like(n)
    weights[:-1] += widths / 2
    weights[1:] += widths / 2
    weights[0] += 0.5
    weights[-1] -= 0.5
    return InformationIntegral(
        D=D,
        N=int(n[-1]),
        information=float(weights @ g) / D,
        stderr=float(np.sqrt(np.sum((weights * stderr) ** 2))) / D,
    )
