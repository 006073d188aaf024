"""The settings and typed row of the Bayes-risk study (:mod:`bayes_slr.studies.bayes_risk`). It
imports without JAX."""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class BayesRiskSettings(Record):
    """How the Bayes error of a task is computed (built by the experiment from its options).

    Attributes
    ----------
    method : ``exact`` (quadrature) or ``mc`` (Monte Carlo).
    mc_sequences : sequences drawn by ``mc``.
    variable_length : the task's length law as given (a label of the row).
    """

    method: str
    mc_sequences: int
    variable_length: bool


@dataclasses.dataclass(frozen=True)
class BayesRiskRow(Record):
    """The Bayes error of one ``(L, nu)``.

    Attributes
    ----------
    variant, L, variable_length, nu : the task.
    bayes_error : ``1 - E[sum_l p_l^2]``, the excess error of the Bayes estimator over ``Delta``
        (``1 - E[sum_l q_l^2] / rho`` for several heads, docs/multihead.md).
    stderr : quadrature error bound (``exact``) or Monte Carlo standard error (``mc``).
    method : ``exact`` or ``mc``.
    heads, presence : the task's heads ``H`` and presence ``rho``.
    """

    variant: str
    L: int
    variable_length: bool
    nu: float
    bayes_error: float
    stderr: float
    method: str
    heads: int = 1
    presence: float = 1.0
