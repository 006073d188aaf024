"""The evidence for a claim: each side measured by the route that fits it, and the difference
``left - right`` with its standard error, teachers added in batches until it is decided.

A side measured once (:func:`side_value`) is a quadrature (the Bayes error, a population optimum:
its bound), an equation solved with Monte Carlo inside (the replica prediction, the state
evolution: their standard errors) or a number. A side measured per teacher (:func:`teacher_batch`)
is ERM (with the oracle and the zero predictor on the same test sequences of each teacher) or the
posterior. Two ERM sides at the same seed share their teachers and training sets
(:func:`~bayes_slr.studies.erm.seed_keys`), so their difference is paired teacher by teacher:
each teacher's luck cancels. :func:`claim_evidence` adds batches of ``teachers`` (each batch its
own seed) until the decision's p-value, counted over every batch it could look at and over the
family's claims, is below the level, the standard error is below a target, or ``max_teachers``
is reached; batches already stored are read back, never recomputed.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence

import numpy as np

from bayes_slr.models.spec import SLRConfig, task_config
from bayes_slr.numerics.decision import DifferenceEstimate, decision_p_value
from bayes_slr.numerics.paired import paired_difference
from bayes_slr.studies.claims_records import (
    ESTIMATORS,
    Claim,
    ClaimEvidence,
    ClaimTask,
    Quantity,
    SideValue,
    TeacherValues,
)
from bayes_slr.studies.claims_verdict import claim_p_values

BATCH_SEED_STRIDE = 1_000_003
"""Batch ``b`` of a claim at root seed ``s`` draws its teachers from seed ``s + b * stride``: the
batches' teachers are distinct, and the same batch at the same seed is the same teachers."""


def claim_config(task: ClaimTask) -> SLRConfig:
    """The SLR task of a claim (``D`` of its finite-data sides)."""
    return task_config(
        task.variant,
        task.L,
        task.variable_length,
        task.nu,
        task.Delta,
        task.D,
        task.heads,
        task.presence,
    )


def side_value(claim: Claim, quantity: Quantity, seed: int) -> SideValue:
    """A side measured once, with its standard error or bound."""
    config = claim_config(claim.task)
    name = quantity.estimator
    if name == "value":
        return SideValue(float(quantity.value))
    if name == "bayes":
        return _bayes(config)
    if name == "population":
        return _population(config, quantity.activation, seed)
    if name == "replica":
        return _replica(config, claim.task, quantity.activation, seed)
    if name == "state_evolution":
        return _state_evolution(config, claim.task, seed)
    raise AssertionError(f"{name} is measured per teacher")


@functools.lru_cache(maxsize=8)
def _bayes(config: SLRConfig) -> SideValue:
    """The Bayes error by quadrature, its bound (kept: a multi-head optimum's scope and the
    claim's Bayes side ask for the same quadrature)."""
    from bayes_slr.formulas.bayes import bayes_error_exact

    value = bayes_error_exact(config)
    return SideValue(float(value.value), bound=float(value.error_bound))


def _population(config: SLRConfig, activation: str, seed: int) -> SideValue:
    """An activation's population optimum; on a multi-head task where the optimum of aligned
    heads is only an upper bound, the optimum over all overlaps by search, with the Monte Carlo
    error of its score on fresh sequences (:func:`_all_overlaps`)."""
    from bayes_slr.formulas.optimum import optimal_population_error

    optimum = optimal_population_error(activation, config)
    error = float(optimum.error)
    if config.multihead:
        from bayes_slr.studies.gap import optimum_scope
        from bayes_slr.studies.gap_records import UPPER_BOUND

        if optimum_scope(config, error, _bayes(config).value) == UPPER_BOUND:
            return _all_overlaps(config, activation, seed)
        return SideValue(error)
    return SideValue(error, upper_bound="boundary" in optimum.overlaps.note)


@functools.lru_cache(maxsize=8)
def _all_overlaps(config: SLRConfig, activation: str, seed: int) -> SideValue:
    """The optimum of ``H`` student heads over all overlaps and its standard error (kept: two
    claims may ask for the same)."""
    from bayes_slr.formulas.all_overlaps import all_overlaps_optimum

    found = all_overlaps_optimum(activation, config, seed=seed)
    return SideValue(found.error, found.stderr)


def _replica(config: SLRConfig, task: ClaimTask, activation: str, seed: int) -> SideValue:
    """The replica prediction of ERM at ``alpha`` and ``lam``, with its standard error (the
    spread of its solutions on independent scramblings of the channel's quasi-random draws,
    :func:`~bayes_slr.formulas.replica_erm.erm_replica_point`)."""
    from bayes_slr.formulas.replica_erm import erm_replica_point

    point = erm_replica_point(
        config, activation, alpha=task.alpha, lam=float(task.lam), init="random", seed=seed
    )
    return SideValue(float(point.test_error), float(point.stderr))


