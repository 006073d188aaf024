"""Where full-batch gradient descent ends, against the ERM minimum and the replica theory.

``bayes-slr dynamics --method gd`` descends the regularised empirical risk of one seed's training
set (docs/dynamics.md). This module puts its end beside two references of the same objective
(docs/dynamics.md, "Finite alpha"):

- the multi-start L-BFGS minimum on the same training set and ridge
  (:func:`~bayes_slr.studies.erm.erm_study` with the data given: the toolkit's ERM
  minimiser, its random starts and stopping rule ``|grad| <= 1e-6``), scored on the test sequences
  of the run (a paired comparison: both errors on the same sequences);
- the replica-symmetric ERM error at ``(alpha, lam)``
  (:func:`~bayes_slr.formulas.replica_erm.erm_replica_point`, the ``D -> inf`` limit), solved once
  per setting and activation; no number where the theory has no terms, did not converge or is
  RS-unstable (replicon ``>= 1``), a note instead.

**Ended at the ERM minimum** (``at_minimum``) needs three things, each with the tolerance its
computation allows:

- stationarity: GD's gradient norm at most the minimiser's own stopping rule
  (:data:`STATIONARITY`, what makes the L-BFGS point "the minimum"); a run still descending has
  not ended anywhere (its error may already agree: ``erm_reach_time``);
- the objective: ``|J_gd - J_lbfgs| <= max(|grad J_gd|, |grad J_lbfgs|) |theta_gd - theta_lbfgs|``
  (plus the float64 rounding of a sum, :data:`~bayes_slr.numerics.rounding.ROUNDING`): what the
  first-order bound of a function convex between the two points allows. Both ends in one basin
  satisfy it; a gradient-descent end at another critical point (small gradient, different value)
  does not;
- the test error: ``|e_gd - e_lbfgs| <= 2 sqrt(se_gd^2 + se_lbfgs^2)`` (:data:`ERROR_SIGMAS`
  Monte Carlo standard errors; conservative, the two errors share their test sequences): the two
  are indistinguishable in the reported number.

**Student heads** (a run of ``H_s`` heads on multi-head SLR, docs/multihead.md): the minimum
is the ERM trainer's L-BFGS (:func:`~bayes_slr.attention.training.train_problems`, its stopping
rule) on the same training set and ridge, from GD's end and :data:`HEADS_STARTS` random starts at
the prior's scale (small starts keep heads alike, docs/multihead.md section 7), the lowest
objective selected, and ``at_minimum`` reads as above; there is no replica number (the replica
ERM equations are one head's), no L-BFGS start from the teacher and no scalar overlaps (the
heads' are matrices).

Nothing here imports JAX at module level (the command line refuses bad values before JAX).
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from typing import Any, NamedTuple

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import Record
from bayes_slr.numerics.rounding import ROUNDING
from bayes_slr.studies.erm_records import ERMSeed

STATIONARITY = ERMSettings().tol
"""Gradient norm below which a point counts as stationary: L-BFGS's stopping rule in
``erm_study`` (``|grad| <= 1e-6``)."""
HEADS_STARTS = 4
"""Random L-BFGS starts of a run of student heads beside GD's end (module docstring)."""
HEADS_REPLICA_NOTE = "no replica ERM equations for student heads (docs/multihead.md section 11)"
ERROR_SIGMAS = 2.0
"""Test errors agree within this many combined Monte Carlo standard errors (the agreement rule of
``erm_study``'s restarts)."""
DEFAULT_REPLICA_SAMPLES = 8192
"""Channel points of the replica ERM equations, shared by 8 independent scramblings (docs/theory.md
part A); the error comes with its standard error (``replica_stderr``); a point costs 15 to 60 s,
once per activation."""
ERM_NOTE = (
    "lbfgs_error: the multi-start L-BFGS minimum of the same objective on the same training set, "
    "on the run's test sequences; replica_error: the replica-symmetric ERM error (D -> inf); "
    "objective_gap: gd minus L-BFGS objective; at_minimum: gd's gradient norm <= "
    f"{STATIONARITY:g} (L-BFGS's stopping rule), the gap within max(gradient norm) x distance "
    f"and the test errors within {ERROR_SIGMAS:g} combined standard errors; erm_reach_time: "
    "first logged time from which the gd error stays within that of the L-BFGS error"
)


