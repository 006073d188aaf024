"""Population-optimal error of each attention activation (docs/model.md section 4).

Minimising ``1 - 2 m_v A + q_v B`` over the value overlaps gives ``m_v = A / B``,
``q_v = m_v^2`` and the error ``1 - A^2 / B``; what remains is the maximisation of
``A^2 / B`` over the key overlaps ``(m_k, q_k >= m_k^2)`` (and the erf offset ``c``).
It runs SciPy's Nelder-Mead over the unconstrained ``(m_k, rho[, c])`` with
``q_k = m_k^2 + rho^2`` from a few starts (see :func:`optimal_population_error`
for the cheaper search used for normalised activations on max-SLR, and the
closed form used for linear attention).

On max-SLR with ``nu = inf`` softmax and softplus have no optimum: their error falls
as ``|k| -> inf`` along ``k = |k| k* / sqrt(D)`` (softmax to the Bayes error 0, softplus
to the error of normalised ReLU weights); the limit (:mod:`bayes_slr.formulas.large_norm`)
is returned with the trend in the note.
"""

from __future__ import annotations

import math

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from bayes_slr.attention.activations import theory_terms_of
from bayes_slr.formulas.large_norm import limit_terms
from bayes_slr.formulas.optimum_record import OptimalOverlaps, PopulationOptimum
from bayes_slr.formulas.population import score_law, terms_with_bounds
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.integrals import STEP

NORM_CAP = 30.0
"""Largest ``|m_k|`` and ``rho`` searched; an optimum on this boundary is reported in the note."""
TREND_NORMS = (1.0, 2.0, 4.0, 8.0)
"""Key norms at which the softmax error is shown for max-SLR with ``nu = inf``."""
SEARCH_STEP = 2.0 * STEP
"""The search evaluates on the coarse rule (error ~3e-9); the optimum is re-evaluated on the fine
one.
"""
SEARCH_GRID_NORM = 3.0
"""Grids of the Nelder-Mead search are sized for ``|m_k|`` up to ``max(3, 2 c_nu)`` (few
compilations).
"""
ALIGNED_CAP = 8.0
"""Largest ``m_k`` of the aligned search (normalised activations on max-SLR)."""
ALIGNED_SCAN = (0.5, 1.0, 2.0, 4.0, ALIGNED_CAP)
"""First pass of the aligned search; Brent then refines between the neighbours of the best."""
RHO_PROBES = (0.1, 0.3)
"""``rho = sqrt(q_k - m_k^2)`` tried after the aligned search of normalised activations on max-SLR.
"""
_STARTS = ((0.5, 0.3, 0.0), (2.0, 0.3, 1.0))
VANISHING_LOG_SINK = -10.0
"""An optimum whose denominator constant ``C`` (Bayes-softmax's ``e^{-c}``) has ``log C`` below
this is reported as the limit ``C -> 0`` (softmax), which the search can only approach."""


def _gain(
    activation: str, config: SLRConfig, m_k: float, rho: float, c: float, grid_norm: float = 0.0
) -> float:
    """``A^2 / B``: one minus the error at the best value overlaps, on the search resolution."""
    terms = terms_with_bounds(activation, config, m_k, abs(rho), c, grid_norm, SEARCH_STEP)
    return terms.A**2 / terms.B


def _large_norm_limit(activation: str, kernel: str, config: SLRConfig) -> PopulationOptimum:
    """The supremum ``|k| -> inf`` along ``k*`` on an argmax location law, and the trend
    towards it.
    """
    terms = limit_terms(kernel, config)
    error = 1.0 - terms.A**2 / terms.B
    trend = ", ".join(
        f"{1.0 - _gain(activation, config, norm, 0.0, 0.0, max(TREND_NORMS)):.4g} at |k|={norm:g}"
        for norm in TREND_NORMS
    )
    limit = (
        "the argmax (the Bayes estimator)"
        if kernel == "argmax"
        else "relu(chi)/sum relu(chi) (argmax if all < 0)"
    )
    note = (
        f"no finite optimum: {activation} reaches {error:.4g} only as |k| -> inf along k*, "
        f"where its weights tend to "
        f"{limit}; error along k = |k| k*/sqrt(D): {trend}"
    )
    m_v = terms.A / terms.B / math.sqrt(config.heads)  # per head (heads_terms at rho = 1)
    return PopulationOptimum(
        float(error), OptimalOverlaps(math.inf, math.inf, 0.0, float(m_v), float(m_v**2), note)
    )