def _state_evolution(config: SLRConfig, task: ClaimTask, seed: int) -> SideValue:
    """The Bayes-optimal state evolution's error at ``alpha`` (the fixed point of largest free
    entropy) with its standard error (0 where the channel is a quadrature)."""
    from bayes_slr.formulas.bayes_channel import BayesChannel
    from bayes_slr.formulas.phase import bayes_branches

    branches = bayes_branches(config, task.alpha, channel=BayesChannel(config, seed=seed))
    stderr = float(branches.bayes.test_error_stderr)
    return SideValue(float(branches.bayes.test_error), 0.0 if math.isnan(stderr) else stderr)


def teacher_batch(claim: Claim, batch: int, seed: int) -> TeacherValues:
    """Batch ``batch`` of ``claim.teachers`` teachers: each per-teacher side's values."""
    batch_seed = seed + batch * BATCH_SEED_STRIDE
    family = {"erm": _erm_values, "posterior": _posterior_values, "sgd": _sgd_values}
    values = family[claim.per_teacher](claim, batch_seed)
    left, right = (values.get(_key(q)) for q in (claim.left, claim.right))
    return TeacherValues(
        batch,
        None if left is None else left[0],
        None if left is None else left[1],
        None if right is None else right[0],
        None if right is None else right[1],
    )


PerTeacher = dict[str, tuple[tuple[float, ...], tuple[float, ...]]]
"""Per-teacher values and standard errors by side key (:func:`_key`)."""


def _key(quantity: Quantity) -> str:
    return quantity.describe()


def _erm_values(claim: Claim, batch_seed: int) -> PerTeacher:
    """ERM of each ERM side's activation on the batch's teachers; the oracle and the zero
    predictor on the first ERM side's test sequences."""
    from bayes_slr.attention.erm_settings import ERMSettings
    from bayes_slr.studies.erm import erm_study

    config = claim_config(claim.task)
    settings = ERMSettings(
        alpha=claim.task.alpha,
        lam=claim.task.lam,
        seeds=claim.teachers,
        exact_teacher=claim.task.teacher == "exact",
        predict_population=False,
    )
    values: PerTeacher = {}
    for quantity in (q for q in (claim.left, claim.right) if q.estimator == "erm"):
        summary = erm_study(config, settings.replace(activation=quantity.activation), batch_seed)
        seeds = summary.per_seed
        values[_key(quantity)] = (
            tuple(r.test_error for r in seeds),
            tuple(r.stderr for r in seeds),
        )
        values.setdefault(
            "oracle",
            (
                tuple(r.oracle.test_error for r in seeds),
                tuple(r.oracle.stderr for r in seeds),
            ),
        )
        values.setdefault(
            "zero",
            (
                tuple(r.zero_error for r in seeds),
                tuple(r.zero_stderr for r in seeds),
            ),
        )
    return values


def _posterior_values(claim: Claim, batch_seed: int) -> PerTeacher:
    """The posterior of each of the batch's teachers, its Bayes-optimal error with the teacher's
    luck removed: ``bayes - oracle`` (paired on the same sequences) plus the population Bayes
    error."""
    from bayes_slr.studies.posterior_scaling import ScalingSampling, teacher_errors

    config = claim_config(claim.task)
    population = _bayes(config).value
    sampling = ScalingSampling(exact_teacher=claim.task.teacher == "exact")
    errors = [
        teacher_errors(config, claim.task.alpha, batch_seed + i, sampling)
        for i in range(claim.teachers)
    ]
    return {
        "posterior": (
            tuple(e.bayes_minus_oracle + population for e in errors),
            tuple(e.bayes_minus_oracle_stderr for e in errors),
        )
    }


def _sgd_values(claim: Claim, batch_seed: int) -> PerTeacher:
    """Online SGD of each SGD side's activation (the ``dynamics`` command's defaults at the
    claim's ``D``), one run per teacher of the batch: its final test error."""
    from bayes_slr.studies.dynamics import dynamics_point
    from bayes_slr.studies.dynamics_methods import DynamicsRequest, get_dynamics_method

    config = claim_config(claim.task)
    method = get_dynamics_method("sgd")
    settings = method.settings(DynamicsRequest(D=claim.task.D))
    values: PerTeacher = {}
    for quantity in (q for q in (claim.left, claim.right) if q.estimator == "sgd"):
        point = dataclasses.replace(settings, activation=quantity.activation)
        runs = [dynamics_point(config, point, batch_seed + i) for i in range(claim.teachers)]
        values[_key(quantity)] = (
            tuple(run.final_error for run in runs),
            tuple(run.final_stderr for run in runs),
        )
    return values


