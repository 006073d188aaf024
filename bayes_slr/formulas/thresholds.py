"""Thresholds of the Bayes-optimal state evolution (docs/theory.md part D).

The fixed points of the map ``q_a = alpha s_a(q) / (1 + alpha s_a(q))`` satisfy ``alpha = q_a /
((1 - q_a) s_a(q))`` for both ``a``: for each ``q_v`` one ``q_k`` makes the two agree, so the
fixed points form one curve ``alpha(q_v)`` (:class:`FixedPointCurve`). Where the fixed point is
unique the curve increases; a first-order transition shows as an S: a local maximum ``alpha_alg``
(AMP's branch, the least fixed point, ends there and the uninformative start jumps to the informed
branch) and a local minimum ``alpha_sp`` (the informed branch, the greatest fixed point, appears).
Both are located by golden-section search on the curve, which needs no iteration near the folds
(where the iteration slows down without bound), and their tolerance is the spread of ``alpha``
over the final bracket. In between, ``alpha_IT`` is where the two branches' free entropies cross
(Brent's method on the difference, each branch solved from a point of the curve).

* ``alpha_WR`` (weak recovery): none in SLR: ``q = 0`` is not a fixed point at any ``alpha > 0``
  (``v`` is learned at linear order, and for spiked SLR ``k`` too);
  :func:`~bayes_slr.formulas.phase.uninformative_scores` gives the first step of the map in closed
  form.
* ``Delta = 0``: exact recovery of ``v`` (``q_v = 1``) is a fixed point at every ``alpha``, stable
  iff ``alpha > 1`` (``1 - q_v -> (1 - q_v) / alpha``), and its free entropy is ``+inf`` above
  ``alpha = 1``: ``alpha_PR = alpha_sp = alpha_IT = 1`` exactly; the curve tends to ``alpha = 1``
  as ``q_v -> 1``, and ``alpha_alg`` is its maximum (1 if it has none: no hard phase).

A threshold outside ``[alpha_min, alpha_max]`` is reported as such (``< alpha_min``, ``>
alpha_max``), never as a number.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from scipy import optimize

from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.fixed_point_curve import CURVE_POINTS, CurvePoint, FixedPointCurve
from bayes_slr.formulas.phase import fixed_point_record, uninformative_scores
from bayes_slr.formulas.state_evolution import StateEvolutionPoint, state_evolution
from bayes_slr.models.spec import SLRConfig


@dataclasses.dataclass(frozen=True)
class Threshold:
    """One threshold and how it was found.

    Attributes
    ----------
    name : ``"alpha_WR"``, ``"alpha_sp"``, ``"alpha_alg"``, ``"alpha_IT"`` or ``"alpha_PR"``.
    status : ``"located"`` (``value +- tolerance``), ``"exact"`` (closed form), ``"below range"``
        (``< alpha_min``), ``"above range"`` (``> alpha_max``) or ``"none"`` (does not exist for
        this task, or no transition was seen; ``note`` says which).
    value : the threshold (``located``, ``exact``), else None.
    tolerance : its error bound (``located``), 0 (``exact``), else None.
    note : how it was found or why there is none.
    """

    name: str
    status: str
    value: float | None
    tolerance: float | None
    note: str

    def describe(self, alpha_min: float, alpha_max: float) -> str:
        """``1.2234 +- 1e-04``, ``1 (exact)``, ``< 0.5``, ``> 4`` or ``none``."""
        if self.status == "located":
            return f"{self.value:.6g} +- {self.tolerance:.1g}"
        if self.status == "exact":
            return f"{self.value:g} (exact)"
        if self.status == "below range":
            return f"< {alpha_min:g}"
        if self.status == "above range":
            return f"> {alpha_max:g}"
        return "none"


@dataclasses.dataclass(frozen=True)
class Thresholds:
    """The thresholds of one task over ``[alpha_min, alpha_max]``.

    Attributes
    ----------
    config, alpha_min, alpha_max, tol : what was asked.
    weak_recovery, spinodal, algorithmic, information_theoretic, perfect_recovery : the
        :class:`Threshold` records (``alpha_WR``, ``alpha_sp``, ``alpha_alg``, ``alpha_IT``,
        ``alpha_PR``).
    curve : the scanned points of the fixed-point curve (and those of the searches).
    solves : state-evolution solves (of the ``alpha_IT`` search); evaluations : channel
        evaluations, everything included.
    method : the channel's (``"quadrature"`` or ``"monte carlo"``).
    """

    config: SLRConfig
    alpha_min: float
    alpha_max: float
    tol: float
    weak_recovery: Threshold
    spinodal: Threshold
    algorithmic: Threshold
    information_theoretic: Threshold
    perfect_recovery: Threshold
    curve: tuple[CurvePoint, ...]
    solves: int
    evaluations: int
    method: str

    def all(self) -> tuple[Threshold, ...]:
        """The five records, in the order of the attributes."""
        return (
            self.weak_recovery,
            self.spinodal,
            self.algorithmic,
            self.information_theoretic,
            self.perfect_recovery,
        )


def _in_range(
    name: str, value: float, tolerance: float, note: str, alpha_min: float, alpha_max: float
) -> Threshold:
    """A located value, or its side of the range."""
    if value < alpha_min:
        return Threshold(name, "below range", None, None, f"{note} (at {value:.6g})")
    if value > alpha_max:
        return Threshold(name, "above range", None, None, f"{note} (at {value:.6g})")
    return Threshold(name, "located", value, tolerance, note)


def _weak_recovery(config: SLRConfig) -> Threshold:
    score_k, score_v = uninformative_scores(config)
    return Threshold(
        "alpha_WR",
        "none",
        None,
        None,
        f"q = 0 is not a fixed point for any alpha > 0: the first step from it is "
        f"q_a = alpha s_a / (1 + alpha s_a) with s_k = {score_k:.6g}, s_v = {score_v:.6g} "
        f"(v is learned at linear order: E[y x_l] = P(eps = l) v* / sqrt(D))",
    )


def _extrema(curve: FixedPointCurve, scan: list[CurvePoint], tol: float) -> list:
    """``(point, bound, is_maximum)`` for every local extremum of ``alpha`` along the scan."""
    found = []
    for before, here, after in zip(scan, scan[1:], scan[2:]):
        rising, falling = here.alpha > before.alpha, after.alpha < here.alpha
        if rising == falling:
            point, bound = curve.extremum(before.t, after.t, rising, tol)
            found.append((point, bound, rising))
    return found


class Maxwell:
    """The two branches at ``alpha`` inside the S, each solved from a point of its segment of the
    curve, and their free-entropy difference."""

    def __init__(self, channel: BayesChannel, lower: list[CurvePoint], upper: list[CurvePoint]):
        self.channel, self.lower, self.upper = channel, lower, upper
        self.solves = 0

    def _solve(self, alpha: float, segment: list[CurvePoint], start: str) -> StateEvolutionPoint:
        """The branch's fixed point at ``alpha``, from the segment's fixed point at the nearest
        ``alpha`` on the start's side (below for the uninformative start, above for the informed
        one; none there: the start itself). The fixed points increase with ``alpha``, so that
        point lies below the least (above the greatest) fixed point, where Newton's steps
        converge; a point interpolated between the segment's can lie past it near a fold, where
        the steps are refused and the plain iteration crawls (959 evaluations against 20)."""
        alphas = np.array([p.alpha for p in segment])
        below = start == "uninformative"
        side = alphas <= alpha if below else alphas >= alpha
        warm_start = None
        if np.any(side):
            nearest = np.flatnonzero(side)[np.argmin(np.abs(alphas[side] - alpha))]
            warm_start = (segment[nearest].q_k, segment[nearest].q_v)
        self.solves += 1
        return state_evolution(
            self.channel.config, alpha, start, channel=self.channel, warm_start=warm_start
        )

    def gap(self, alpha: float) -> float:
        """``Phi(informed) - Phi(uninformative)`` at ``alpha``."""
        lower = fixed_point_record(self.channel, self._solve(alpha, self.lower, "uninformative"))
        upper = fixed_point_record(self.channel, self._solve(alpha, self.upper, "informed"))
        return upper.free_entropy.value - lower.free_entropy.value


def information_theoretic(
    maxwell: Maxwell, spinodal: float, algorithmic: float, tol: float
) -> tuple[float, float, str] | str:
    """``(alpha_IT, tolerance, note)`` by Brent's method inside ``(spinodal, algorithmic)``, or a
    note where the difference does not change sign there."""
    width = algorithmic - spinodal
    lo, hi = spinodal + 0.02 * width, algorithmic - 0.02 * width
    gap_lo, gap_hi = maxwell.gap(lo), maxwell.gap(hi)
    if not gap_lo < 0 < gap_hi:
        return (
            f"Phi(informed) - Phi(uninformative) is {gap_lo:+.3g} at {lo:.4g} and {gap_hi:+.3g} "
            f"at {hi:.4g}: no crossing inside the S"
        )
    value = optimize.brentq(maxwell.gap, lo, hi, xtol=tol)
    return value, tol, "Brent's method on Phi(informed) - Phi(uninformative)"


def _noiseless_thresholds(
    maxima: list, curve_note: str, alpha_min: float, alpha_max: float
) -> tuple[Threshold, Threshold, Threshold, Threshold]:
    """``alpha_sp``, ``alpha_alg``, ``alpha_IT`` and ``alpha_PR`` at ``Delta = 0``: exact recovery
    of ``v`` is a fixed point at every ``alpha``, stable iff ``alpha > 1``."""
    note = "Delta = 0: exact recovery of v is a fixed point at every alpha, stable iff alpha > 1"
    exact = {
        name: _in_range(name, 1.0, 0.0, note, alpha_min, alpha_max)
        for name in ("alpha_sp", "alpha_PR")
    }
    exact = {
        name: dataclasses.replace(r, status="exact") if r.status == "located" else r
        for name, r in exact.items()
    }
    spinodal, perfect = exact["alpha_sp"], exact["alpha_PR"]
    information = dataclasses.replace(
        spinodal,
        name="alpha_IT",
        note="Delta = 0: the exact-recovery branch's free entropy is +inf for alpha > 1, so "
        "it is Bayes-optimal wherever it is stable",
    )
    if maxima and maxima[0][0].alpha > 1.0:
        point, bound = maxima[0][:2]
        algorithmic = _in_range("alpha_alg", point.alpha, bound, curve_note, alpha_min, alpha_max)
    else:
        algorithmic = dataclasses.replace(
            spinodal,
            name="alpha_alg",
            note="the fixed-point curve rises to alpha = 1 without a maximum: AMP recovers v "
            "exactly as soon as alpha > 1 (no hard phase)",
        )
    return spinodal, algorithmic, information, perfect


def _first_order_thresholds(
    maxwell: Maxwell,
    maximum: tuple,
    minimum: tuple,
    curve_note: str,
    alpha_min: float,
    alpha_max: float,
    tol: float,
) -> tuple[Threshold, Threshold, Threshold]:
    """``alpha_sp``, ``alpha_alg`` and ``alpha_IT`` of an S-shaped fixed-point curve: the local
    minimum and maximum of ``alpha(q_v)`` and the crossing of the two branches' free entropies."""
    (top, top_bound, _), (bottom, bottom_bound, _) = maximum, minimum
    algorithmic = _in_range("alpha_alg", top.alpha, top_bound, curve_note, alpha_min, alpha_max)
    spinodal = _in_range(
        "alpha_sp",
        bottom.alpha,
        bottom_bound,
        curve_note.replace("maximum", "minimum"),
        alpha_min,
        alpha_max,
    )
    found = information_theoretic(maxwell, bottom.alpha, top.alpha, tol)
    information = (
        Threshold("alpha_IT", "none", None, None, found)
        if isinstance(found, str)
        else _in_range("alpha_IT", *found, alpha_min, alpha_max)
    )
    return spinodal, algorithmic, information