def _search_all(activation: str, config: SLRConfig, uses_offset: bool) -> tuple[np.ndarray, float]:
    """Nelder-Mead over ``(m_k, rho[, c])`` from each start; ``(best point, best objective)``."""

    def objective(params: np.ndarray) -> float:
        excess = max(abs(params[0]), abs(params[1])) - NORM_CAP
        if excess > 0:
            return excess
        return -_gain(
            activation, config, params[0], params[1], params[2] if uses_offset else 0.0, grid_norm
        )

    grid_norm = (
        max(SEARCH_GRID_NORM, 2.0 * config.c_nu) if math.isfinite(config.nu) else SEARCH_GRID_NORM
    )
    best = None
    for start in _STARTS:
        x0 = np.asarray(start if uses_offset else start[:2])
        result = minimize(
            objective,
            x0,
            method="Nelder-Mead",
            options={
                "initial_simplex": np.vstack([x0, x0 + 0.5 * np.eye(x0.size)]),
                "xatol": 1e-6,
                "fatol": 1e-12,
                "maxiter": 4000,
            },
        )
        if best is None or result.fun < best.fun:
            best = result
    return best.x, best.fun


def _search_aligned(activation: str, config: SLRConfig) -> tuple[np.ndarray, str]:
    """Normalised activations on max-SLR: scan and Brent over ``m_k`` at ``q_k = m_k^2``, then
    probes of ``rho``.

    The grids are sized once for ``m_k = ALIGNED_CAP`` (one compilation).

    A point with ``q_k > m_k^2`` costs a three-dimensional grid there, so the
    search runs on ``rho = 0`` and then checks ``rho`` in :data:`RHO_PROBES`; if a
    probe does better, Nelder-Mead continues from it.
    """

    def loss(m_k: float) -> float:
        return -_gain(activation, config, m_k, 0.0, 0.0, ALIGNED_CAP)

    scan = [loss(m_k) for m_k in ALIGNED_SCAN]
    best = int(np.argmin(scan))
    if best == len(ALIGNED_SCAN) - 1 and loss(ALIGNED_CAP * 0.99) > scan[-1]:
        return np.asarray([ALIGNED_CAP, 0.0]), (
            f"optimum on the search boundary m_k = {ALIGNED_CAP:g}: the error is still falling "
            f"there"
        )
    bracket = (
        ALIGNED_SCAN[max(best - 1, 0)] if best else 0.0,
        ALIGNED_SCAN[min(best + 1, len(ALIGNED_SCAN) - 1)],
    )
    result = minimize_scalar(loss, bounds=bracket, method="bounded", options={"xatol": 1e-6})
    m_k, value = float(result.x), float(result.fun)
    probes = {rho: -_gain(activation, config, m_k, rho, 0.0) for rho in RHO_PROBES}
    rho = min(probes, key=probes.get)
    if probes[rho] >= value:
        return np.asarray([m_k, 0.0]), ""
    refined = minimize(
        lambda params: -_gain(activation, config, params[0], params[1], 0.0),
        np.asarray([m_k, rho]),
        method="Nelder-Mead",
        options={"xatol": 1e-6, "fatol": 1e-12},
    )
    return refined.x, "q_k > m_k^2 did better than the aligned key"


