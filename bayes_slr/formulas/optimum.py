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

**Student heads** (docs/multihead.md section 6): the population error and optimum of a student
with ``H_s`` heads on an ``H``-head teacher (:func:`student_heads_error`,
:func:`student_heads_optimum`; ``H_s = H`` aligned heads is :func:`optimal_population_error`'s
optimum): missing heads lose their teacher heads' signal, extra heads add noise unless silenced.

Each student head is aligned with a distinct teacher head or with none
(:class:`~bayes_slr.formulas.optimum_record.StudentHead`); the student's vectors are
orthogonal across heads, so the heads' cross terms vanish and, with ``y`` scaled by
``(rho H)^(-1/2)``,

``error = 1 - sum_j [2 m_vj A_j / sqrt(H) - q_vj B_j]``,

``(A_j, B_j)`` the terms of one head present with probability ``rho`` at head ``j``'s key
overlaps (:func:`~bayes_slr.formulas.population.heads_terms` with ``H = 1``:
``A = sqrt(rho) E[s_eps | present]``, ``B = rho B_present + (1 - rho) B_absent``). An extra head
has ``m_k = m_v = 0``: it sees null tokens only and adds ``q_v B_null``. Each bracket is at most
``A_j^2 / (H B_j)``, so the optimum over such students is ``1 - (min(H_s, H) / H) (1 - E_H)``,
``E_H`` the optimum of ``H`` aligned heads (:func:`optimal_population_error`), with extra heads
silenced (``q_v = 0``). A head mixing several teacher heads is outside this family and may do better
(one head on two teacher heads does, by Monte Carlo:
:func:`~bayes_slr.formulas.population_mc.mixed_heads_error_mc`, docs/multihead.md section 6):
for ``H_s < H`` the optimum here bounds the optimum over all overlaps from above.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import minimize, minimize_scalar

from bayes_slr.attention.activations import theory_terms_of
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.formulas.bayes import ExactValue
from bayes_slr.formulas.large_norm import limit_terms
from bayes_slr.formulas.optimum_record import (
    OptimalOverlaps,
    PopulationOptimum,
    StudentHead,
    StudentHeadsOptimum,
)
from bayes_slr.formulas.population import (
    Terms,
    check_key_overlaps,
    check_value_overlaps,
    score_law,
    terms_with_bounds,
)
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


OPTIMA_REMEMBERED = 256
"""How many optima :func:`optimal_population_error` keeps (the most recently used)."""


