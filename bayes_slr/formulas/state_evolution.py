"""The Bayes-optimal state evolution solved to a tight tolerance, from either start.

The map is ``q_a <- alpha score_a(q) / (1 + alpha score_a(q))`` (docs/theory.md part B) with the
channel of :mod:`bayes_slr.formulas.bayes_channel`. Under the Nishimori identities it is increasing
in ``q``: iterated from ``q = 0`` (the uninformative start) it climbs to the *least* fixed point,
the one AMP reaches from a random start; from ``q = 1`` (the teacher, the informed start) it
descends to the *greatest* fixed point. :func:`iterate_to_fixed_point` runs that monotone iteration
and, once the residual is small, finishes with Newton steps (Jacobian by central differences), so
that a point is converged to ``1e-10`` in a few dozen channel evaluations.

With ``Delta = 0`` the informed fixed point recovers ``v`` exactly (``q_v = 1``; with ``q_v = 1 -
eps`` the value channel gives ``eps -> eps / alpha``): it is solved directly with every training
location known (:meth:`~bayes_slr.formulas.bayes_channel.BayesChannel.located_key_score`), and it is
stable exactly when ``alpha > 1``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.models.spec import SLRConfig

STARTS = ("uninformative", "informed")
NEWTON_SWITCH = 1e-2
"""Residual below which Newton steps are tried."""
NEWTON_RADIUS = 0.1
"""Largest Newton step accepted (near a fold the fixed point lies ``residual / (1 - rho)`` away,
far more than the residual). Should a step still land on another, unstable fixed point, the
stability check of :func:`state_evolution` catches it and iterates again without Newton steps."""
DIFFERENCE_STEP = 1e-6
"""Step of the central differences of the Jacobian (error about 1e-10 on it)."""
Q_CEILING = 1.0 - 1e-12
"""Largest overlap the map returns (``Delta = 0``: ``q_v`` reaches 1)."""
PERFECT_RECOVERY_GAP = 1e-9
"""With ``Delta = 0`` an iterate with ``1 - q_v`` below this is on the perfect-recovery branch."""


@dataclasses.dataclass(frozen=True)
class IterationResult:
    """Outcome of :func:`iterate_to_fixed_point`.

    Attributes
    ----------
    x : the last iterate.
    residual : ``max |F(x) - x|`` there.
    evaluations : calls of the map.
    converged : ``residual <= tol``.
    jacobian : ``dF/dx`` at ``x`` (central differences), or None if not computed.
    """

    x: np.ndarray
    residual: float
    evaluations: int
    converged: bool
    jacobian: np.ndarray | None


def difference_jacobian(
    update: Callable[[np.ndarray], np.ndarray], x: np.ndarray, fx: np.ndarray | None = None
) -> np.ndarray:
    """``dF/dx`` by differences of step :data:`DIFFERENCE_STEP`: central, or forward from ``fx =
    F(x)`` when given (half the evaluations); one-sided at the box ``[0, Q_CEILING]``."""
    columns = []
    for j in range(x.size):
        step = np.zeros_like(x)
        step[j] = DIFFERENCE_STEP
        hi = np.minimum(x + step, Q_CEILING)
        if fx is None or hi[j] == x[j]:
            lo = np.maximum(x - step, 0.0)
            columns.append((update(hi) - update(lo)) / (hi[j] - lo[j]))
        else:
            columns.append((update(hi) - fx) / (hi[j] - x[j]))
    return np.stack(columns, axis=1)


def iterate_to_fixed_point(
    update: Callable[[np.ndarray], np.ndarray],
    start: np.ndarray,
    *,
    tol: float,
    max_evaluations: int,
    stop: Callable[[np.ndarray], bool] = lambda x: False,
    newton: bool = True,
) -> IterationResult:
    """The monotone iteration ``x <- F(x)`` from ``start``, finished by Newton steps.

    Once ``|F(x) - x| < NEWTON_SWITCH`` each step tries ``x <- x - (J - I)^-1 (F(x) - x)`` (``J`` by
    forward differences at ``x``) and keeps it if it lowers the residual and stays within
    ``NEWTON_RADIUS`` and the box; after a rejected step three plain steps come before the next
    try. ``newton=False`` iterates only. ``stop(x)`` ends the iteration early (the caller
    recognises the branch it reached). The Jacobian at the end (central differences, for the
    stability of the point) is computed when the iteration converged.
    """
    x = np.asarray(start, dtype=float)
    fx = update(x)
    evaluations, wait = 1, 0
    residual = float(np.max(np.abs(fx - x)))
    while residual > tol and evaluations < max_evaluations and not stop(x):
        if newton and residual < NEWTON_SWITCH and wait == 0:
            jacobian = difference_jacobian(update, x, fx)
            evaluations += x.size
            try:
                step = np.linalg.solve(jacobian - np.eye(x.size), fx - x)
            except np.linalg.LinAlgError:
                step = np.full_like(x, np.inf)
            if np.all(np.isfinite(step)) and np.max(np.abs(step)) < NEWTON_RADIUS:
                candidate = np.clip(x - step, 0.0, Q_CEILING)
                f_candidate = update(candidate)
                evaluations += 1
                candidate_residual = float(np.max(np.abs(f_candidate - candidate)))
                if candidate_residual < residual:
                    x, fx, residual = candidate, f_candidate, candidate_residual
                    continue
            wait = 3
        x = fx
        fx = update(x)
        evaluations += 1
        wait = max(wait - 1, 0)
        residual = float(np.max(np.abs(fx - x)))
    converged = residual <= tol
    jacobian = None
    if converged:
        jacobian = difference_jacobian(update, x)
        evaluations += 2 * x.size
    return IterationResult(x, residual, evaluations, converged, jacobian)


@dataclasses.dataclass(frozen=True)
class StateEvolutionPoint:
    """A fixed point of the Bayes-optimal state evolution.

    Attributes
    ----------
    alpha : samples per dimension.
    start : ``"uninformative"`` (``q = 0``: AMP from a random start) or ``"informed"`` (the
        teacher).
    q_k, q_v : the overlaps (Nishimori: ``m = q``).
    converged : residual below the tolerance.
    residual : ``max |F(q) - q|`` at the point.
    evaluations : channel evaluations used.
    spectral_radius : of the map's Jacobian at the point; below 1 the point is stable (an
        iteration started near it returns to it).
    perfect_recovery : ``q_v = 1`` exactly (``Delta = 0``, every training location known).
    q_stderr : Monte Carlo standard errors of ``(q_k, q_v)`` (zeros for a quadrature channel):
        the channel's noise propagated through the fixed point, ``(I - J)^-1 dF``.
    method : the channel's (``"quadrature"`` or ``"monte carlo"``).
    """

    alpha: float
    start: str
    q_k: float
    q_v: float
    converged: bool
    residual: float
    evaluations: int
    spectral_radius: float
    perfect_recovery: bool
    q_stderr: tuple[float, float]
    method: str

    @property
    def stable(self) -> bool:
        """Whether the map contracts around the point."""
        return self.spectral_radius < 1.0

    @property
    def q(self) -> np.ndarray:
        """``(q_k, q_v)``."""
        return np.array([self.q_k, self.q_v])


def state_evolution_map(channel: BayesChannel, alpha: float) -> Callable[[np.ndarray], np.ndarray]:
    """``q -> alpha score / (1 + alpha score)`` (capped at :data:`Q_CEILING`; a score that rounding
    makes slightly negative, max-SLR's key score at ``q_k = 0``, counts as 0) as a NumPy map."""

    def update(q: np.ndarray) -> np.ndarray:
        scores = np.maximum(np.asarray(channel.raw(jnp.asarray(q)))[1:], 0.0)  # rounding at 0
        return np.minimum(alpha * scores / (1.0 + alpha * scores), Q_CEILING)

    return update


def _propagated_stderr(
    channel: BayesChannel, alpha: float, q: np.ndarray, jacobian: np.ndarray
) -> tuple[float, float]:
    """Standard errors of the fixed point from the channel's Monte Carlo covariance."""
    if channel.exact:
        return 0.0, 0.0
    value = channel.value(q)
    scores = np.asarray(value.scores)
    slope = np.diag(alpha / (1.0 + alpha * scores) ** 2)
    response = np.linalg.solve(np.eye(2) - jacobian, slope)
    covariance = response @ np.asarray(value.score_covariance) @ response.T
    return tuple(float(math.sqrt(max(c, 0.0))) for c in np.diag(covariance))


def _located_point(
    channel: BayesChannel, alpha: float, start: str, tol: float, max_evaluations: int
) -> StateEvolutionPoint:
    """The perfect-recovery fixed point (``Delta = 0``, ``q_v = 1``): ``q_k`` from the located key
    channel, stable iff ``alpha > 1``."""
    q_k, evaluations, residual, stderr = 0.0, 0, math.inf, 0.0
    while residual > tol and evaluations < max_evaluations:
        score, stderr = channel.located_key_score(q_k)
        new = alpha * score / (1.0 + alpha * score)
        residual, q_k = abs(new - q_k), new
        evaluations += 1
    q_k_stderr = alpha * stderr / (1.0 + alpha * score) ** 2
    return StateEvolutionPoint(
        alpha=alpha,
        start=start,
        q_k=q_k,
        q_v=1.0,
        converged=residual <= tol,
        residual=residual,
        evaluations=evaluations,
        spectral_radius=1.0 / alpha,
        perfect_recovery=True,
        q_stderr=(q_k_stderr, 0.0),
        method=channel.method,
    )


def state_evolution(
    config: SLRConfig,
    alpha: float,
    start: str = "uninformative",
    *,
    channel: BayesChannel | None = None,
    tol: float = 1e-10,
    max_evaluations: int = 5000,
    warm_start: tuple[float, float] | None = None,
) -> StateEvolutionPoint:
    """Solve the Bayes-optimal state evolution at ``alpha`` from one start.

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` ignored).
    alpha : samples per dimension, ``> 0``.
    start : ``"uninformative"`` (iterate from ``q = 0``: the least fixed point, AMP's) or
        ``"informed"`` (from ``q = 1``: the greatest fixed point; with ``Delta = 0`` the
        perfect-recovery point).
    channel : the channel to use (default: a new :class:`BayesChannel` of ``config``).
    tol : on ``max |F(q) - q|``.
    max_evaluations : channel evaluations allowed.
    warm_start : start here instead: a point below the least fixed point (uninformative) or above
        the greatest (informed), e.g. that fixed point at a smaller (resp. larger) ``alpha`` (the
        fixed points increase with ``alpha``): the iteration then reaches the same point faster.
    """
    channel = BayesChannel(config) if channel is None else channel
    if channel.config != config:
        raise ConfigError("channel was built for another task than config")
    noiseless = config.Delta == 0.0
    if noiseless and start == "informed":
        return _located_point(channel, alpha, start, tol, max_evaluations)
    # the informed start just below q = 1: a Monte Carlo argmax channel (max-SLR, nu = inf) is
    # 0/0 at q_k = 1 exactly (the key fields' posterior variance vanishes)
    origin = np.zeros(2) if start == "uninformative" else np.full(2, Q_CEILING)
    update = state_evolution_map(channel, alpha)
    options = {
        "tol": tol,
        "max_evaluations": max_evaluations,
        "stop": lambda q: noiseless and alpha > 1.0 and 1.0 - q[1] < PERFECT_RECOVERY_GAP,
    }
    first = origin if warm_start is None else np.asarray(warm_start, dtype=float)
    result = iterate_to_fixed_point(update, first, **options)
    if result.jacobian is not None and np.max(np.abs(np.linalg.eigvals(result.jacobian))) > 1:
        result = iterate_to_fixed_point(update, first, newton=False, **options)
    if noiseless and alpha > 1.0 and 1.0 - result.x[1] < PERFECT_RECOVERY_GAP:
        located = _located_point(channel, alpha, start, tol, max_evaluations)
        return dataclasses.replace(located, evaluations=located.evaluations + result.evaluations)
    radius = (
        float(np.max(np.abs(np.linalg.eigvals(result.jacobian))))
        if result.jacobian is not None
        else math.nan
    )
    q_stderr = (
        _propagated_stderr(channel, alpha, result.x, result.jacobian)
        if result.jacobian is not None
        else (math.nan, math.nan)
    )
    return StateEvolutionPoint(
        alpha=alpha,
        start=start,
        q_k=float(result.x[0]),
        q_v=float(result.x[1]),
        converged=result.converged,
        residual=result.residual,
        evaluations=result.evaluations,
        spectral_radius=radius,
        perfect_recovery=False,
        q_stderr=q_stderr,
        method=channel.method,
    )
