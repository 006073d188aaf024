"""The record of one point of a high-dimensional theory curve, and the solver options it shares."""

from __future__ import annotations

import dataclasses
from typing import Any

from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.models.spec import INITS


def check_solver_options(
    init: object, mc_samples: object, damping: object, max_iter: object
) -> tuple[str, int, float, int]:
    """Validate the options common to the replica solvers; raise ``ConfigError`` naming the bad one.

    Returns ``(init, mc_samples, damping, max_iter)``: ``init`` in :data:`INITS`,
    ``mc_samples >= 2``, ``0 < damping <= 1``, ``max_iter >= 1``.
    """
    init = check_choice("init", init, INITS)
    mc_samples = check_int("mc_samples", mc_samples, 2)
    damping = check_real("damping", damping, minimum=0.0, strict=True)
    if damping > 1:
        raise ConfigError(f"damping must be a number in (0, 1], got {damping!r}")
    return init, mc_samples, damping, check_int("max_iter", max_iter, 1)


@dataclasses.dataclass(frozen=True)
class TheoryPoint:
    """One solved point of a replica-symmetric curve.

    Attributes
    ----------
    alpha : samples per dimension.
    estimator : an activation name (ERM) or ``"bayes"``.
    test_error : excess test error (docs/model.md convention) at the fixed point.
    overlaps : order parameters at the fixed point.
    converged : whether the fixed point was reached to tolerance (never trust the error otherwise).
    init : ``"random"`` (uninformed) or ``"informed"`` start of the iteration.
    diagnostics : residual, iterations and method-specific checks.
    """

    alpha: float
    estimator: str
    test_error: float
    overlaps: dict[str, float]
    converged: bool
    init: str
    diagnostics: dict[str, Any]

    def to_row(self) -> dict[str, Any]:
        """The JSON row of ``bayes-slr theory --json``."""
        return dataclasses.asdict(self)