def _monte_carlo_caveat(
    channel: BayesChannel, located: tuple[Threshold, ...]
) -> tuple[Threshold, ...]:
    """The thresholds with a note that a Monte Carlo channel's own error is not in their
    tolerance."""
    caveat = (
        f"; Monte Carlo channel ({channel.mc_samples} draws): the draws' own error is not in "
        f"the tolerance (compare other seeds)"
    )
    return tuple(
        dataclasses.replace(r, note=r.note + caveat) if r.status == "located" else r
        for r in located
    )


def thresholds(
    config: SLRConfig,
    alpha_min: float,
    alpha_max: float,
    tol: float = 1e-6,
    *,
    channel: BayesChannel | None = None,
    scan: int = CURVE_POINTS,
) -> Thresholds:
    """Locate ``alpha_WR``, ``alpha_sp``, ``alpha_alg``, ``alpha_IT`` and ``alpha_PR``.

    Parameters
    ----------
    config : SLRConfig
        The task (``D`` ignored).
    alpha_min, alpha_max : the range reported, ``0 < alpha_min < alpha_max``.
    tol : error bound asked of each located threshold, ``< (alpha_max - alpha_min) / 4``.
    channel : the channel (default: a new :class:`~bayes_slr.formulas.bayes_channel.BayesChannel`).
    scan : points of the initial scan of the fixed-point curve (an S narrower than its spacing in
        ``logit(q_v)`` is missed: the note says how many points were scanned).

    Returns
    -------
    Thresholds
        With the curve and the number of channel evaluations spent.
    """
    channel = BayesChannel(config) if channel is None else channel
    start_evaluations = channel.evaluations
    curve = FixedPointCurve(channel)
    points = curve.scan(scan)
    extrema = _extrema(curve, points, tol)
    maxima = [e for e in extrema if e[2]]
    minima = [e for e in extrema if not e[2]]
    curve_note = f"local maximum of alpha(q_v) (golden-section search; scan of {scan} points)"
    maxwell = None
    if config.Delta == 0.0:
        spinodal, algorithmic, information, perfect = _noiseless_thresholds(
            maxima, curve_note, alpha_min, alpha_max
        )
    else:
        perfect = Threshold("alpha_PR", "none", None, None, "Delta > 0: no exact recovery")
        if not (maxima and minima):
            note = (
                f"alpha(q_v) increases on a scan of {scan} points: the fixed point is unique at "
                f"every alpha (no first-order transition)"
            )
            spinodal, algorithmic, information = (
                Threshold(n, "none", None, None, note)
                for n in ("alpha_sp", "alpha_alg", "alpha_IT")
            )
        else:
            maxwell = Maxwell(
                channel,
                [p for p in points if p.t <= maxima[0][0].t] + [maxima[0][0]],
                [minima[0][0]] + [p for p in points if p.t >= minima[0][0].t],
            )
            spinodal, algorithmic, information = _first_order_thresholds(
                maxwell, maxima[0], minima[0], curve_note, alpha_min, alpha_max, tol
            )
    if not channel.exact:
        spinodal, algorithmic, information = _monte_carlo_caveat(
            channel, (spinodal, algorithmic, information)
        )
    return Thresholds(
        config,
        alpha_min,
        alpha_max,
        tol,
        _weak_recovery(config),
        spinodal,
        algorithmic,
        information,
        perfect,
        tuple(curve.evaluated()),
        0 if maxwell is None else maxwell.solves,
        channel.evaluations - start_evaluations,
        channel.method,
    )
