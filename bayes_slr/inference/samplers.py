"""Posterior samplers over the SLR directions ``(k*, v*)`` at finite alpha (docs/model.md section
5).

Every sampler is a pure kernel in :mod:`bayes_slr.inference.kernels` (``init``/``step``)
driven by the one ``lax.scan`` loop :func:`~bayes_slr.inference.kernels.base.run_chains`
(chains ``vmap``-ed), and a :class:`~bayes_slr.inference.sampler_registry.Sampler` record in
the sampler registry. :func:`sample_posterior` is the entry point; ``sampler`` is ``"auto"``
(the first registered sampler that supports the variant) or a registered name:

* ``"gibbs"``: exact blocked Gibbs (spiked): locations categorical, ``k``, ``v`` Gaussian;
* ``"gibbs-hmc"``: locations and ``v`` exact, an HMC move for ``k`` given the locations (max-SLR);
* ``"multihead-gibbs"``: exact Gibbs over the heads' states, ``k``, ``v`` Gaussian (multi-head
  spiked SLR; its draws have a head axis, ``(chains, draws, H, D)``);
* ``"nuts"``: NumPyro NUTS on the summed-out posterior (any variant, finite ``nu``).

``init="random"`` starts each chain from its own prior draw; ``init="informed"`` starts
every chain at the teacher ``(k*, v*)``.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.inference.kernels import PosteriorDraws, SamplerData, run_chains
from bayes_slr.inference.kernels.gibbs import (
    DirectionConditionals,
    direction_conditionals,
    draw_directions,
)
from bayes_slr.inference.sampler_registry import (
    check_sampling_arguments,
    get_sampler,
    resolve_sampler,
)
from bayes_slr.models.numpyro_models import marginal_log_density
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig

__all__ = [
    "PosteriorDraws",
    "DirectionConditionals",
    "direction_conditionals",
    "draw_directions",
    "check_sampling_arguments",
    "resolve_sampler",
    "sample_posterior",
    "run_nuts",
    "run_gibbs",
    "run_gibbs_hmc",
    "initial_positions",
]


def initial_positions(
    key: jax.Array, config: SLRConfig, chains: int, init: str, teacher: Teacher | None
) -> tuple[jax.Array, jax.Array]:
    """Starts ``(k0, v0)``, each ``(chains, D)`` (``(chains, H, D)`` for a multi-head task):
    independent prior draws, or the teacher."""
    shape = (chains, config.heads, config.D) if config.multihead else (chains, config.D)
    if init == "random":
        k0, v0 = jax.random.normal(key, (2, *shape))
        return k0, v0
    if teacher is None:
        raise ConfigError("init informed needs the teacher (k*, v*); pass teacher=")
    return (
        jnp.broadcast_to(jnp.asarray(teacher.k_star), shape),
        jnp.broadcast_to(jnp.asarray(teacher.v_star), shape),
    )


@functools.partial(jax.jit, static_argnames=("config",))
def _log_density_of_draws(
    config: SLRConfig, batch: SamplerData, k: jax.Array, v: jax.Array
) -> jax.Array:
    """``log p(k, v, X, y)`` for draws of shape ``(chains, draws, D)`` (``(chains, draws, H, D)``
    for a multi-head task)."""

    def one(k_i: jax.Array, v_i: jax.Array) -> jax.Array:
        return marginal_log_density({"k": k_i, "v": v_i}, config, batch.X, batch.lengths, batch.y)

    return jax.vmap(jax.vmap(one))(k, v)


def sample_posterior(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    sampler: str = "auto",
    chains: int = 4,
    warmup: int = 500,
    samples: int = 500,
    init: str = "random",
    teacher: Teacher | None = None,
    progress: bool = False,
) -> PosteriorDraws:
    """Draw from the posterior of ``(k*, v*)`` given ``batch``.

    The settings are trusted: they are checked once, where the options of ``posterior`` are
    resolved (:func:`~bayes_slr.inference.sampler_registry.check_sampling_arguments`); call that
    first with settings of your own.

    Parameters
    ----------
    key : PRNG key.
    config : SLRConfig
        Task (``Delta > 0``, finite ``nu``).
    batch : SLRBatch
        Training set.
    sampler : str
        ``"auto"`` or a registered sampler's name
        (:func:`~bayes_slr.inference.sampler_registry.sampler_choices`); see the module docstring.
    chains, warmup, samples : int
        Chains (``>= 1``), warm-up steps per chain (``>= 0``), kept draws per chain (``>= 1``).
    init : {"random", "informed"}
        Independent prior draws, or every chain at the teacher.
    teacher : Teacher, optional
        Needed for ``init="informed"``.
    progress : bool
        A transient progress bar of the chains' warm-up and sampling steps.

    Returns
    -------
    PosteriorDraws
        Kept draws (after ``warmup`` steps), their log-density, the kernel's statistics
        and the warm-up trajectory.
    """
    name = resolve_sampler(config, sampler)
    key_init, key_run = jax.random.split(key)
    starts = initial_positions(key_init, config, chains, init, teacher)
    data = SamplerData.of(batch)
    kernel = get_sampler(name).make_kernel(config, warmup)
    positions, infos = run_chains(
        key_run,
        kernel,
        data,
        starts,
        warmup=warmup,
        samples=samples,
        progress=progress,
        label=f"{name} chains from {init} starts",
    )
    k, v = positions["k"][:, warmup:], positions["v"][:, warmup:]
    stats = {stat: values[:, warmup:] for stat, values in infos.items()}
    log_density = np.asarray(_log_density_of_draws(config, data, jnp.asarray(k), jnp.asarray(v)))
    return PosteriorDraws(
        k,
        v,
        log_density,
        stats,
        name,
        {"k": positions["k"][:, :warmup], "v": positions["v"][:, :warmup]},
    )


def run_nuts(key: jax.Array, config: SLRConfig, batch: SLRBatch, **options) -> PosteriorDraws:
    """:func:`sample_posterior` with ``sampler="nuts"``."""
    return sample_posterior(key, config, batch, sampler="nuts", **options)


def run_gibbs(key: jax.Array, config: SLRConfig, batch: SLRBatch, **options) -> PosteriorDraws:
    """:func:`sample_posterior` with ``sampler="gibbs"`` (exact blocked Gibbs, spiked SLR)."""
    return sample_posterior(key, config, batch, sampler="gibbs", **options)


def run_gibbs_hmc(key: jax.Array, config: SLRConfig, batch: SLRBatch, **options) -> PosteriorDraws:
    """:func:`sample_posterior` with ``sampler="gibbs-hmc"`` (max-SLR)."""
    return sample_posterior(key, config, batch, sampler="gibbs-hmc", **options)
