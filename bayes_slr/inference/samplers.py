"""Posterior samplers over the SLR directions ``(k*, v*)`` at finite alpha (MODEL.md section 5).

* :func:`run_nuts`: NumPyro NUTS on the model with the location summed out
  (:func:`~bayes_slr.models.numpyro_models.slr_model_marginal`), or, for the
  benchmark, on the model whose location NumPyro enumerates automatically
  (:func:`~bayes_slr.models.numpyro_models.slr_model_enumerated`). Chains run
  vectorised (``chain_method="vectorized"``).
* :func:`run_gibbs`: the exact blocked Gibbs sampler of spiked SLR, one jitted
  ``lax.scan`` per chain, chains ``vmap``-ed. Given the locations ``eps``, ``k`` and
  ``v`` are independent Gaussians (conjugate); given ``(k, v)`` the locations are
  independent categoricals.

Both return :class:`PosteriorDraws`. ``init="random"`` starts each chain from its own
prior draw; ``init="informed"`` starts every chain at the teacher ``(k*, v*)``.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpyro.infer import MCMC, NUTS, init_to_sample, init_to_value

from bayes_slr.errors import ConfigError, check_choice, check_int
from bayes_slr.models.numpyro_models import (
    location_joint_log_weights,
    marginal_log_density,
    slr_model_enumerated,
    slr_model_marginal,
)
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import INITS, SLRConfig

SAMPLERS = ("nuts", "gibbs")


class PosteriorDraws(NamedTuple):
    """Posterior draws of the directions, grouped by chain.

    Attributes
    ----------
    k, v : (chains, draws, D) draws of ``k*`` and ``v*``.
    log_density : (chains, draws) joint log-density ``log p(k, v, X, y)`` (location summed out).
    sample_stats : dict of (chains, draws) sampler statistics (NUTS: ``diverging``,
        ``acceptance_rate``, ``n_steps``; Gibbs: none).
    sampler : ``"nuts"``, ``"nuts-enumerated"`` or ``"gibbs"``.
    """

    k: np.ndarray
    v: np.ndarray
    log_density: np.ndarray
    sample_stats: dict[str, np.ndarray]
    sampler: str


def check_sampling_arguments(
    config: SLRConfig, *, sampler: str, chains: int, warmup: int, samples: int, init: str
) -> tuple[int, int, int]:
    """Validate the sampling options for ``config``; return ``(chains, warmup, samples)``.

    Raises
    ------
    ConfigError
        ``chains < 1``, ``samples < 1``, ``warmup < 0``, an unknown sampler or init,
        ``Delta = 0``, max-SLR with ``nu = inf`` (the likelihood is an indicator: no
        gradient for NUTS), or Gibbs on max-SLR (not conjugate).
    """
    check_choice("sampler", sampler, SAMPLERS)
    check_choice("init", init, INITS)
    chains = check_int("chains", chains, 1)
    warmup = check_int("warmup", warmup, 0)
    samples = check_int("samples", samples, 1)
    if config.Delta <= 0:
        raise ConfigError("Delta must be > 0 for posterior sampling (the posterior is degenerate at Delta = 0)")
    if config.variant == "max" and math.isinf(config.nu):
        raise ConfigError(
            "nu must be finite (>= 0) for posterior sampling of max-SLR: at nu = inf the likelihood "
            "is an argmax indicator, which NUTS cannot sample and Gibbs does not support"
        )
    if sampler == "gibbs" and config.variant != "spiked":
        raise ConfigError(
            "sampler gibbs supports variant spiked only (for max-SLR k given the locations is "
            "not Gaussian); use --sampler nuts"
        )
    return chains, warmup, samples


def _initial_values(init: str, teacher: Teacher | None) -> dict[str, jax.Array] | None:
    if init == "random":
        return None
    if teacher is None:
        raise ConfigError("init informed needs the teacher (k*, v*); pass teacher=")
    return {"k": jnp.asarray(teacher.k_star), "v": jnp.asarray(teacher.v_star)}


@functools.partial(jax.jit, static_argnames=("config",))
def _log_density_of_draws(config: SLRConfig, batch: SLRBatch, k: jax.Array, v: jax.Array) -> jax.Array:
    """``log p(k, v, X, y)`` for draws of shape ``(chains, draws, D)``."""

    def one(k_i: jax.Array, v_i: jax.Array) -> jax.Array:
        return marginal_log_density({"k": k_i, "v": v_i}, config, batch.X, batch.lengths, batch.y)

    return jax.vmap(jax.vmap(one))(k, v)


def run_nuts(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    chains: int = 4,
    warmup: int = 500,
    samples: int = 500,
    init: str = "random",
    teacher: Teacher | None = None,
    enumerate_location: bool = False,
    mcmc: MCMC | None = None,
) -> PosteriorDraws:
    """NUTS over ``(k, v)`` with several vectorised chains.

    Parameters
    ----------
    key : PRNG key.
    config : SLRConfig
        Task (``Delta > 0``; finite ``nu``).
    batch : SLRBatch
        Training set.
    chains, warmup, samples : int
        Number of chains (``>= 1``), warm-up steps per chain (``>= 0``), kept draws
        per chain (``>= 1``).
    init : {"random", "informed"}
        Chains start from independent prior draws, or all at the teacher.
    teacher : Teacher, optional
        Needed for ``init="informed"``.
    enumerate_location : bool
        Run on :func:`slr_model_enumerated` (NumPyro enumerates the location) instead
        of the summed-out model; same posterior, slower (benchmark only).
    mcmc : MCMC, optional
        A previous :class:`numpyro.infer.MCMC` from :func:`make_nuts` with the same
        settings: running it again reuses its compiled sampler.

    Returns
    -------
    PosteriorDraws
    """
    chains, warmup, samples = check_sampling_arguments(
        config, sampler="nuts", chains=chains, warmup=warmup, samples=samples, init=init
    )
    if mcmc is None:
        mcmc = make_nuts(config, chains=chains, warmup=warmup, samples=samples, init=init,
                         teacher=teacher, enumerate_location=enumerate_location)
    if enumerate_location:
        mcmc.run(key, config, batch.lengths, batch.X, batch.y, extra_fields=_NUTS_FIELDS)
    else:
        mcmc.run(key, config, batch.X, batch.lengths, batch.y, extra_fields=_NUTS_FIELDS)
    draws = mcmc.get_samples(group_by_chain=True)
    extra = mcmc.get_extra_fields(group_by_chain=True)
    stats = {
        "diverging": np.asarray(extra["diverging"]),
        "acceptance_rate": np.asarray(extra["accept_prob"]),
        "n_steps": np.asarray(extra["num_steps"]),
    }
    k, v = draws["k"], draws["v"]
    return PosteriorDraws(
        np.asarray(k), np.asarray(v), np.asarray(_log_density_of_draws(config, batch, k, v)), stats,
        "nuts-enumerated" if enumerate_location else "nuts",
    )


_NUTS_FIELDS = ("diverging", "accept_prob", "num_steps")


def make_nuts(
    config: SLRConfig,
    *,
    chains: int,
    warmup: int,
    samples: int,
    init: str,
    teacher: Teacher | None = None,
    enumerate_location: bool = False,
) -> MCMC:
    """The :class:`numpyro.infer.MCMC` object that :func:`run_nuts` runs (vectorised chains)."""
    values = _initial_values(init, teacher)
    strategy = init_to_sample if values is None else init_to_value(values=values)
    model = slr_model_enumerated if enumerate_location else slr_model_marginal
    return MCMC(
        NUTS(model, init_strategy=strategy),
        num_warmup=warmup,
        num_samples=samples,
        num_chains=chains,
        chain_method="vectorized",
        progress_bar=False,
    )


def run_gibbs(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    chains: int = 4,
    warmup: int = 500,
    samples: int = 500,
    init: str = "random",
    teacher: Teacher | None = None,
) -> PosteriorDraws:
    """Exact blocked Gibbs sampler of spiked SLR.

    One sweep draws ``eps_mu | k, v`` (categorical, independent over sequences),
    then ``k | eps`` and ``v | eps`` (independent Gaussians):

    * ``k | eps ~ N(sqrt(nu/D) S / p, I / p)`` with ``p = 1 + N nu / D`` and
      ``S = sum_mu x_{mu, eps_mu}`` (the spike term ``sqrt(nu) x.k/sqrt(D) - nu|k|^2/(2D)``
      is Gaussian in ``k``);
    * ``v | eps ~ N(P^-1 A^T y / Delta, P^-1)`` with ``A`` the rows
      ``x_{mu, eps_mu}/sqrt(D)`` and ``P = I + A^T A / Delta`` (Bayesian linear regression).

    Parameters are as for :func:`run_nuts`. Returns :class:`PosteriorDraws` with the
    ``samples`` draws after ``warmup`` sweeps.
    """
    chains, warmup, samples = check_sampling_arguments(
        config, sampler="gibbs", chains=chains, warmup=warmup, samples=samples, init=init
    )
    values = _initial_values(init, teacher)
    key_init, key_run = jax.random.split(key)
    if values is None:
        k0, v0 = jax.random.normal(key_init, (2, chains, config.D))
    else:
        k0 = jnp.broadcast_to(values["k"], (chains, config.D))
        v0 = jnp.broadcast_to(values["v"], (chains, config.D))
    k, v = _gibbs_chains(jax.random.split(key_run, chains), k0, v0, batch.X, batch.lengths, batch.y,
                         config=config, warmup=warmup, samples=samples)
    log_density = np.asarray(_log_density_of_draws(config, batch, k, v))
    return PosteriorDraws(np.asarray(k), np.asarray(v), log_density, {}, "gibbs")


class DirectionConditionals(NamedTuple):
    """Gaussian laws of ``k`` and ``v`` given the locations (spiked SLR).

    ``k ~ N(k_mean, I / k_precision)``; ``v ~ N(v_mean, P^-1)`` with ``P = v_cholesky v_cholesky^T``.
    """

    k_mean: jax.Array
    k_precision: jax.Array
    v_mean: jax.Array
    v_cholesky: jax.Array


def direction_conditionals(tokens: jax.Array, y: jax.Array, config: SLRConfig) -> DirectionConditionals:
    """Conditional laws of ``k`` and ``v`` given the token at each sequence's location.

    Parameters
    ----------
    tokens : (N, D) ``x_{mu, eps_mu}``.
    y : (N,) outputs.
    config : SLRConfig
        Spiked task with ``Delta > 0``.

    Returns
    -------
    DirectionConditionals
        ``k``: precision ``1 + N nu / D``, mean ``sqrt(nu/D) sum_mu x_{mu,eps_mu} / precision``.
        ``v``: precision ``I + A^T A / Delta``, mean ``P^-1 A^T y / Delta``, ``A = tokens / sqrt(D)``.
    """
    N, D = tokens.shape
    k_precision = jnp.asarray(1.0 + N * config.nu / D)
    k_mean = math.sqrt(config.nu / D) * jnp.sum(tokens, axis=0) / k_precision
    A = tokens / math.sqrt(D)
    cholesky = jnp.linalg.cholesky(jnp.eye(D) + A.T @ A / config.Delta)
    v_mean = jax.scipy.linalg.cho_solve((cholesky, True), A.T @ y / config.Delta)
    return DirectionConditionals(k_mean, k_precision, v_mean, cholesky)


def draw_directions(key_k: jax.Array, key_v: jax.Array, law: DirectionConditionals) -> tuple[jax.Array, jax.Array]:
    """One draw of ``(k, v)`` from :class:`DirectionConditionals`."""
    D = law.k_mean.shape[0]
    k = law.k_mean + jax.random.normal(key_k, (D,)) / jnp.sqrt(law.k_precision)
    noise = jax.scipy.linalg.solve_triangular(law.v_cholesky.T, jax.random.normal(key_v, (D,)), lower=False)
    return k, law.v_mean + noise


@functools.partial(jax.jit, static_argnames=("config", "warmup", "samples"))
def _gibbs_chains(
    keys: jax.Array, k0: jax.Array, v0: jax.Array, X: jax.Array, lengths: jax.Array, y: jax.Array,
    *, config: SLRConfig, warmup: int, samples: int,
) -> tuple[jax.Array, jax.Array]:
    """Run one Gibbs chain per key (vmapped); return draws ``(chains, samples, D)`` of ``k`` and ``v``."""
    rows = jnp.arange(y.shape[0])

    def sweep(state: tuple[jax.Array, jax.Array], key: jax.Array) -> tuple[tuple[jax.Array, jax.Array], None]:
        k, v = state
        key_eps, key_k, key_v = jax.random.split(key, 3)
        eps = jax.random.categorical(key_eps, location_joint_log_weights(X, lengths, y, k, v, config), axis=-1)
        conditional = direction_conditionals(X[rows, eps], y, config)
        return draw_directions(key_k, key_v, conditional), None

    def chain(key: jax.Array, k_init: jax.Array, v_init: jax.Array) -> tuple[jax.Array, jax.Array]:
        key_warm, key_keep = jax.random.split(key)
        state, _ = jax.lax.scan(sweep, (k_init, v_init), jax.random.split(key_warm, warmup))

        def kept(state: tuple[jax.Array, jax.Array], key: jax.Array):
            new_state, _ = sweep(state, key)
            return new_state, new_state

        _, (k_draws, v_draws) = jax.lax.scan(kept, state, jax.random.split(key_keep, samples))
        return k_draws, v_draws

    return jax.vmap(chain)(keys, k0, v0)


def sample_posterior(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    sampler: str = "nuts",
    chains: int = 4,
    warmup: int = 500,
    samples: int = 500,
    init: str = "random",
    teacher: Teacher | None = None,
) -> PosteriorDraws:
    """Draw from the posterior of ``(k*, v*)`` with ``sampler`` in ``{"nuts", "gibbs"}``.

    See :func:`run_nuts` and :func:`run_gibbs` for the parameters.
    """
    check_sampling_arguments(config, sampler=sampler, chains=chains, warmup=warmup, samples=samples, init=init)
    run = run_nuts if sampler == "nuts" else run_gibbs
    return run(key, config, batch, chains=chains, warmup=warmup, samples=samples, init=init, teacher=teacher)
