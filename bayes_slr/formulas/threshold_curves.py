"""The thresholds as curves in the ``(Delta, alpha)`` plane, by continuation in ``Delta``.

The S of the fixed-point curve ``alpha(t)`` (``t = logit(q_v)``, :mod:`bayes_slr.formulas.
fixed_point_curve`) has a local maximum ``alpha_alg`` and a local minimum ``alpha_sp``; between
them ``alpha`` decreases, so ``min_t alpha'(t) < 0`` exactly while a hard phase exists. As
``Delta`` grows the S narrows and closes at a cusp, where ``alpha_sp``, ``alpha_IT`` and
``alpha_alg`` merge: the merge point ``Delta_c`` is the root of ``slope(Delta) = min_t alpha'(t)``,
which crosses zero with a non-zero derivative (a generic cusp), so Brent's method on it converges
and the root is certified by the signs of ``slope`` at ``Delta_c -+ tolerance``.

The curves are followed from ``Delta = 0`` to ``Delta_c``: at each ``Delta`` the steepest descent
of ``alpha(t)`` is searched next to the previous one (continuation), the two extrema are bracketed
on either side of it (where ``alpha'`` turns positive) and located by the golden-section search of
:mod:`~bayes_slr.formulas.fixed_point_curve`, and ``alpha_IT`` by Brent's method on the branches'
free-entropy difference (:mod:`~bayes_slr.formulas.thresholds`). Where the S is narrower than a
few tolerances ``alpha_IT`` is given as the middle of ``[alpha_sp, alpha_alg]`` (it lies between
them), with half the width as its error. At ``Delta = 0``, ``alpha_sp = alpha_IT = 1`` exactly
(docs/theory.md part D).

``alpha'(t)`` is a central difference of step :data:`SLOPE_STEP`; the curve is computed by
quadrature (a Monte Carlo channel is refused: its noise would swamp the slope near the cusp).
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
from scipy import optimize

from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.fixed_point_curve import CURVE_POINTS, CURVE_RANGE, FixedPointCurve
from bayes_slr.formulas.thresholds import Maxwell, information_theoretic
from bayes_slr.models.spec import SLRConfig

SLOPE_STEP = 1e-3
"""Step in ``t`` of the central difference ``alpha'(t)`` (its ``O(step^2)`` error is below
1e-7 on the spiked curves: halving the step changes the slope in the fifth digit)."""
WINDOW = 0.25
"""Half-width in ``t`` of the search for the steepest descent around the previous one."""
NARROW = 20.0
"""Below this many tolerances of width, ``alpha_IT`` is read as the middle of the S."""


@dataclasses.dataclass(frozen=True)
class MergePoint:
    """Where ``alpha_sp``, ``alpha_IT`` and ``alpha_alg`` merge (the S closes).

    Attributes
    ----------
    Delta : the merge point; the S exists (``min alpha' < 0``) at ``Delta - tolerance`` and not
        at ``Delta + tolerance``.
    tolerance : its error bound in ``Delta``.
    alpha : the ``alpha`` of the merged thresholds there.
    alpha_tolerance : how far it moves over ``[Delta - tolerance, Delta + tolerance]``.
    t : ``logit(q_v)`` of the cusp.
    slope_below, slope_above : ``min_t alpha'(t)`` at ``Delta -+ tolerance`` (negative, positive).
    """

    Delta: float
    tolerance: float
    alpha: float
    alpha_tolerance: float
    t: float
    slope_below: float
    slope_above: float


@dataclasses.dataclass(frozen=True)
class CurveSample:
    """The three thresholds at one ``Delta`` below the merge, with their error bounds."""

    Delta: float
    alpha_sp: float
    alpha_IT: float
    alpha_alg: float
    tolerance_sp: float
    tolerance_IT: float
    tolerance_alg: float


@dataclasses.dataclass(frozen=True)
class ThresholdCurves:
    """``alpha_sp(Delta)``, ``alpha_IT(Delta)``, ``alpha_alg(Delta)`` from ``Delta = 0`` to the
    merge, and the merge point (``samples`` end with the merge itself).

    Attributes
    ----------
    config : the task (its ``Delta`` is ignored).
    samples : the thresholds at increasing ``Delta``.
    merge : the merge point.
    evaluations : channel evaluations spent.
    """

    config: SLRConfig
    samples: tuple[CurveSample, ...]
    merge: MergePoint
    evaluations: int


class _Tracer:
    """The fixed-point curves of one task at any ``Delta`` (one channel per ``Delta``)."""

    def __init__(self, config: SLRConfig):
        self.config = config
        self.curves: dict[float, FixedPointCurve] = {}

    def curve(self, Delta: float) -> FixedPointCurve:
        if Delta not in self.curves:
            channel = BayesChannel(self.config.replace(Delta=Delta))
            if not channel.exact:
                raise ConfigError(
                    f"threshold curves need a quadrature channel; {self.config.variant} with "
                    f"nu = {self.config.nu:g}, L = {self.config.Lbar} has only Monte Carlo"
                )
            self.curves[Delta] = FixedPointCurve(channel)
        return self.curves[Delta]

    @property
    def evaluations(self) -> int:
        return sum(curve.channel.evaluations for curve in self.curves.values())

    def slope(self, Delta: float, t: float) -> float:
        """``alpha'(t)`` by a central difference."""
        curve = self.curve(Delta)
        return (curve.at(t + SLOPE_STEP).alpha - curve.at(t - SLOPE_STEP).alpha) / (2 * SLOPE_STEP)

    def steepest(self, Delta: float, guess: float) -> tuple[float, float]:
        """``(t, alpha'(t))`` at the minimum of ``alpha'`` next to ``guess`` (the window moves
        until the minimum lies inside it)."""
        for _ in range(20):
            lo, hi = guess - WINDOW, guess + WINDOW
            found = optimize.minimize_scalar(
                lambda t: self.slope(Delta, t),
                bounds=(lo, hi),
                method="bounded",
                options={"xatol": 1e-5},
            )
            if lo + 0.05 * WINDOW < found.x < hi - 0.05 * WINDOW:
                return float(found.x), float(found.fun)
            guess = float(found.x)
        raise ConfigError(f"no minimum of alpha'(t) found near t = {guess:g} at Delta = {Delta:g}")

    def first_guess(self) -> float:
        """The ``t`` of the steepest part of the scanned curve at ``Delta = 0``."""
        points = self.curve(0.0).scan(CURVE_POINTS)
        slopes = np.diff([p.alpha for p in points])
        i = int(np.argmin(slopes))
        return 0.5 * (points[i].t + points[i + 1].t)

    def rising(self, Delta: float, t: float, direction: float) -> float:
        """The first ``t + direction w`` (``w`` doubling from ``0.05``) where ``alpha'`` is
        positive: the far end of a bracket of one extremum of the S."""
        width = 0.05
        while self.slope(Delta, t + direction * width) <= 0.0:
            width *= 2.0
            if not CURVE_RANGE[0] < t + direction * width < CURVE_RANGE[1]:
                return float(np.clip(t + direction * width, *CURVE_RANGE))
        return t + direction * width


def _merge(tracer: _Tracer, guess: float, Delta_tol: float) -> MergePoint:
    """Bracket the root of ``min alpha'`` by doubling ``Delta``, then Brent's method; certified
    by the signs at ``root -+ tolerance`` (widened until both hold)."""
    guesses = {0.0: guess}

    def slope(Delta: float) -> float:
        nearest = min(guesses, key=lambda d: abs(d - Delta))
        t, value = tracer.steepest(Delta, guesses[nearest])
        guesses[Delta] = t
        return value

    low, high = 0.0, 1e-4
    if slope(low) >= 0.0:
        raise ConfigError("no hard phase at Delta = 0: alpha(q_v) increases, nothing to merge")
    while slope(high) < 0.0:
        low, high = high, 2.0 * high
        if high > 10.0:
            raise ConfigError("the S of alpha(q_v) does not close below Delta = 10")
    root = optimize.brentq(slope, low, high, xtol=Delta_tol / 4, rtol=1e-12)
    tolerance = Delta_tol
    while True:
        below, above = slope(root - tolerance), slope(root + tolerance)
        if below < 0.0 < above:
            break
        tolerance *= 2.0
    t = guesses[root]
    ends = (root - tolerance, root, root + tolerance)
    curve_alpha = [tracer.curve(d).at(guesses[d]).alpha for d in ends]
    return MergePoint(
        Delta=root,
        tolerance=tolerance,
        alpha=curve_alpha[1],
        alpha_tolerance=max(abs(a - curve_alpha[1]) for a in curve_alpha),
        t=t,
        slope_below=below,
        slope_above=above,
    )


def _sample(tracer: _Tracer, Delta: float, guess: float, tol: float) -> tuple[CurveSample, float]:
    """The thresholds at ``Delta`` (below the merge) and the ``t`` of the steepest descent."""
    curve = tracer.curve(Delta)
    t, _ = tracer.steepest(Delta, guess)
    top, top_bound = curve.extremum(tracer.rising(Delta, t, -1.0), t, True, tol)
    if Delta == 0.0:  # exact recovery: alpha_sp = alpha_IT = 1 (docs/theory.md part D)
        return CurveSample(0.0, 1.0, 1.0, top.alpha, 0.0, 0.0, top_bound), t
    bottom, bottom_bound = curve.extremum(t, tracer.rising(Delta, t, 1.0), False, tol)
    middle, half = 0.5 * (top.alpha + bottom.alpha), 0.5 * (top.alpha - bottom.alpha)
    found = None
    if top.alpha - bottom.alpha > NARROW * tol:
        points = curve.evaluated()
        maxwell = Maxwell(
            curve.channel,
            [p for p in points if p.t <= top.t],
            [p for p in points if p.t >= bottom.t],
        )
        found = information_theoretic(maxwell, bottom.alpha, top.alpha, tol)
    alpha_IT, tolerance_IT = (
        found[:2] if isinstance(found, tuple) else (middle, half + max(top_bound, bottom_bound))
    )
    sample = CurveSample(
        Delta, bottom.alpha, alpha_IT, top.alpha, bottom_bound, tolerance_IT, top_bound
    )
    return sample, t


def threshold_curves(
    config: SLRConfig, points: int = 10, tol: float = 1e-5, Delta_tol: float = 1e-6
) -> ThresholdCurves:
    """``alpha_sp``, ``alpha_IT`` and ``alpha_alg`` as functions of ``Delta`` up to their merge.

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` and ``Delta`` ignored); its channel must be a quadrature.
    points : samples below the merge, ``>= 2``: ``Delta_c (1 - cos(pi j / points)) / 2``,
        ``j = 0 .. points - 1`` (denser towards ``Delta = 0``, where ``alpha_sp`` and ``alpha_IT``
        rise steeply from 1, and towards the merge, where the curves bend), then the merge.
    tol : error bound of each threshold (golden-section and Brent tolerances), ``> 0``.
    Delta_tol : error bound asked of the merge point, ``> 0``.

    Returns
    -------
    ThresholdCurves

    Raises
    ------
    ConfigError
        A Monte Carlo channel, or no hard phase at ``Delta = 0``.
    """
    if not isinstance(config, SLRConfig):
        raise ConfigError(f"config must be an SLRConfig, got {type(config).__name__}")
    tracer = _Tracer(config)
    guess = tracer.first_guess()
    merge = _merge(tracer, guess, Delta_tol)
    samples = []
    for j in range(points):
        Delta = 0.5 * merge.Delta * (1.0 - math.cos(math.pi * j / points))
        sample, guess = _sample(tracer, Delta, guess, tol)
        samples.append(sample)
    bound = merge.alpha_tolerance
    samples.append(
        CurveSample(merge.Delta, merge.alpha, merge.alpha, merge.alpha, bound, bound, bound)
    )
    return ThresholdCurves(config, tuple(samples), merge, tracer.evaluations)
