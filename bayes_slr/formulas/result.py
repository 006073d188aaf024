"""The record of one point of a high-dimensional theory curve (its diagnostics typed by the
equations solved), and the solver options it shares."""

from __future__ import annotations

import dataclasses
import math

from bayes_slr.errors import Accepts, Integer, OneOf, accepted_values
from bayes_slr.inference.amp_settings import damping_accepted
from bayes_slr.models.spec import INITS
from bayes_slr.numerics.record import Record

REPLICA_DRAWS = 32_768
"""Channel points of a replica ERM solve, all replicates together (the default of every caller:
:func:`~bayes_slr.formulas.replica_erm.erm_replica_point`, ``theory``, a claim)."""
REPLICA_REPLICATES = 8
"""Independent scramblings per replica ERM point: each one's fixed point, to first order about the
point, and their spread is its standard error."""
REPLICA_TARGET_STDERR = 1e-3
"""Standard error of the test error that ``theory`` asks of a replica ERM point at its default
channel points: a point above it is solved again on more points of the same scramblings
(:func:`~bayes_slr.formulas.replica_erm.erm_replica_point`'s ``target_stderr``)."""
REPLICA_MAX_DRAWS = 8 * REPLICA_DRAWS
"""The most channel points a replica ERM point takes to reach its ``target_stderr``."""


SOLVER_ACCEPTS: dict[str, Accepts] = {
    "init": OneOf(INITS),
    "mc_samples": Integer(2),
    "damping": damping_accepted,
    "max_iter": Integer(1),
}
"""The accepted range of each option common to the replica solvers."""


def check_solver_options(
    init: object, mc_samples: object, damping: object, max_iter: object
) -> tuple[str, int, float, int]:
    """Validate the options common to the replica solvers; raise ``ConfigError`` naming the bad one.

    Returns ``(init, mc_samples, damping, max_iter)``: ``init`` in :data:`INITS`,
    ``mc_samples >= 2``, ``0 < damping <= 1``, ``max_iter >= 1``.
    """
    given = {"init": init, "mc_samples": mc_samples, "damping": damping, "max_iter": max_iter}
    values = accepted_values(given, SOLVER_ACCEPTS)
    return values["init"], values["mc_samples"], values["damping"], values["max_iter"]


@dataclasses.dataclass(frozen=True)
class ERMTheoryDiagnostics(Record):
    """Checks of an ERM fixed point (docs/theory.md part A): the largest residual over the solves;
    the iterations, proximal stationarity and curvature, training objective and replicon of the
    solve on all the points; the standard errors (spread over the ``replicates``
    independent scramblings sharing ``mc_samples`` points, over the square root of their
    number) of the replicon, the test error and the overlaps (rows logged before them, from one
    Monte Carlo solve: ``nan``, empty, one replicate, and a ``replicon_stderr`` from the per-draw
    spread); ``target_stderr`` the test error's standard error the points were added to reach
    (``nan``: none, ``mc_samples`` fixed)."""

    residual: float
    iterations: int
    prox_max_stationarity: float
    prox_min_curvature: float
    train_objective: float
    replicon: float
    replicon_stderr: float
    rs_stable: bool
    mc_samples: int
    lam: float
    test_error_stderr: float = math.nan
    overlaps_stderr: dict[str, float] = dataclasses.field(default_factory=dict)
    replicates: int = 1
    target_stderr: float = math.nan


@dataclasses.dataclass(frozen=True)
class BayesTheoryDiagnostics(Record):
    """Checks of a Bayes-optimal fixed point (docs/theory.md part B); ``test_error_stderr`` and
    ``overlaps_stderr`` are the spread of the fixed points of ``replicates`` independent batches of
    the draws over the square root of their number (rows logged before them: the per-draw spread of
    the error at the point, empty, one replicate)."""

    residual: float
    iterations: int
    posterior_mean_f_error: float
    test_error_stderr: float
    monte_carlo_error: float
    monte_carlo_stderr: float
    nishimori_gap: float
    nishimori_gap_stderr: float
    mc_samples: int
    overlaps_stderr: dict[str, float] = dataclasses.field(default_factory=dict)
    replicates: int = 1


@dataclasses.dataclass(frozen=True)
class TheoryPoint:
    """One solved point of a replica-symmetric curve.

    Attributes
    ----------
    alpha : samples per dimension.
    estimator : an activation name (ERM) or ``"bayes"``.
    test_error : excess test error (docs/model.md convention) at the fixed point.
    stderr : its standard error (the draws' error propagated to the fixed point; 0 with none).
    overlaps : order parameters at the fixed point.
    converged : whether the fixed point was reached to tolerance (never trust the error otherwise).
    init : ``"random"`` (uninformed) or ``"informed"`` start of the iteration.
    diagnostics : residual, iterations and the checks of the equations solved.
    """

    alpha: float
    estimator: str
    test_error: float
    stderr: float
    overlaps: dict[str, float]
    converged: bool
    init: str
    diagnostics: ERMTheoryDiagnostics | BayesTheoryDiagnostics
