"""The output channel of the Bayes-optimal state evolution, by quadrature where it can be.

At overlaps ``q = (q_k, q_v)`` the state evolution and the free entropy (docs/theory.md part B) need

    psi(q)     = E log Z_out(y, omega, 1 - q),
    score_a(q) = E sum_l (d log Z_out / d omega_{l,a})^2 = 2 d psi / d q_a,     a in {k, v},

over ``(omega, y)`` from the SLR law at overlaps ``q``. The variant says whether its integrals
allow a quadrature (:meth:`~bayes_slr.models.variants.TokenLaw.bayes_channel_quadrature`: spiked
SLR, any length law, about 1e-10 relative); otherwise the averages are Monte Carlo over channel
draws made once (common random numbers, :mod:`bayes_slr.formulas.channel`), with their standard
errors and covariance from the per-draw spread.
"""

from __future__ import annotations

import copy
import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.formulas.channel import (
    ChannelDraws,
    draw_channel,
    log_output_partition,
    student_fields,
)
from bayes_slr.formulas.population import length_support
from bayes_slr.models.spec import SLRConfig

QUADRATURE, MONTE_CARLO = "quadrature", "monte carlo"
DEFAULT_MC_SAMPLES = 65536
MEMO_SIZE = 65536


@dataclasses.dataclass(frozen=True)
class ChannelValue:
    """The channel at one ``q``.

    Attributes
    ----------
    psi : ``E log Z_out``.
    scores : ``(score_k, score_v)``.
    psi_stderr : Monte Carlo standard error of ``psi`` (0 for quadrature).
    score_covariance : 2x2 Monte Carlo covariance of the scores (zeros for quadrature).
    """

    psi: float
    scores: tuple[float, float]
    psi_stderr: float = 0.0
    score_covariance: tuple[tuple[float, float], tuple[float, float]] = ((0.0, 0.0), (0.0, 0.0))


@functools.partial(jax.jit, static_argnames=("config",))
def _draw_terms(draws: ChannelDraws, q: jax.Array, config: SLRConfig) -> jax.Array:
    """Per-draw ``(log Z_out, sum_l g_k^2, sum_l g_v^2)``, shape ``(n, 3)``."""
    omega = student_fields(draws, q, q)
    per_draw = jax.vmap(jax.value_and_grad(log_output_partition), in_axes=(0, 0, 0, None, None))
    log_z, score = per_draw(omega, draws.y, draws.mask, q, config)
    squares = jnp.sum(score**2 * draws.mask[..., None], axis=1)
    return jnp.concatenate([log_z[:, None], squares], axis=1)


@functools.partial(jax.jit, static_argnames=("config",))
def _draw_means(draws: ChannelDraws, q: jax.Array, config: SLRConfig) -> jax.Array:
    """The mean of :func:`_draw_terms` over the draws, in one program (the solvers' path: a
    mean taken outside ``jit`` is a dispatch of its own at each of their thousands of calls)."""
    return jnp.mean(_draw_terms(draws, q, config), axis=0)


@functools.partial(jax.jit, static_argnames=("config",))
def _located_draw_scores(draws: ChannelDraws, q_k: jax.Array, config: SLRConfig) -> jax.Array:
    """Per-draw ``sum_l (d log W_eps / d omega_{l,k})^2`` with the location known (``Delta = 0``,
    ``q_v = 1``: ``y`` equals the located token's ``z*``, which identifies it)."""
    q = jnp.stack([q_k, 1.0])
    omega_k = student_fields(draws, q, q)[..., 0]
    located = jnp.argmin(
        jnp.where(draws.mask, jnp.abs(draws.y[:, None] - draws.h_star[..., 1]), jnp.inf), axis=1
    )

    def log_weight(omega, mask, eps):
        return config.law.gaussian_location_log_weights(config.nu, omega, 1.0 - q_k, mask)[eps]

    score = jax.vmap(jax.grad(log_weight))(omega_k, draws.mask, located)
    return jnp.sum(jnp.where(draws.mask, score**2, 0.0), axis=1)


