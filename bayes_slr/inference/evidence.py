"""Evidence and mutual information of finite-``D`` spiked SLR without the replica method.

With ``f_mu(k, v, eps) = P(eps | L) g_nu(eps, chi) N(y_mu; z_eps, Delta)`` the per-sequence
likelihood given the location (tilt's normaliser at ``|k|^2 / D`` included; the Gaussian law of the
tokens divided out), the evidence of a training set is ``Z = int dP(k) dP(v) prod_mu sum_eps f_mu``
and the mutual information between the teacher and the data is

    I = E[ sum_mu log sum_eps f_mu(k*, v*, eps) ] - E[ log Z ],

the first term exact for a simulated teacher (:func:`teacher_log_likelihood`). ``log Z`` is
estimated by annealed importance sampling (Neal 2001) along the tempered laws ``p_beta(k, v, eps)
propto P(k, v) prod_mu f_mu^beta`` (normaliser ``Z(0) = prod_mu L_mu``): for spiked SLR every
conditional stays exact at any ``beta`` (the locations categorical with logits ``beta log f``,
``k`` and ``v`` Gaussian with the spike's precision and the regression's ``1 / Delta`` multiplied
by ``beta``), so each transition is one sweep of the exact Gibbs sampler
(:mod:`bayes_slr.inference.kernels.gibbs`) at that temperature.

* **Forward** (``direction="forward"``): chains start from the prior at ``beta = 0``; ``E[log
  Z_hat] <= log Z`` (Jensen), a stochastic lower bound on ``log Z``.
* **Reverse** (``direction="reverse"``): chains start at the teacher, an exact draw from the
  posterior of simulated data, and anneal down to ``beta = 0``; ``E[log Z_hat] >= log Z``, an upper
  bound (bidirectional Monte Carlo, Grosse, Ghahramani and Adams 2015).

The two bound the truth; where they agree, annealing has equilibrated. The Monte Carlo error of
one estimate is the spread of the chains' log-weights (delta method on their mean).
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.inference.kernels.conditionals import draw_locations, located_tokens
from bayes_slr.inference.kernels.gibbs import direction_conditionals, draw_directions
from bayes_slr.inference.sampler_registry import get_sampler
from bayes_slr.models.numpyro_models import location_joint_log_weights
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig

DIRECTIONS = ("forward", "reverse")
SMALLEST_TEMPERATURE = 1e-8
"""First non-zero temperature of the geometric schedule."""


def temperature_schedule(temperatures: int, smallest: float = SMALLEST_TEMPERATURE) -> np.ndarray:
    """``beta_0 = 0`` then ``temperatures`` values geometric from ``smallest`` to 1.

    The log-likelihood is of order ``N / Delta`` at ``beta = 0``: the increments must be small
    there, and the geometric spacing keeps ``beta_k / beta_(k-1)`` constant.
    """
    return np.concatenate([[0.0], np.geomspace(smallest, 1.0, temperatures)])


def _tempered_log_likelihood(config, X, lengths, y, k, v, beta):
    """``sum_mu log sum_eps f_mu^beta``: the tempered marginal log-likelihood (up to ``Z(0)``)."""
    log_f = location_joint_log_weights(X, lengths, y, k, v, config)
    return jnp.sum(jax.nn.logsumexp(jnp.where(jnp.isfinite(log_f), beta * log_f, -jnp.inf), -1))


def _gibbs_sweep(key, config, X, lengths, y, k, v, beta):
    """One sweep at temperature ``beta``: locations, then ``(k, v)`` given them."""
    key_eps, key_k, key_v = jax.random.split(key, 3)
    eps = draw_locations(key_eps, config, X, lengths, y, k, v, beta)
    law = direction_conditionals(located_tokens(X, eps), y, config, beta)
    return draw_directions(key_k, key_v, law)


@functools.partial(jax.jit, static_argnames=("config",))
def _anneal(key, config, X, lengths, y, k0, v0, betas):
    """Log-weights of the chains started at ``(k0, v0)`` (``(chains, D)``) along ``betas``.

    Forward (increasing ``betas``): the weight gains ``log p~_b(x) - log p~_a(x)`` before each
    transition at ``b``; the same code with decreasing ``betas`` is the reverse sweep, whose
    weight estimates ``Z(beta_end) / Z(beta_start)`` from an exact draw at ``beta_start``.
    """

    def chain(key, k, v):
        def step(state, inputs):
            k, v, log_weight = state
            key, a, b = inputs
            now = _tempered_log_likelihood(config, X, lengths, y, k, v, b)
            before = _tempered_log_likelihood(config, X, lengths, y, k, v, a)
            log_weight = log_weight + now - before
            # the transition leaves the new target invariant (at b = 0, the reverse sweep's end,
            # it is discarded: a tiny positive temperature keeps it finite)
            k, v = _gibbs_sweep(key, config, X, lengths, y, k, v, jnp.maximum(b, 1e-300))
            return (k, v, log_weight), None

        keys = jax.random.split(key, betas.shape[0] - 1)
        (_, _, log_weight), _ = jax.lax.scan(
            step, (k, v, jnp.zeros(())), (keys, betas[:-1], betas[1:])
        )
        return log_weight

    return jax.vmap(chain)(jax.random.split(key, k0.shape[0]), k0, v0)


@dataclasses.dataclass(frozen=True)
class EvidenceEstimate:
    """``log Z`` of one training set by annealed importance sampling.

    Attributes
    ----------
    log_evidence : the estimate of ``log Z`` (``log p(data)`` minus the tokens' Gaussian
        log-density): a lower bound in expectation (forward) or an upper bound (reverse).
    stderr : its Monte Carlo standard error (delta method on the mean of the chains' weights).
    log_weights : (chains,) the chains' log-weights (their spread measures the annealing's
        quality: a spread of several units means too few temperatures).
    direction : ``"forward"`` or ``"reverse"``.
    temperatures : non-zero temperatures of the schedule.
    """

    log_evidence: float
    stderr: float
    log_weights: np.ndarray
    direction: str
    temperatures: int


def _log_mean_exp(log_weights: np.ndarray) -> tuple[float, float]:
    """``log mean exp(w)`` and its delta-method standard error."""
    top = float(np.max(log_weights))
    weights = np.exp(log_weights - top)
    mean = float(np.mean(weights))
    stderr = float(np.std(weights, ddof=1) / math.sqrt(weights.size)) / mean
    return top + math.log(mean), stderr


def check_evidence_task(config: SLRConfig) -> SLRConfig:
    """The exact tempered Gibbs sampler needs a planted token law and ``Delta > 0``."""
    if not get_sampler("gibbs").supports(config.law):
        raise ConfigError(
            f"variant must be one the exact Gibbs sampler covers (spiked), got {config.variant}"
        )
    if config.Delta <= 0:
        raise ConfigError(f"Delta must be a number > 0 (finite), got {config.Delta!r}")
    return config


def annealed_log_evidence(
    key: jax.Array,
    config: SLRConfig,
    batch: SLRBatch,
    *,
    temperatures: int = 1000,
    chains: int = 16,
    direction: str = "forward",
    teacher: Teacher | None = None,
) -> EvidenceEstimate:
    """Estimate ``log Z`` of ``batch`` by annealed importance sampling (module docstring).

    Parameters
    ----------
    key : PRNG key.
    config : SLRConfig
        A planted (spiked) task with ``Delta > 0``.
    batch : the training set.
    temperatures : non-zero temperatures of the geometric schedule (:func:`temperature_schedule`).
    chains : independent annealing runs (``>= 2``: their spread gives the standard error).
    direction : ``"forward"`` (from the prior, lower bound) or ``"reverse"`` (from the teacher,
        upper bound; needs ``teacher``, which must be the one that generated ``batch`` and a draw
        from the prior).
    """
    config = check_evidence_task(config)
    betas = temperature_schedule(temperatures)
    key_start, key_run = jax.random.split(key)
    if direction == "forward":
        k0, v0 = jax.random.normal(key_start, (2, chains, config.D))
    else:
        if teacher is None:
            raise ConfigError("direction reverse needs the teacher (an exact posterior draw)")
        k0, v0 = (jnp.broadcast_to(jnp.asarray(x), (chains, config.D)) for x in teacher)
        betas = betas[::-1]
    X, lengths, y = (jnp.asarray(x) for x in (batch.X, batch.lengths, batch.y))
    log_weights = np.asarray(_anneal(key_run, config, X, lengths, y, k0, v0, jnp.asarray(betas)))
    log_z0 = float(np.sum(np.log(np.asarray(batch.lengths, dtype=float))))
    value, stderr = _log_mean_exp(log_weights)
    if direction == "reverse":  # the weights estimate Z(0) / Z(1)
        value = -value
    return EvidenceEstimate(log_z0 + value, stderr, log_weights, direction, int(temperatures))


def teacher_log_likelihood(config: SLRConfig, batch: SLRBatch, teacher: Teacher) -> float:
    """``sum_mu log sum_eps f_mu(k*, v*, eps)``: the training set's log-likelihood under its
    teacher (the tokens' Gaussian log-density divided out, as in :func:`annealed_log_evidence`)."""
    X, lengths, y = (jnp.asarray(x) for x in (batch.X, batch.lengths, batch.y))
    return float(
        _tempered_log_likelihood(
            config, X, lengths, y, jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star), 1.0
        )
    )