@dataclasses.dataclass(frozen=True)
class ERMComparison(Record):
    """The end of one gd run against the L-BFGS minimum of its objective and the replica theory.

    Attributes
    ----------
    gd_objective, gd_grad_norm : GD's final objective (per sample, docs/model.md section 5) and
        the Euclidean norm of its gradient in ``(k, v, c)``.
    lbfgs_objective, lbfgs_grad_norm : the same at the L-BFGS minimum (the lowest objective of the
        random starts); ``lbfgs_converged``: its gradient norm reached the stopping rule.
    lbfgs_start_spread : largest minus smallest objective over the L-BFGS random starts (above
        ``objective_tolerance``: distinct local minima).
    informed_objective : L-BFGS from the teacher (a reference, never the minimum reported;
        ``None`` for student heads).
    objective_gap : ``gd_objective - lbfgs_objective`` (negative: GD found a lower point).
    objective_tolerance : ``max(gd_grad_norm, lbfgs_grad_norm) * distance`` plus rounding.
    distance : ``|theta_gd - theta_lbfgs|`` (Euclidean, ``(k, v, c)``); ``relative_distance`` the
        same over ``|theta_lbfgs|``.
    lbfgs_m_k, lbfgs_q_k, lbfgs_m_v, lbfgs_q_v, lbfgs_c : overlaps of the L-BFGS minimum (those of
        GD's end are the row's; ``None`` for student heads).
    lbfgs_error, lbfgs_stderr : its excess test error on the run's test sequences, and the Monte
        Carlo standard error.
    error_tolerance : ``2 sqrt(se_gd^2 + se_lbfgs^2)``.
    at_minimum : GD stationary, and both gaps within their tolerance (module docstring).
    erm_reach_time : first logged time from which GD's test error stays within
        ``error_tolerance`` of ``lbfgs_error`` (``None``: not at the end); ``erm_reach_step`` the
        step.
    replica_error, replica_stderr, replica_objective : the replica-symmetric ERM test error, its
        standard error (over the channel's scramblings) and the training objective at ``(alpha,
        lam)`` (``D -> inf``); ``None`` where ``replica_note`` says why.
    replica_replicon : its de Almeida-Thouless eigenvalue (``>= 1``: RS-unstable); ``None`` without
        a solution.
    replica_note : empty, or why there is no replica number.
    """

    gd_objective: float
    gd_grad_norm: float
    lbfgs_objective: float
    lbfgs_grad_norm: float
    lbfgs_converged: bool
    lbfgs_start_spread: float
    informed_objective: float | None
    objective_gap: float
    objective_tolerance: float
    distance: float
    relative_distance: float
    lbfgs_m_k: float | None
    lbfgs_q_k: float | None
    lbfgs_m_v: float | None
    lbfgs_q_v: float | None
    lbfgs_c: float | None
    lbfgs_error: float
    lbfgs_stderr: float
    error_tolerance: float
    at_minimum: bool
    erm_reach_time: float | None
    erm_reach_step: int | None
    replica_error: float | None
    replica_stderr: float | None
    replica_objective: float | None
    replica_replicon: float | None
    replica_note: str


class ReplicaReference(NamedTuple):
    """The replica-symmetric ERM point of a setting: its error, standard error and training
    objective (``None``
    where ``note`` says why), and its replicon (``None`` without a solution)."""

    error: float | None
    stderr: float | None
    objective: float | None
    replicon: float | None
    note: str


@functools.cache
def replica_reference(
    config: Any, activation: str, alpha: float, lam: float, samples: int
) -> ReplicaReference:
    """The replica-symmetric ERM error of ``activation`` at ``(alpha, lam)`` from the uninformed
    start (cached: every seed of a setting shares it).

    Returns
    -------
    ReplicaReference
        No number (a note instead) where the theory has no terms for the activation or task, the
        equations did not converge, or the point is RS-unstable (docs/theory.md).
    """
    from bayes_slr.formulas.replica_erm import erm_replica_point

    try:
        point = erm_replica_point(config, activation, alpha=alpha, lam=lam, mc_samples=samples)
    except ConfigError as exc:
        return ReplicaReference(None, None, None, None, f"no replica theory: {exc}")
    replicon = point.diagnostics.replicon
    replicon = None if math.isnan(replicon) else float(replicon)
    if not point.converged or replicon is None:
        last = "" if replicon is None else f" (replicon {replicon:.3g} at the last iterate)"
        return ReplicaReference(
            None, None, None, replicon, f"replica equations did not converge{last}: no number"
        )
    if replicon >= 1.0:
        return ReplicaReference(
            None,
            None,
            None,
            replicon,
            f"RS-unstable (replicon {replicon:.3g} >= 1): its error {point.test_error:.4g} does "
            "not describe ERM",
        )
    return ReplicaReference(
        point.test_error, point.stderr, float(point.diagnostics.train_objective), replicon, ""
    )


