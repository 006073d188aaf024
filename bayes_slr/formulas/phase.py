"""The Bayes-optimal branch and AMP's branch at one ``alpha`` (docs/theory.md part D).

At each ``alpha`` the state evolution has a least fixed point (reached from the uninformative start:
AMP's) and a greatest one (from the informed start). Where they differ, the Bayes-optimal one is
the global maximiser of the free entropy (:mod:`bayes_slr.formulas.free_entropy`).
:func:`bayes_branches` solves both and says which, with each one's test error, free entropy and the
mutual information; the thresholds between the phases are in :mod:`bayes_slr.formulas.thresholds`.
"""

from __future__ import annotations

import dataclasses
import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
from scipy import special

from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.fixed_point_curve import FixedPointCurve
from bayes_slr.formulas.free_entropy import FreeEntropy, free_entropy, mutual_information
from bayes_slr.formulas.population import length_support
from bayes_slr.formulas.replica_bayes import draw_errors, quadrature_bayes_error
from bayes_slr.formulas.state_evolution import StateEvolutionPoint, state_evolution
from bayes_slr.models.spec import SLRConfig

INFORMED_BUDGET = 400
"""Channel evaluations of the informed iteration before the fixed-point curve takes over."""
SEPARATION = 1e-5
"""Fixed points from the two starts further apart than this (in ``q``) are distinct branches (the
solver's own error is ``tol / (1 - spectral radius)``, below 1e-8 away from the folds)."""
ERROR_STEP = 1e-6
"""Step of the finite difference that carries the overlaps' Monte Carlo error to the test error."""


@dataclasses.dataclass(frozen=True)
class BayesFixedPoint:
    """A state-evolution fixed point with what it predicts.

    Attributes
    ----------
    point : the fixed point (overlaps, convergence, stability).
    test_error : the Bayes-optimal predictor's excess test error at these overlaps (by quadrature
        where :func:`~bayes_slr.formulas.replica_bayes.quadrature_bayes_error` applies).
    test_error_stderr : its Monte Carlo standard error (0 when channel and error are quadratures).
    free_entropy : the potential ``Phi`` at the point.
    """

    point: StateEvolutionPoint
    test_error: float
    test_error_stderr: float
    free_entropy: FreeEntropy


@dataclasses.dataclass(frozen=True)
class BayesBranches:
    """Both fixed points at one ``alpha`` and which one is Bayes-optimal.

    Attributes
    ----------
    alpha : samples per dimension.
    uninformative : the least fixed point (AMP from a random start).
    informed : the greatest fixed point (from the teacher).
    bayes_optimal : ``"uninformative"`` or ``"informed"``: the branch with the larger free entropy
        (``"uninformative"`` when the two coincide).
    certain : False when the two free entropies differ by less than two combined Monte Carlo
        standard errors (then ``bayes_optimal`` is not resolved).
    mutual_information : ``I / D`` of the Bayes-optimal branch (``inf`` for ``Delta = 0``).
    mutual_information_stderr : its Monte Carlo standard error.
    """

    alpha: float
    uninformative: BayesFixedPoint
    informed: BayesFixedPoint
    bayes_optimal: str
    certain: bool
    mutual_information: float
    mutual_information_stderr: float

    @property
    def distinct(self) -> bool:
        """Whether the two starts end at different fixed points."""
        return _distinct(self.uninformative.point, self.informed.point)

    @property
    def bayes(self) -> BayesFixedPoint:
        """The Bayes-optimal fixed point."""
        return getattr(self, self.bayes_optimal)

    @property
    def amp(self) -> BayesFixedPoint:
        """AMP's fixed point (the uninformative start)."""
        return self.uninformative

    @property
    def hard_phase(self) -> bool:
        """Distinct branches with the informed one Bayes-optimal: AMP is not Bayes-optimal."""
        return self.distinct and self.bayes_optimal == "informed"


def _distinct(a: StateEvolutionPoint, b: StateEvolutionPoint) -> bool:
    return bool(np.max(np.abs(a.q - b.q)) > SEPARATION)


@functools.partial(jax.jit, static_argnames=("config",))
def _draw_errors(q, draws, config, key):
    return draw_errors(q, draws, config, key)


def bayes_error(channel: BayesChannel, point: StateEvolutionPoint) -> tuple[float, float]:
    """``(test error, stderr)`` of the Bayes predictor at a fixed point: quadrature when the variant
    allows (the overlaps' Monte Carlo error carried by a finite difference), else Monte Carlo on the
    channel's draws."""
    config = channel.config
    exact = quadrature_bayes_error(config, point.q_k, point.q_v)
    if exact is None:
        errors = _draw_errors(jnp.asarray(point.q), channel.draws, config, jax.random.PRNGKey(1))
        return float(errors["bayes"]), float(errors["bayes_stderr"])
    if channel.exact:
        return exact, 0.0
    gradient = [
        (
            quadrature_bayes_error(config, *(point.q + ERROR_STEP * np.eye(2)[a] * (1 - 2 * a)))
            - exact
        )
        / (ERROR_STEP * (1 - 2 * a))
        for a in range(2)
    ]
    return exact, float(math.hypot(*(g * s for g, s in zip(gradient, point.q_stderr))))