def estimate(
    left: SideValue | None, right: SideValue | None, batches: Sequence[TeacherValues]
) -> tuple[DifferenceEstimate, float, float, int]:
    """The difference ``left - right`` from the sides measured once (``left``, ``right``) and the
    per-teacher batches: ``(estimate, left mean, right mean, teachers)``.

    Per teacher, ``d_i = left_i - right_i``, their mean and its standard error by
    :func:`~bayes_slr.numerics.paired.paired_difference` (the spread over teachers, floored by the
    pooled Monte Carlo error; one teacher: its Monte Carlo error), with ``n - 1`` degrees of
    freedom. A side measured once adds its standard error in quadrature and its bound.
    """
    once = [side for side in (left, right) if side is not None]
    extra_var = sum(side.stderr**2 for side in once)
    bound = sum(side.bound for side in once)
    if not batches:
        d = left.value - right.value
        return DifferenceEstimate(d, math.sqrt(extra_var), bound), left.value, right.value, 0
    a, a_se = _column(batches, "left", left)
    b, b_se = _column(batches, "right", right)
    paired = paired_difference(a, b, a_se, b_se)
    stderr = math.sqrt(paired.stderr**2 + extra_var)
    dof = paired.n - 1 if paired.n > 1 else math.inf
    return (
        DifferenceEstimate(paired.value, stderr, bound, dof),
        float(a.mean()),
        float(b.mean()),
        paired.n,
    )


def _column(
    batches: Sequence[TeacherValues], side: str, once: SideValue | None
) -> tuple[np.ndarray, np.ndarray]:
    """One side's per-teacher values and Monte Carlo errors over the batches (a side measured
    once repeated, its error counted separately)."""
    if once is not None:
        count = sum(len(b.left or b.right) for b in batches)
        return np.full(count, once.value), np.zeros(count)
    values = np.concatenate([getattr(b, side) for b in batches])
    errors = np.concatenate([getattr(b, f"{side}_stderr") for b in batches])
    return values, errors


def claim_evidence(
    claim: Claim,
    seed: int,
    threshold: float,
    target_stderr: float | None = None,
    stored: Callable[[int], TeacherValues | None] = lambda batch: None,
    store: Callable[[TeacherValues], None] = lambda values: None,
) -> ClaimEvidence:
    """The evidence for ``claim``: its sides measured, teachers added batch by batch.

    Parameters
    ----------
    claim : the claim.
    seed : root seed of its teachers and Monte Carlo draws.
    threshold : the p-value at which its decision stops the batches (the family's level over
        its number of claims: Holm then decides it whatever the other claims' p-values).
    target_stderr : stop once the difference's standard error is below it (``None``: only a
        decision or the cap stops).
    stored, store : read a batch kept before (``None`` if none), keep a finished one.
    """
    start = time.perf_counter()
    left, right = (
        None if ESTIMATORS[q.estimator].per_teacher else side_value(claim, q, seed)
        for q in (claim.left, claim.right)
    )
    bounded = [
        name for name, side in (("left", left), ("right", right)) if side and side.upper_bound
    ]
    one_sided = " and ".join(bounded)
    batches: list[TeacherValues] = []
    stopped = ""
    while claim.per_teacher is not None:
        batch = len(batches)
        values = stored(batch)
        if values is None:
            values = teacher_batch(claim, batch, seed)
            store(values)
        batches.append(values)
        found, *_ = estimate(left, right, batches)
        p = decision_p_value(*claim_p_values(claim, found, one_sided), claim.looks)
        if p <= threshold:
            stopped = "decided"
        elif target_stderr is not None and found.stderr <= target_stderr:
            stopped = "target stderr"
        elif (batch + 1) * claim.teachers >= claim.max_teachers:
            stopped = "cap"
        if stopped:
            break
    found, left_mean, right_mean, teachers = estimate(left, right, batches)
    return ClaimEvidence(
        left=left_mean,
        right=right_mean,
        difference=found.value,
        stderr=found.stderr,
        bound=found.bound,
        dof=found.dof,
        teachers=teachers,
        looks=claim.looks,
        stopped=stopped,
        one_sided=one_sided,
        batches=tuple(batches),
        seconds=time.perf_counter() - start,
        fixed_stderr=math.sqrt(sum(side.stderr**2 for side in (left, right) if side is not None)),
    )