def replica_warnings(rows: Sequence[Any]) -> list[str]:
    """One line per activation of ``rows`` (``DynamicsRow``) whose replica point has no number,
    saying why."""
    notes = {
        row.activation: row.erm.replica_note for row in rows if row.erm and row.erm.replica_note
    }
    return [f"{activation}: replica theory: {note}" for activation, note in notes.items()]


def settle_index(values: Sequence[float], target: float, tolerance: float) -> int | None:
    """First index from which every later value lies within ``tolerance`` of ``target``
    (``None``: the last does not)."""
    first = len(values)
    while first > 0 and abs(values[first - 1] - target) <= tolerance:
        first -= 1
    return None if first == len(values) else first


def _lbfgs_minimum(run: Any, teacher: Any, training_set: Any) -> tuple[Any, ERMSeed]:
    """The multi-start L-BFGS minimum of the run's objective on its training set: the selected
    parameters and ``erm_study``'s record of the seed."""
    import jax

    from bayes_slr.studies.erm import erm_study

    settings = ERMSettings(
        activation=run.activation, lam=run.lam, N_test=run.N_test, predict_population=False
    )
    summary = erm_study(run.config, settings, run.seed, data=(teacher, training_set))
    return jax.tree_util.tree_map(lambda leaf: leaf[0], summary.params), summary.per_seed[0]


def _distance(first: Any, second: Any) -> float:
    """Euclidean distance between two parameter sets ``(k, v, c)``."""
    import optax

    return float(optax.tree_utils.tree_norm(optax.tree_utils.tree_sub(first, second)))


def compare_with_erm(trajectory: Any, replica_samples: int) -> ERMComparison:
    """The end of a gd ``trajectory`` (of :func:`~bayes_slr.attention.dynamics.train_dynamics`,
    on its seed's teacher and training set) against the L-BFGS minimum and the replica theory.

    Parameters
    ----------
    trajectory : a gd run's trajectory (its ``settings``: the task, activation, ``alpha``,
        ``lam``, seed).
    replica_samples : channel draws of the replica equations.

    Returns
    -------
    ERMComparison
    """
    import optax

    from bayes_slr.attention.dynamics import run_test_error, seed_teacher, seed_training_set
    from bayes_slr.attention.training import objective_and_grad_norm
    from bayes_slr.models.scoring import direction_overlaps

    run = trajectory.settings
    teacher = seed_teacher(run)
    training_set = seed_training_set(run, teacher)
    if run.heads_run:
        return _heads_comparison(trajectory, teacher, training_set)
    minimum, record = _lbfgs_minimum(run, teacher, training_set)
    gd_end, last = trajectory.final, trajectory.last
    error = run_test_error(run, teacher, minimum)
    gd_grad_norm = float(objective_and_grad_norm(gd_end, training_set, run.activation, run.lam)[1])
    distance = _distance(gd_end, minimum)
    gap = float(last.loss) - record.train_loss
    objective_tolerance = max(gd_grad_norm, record.grad_norm) * distance + ROUNDING
    error_tolerance = ERROR_SIGMAS * math.hypot(float(last.test_stderr), error.stderr)
    reach = settle_index(trajectory.column("test_error"), error.value, error_tolerance)
    reached = None if reach is None else trajectory.points[reach]
    overlaps = direction_overlaps(minimum.k, minimum.v, teacher)
    replica = replica_reference(run.config, run.activation, run.alpha, run.lam, replica_samples)
    starts = record.starts.train_loss
    return ERMComparison(
        gd_objective=float(last.loss),
        gd_grad_norm=gd_grad_norm,
        lbfgs_objective=record.train_loss,
        lbfgs_grad_norm=record.grad_norm,
        lbfgs_converged=record.converged,
        lbfgs_start_spread=max(starts) - min(starts),
        informed_objective=record.informed.train_loss,
        objective_gap=gap,
        objective_tolerance=objective_tolerance,
        distance=distance,
        relative_distance=distance / float(optax.tree_utils.tree_norm(minimum)),
        lbfgs_m_k=float(overlaps["m_k"]),
        lbfgs_q_k=float(overlaps["q_k"]),
        lbfgs_m_v=float(overlaps["m_v"]),
        lbfgs_q_v=float(overlaps["q_v"]),
        lbfgs_c=float(minimum.c),
        lbfgs_error=error.value,
        lbfgs_stderr=error.stderr,
        error_tolerance=error_tolerance,
        at_minimum=gd_grad_norm <= STATIONARITY
        and abs(gap) <= objective_tolerance
        and abs(float(last.test_error) - error.value) <= error_tolerance,
        erm_reach_time=None if reached is None else float(reached.time),
        erm_reach_step=None if reached is None else int(reached.step),
        replica_error=replica.error,
        replica_stderr=replica.stderr,
        replica_objective=replica.objective,
        replica_replicon=replica.replicon,
        replica_note=replica.note,
    )


