"""The fixed points of the Bayes-optimal state evolution as one curve ``alpha(q_v)``.

At a fixed point of ``q_a = alpha s_a(q) / (1 + alpha s_a(q))`` both ``a`` give ``alpha = q_a /
((1 - q_a) s_a(q))``; for each ``q_v`` one ``q_k`` makes them agree (Brent's method on ``q_k (1 -
q_v) s_v - q_v (1 - q_k) s_k``, negative at ``q_k = 0`` and positive at 1). The curve increases
where the fixed point is unique; a first-order transition shows as an S (a local maximum where the
least fixed point ends, a local minimum where the greatest one appears). Computing the curve needs
no iteration of the map, so it is as cheap at the folds, where the iteration slows down without
bound, as anywhere else (:mod:`bayes_slr.formulas.thresholds`, and the informed branch of
:func:`bayes_slr.formulas.phase.bayes_branches` where its iteration is slow).
"""

from __future__ import annotations

import heapq
import math
from collections.abc import Callable
from typing import NamedTuple

import numpy as np
from scipy import optimize, special

from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.state_evolution import Q_CEILING

CURVE_POINTS = 33
"""Points of the initial scan of the curve, uniform in ``logit(q_v)`` over ``CURVE_RANGE``."""
CURVE_RANGE = (-7.0, 14.0)
"""``logit(q_v)`` from ``q_v = 9e-4`` to ``1 - 8e-7``."""
Q_K_TOL = 1e-14
GOLDEN = (math.sqrt(5.0) - 1.0) / 2.0


class CurvePoint(NamedTuple):
    """A fixed point on the curve: its overlaps and the ``alpha`` at which it is one."""

    t: float
    q_k: float
    q_v: float
    alpha: float


class FixedPointCurve:
    """The state-evolution fixed points of a task as a curve ``alpha(q_v)``, evaluated lazily.

    ``at(t)`` (``t = logit(q_v)``) solves for ``q_k`` by Brent's method on ``q_k (1 - q_v) s_v -
    q_v (1 - q_k) s_k = 0`` (negative at ``q_k = 0``, positive at 1), then ``alpha = q_v / ((1 -
    q_v) s_v)``; results are cached.
    """

    def __init__(self, channel: BayesChannel):
        self.channel = channel
        self._points: dict[float, CurvePoint] = {}

    def _scores(self, q_k: float, q_v: float) -> np.ndarray:
        return np.asarray(self.channel.raw(np.array([q_k, q_v])))[1:]

    def at(self, t: float) -> CurvePoint:
        """The fixed point with ``q_v = 1 / (1 + e^-t)``."""
        t = float(t)
        if t not in self._points:
            q_v = float(special.expit(t))

            def mismatch(q_k: float) -> float:
                s_k, s_v = self._scores(q_k, q_v)
                return q_k * (1.0 - q_v) * s_v - q_v * (1.0 - q_k) * s_k

            lo, hi = self._bracket(t, mismatch)
            q_k = optimize.brentq(mismatch, lo, hi, xtol=Q_K_TOL, rtol=4 * Q_K_TOL)
            alpha = q_v / ((1.0 - q_v) * self._scores(q_k, q_v)[1])
            self._points[t] = CurvePoint(t, q_k, q_v, float(alpha))
        return self._points[t]

    def _bracket(self, t: float, mismatch: Callable[[float], float]) -> tuple[float, float]:
        """A bracket of ``q_k`` at ``t``: ``[0, Q_CEILING]`` with fewer than two points known;
        else around ``q_k`` interpolated (linearly in ``t``) from the two known points nearest
        ``t``, one side at that guess and the other as far as the interpolation moved it from
        the nearest point, four times farther until the sign changes. Brent's method then
        starts next to the root: about 5 evaluations a point instead of 7.5."""
        if len(self._points) < 2:
            return 0.0, Q_CEILING
        a, b = heapq.nsmallest(2, self._points.values(), key=lambda p: abs(p.t - t))
        guess = a.q_k + (b.q_k - a.q_k) * (t - a.t) / (b.t - a.t)
        step = max(abs(guess - a.q_k), Q_K_TOL)
        guess = min(max(guess, 0.0), Q_CEILING)
        below = mismatch(guess) < 0.0  # negative at q_k = 0, positive at Q_CEILING
        step = step if below else -step
        while True:
            other = guess + step
            if not 0.0 < other < Q_CEILING:
                return (guess, Q_CEILING) if below else (0.0, guess)
            if (mismatch(other) < 0.0) != below:
                return (guess, other) if below else (other, guess)
            step *= 4.0

    def evaluated(self) -> list[CurvePoint]:
        """Every point computed so far, in increasing ``t``."""
        return sorted(self._points.values())

    def scan(self, points: int = CURVE_POINTS) -> list[CurvePoint]:
        """The curve on a uniform grid of ``logit(q_v)``."""
        return [self.at(t) for t in np.linspace(*CURVE_RANGE, points)]

    def extremum(self, lo: float, hi: float, maximum: bool, tol: float) -> tuple[CurvePoint, float]:
        """Golden-section search of ``alpha``'s extremum for ``t`` in ``[lo, hi]``.

        Returns the best point and the bound ``max |alpha(end) - alpha(best)|`` over the final
        bracket (``alpha`` is quadratic at the extremum: the bound falls like the bracket
        squared); stops when it is below ``tol``.
        """
        sign = 1.0 if maximum else -1.0

        def value(t: float) -> float:
            return sign * self.at(t).alpha

        a, b = lo, hi
        c, d = b - GOLDEN * (b - a), a + GOLDEN * (b - a)
        while True:
            best = max((a, c, d, b), key=value)
            bound = max(abs(value(best) - value(a)), abs(value(best) - value(b)))
            if bound < tol or b - a < 1e-10:
                return self.at(best), bound
            if value(c) > value(d):
                b, d = d, c
                c = b - GOLDEN * (b - a)
            else:
                a, c = c, d
                d = a + GOLDEN * (b - a)

    def greatest_root(self, alpha: float, t_low: float, t_high: float, points: int = 12):
        """The largest ``t`` in ``[t_low, t_high]`` with ``alpha(t) = alpha``.

        Given ``alpha(t_high) > alpha`` and the least fixed point at ``t_low``: scan down from
        ``t_high`` for a point with ``alpha(t) < alpha`` (an upper root lies above it: Brent's
        method), else None (no other root on the scan).
        """
        previous = t_high
        for t in np.linspace(t_high, t_low, points)[1:-1]:
            if self.at(t).alpha < alpha:
                root = optimize.brentq(
                    lambda s: self.at(s).alpha - alpha, t, previous, xtol=1e-12, rtol=1e-14
                )
                return self.at(root)
            previous = t
        return None