def _search_linear(config: SLRConfig) -> np.ndarray:
    """Linear attention: the best key in closed form from three evaluations of ``(A, B)``.

    ``s = 1 + chi`` makes ``A = A0 + a m_k`` affine in ``m_k`` and independent of
    ``rho``, while ``B = b0 + b1 m_k + b2 m_k^2 + Lbar rho^2`` (every token's second
    moment grows by ``rho^2``), whatever the variant, ``nu`` and length law. So
    ``rho = 0`` and ``d/dm (A^2 / B) = 0`` gives ``m_k = (2 a b0 - A0 b1) / (2 A0 b2 - a b1)``
    (docs/model.md's closed forms are its special cases). ``(A, B)`` at ``m_k = -1, 0, 1``
    give the coefficients.
    """
    (a_minus, b_minus), (a_zero, b_zero), (a_plus, b_plus) = (
        (terms.A, terms.B)
        for terms in (
            terms_with_bounds("linear", config, m_k, 0.0, 0.0, 1.0) for m_k in (-1.0, 0.0, 1.0)
        )
    )
    slope, b1, b2 = (
        0.5 * (a_plus - a_minus),
        0.5 * (b_plus - b_minus),
        0.5 * (b_plus + b_minus) - b_zero,
    )
    return np.asarray(
        [(2.0 * slope * b_zero - a_zero * b1) / (2.0 * a_zero * b2 - slope * b1), 0.0]
    )


def optimal_population_error(activation: str, config: SLRConfig) -> PopulationOptimum:
    """Best population error ``1 - sup A^2/B`` of ``activation`` on ``config`` and its overlaps.

    Parameters
    ----------
    activation : one of ``softmax``, ``linear``, ``erf``, ``softplus``, or an optional
        activation (``softmax1``, ``bayes_softmax``: spiked tasks only).
    config : the task; ``D`` and ``Delta`` are ignored; the length law is averaged
        before optimising (one ``(k, v)`` serves all lengths). A multi-head task
        (``heads``, ``presence``) optimises its aligned heads' common overlaps
        (:func:`~bayes_slr.formulas.population.heads_terms`).

    Returns
    -------
    PopulationOptimum
        ``error`` and its ``overlaps``: the key overlaps ``m_k``, ``q_k``, the offset
        ``c`` of erf and Bayes-softmax (0 for the others), the value overlaps ``m_v = A/B``,
        ``q_v = m_v^2`` and a note (empty unless the optimum is a limit, on the search
        boundary, or off the aligned manifold where that was only probed).

    Notes
    -----
    Linear: closed form in ``m_k`` (see :func:`_search_linear`). Spiked SLR and
    the erf activation: Nelder-Mead over
    ``(m_k, rho[, c])`` with ``q_k = m_k^2 + rho^2``, from two starts. Normalised
    activations on max-SLR: a scan of ``m_k`` in :data:`ALIGNED_SCAN`, then bounded Brent
    between the neighbours of the best, at ``rho = 0``
    and probes of ``rho > 0`` (every optimum found on the full search had ``rho = 0``).
    """
    record = theory_terms_of(activation)
    activation = record.name
    tilt = score_law(config).location_tilt
    if record.large_norm_limit is not None and math.isinf(tilt):
        return _large_norm_limit(activation, record.large_norm_limit, config)
    uses_offset = record.has_offset
    note = ""
    if record.affine:
        point = _search_linear(config)
    elif record.normalised and tilt != 0.0:
        point, note = _search_aligned(activation, config)
    else:
        point, _ = _search_all(activation, config, uses_offset)
    m_k, rho = float(point[0]), abs(float(point[1]))
    c = float(point[2]) if uses_offset else 0.0
    terms = terms_with_bounds(activation, config, m_k, rho, c)
    m_v = terms.A / terms.B
    if not note and not record.affine and max(abs(m_k), rho) > NORM_CAP * (1.0 - 1e-3):
        note = (
            f"optimum on the search boundary |m_k| or rho = {NORM_CAP:g}: the error may "
            f"keep falling"
        )
    if not note and record.log_sink is not None and record.log_sink(c) < VANISHING_LOG_SINK:
        note = (
            f"the constant in the denominator vanishes at the optimum (e^{{-c}} with c = {c:.3g}): "
            "the error is softmax's, reached only as c -> inf"
        )
    return PopulationOptimum(
        float(1.0 - terms.A**2 / terms.B),
        OptimalOverlaps(m_k, m_k**2 + rho**2, c, float(m_v), float(m_v**2), note),
    )