def _heads_minimum(run: Any, training_set: Any, gd_end: Any) -> tuple[Any, Any, Any]:
    """The ERM trainer's L-BFGS on the run's objective from GD's end and :data:`HEADS_STARTS`
    random starts ``k_j, v_j ~ N(0, I_D)``: the parameters, objectives and gradient norms of
    every start, GD's end first."""
    import jax
    import jax.numpy as jnp
    import numpy as np

    from bayes_slr.attention.dynamics import run_keys
    from bayes_slr.attention.estimators import AttentionParams
    from bayes_slr.attention.training import train_problems

    shape = (HEADS_STARTS, run.student_heads, run.config.D)
    k, v = jax.random.normal(jax.random.fold_in(run_keys(run.seed).start, 1), (2, *shape))
    random = AttentionParams(k, v, jnp.zeros(shape[:2]))
    starts = jax.tree_util.tree_map(lambda end, r: jnp.concatenate([end[None], r]), gd_end, random)
    settings = ERMSettings()
    return jax.tree_util.tree_map(
        lambda leaf: leaf[0, 0],
        train_problems(
            jax.tree_util.tree_map(lambda leaf: leaf[None, None], starts),
            jax.tree_util.tree_map(lambda leaf: leaf[None], training_set),
            np.full((1, 1), run.lam),
            activation=run.activation,
            optimizer="lbfgs",
            tol=settings.tol,
            max_iter=settings.max_iter,
            vectorised=True,
        )[:3],
    )


def _heads_comparison(trajectory: Any, teacher: Any, training_set: Any) -> ERMComparison:
    """:func:`compare_with_erm` of a run of student heads (module docstring)."""
    import jax
    import numpy as np
    import optax

    from bayes_slr.attention.dynamics import run_test_error
    from bayes_slr.attention.training import objective_and_grad_norm

    run, gd_end, last = trajectory.settings, trajectory.final, trajectory.last
    params, objectives, grad_norms = _heads_minimum(run, training_set, gd_end)
    objectives, grad_norms = np.asarray(objectives), np.asarray(grad_norms)
    best = int(np.argmin(objectives))
    minimum = jax.tree_util.tree_map(lambda leaf: leaf[best], params)
    value, gd_grad_norm = (
        float(x) for x in objective_and_grad_norm(gd_end, training_set, run.activation, run.lam)
    )
    error = run_test_error(run, teacher, minimum)
    distance = _distance(gd_end, minimum)
    gap = value - float(objectives[best])
    objective_tolerance = max(gd_grad_norm, float(grad_norms[best])) * distance + ROUNDING
    error_tolerance = ERROR_SIGMAS * math.hypot(last.test_stderr, error.stderr)
    reach = settle_index([p.test_error for p in trajectory.points], error.value, error_tolerance)
    reached = None if reach is None else trajectory.points[reach]
    none = dict.fromkeys(("lbfgs_m_k", "lbfgs_q_k", "lbfgs_m_v", "lbfgs_q_v", "lbfgs_c"))
    return ERMComparison(
        gd_objective=value,
        gd_grad_norm=gd_grad_norm,
        lbfgs_objective=float(objectives[best]),
        lbfgs_grad_norm=float(grad_norms[best]),
        lbfgs_converged=bool(grad_norms[best] <= STATIONARITY),
        lbfgs_start_spread=float(np.ptp(objectives)),
        informed_objective=None,
        objective_gap=gap,
        objective_tolerance=objective_tolerance,
        distance=distance,
        relative_distance=distance / float(optax.tree_utils.tree_norm(minimum)),
        **none,
        lbfgs_error=error.value,
        lbfgs_stderr=error.stderr,
        error_tolerance=error_tolerance,
        at_minimum=gd_grad_norm <= STATIONARITY
        and abs(gap) <= objective_tolerance
        and abs(last.test_error - error.value) <= error_tolerance,
        erm_reach_time=None if reached is None else float(reached.time),
        erm_reach_step=None if reached is None else int(reached.step),
        replica_error=None,
        replica_stderr=None,
        replica_objective=None,
        replica_replicon=None,
        replica_note=HEADS_REPLICA_NOTE,
    )