def fixed_point_record(channel: BayesChannel, point: StateEvolutionPoint) -> BayesFixedPoint:
    """A fixed point with its test error and free entropy."""
    error, stderr = bayes_error(channel, point)
    potential = free_entropy(
        channel, point.alpha, point.q_k, point.q_v, perfect_recovery=point.perfect_recovery
    )
    return BayesFixedPoint(point, error, stderr, potential)


def _branches_from(
    channel: BayesChannel, lower: StateEvolutionPoint, upper: StateEvolutionPoint
) -> BayesBranches:
    uninformative = fixed_point_record(channel, lower)
    informed = uninformative if not _distinct(lower, upper) else fixed_point_record(channel, upper)
    gap = informed.free_entropy.value - uninformative.free_entropy.value
    noise = math.hypot(informed.free_entropy.stderr, uninformative.free_entropy.stderr)
    optimal = "informed" if _distinct(lower, upper) and gap > 0 else "uninformative"
    best = informed if optimal == "informed" else uninformative
    information, stderr = mutual_information(channel, lower.alpha, best.free_entropy)
    certain = not _distinct(lower, upper) or abs(gap) > 2.0 * noise
    return BayesBranches(
        lower.alpha, uninformative, informed, optimal, bool(certain), information, stderr
    )


def bayes_branches(
    config: SLRConfig, alpha: float, *, channel: BayesChannel | None = None, tol: float = 1e-10
) -> BayesBranches:
    """Both state-evolution fixed points at ``alpha``, their errors and free entropies, and which
    one is Bayes-optimal (the global maximiser of the free entropy).

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` ignored).
    alpha : samples per dimension, ``> 0``.
    channel : the channel (default: a new :class:`~bayes_slr.formulas.bayes_channel.BayesChannel`).
    tol : of the fixed points.
    """
    channel = BayesChannel(config) if channel is None else channel
    lower = state_evolution(config, alpha, "uninformative", channel=channel, tol=tol)
    upper = state_evolution(
        config, alpha, "informed", channel=channel, tol=tol, max_evaluations=INFORMED_BUDGET
    )
    if not upper.converged:
        upper = _greatest_fixed_point(channel, lower, upper, tol)
    return _branches_from(channel, lower, upper)


def _greatest_fixed_point(
    channel: BayesChannel, lower: StateEvolutionPoint, iterate: StateEvolutionPoint, tol: float
) -> StateEvolutionPoint:
    """The greatest fixed point when the informed iteration is slow (small ``Delta`` below the
    spinodal: ``1 - q_v`` grows from 0 by a factor close to 1 per step): the largest root of the
    fixed-point curve below the iterate (which stays above it), or the least fixed point if there is
    no other."""
    curve = FixedPointCurve(channel)
    root = curve.greatest_root(lower.alpha, special.logit(lower.q_v), special.logit(iterate.q_v))
    if root is None:
        return dataclasses.replace(lower, start="informed")
    return state_evolution(
        channel.config,
        lower.alpha,
        "informed",
        channel=channel,
        tol=tol,
        warm_start=(root.q_k, root.q_v),
    )


@functools.lru_cache(maxsize=256)
def uninformative_scores(config: SLRConfig) -> tuple[float, float]:
    """``(score_k, score_v)`` at ``q = 0``: the first step of the state evolution from the
    uninformative start is ``q_a = alpha score_a / (1 + alpha score_a)``, so ``q = 0`` is a fixed
    point only if both vanish. Remembered for the last 256 tasks (each threshold search states
    them, and a Monte Carlo channel's standard errors search its batches again: 9 ms a call).

    At ``q = 0`` the fields are 0 and the location posterior is uniform; then ``d log Z_out /
    d omega_{l,v} = y / (L (1 + Delta))``, so ``score_v = E[1/L] / (1 + Delta) > 0`` for every
    variant, and ``score_k = E_L sum_l ((1/L) sum_j d log W_j / d omega_l)^2`` with the variant's
    location factor ``W`` (spiked: ``c^2 E[1/L]``; max: 0, its location posterior sums to one).
    """
    probs, lengths = length_support(config)
    key_scores = []
    for L in lengths.astype(int):
        mask = jnp.ones(L, dtype=bool)

        def log_weights(omega, mask=mask):
            return config.law.gaussian_location_log_weights(config.nu, omega, 1.0, mask)

        jacobian = np.asarray(jax.jacobian(log_weights)(jnp.zeros(L)))
        key_scores.append(float(np.sum((jacobian.sum(axis=0) / L) ** 2)))
    return float(np.dot(probs, key_scores)), float(np.dot(probs, 1.0 / lengths)) / (
        1.0 + config.Delta
    )
