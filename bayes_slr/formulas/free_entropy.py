"""The replica free entropy (potential) of the Bayes-optimal SLR problem and its mutual information.

Convention (docs/theory.md part B, "Free entropy"): with ``Z_D = int dP(k) dP(v) prod_mu
w(y_mu | h_mu)``, ``w`` the per-sample likelihood divided by the Gaussian law of the tokens
(location summed out, tilt included, ``|k|^2 = D``), the free entropy is ``f = lim (1/D) E log
Z_D``. The replica-symmetric formula, after the conjugate overlaps of the Gaussian priors are
eliminated (``qhat = q / (1 - q)``), is ``f = max Phi`` over the fixed points of

    Phi(q_k, q_v; alpha) = phi0(q_k) + phi0(q_v) + alpha psi(q_k, q_v),
    phi0(q) = (q + log(1 - q)) / 2,     psi(q) = E log Z_out(y, omega, 1 - q),

whose stationary points are the state-evolution fixed points (``d Phi / d q_a = (alpha score_a -
q_a / (1 - q_a)) / 2``). The mutual information per dimension between the teacher and the data
is ``I / D = alpha psi(1, 1) - f`` (``psi(1, 1) = E log w(y | h*)``, the data's log-likelihood
under the teacher). It is infinite for ``Delta = 0``, where the branch that recovers ``v`` exactly
has ``Phi = +inf`` for ``alpha > 1`` (``(1 - alpha) / 2 log(1 - q_v) -> +inf``) and ``-inf`` below.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes_channel import BayesChannel


def prior_free_entropy(q: float) -> float:
    """``phi0(q) = (q + log(1 - q)) / 2``: the Gaussian prior's term, ``-inf`` at ``q = 1``."""
    return 0.5 * (q + math.log1p(-q)) if q < 1.0 else -math.inf


@dataclasses.dataclass(frozen=True)
class FreeEntropy:
    """``Phi(q_k, q_v; alpha)`` and its parts.

    Attributes
    ----------
    value : ``Phi`` (``+inf`` / ``-inf`` on the perfect-recovery branch at ``Delta = 0``).
    stderr : its Monte Carlo standard error (``alpha`` times that of ``psi``; 0 for quadrature).
    prior : ``phi0(q_k) + phi0(q_v)``.
    channel : ``alpha psi(q)``.
    """

    value: float
    stderr: float
    prior: float
    channel: float


def free_entropy(
    channel: BayesChannel, alpha: float, q_k: float, q_v: float, *, perfect_recovery: bool = False
) -> FreeEntropy:
    """The potential ``Phi`` at any overlaps (module docstring), from ``channel``.

    ``perfect_recovery`` (``Delta = 0``, ``q_v = 1``): ``Phi = +inf`` for ``alpha > 1`` and
    ``-inf`` for ``alpha < 1`` (the divergent ``(1 - alpha) / 2 log(1 - q_v)``).
    """
    if perfect_recovery:
        if channel.config.Delta > 0:
            raise ConfigError("perfect_recovery: only with Delta = 0")
        value = math.inf if alpha > 1.0 else -math.inf if alpha < 1.0 else math.nan
        return FreeEntropy(value, 0.0, -math.inf, math.inf)
    for name, q in (("q_k", q_k), ("q_v", q_v)):
        if not 0.0 <= q < 1.0:
            raise ConfigError(f"{name} must be in [0, 1) for the free entropy, got {q!r}")
    value = channel.value(np.array([q_k, q_v]))
    prior = prior_free_entropy(q_k) + prior_free_entropy(q_v)
    return FreeEntropy(
        prior + alpha * value.psi, alpha * value.psi_stderr, prior, alpha * value.psi
    )


def teacher_log_likelihood(channel: BayesChannel) -> tuple[float, float]:
    """``(psi(1, 1), stderr)``: ``E log w(y | h*)`` per sample under the data's own law (``Delta >
    0``)."""
    if channel.config.Delta <= 0.0:
        raise ConfigError(
            "Delta must be > 0 for the data's log-likelihood (y has no density at Delta = 0)"
        )
    value = channel.value(np.ones(2))
    return value.psi, value.psi_stderr


def mutual_information(
    channel: BayesChannel, alpha: float, potential: FreeEntropy
) -> tuple[float, float]:
    """``(I / D, stderr)`` with ``I / D = alpha psi(1, 1) - Phi`` at the Bayes-optimal fixed point
    (the global maximiser of ``Phi``); ``inf`` for ``Delta = 0``."""
    if channel.config.Delta == 0.0:
        return math.inf, 0.0
    psi_teacher, stderr = teacher_log_likelihood(channel)
    return alpha * psi_teacher - potential.value, math.hypot(alpha * stderr, potential.stderr)
