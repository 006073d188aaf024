"""Population-level test error of attention estimators through the overlaps (docs/model.md section
4).

On the overlap manifold ``chi_l = m_k chi*_l + r u_l`` (``r = sqrt(q_k - m_k^2)``),
``z_l = m_v z*_l + sqrt(q_v - m_v^2) w_l``, the excess test error is
``1 - 2 m_v A_s + q_v B_s`` with ``A_s = E[s(chi)_eps]`` and ``B_s = E[sum_l s(chi)_l^2]``,
both averaged over the length law before anything else. On a multi-head task the student has
one head per teacher head, each aligned with its own (the overlaps are per head), and the terms
are those of :func:`heads_terms` (docs/multihead.md section 4).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import numpy as np

from bayes_slr.attention.activations import Activation, theory_terms_of
from bayes_slr.errors import Accepts, ConfigError, Number, accepted_values
from bayes_slr.formulas import elementwise, normalised
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import PlantedScores, TiltedScores
from bayes_slr.numerics.integrals import BOUND_FLOOR, STEP


class Terms(NamedTuple):
    """``A_s``, ``B_s`` and bounds on their quadrature errors."""

    A: float
    B: float
    A_bound: float
    B_bound: float


def check_config(config: object) -> SLRConfig:
    """Return ``config`` if it is an :class:`SLRConfig`, else raise ``ConfigError``."""
    if not isinstance(config, SLRConfig):
        raise ConfigError(f"config must be an SLRConfig, got {type(config).__name__}")
    return config


def length_support(config: SLRConfig) -> tuple[np.ndarray, np.ndarray]:
    """``(probabilities, lengths)`` of the length law's support, as float arrays.

    Padded with zero-probability entries to a power-of-two size, so that laws with
    similar support sizes share compiled shapes.
    """
    lengths, probs = zip(*config.length.support())
    padded = 1 << math.ceil(math.log2(len(lengths)))
    pad = padded - len(lengths)
    return np.asarray(probs + (0.0,) * pad, dtype=float), np.asarray(
        lengths + (1,) * pad, dtype=float
    )


def score_law(config: SLRConfig) -> PlantedScores | TiltedScores:
    """The population law of the teacher scores, asked of the variant."""
    return config.law.population_scores(config.nu)


def location_mean(config: SLRConfig, m_k: float) -> float:
    """Mean of the location's student score: ``m_k`` times the teacher's location shift
    (``sqrt(nu)`` spiked, 0 where the scores are i.i.d.).
    """
    return m_k * score_law(config).location_shift


def sink_of(record: Activation, tilt: float, c: float) -> float:
    """``log C`` of the constant in the denominator of a normalised activation at offset ``c``
    (``-inf`` without one); ``ConfigError`` for one with a constant on a tilted location law,
    whose integrals hold no such constant."""
    if record.log_sink is None:
        return -math.inf
    if tilt != 0.0:
        raise ConfigError(
            f"activation {record.name}: its population terms are computed where the location is "
            "uniform (spiked), not on a tilted location law"
        )
    return float(record.log_sink(c))


def heads_terms(
    config: SLRConfig, present_a: np.ndarray, present_b: np.ndarray, absent_b: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """``(A, B)`` of ``H`` student heads, each aligned with its own teacher head, from one
    head's terms (docs/multihead.md section 4).

    With per-head overlaps the error is ``1 - 2 m_v A + q_v B`` with
    ``A = sqrt(rho H) E[s_eps | present]`` and ``B = H (rho B_present + (1 - rho) B_absent)``:
    the heads' cross terms vanish (their values are orthogonal) and ``y`` is scaled by
    ``(rho H)^(-1/2)``. One-head SLR (``H = 1``, ``rho = 1``) returns the terms unchanged.
    """
    rho, heads = config.presence, config.heads
    if rho == 1.0 and heads == 1:
        return present_a, present_b
    mixed_b = rho * present_b + (1.0 - rho) * absent_b if rho < 1.0 else present_b
    return math.sqrt(rho * heads) * present_a, heads * mixed_b


def terms_with_bounds(
    activation: str,
    config: SLRConfig,
    m_k: float,
    r: float,
    c: float,
    grid_norm: float = 0.0,
    step: float = STEP,
) -> Terms:
    """``A_s``, ``B_s`` and their error bounds at ``chi = m_k chi* + r u`` (inputs already checked).

    A multi-head task gives the terms of its aligned heads (:func:`heads_terms`), whose absent
    heads see null tokens only. The teacher scores are i.i.d. standard normal but for the
    location's, shifted by the score
    law's ``location_shift``, and the location is drawn from ``softmax(location_tilt chi*)``
    (uniform at 0, the argmax at ``inf``); the integrals cover a shift with a uniform location
    or a tilt without a shift.

    ``grid_norm``: size the grids for ``|m_k|`` (and ``r``) up to this value, so that a search
    over the overlaps reuses one compiled shape. ``step``: fine spacing of the
    independent-token and second-moment rules (a search may use a coarser one).
    """
    laws = length_support(config)
    tilt = score_law(config).location_tilt
    mu_loc, sigma = location_mean(config, m_k), math.hypot(m_k, r)
    grid_sigma = math.sqrt(2.0) * grid_norm  # covers |m_k|, r <= grid_norm
    record = theory_terms_of(activation)
    if record.normalised:
        grid_mu = abs(location_mean(config, grid_norm))
        log_sink = sink_of(record, tilt, c)

        def independent(mean: float) -> np.ndarray:
            return normalised.independent_terms(
                activation,
                mean,
                sigma,
                *laws,
                step=step,
                grid_mu=grid_mu,
                grid_sigma=grid_sigma,
                log_sink=log_sink,
            ).T

        a_levels, b_levels = independent(mu_loc)
        absent_levels = independent(0.0)[1] if config.presence < 1.0 else b_levels
        if math.isinf(tilt):
            a_levels = normalised.argmax_first(activation, m_k, r, *laws, grid_norm)
        elif tilt != 0.0:
            a_levels = normalised.tilted_first(activation, tilt, m_k, r, *laws, grid_norm)
    else:
        other = elementwise.second_moment(activation, 0.0, sigma, c, grid_sigma, step)
        if mu_loc == 0.0:  # every score has the same law
            b_levels = config.length.mean() * other
        else:
            located = elementwise.second_moment(activation, mu_loc, sigma, c, grid_sigma, step)
            b_levels = (config.length.mean() - 1.0) * other + located
        absent_levels = config.length.mean() * other
        if math.isinf(tilt):
            a_levels = elementwise.argmax_first(activation, m_k, r, c, *laws, grid_norm)
        elif tilt != 0.0:
            a_levels = elementwise.tilted_first(activation, tilt, m_k, r, c, *laws, grid_norm)
        else:
            a_levels = np.full(2, float(elementwise.mean_score(activation, mu_loc, sigma**2, c)))
    a_levels, b_levels = heads_terms(config, a_levels, b_levels, absent_levels)
    a_bound, b_bound = (abs(float(v[0] - v[1])) + BOUND_FLOOR for v in (a_levels, b_levels))
    return Terms(float(a_levels[0]), float(b_levels[0]), a_bound, b_bound)


OVERLAP_ACCEPTS: dict[str, Accepts] = {
    "m_k": Number(),
    "q_k": Number(0.0),
    "m_v": Number(),
    "q_v": Number(0.0),
    "c": Number(),
}
"""The accepted range of each overlap (besides Cauchy-Schwarz, ``q >= m^2``): the one meaning of
``m_k, q_k, m_v, q_v, c`` for every formula and record that takes them."""


def check_key_overlaps(m_k: object, q_k: object) -> tuple[float, float]:
    """Return ``(m_k, r)`` with ``r = sqrt(q_k - m_k^2)``; ``ConfigError`` unless ``q_k
    >= m_k^2``.
    """
    values = accepted_values({"m_k": m_k, "q_k": q_k}, OVERLAP_ACCEPTS)
    m_k, q_k = values["m_k"], values["q_k"]
    if q_k < m_k**2 * (1.0 - 1e-12):
        raise ConfigError(f"q_k must be >= m_k^2 = {m_k**2:.6g} (Cauchy-Schwarz), got {q_k!r}")
    return m_k, math.sqrt(max(q_k - m_k**2, 0.0))


def check_value_overlaps(m_v: object, q_v: object) -> tuple[float, float]:
    """Return ``(m_v, q_v)`` as floats; ``ConfigError`` unless ``q_v >= m_v^2``."""
    values = accepted_values({"m_v": m_v, "q_v": q_v}, OVERLAP_ACCEPTS)
    m_v, q_v = values["m_v"], values["q_v"]
    if q_v < m_v**2 * (1.0 - 1e-12):
        raise ConfigError(f"q_v must be >= m_v^2 = {m_v**2:.6g} (Cauchy-Schwarz), got {q_v!r}")
    return m_v, q_v


def population_terms(
    activation: str, config: SLRConfig, m_k: float, q_k: float, c: float = 0.0
) -> tuple[float, float]:
    """``(A_s, B_s)`` at the key overlaps ``(m_k, q_k)``, averaged over the length law.

    Parameters
    ----------
    activation : an activation with population-theory terms (registered, or one of the
        optional ``softmax1``, ``bayes_softmax``).
    config : the task; ``D`` and ``Delta`` are ignored; with ``heads`` or ``presence < 1`` the
        terms of the aligned heads (:func:`heads_terms`).
    m_k, q_k : key overlaps ``k.k*/D`` and ``k.k/D``, ``q_k >= m_k^2``.
    c : trained offset of the erf and Bayes-softmax activations (ignored by the others).

    Returns
    -------
    (A_s, B_s) : ``E[s(chi)_eps]`` and ``E[sum_l s(chi)_l^2]``, quadrature error below 1e-7.
    """
    activation = theory_terms_of(activation).name
    m_k, r = check_key_overlaps(m_k, q_k)
    terms = terms_with_bounds(activation, config, m_k, r, float(c))
    return terms.A, terms.B


def population_error(
    activation: str,
    config: SLRConfig,
    m_k: float,
    q_k: float,
    m_v: float,
    q_v: float,
    c: float = 0.0,
) -> float:
    """Excess population test error ``1 - 2 m_v A_s + q_v B_s`` at the given overlaps.

    Parameters
    ----------
    activation, config, m_k, q_k, c : as in :func:`population_terms`.
    m_v, q_v : value overlaps ``v.v*/D`` and ``v.v/D``, ``q_v >= m_v^2``.
    """
    m_v, q_v = check_value_overlaps(m_v, q_v)
    a_value, b_value = population_terms(activation, config, m_k, q_k, c)
    return 1.0 - 2.0 * m_v * a_value + q_v * b_value
