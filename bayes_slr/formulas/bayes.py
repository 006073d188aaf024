"""Exact Bayes error at population level (docs/model.md section 2).

``E_Bayes = 1 - E[sum_l p_l^2]``, ``p = softmax(c_nu chi*)``: the ``B`` term of softmax
attention at ``k = c_nu k*``. Under the spiked law the location's score is
``N(nu, nu)`` and the others ``N(0, nu)``; under max-SLR all scores are i.i.d.
``N(0, nu^2)`` (the location does not change the law of ``X``). Either way the
tokens are independent and ``E[sum p^2] = int du {...}`` is one ``log t``
integral of one-dimensional Gaussian expectations (:mod:`bayes_slr.formulas.normalised`).
For max-SLR with ``nu = inf`` the location is the argmax of ``chi*``, a function of
``X``: the Bayes error is 0.
"""

from __future__ import annotations

import math
from typing import NamedTuple

from bayes_slr.formulas import normalised
from bayes_slr.formulas.population import length_support, location_mean
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.integrals import BOUND_FLOOR


class ExactValue(NamedTuple):
    """A value from quadrature with a bound: ``|value - truth| <= error_bound``."""

    value: float
    error_bound: float


def bayes_error_exact(config: SLRConfig) -> ExactValue:
    """Population Bayes error ``1 - E[sum_l p_l^2]`` averaged over the length law.

    Parameters
    ----------
    config : SLRConfig
        The task; ``D`` and ``Delta`` are ignored.

    Returns
    -------
    ExactValue
        The error and a bound on its quadrature error (below 1e-7; typically 1e-9):
        the difference between the rule used and the nested rule of half its
        resolution, plus the truncation bound.
    """
    if math.isinf(config.c_nu):  # the location is a function of X (argmax): no error
        return ExactValue(0.0, 0.0)
    scale = (
        config.c_nu
    )  # the scores c_nu chi* have mean c_nu * shift at the location and spread |c_nu|
    fine, coarse = normalised.independent_terms(
        "softmax", location_mean(config, scale), abs(scale), *length_support(config)
    )[:, 1]
    return ExactValue(float(1.0 - fine), float(abs(fine - coarse)) + BOUND_FLOOR)