@functools.lru_cache(maxsize=OPTIMA_REMEMBERED)
def optimal_population_error(activation: str, config: SLRConfig) -> PopulationOptimum:
    """Best population error ``1 - sup A^2/B`` of ``activation`` on ``config`` and its overlaps.

    Remembered per ``(activation, config)`` (the last :data:`OPTIMA_REMEMBERED`; the records are
    frozen): a search takes up to seconds, and the experiments, studies and claims of one
    session ask for the same optimum again.

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


def check_student_heads(config: SLRConfig, heads: Sequence[StudentHead]) -> tuple[StudentHead, ...]:
    """Return ``heads`` as a tuple of checked :class:`StudentHead` records; ``ConfigError`` for a
    teacher index outside ``0..H-1``, two heads aligned with the same teacher head, an extra head
    (``teacher=None``) with ``m_k`` or ``m_v`` not 0, or overlaps breaking Cauchy-Schwarz."""
    heads = tuple(heads)
    if not heads:
        raise ConfigError("the student needs at least one head")
    checked = []
    for head in heads:
        if not isinstance(head, StudentHead):
            raise ConfigError(
                f"student heads must be StudentHead records, got {type(head).__name__}"
            )
        m_k, _ = check_key_overlaps(head.m_k, head.q_k)
        m_v, q_v = check_value_overlaps(head.m_v, head.q_v)
        if head.teacher is None:
            if m_k != 0.0 or m_v != 0.0:
                raise ConfigError(
                    "an extra student head (teacher=None) overlaps no teacher head: its m_k and "
                    f"m_v must be 0, got {m_k!r} and {m_v!r}"
                )
        elif check_int("teacher", head.teacher, 0) >= config.heads:
            raise ConfigError(
                f"teacher must be a teacher head's index in 0..{config.heads - 1}, "
                f"got {head.teacher!r}"
            )
        checked.append(
            StudentHead(head.teacher, m_k, float(head.q_k), m_v, q_v, check_real("c", head.c))
        )
    aligned = [head.teacher for head in checked if head.teacher is not None]
    if len(set(aligned)) != len(aligned):
        raise ConfigError(
            f"two student heads are aligned with the same teacher head (teachers {aligned}); "
            "each teacher head takes one student head at most"
        )
    return tuple(checked)


def student_heads_error(
    activation: str, config: SLRConfig, heads: Sequence[StudentHead]
) -> ExactValue:
    """Excess population test error of the student ``heads`` on the teacher of ``config``, by
    quadrature (module docstring, "Student heads").

    Parameters
    ----------
    activation : an activation with population-theory terms (registered, or ``softmax1``,
        ``bayes_softmax``).
    config : the task (``heads`` is the teacher's ``H``, ``presence`` its ``rho``); ``D`` and
        ``Delta`` are ignored.
    heads : the student heads, each aligned with a distinct teacher head or extra.

    Returns
    -------
    ExactValue
        The error and the bound its terms' quadrature bounds give. Heads with the same key
        overlaps and offset share one quadrature of their terms (aligned heads at one optimum
        cost one head's).
    """
    activation = theory_terms_of(activation).name
    heads = check_student_heads(config, heads)
    one_head = config.replace(heads=1)
    scale = 1.0 / math.sqrt(config.heads)
    terms_of: dict[tuple[float, float, float], Terms] = {}  # heads with the same key share terms
    error, bound = 1.0, 0.0
    for head in heads:
        key = (*check_key_overlaps(head.m_k, head.q_k), head.c)
        if key not in terms_of:
            terms_of[key] = terms_with_bounds(activation, one_head, *key)
        terms = terms_of[key]
        error += head.q_v * terms.B - 2.0 * head.m_v * scale * terms.A
        bound += head.q_v * terms.B_bound + 2.0 * abs(head.m_v) * scale * terms.A_bound
    return ExactValue(float(error), float(bound))


def student_heads_optimum(
    activation: str, config: SLRConfig, student_heads: int
) -> StudentHeadsOptimum:
    """Best population error of ``student_heads`` heads, each aligned with a distinct teacher
    head or extra, on the ``H``-head teacher of ``config`` (heads mixing teacher heads are not
    searched: module docstring).

    Parameters
    ----------
    activation, config : as in :func:`student_heads_error`.
    student_heads : ``H_s >= 1``.

    Returns
    -------
    StudentHeadsOptimum
        ``1 - (min(H_s, H) / H) (1 - E_H)`` (module docstring) and the heads that reach it
        (:func:`heads_at_optimum`).
    """
    return heads_at_optimum(optimal_population_error(activation, config), config, student_heads)


def heads_at_optimum(
    aligned: PopulationOptimum, config: SLRConfig, student_heads: int
) -> StudentHeadsOptimum:
    """The optimum of ``student_heads`` heads from the optimum ``aligned`` of one student head
    per teacher head of ``config`` (:func:`~bayes_slr.formulas.optimum.optimal_population_error`).

    The first ``min(H_s, H)`` teacher heads each take a student head at the aligned optimum's
    overlaps (the best overlaps of a head do not depend on how many others there are), and the
    ``H_s - H`` extra heads keep that optimum's key with ``q_v = 0``.
    """
    student_heads = check_int("student_heads", student_heads, 1)
    o = aligned.overlaps
    matched = min(student_heads, config.heads)
    heads = tuple(StudentHead(h, o.m_k, o.q_k, o.m_v, o.q_v, o.c) for h in range(matched)) + (
        StudentHead(None, 0.0, o.q_k, 0.0, 0.0, o.c),
    ) * (student_heads - matched)
    error = 1.0 - matched / config.heads * (1.0 - aligned.error)
    return StudentHeadsOptimum(float(error), aligned.error, heads, o.note)