class BayesChannel:
    """The channel of one task, evaluated by quadrature or by Monte Carlo.

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` ignored); the variant must cover it
        (:meth:`~bayes_slr.models.variants.TokenLaw.check_bayes_theory_nu`).
    mc_samples : channel draws where Monte Carlo is needed (``>= 2``).
    seed : seed of those draws.
    monte_carlo : use Monte Carlo even where a quadrature exists (to check one against the other).
    """

    def __init__(
        self,
        config: SLRConfig,
        *,
        mc_samples: int = DEFAULT_MC_SAMPLES,
        seed: int = 0,
        monte_carlo: bool = False,
    ):
        self.config = config
        probs, lengths = (jnp.asarray(x) for x in length_support(config))
        self._quadrature = (
            None
            if monte_carlo
            else config.law.bayes_channel_quadrature(config.nu, config.Delta, probs, lengths)
        )
        self.method = MONTE_CARLO if self._quadrature is None else QUADRATURE
        self.mc_samples = mc_samples if self._quadrature is None else 0
        self.seed = seed
        self.evaluations = 0
        """Evaluations of the channel so far (a cost measure for benchmarks)."""
        self._memo: dict[tuple[float, float], np.ndarray] = {}
        self._draws = (
            draw_channel(jax.random.split(jax.random.PRNGKey(seed))[0], config, self.mc_samples)
            if self._quadrature is None
            else None
        )

    @property
    def draws(self) -> ChannelDraws | None:
        """The Monte Carlo draws (None for a quadrature channel)."""
        return self._draws

    def batches(self, count: int) -> list[BayesChannel]:
        """The Monte Carlo channel cut into ``count`` channels on consecutive batches of its draws
        (independent: the draws are), each ``mc_samples // count`` draws, for the spread of what
        is solved on them (``count >= 2``, at least two draws each)."""
        if self.exact:
            raise ConfigError("a quadrature channel has no draws to cut into batches")
        size = self.mc_samples // count
        assert size >= 2, f"{self.mc_samples} draws cut into {count} batches of fewer than 2"
        parts = []
        for i in range(count):
            part = copy.copy(self)
            part._draws = jax.tree_util.tree_map(
                lambda x, i=i: x[i * size : (i + 1) * size], self._draws
            )
            part.mc_samples, part.evaluations, part._memo = size, 0, {}
            parts.append(part)
        return parts

    @property
    def exact(self) -> bool:
        """Whether the channel is a quadrature (no Monte Carlo error)."""
        return self._quadrature is not None

    def raw(self, q: jax.Array) -> np.ndarray:
        """``(psi, score_k, score_v)`` at ``q`` (the fast path of the solvers). Remembered: the
        threshold searches and repeated scans ask for the same points again."""
        key = tuple(float(x) for x in np.asarray(q, dtype=float))
        if key not in self._memo:
            if len(self._memo) >= MEMO_SIZE:
                self._memo.clear()
            self.evaluations += 1
            q = np.asarray(key)  # a jitted function takes it as it is (no conversion dispatched)
            self._memo[key] = np.asarray(
                self._quadrature(q)
                if self._quadrature is not None
                else _draw_means(self._draws, q, self.config)
            )
        return self._memo[key]

    def value(self, q) -> ChannelValue:
        """The channel at ``q`` with its Monte Carlo errors."""
        q = jnp.asarray(q, dtype=float)
        self.evaluations += 1
        if self._quadrature is not None:
            psi, score_k, score_v = (float(x) for x in self._quadrature(q))
            return ChannelValue(psi, (score_k, score_v))
        terms = np.asarray(_draw_terms(self._draws, q, self.config))
        n = terms.shape[0]
        covariance = np.cov(terms[:, 1:].T) / n
        return ChannelValue(
            float(terms[:, 0].mean()),
            (float(terms[:, 1].mean()), float(terms[:, 2].mean())),
            float(terms[:, 0].std(ddof=1) / math.sqrt(n)),
            tuple(tuple(float(c) for c in row) for row in covariance),
        )

    def located_key_score(self, q_k: float) -> tuple[float, float]:
        """``(score_k, stderr)`` once every training location is known (``Delta = 0``, ``q_v =
        1``)."""
        exact = self.config.law.located_key_score(self.config.nu)
        if exact is not None:
            return exact, 0.0
        draws = self._draws or draw_channel(
            jax.random.split(jax.random.PRNGKey(self.seed))[0], self.config, DEFAULT_MC_SAMPLES
        )
        scores = np.asarray(_located_draw_scores(draws, jnp.asarray(q_k), self.config))
        return float(scores.mean()), float(scores.std(ddof=1) / math.sqrt(scores.size))
