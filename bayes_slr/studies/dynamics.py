"""One ``dynamics`` point: a method's run of one ``(activation, seed)`` and how it ended; and the
specialisation of student heads against ``D``.

:func:`dynamics_point` takes the task, a method's settings record
(:mod:`bayes_slr.studies.dynamics_methods`: with the point's activation and number of student
heads) and the seed, runs the method, and returns a typed row
(:data:`~bayes_slr.studies.dynamics_records.DynamicsRun`): with one head a
:class:`~bayes_slr.studies.dynamics_records.DynamicsRow` (the logged trajectory, the end, the
activation's population optimum and the Bayes error, the escape and reach times, and the
method's own comparison, ``gd``: the ERM minimum); with ``H_s`` student heads on multi-head
SLR (docs/multihead.md, "Dynamics") a
:class:`~bayes_slr.studies.dynamics_records.HeadsDynamicsRow`, the run read for specialisation
(:func:`read_specialisation`) beside the aligned heads' optimum and the Bayes error.

**Specialisation.** A run of heads is read through the cosines of the student keys with the
teacher keys: the time each cosine first reaches the level (0.5: from the small start every head
first turns towards the sum of the teacher keys, whose cosine with each is ``1/sqrt(H)``, so
this marks leaving the start), the teacher head each student head ends matched with, and the
time each head specialises (its cosine with that teacher head exceeds its cosine with every
other by the level). The plateau is the time between leaving the start and the last head's
specialisation; a run whose heads are not all specialised at ``t_max`` has stalled.
:func:`specialisation_study` runs online SGD of the heads at several ``D`` and seeds and
summarises these times per ``D``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np

from bayes_slr.attention.trajectory import HeadsTrajectory, as_matrix, first_crossing
from bayes_slr.errors import ConfigError
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.dynamics_methods import (
    DEFAULT_TOLERANCE,
    DynamicsSettings,
    get_dynamics_method,
)
from bayes_slr.studies.dynamics_records import (
    ESCAPE_LEVEL,
    POINT_FIELDS,
    SPECIALISATION_LEVEL,
    DynamicsRow,
    DynamicsRun,
    DynamicsTrajectory,
    HeadsDynamicsRow,
    Specialisation,
    SpecialisationSettings,
    SpecialisationStudy,
    SpecialisationSummary,
)


@functools.cache
def _references(activation: str, config: Any) -> tuple[float | None, str, float]:
    """The activation's population optimum (``None`` where the theory has none), its note, and
    the Bayes error (cached: every seed of an activation shares them)."""
    from bayes_slr.formulas.bayes import bayes_error_exact
    from bayes_slr.formulas.optimum import optimal_population_error

    try:
        optimum = optimal_population_error(activation, config)
        value, note = optimum.error, optimum.overlaps.note
    except ConfigError as exc:
        value, note = None, f"no population optimum: {exc}"
    return value, note, float(bayes_error_exact(config).value)


@functools.cache
def _heads_references(
    activation: str, config: SLRConfig, student_heads: int
) -> tuple[float | None, str, float]:
    """The population optimum of ``H`` aligned heads of ``activation`` (``None`` where
    ``student_heads != H`` or the theory has none), its note, and the Bayes error of ``config``
    (cached: every seed shares them)."""
    from bayes_slr.formulas.bayes import bayes_error_exact
    from bayes_slr.formulas.optimum import optimal_population_error

    bayes = float(bayes_error_exact(config).value)
    if student_heads != config.heads:
        note = (
            f"no population optimum here for {student_heads} student heads on {config.heads} "
            "teacher heads (missing and extra heads: docs/multihead.md section 6)"
        )
        return None, note, bayes
    try:
        optimum = optimal_population_error(activation, config)
    except ConfigError as exc:
        return None, f"no population optimum: {exc}", bayes
    return optimum.error, optimum.overlaps.note, bayes


def _first(times: Sequence[float], values: Sequence[float], level: float) -> float | None:
    """First logged time where ``values`` come below ``level`` (``None``: never, or already at
    the start, which measures nothing)."""
    from bayes_slr.attention.trajectory import first_crossing

    if values[0] <= level:
        return None
    found = first_crossing(times, values, level)
    return None if math.isnan(found) else found


def escape_time(trajectory: Any) -> float | None:
    """When the larger of ``|m_k|`` and ``|k.v*/D|`` first reaches :data:`ESCAPE_LEVEL`."""
    import numpy as np

    distance = np.maximum(np.abs(trajectory.column("m_k")), np.abs(trajectory.column("k_vstar")))
    if distance[0] >= ESCAPE_LEVEL:
        return None
    return _first(trajectory.column("time"), -distance, -ESCAPE_LEVEL)


def dynamics_point(
    config: SLRConfig,
    settings: DynamicsSettings,
    seed: int,
    train: Callable[[Any], Any] | None = None,
) -> DynamicsRun:
    """Run one point and compare its end with the theory.

    Parameters
    ----------
    config : the task (its ``D``: the dimension of a data run, the start's of an ODE).
    settings : the method's settings record (its ``method`` names the registered method), with
        the point's ``activation``, ``student_heads`` (``None``: the one-head dynamics; more on
        the multi-head task ``config``, for a method with multi-head equations) and ``level``
        (the cosine level a run of heads is read at, module docstring).
    seed : the seed of the teacher, data, start, test set and stream (an ODE: its start and
        draws).
    train : how a data method runs its ``TrainingRun`` (default ``train_dynamics``; the
        experiment's keeps checkpoints; one head).

    Returns
    -------
    DynamicsRun
        A :class:`~bayes_slr.studies.dynamics_records.DynamicsRow`, or with ``student_heads`` a
        :class:`~bayes_slr.studies.dynamics_records.HeadsDynamicsRow`.
    """
    method = get_dynamics_method(settings.method)
    if settings.student_heads is not None:
        return _heads_row(config, settings, seed)
    activation = settings.activation
    trajectory = method.trajectory(config, activation, seed, settings, train)
    optimum, note, bayes = _references(activation, config)
    columns = {name: tuple(float(x) for x in trajectory.column(name)) for name in POINT_FIELDS}
    columns["step"] = tuple(int(p.step) for p in trajectory.points) if method.data else None
    last = trajectory.last
    return DynamicsRow(
        activation=activation,
        seed=seed,
        method=settings.method,
        start=settings.start,
        sphere=settings.sphere,
        D=settings.D,
        steps=method.steps(settings),
        t_max=float(last.time),
        trajectory=DynamicsTrajectory(**columns),
        final_error=float(last.test_error),
        final_stderr=float(last.test_stderr),
        m_k=float(last.m_k),
        q_k=float(last.q_k),
        m_v=float(last.m_v),
        q_v=float(last.q_v),
        c=float(last.c),
        population_optimum=optimum,
        optimum_note=note,
        bayes_error=bayes,
        escape_time=escape_time(trajectory),
        reach_time=_reach_time(columns["time"], columns["test_error"], optimum, settings),
        reached=None if optimum is None else last.test_error - optimum <= settings.tolerance,
        erm=method.compare(trajectory, settings),
    )


def _reach_time(
    times: Sequence[float], errors: Sequence[float], optimum: float | None, settings: Any
) -> float | None:
    """First logged time with the test error within ``settings.tolerance`` of the optimum (0 when
    the start is; ``None``: never, or no optimum)."""
    if optimum is None:
        return None
    level = optimum + settings.tolerance
    reach = _first(times, errors, level)
    return 0.0 if reach is None and errors[0] <= level else reach


def _heads_row(config: SLRConfig, settings: DynamicsSettings, seed: int) -> HeadsDynamicsRow:
    """One run of ``settings.student_heads`` heads read for specialisation
    (:func:`dynamics_point`)."""
    activation, student_heads = settings.activation, settings.student_heads
    method = get_dynamics_method(settings.method)
    if not method.multihead:
        raise ConfigError(f"method {method.name} has no multi-head equations")
    run = method.heads_trajectory(config, activation, student_heads, seed, settings)
    trajectory = run.heads
    optimum, note, bayes = _heads_references(activation, config, student_heads)
    last = trajectory.last
    return HeadsDynamicsRow(
        activation=activation,
        seed=seed,
        method=settings.method,
        D=settings.D,
        student_heads=student_heads,
        steps=method.steps(settings),
        t_max=float(last.time),
        trajectory=trajectory,
        final_error=last.test_error,
        final_stderr=last.test_stderr,
        cosines_k=as_matrix(last.cosines("k")),
        cosines_v=as_matrix(last.cosines("v")),
        specialisation=read_specialisation(trajectory, settings.level),
        population_optimum=optimum,
        optimum_note=note,
        bayes_error=bayes,
        erm=method.compare(run, settings),
    )


def matched_heads(trajectory: HeadsTrajectory) -> tuple[int | None, ...]:
    """Per student head, the teacher head it ends matched with: the assignment of distinct
    teacher heads maximising the final ``|cos_k| + |cos_v|`` (``None`` for an extra head)."""
    from scipy.optimize import linear_sum_assignment

    last = trajectory.last
    score = np.abs(last.cosines("k")) + np.abs(last.cosines("v"))
    permutation: list[int | None] = [None] * score.shape[0]
    for row, col in zip(*linear_sum_assignment(score, maximize=True), strict=True):
        permutation[int(row)] = int(col)
    return tuple(permutation)


def specialisation_gaps(
    trajectory: HeadsTrajectory, permutation: Sequence[int | None]
) -> np.ndarray:
    """``(T, H_s)``: each matched head's key cosine with its teacher head minus its largest key
    cosine with the other teacher heads (the cosine itself with one teacher head; ``nan`` for an
    extra head)."""
    cosines = trajectory.cosines("k")
    gaps = np.full(cosines.shape[:2], np.nan)
    for j, teacher in enumerate(permutation):
        if teacher is None:
            continue
        others = np.delete(cosines[:, j, :], teacher, axis=1)
        rival = others.max(axis=1) if others.shape[1] else 0.0
        gaps[:, j] = cosines[:, j, teacher] - rival
    return gaps


def read_specialisation(
    trajectory: HeadsTrajectory, level: float = SPECIALISATION_LEVEL
) -> Specialisation:
    """How one run of heads specialised (module docstring), read at the cosine ``level``."""
    crossings = trajectory.crossing_times(level, "k")
    permutation = matched_heads(trajectory)
    gaps = specialisation_gaps(trajectory, permutation)
    times = trajectory.times()
    matched = [j for j, teacher in enumerate(permutation) if teacher is not None]
    head_times = tuple(
        first_crossing(times, gaps[:, j], level) if j in matched else math.nan
        for j in range(gaps.shape[1])
    )
    specialised = bool(np.all(gaps[-1, matched] >= level))
    end = max(head_times[j] for j in matched) if specialised else math.nan
    escape = float(np.nanmin(crossings)) if np.any(np.isfinite(crossings)) else math.nan
    return Specialisation(
        level=level,
        crossing_times=as_matrix(crossings),
        escape_time=escape,
        permutation=permutation,
        head_times=head_times,
        specialised=specialised,
        specialisation_time=end,
        plateau=end - escape,
        cross_overlap=trajectory.last.largest_cross_overlap,
    )


def _mean(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the finite ``values`` (``nan`` error with fewer than two)."""
    finite = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if finite.size == 0:
        return math.nan, math.nan
    stderr = float(np.std(finite, ddof=1) / math.sqrt(finite.size)) if finite.size > 1 else math.nan
    return float(np.mean(finite)), stderr


def summarise(D: int, runs: Sequence[HeadsDynamicsRow]) -> SpecialisationSummary:
    """The summary of the runs of one dimension (:class:`SpecialisationSummary`)."""
    read = [run.specialisation for run in runs]
    done = [run for run in read if run.specialised]
    return SpecialisationSummary(
        D,
        len(runs),
        len(done),
        *_mean([run.escape_time for run in read]),
        *_mean([run.specialisation_time for run in done]),
        *_mean([run.plateau for run in done]),
        *_mean([run.final_error for run in runs]),
    )


def specialisation_study(
    config: SLRConfig, settings: SpecialisationSettings, seed: int
) -> SpecialisationStudy:
    """Online SGD of ``H_s`` heads from small random starts at several ``D``, read for
    specialisation (module docstring).

    Parameters
    ----------
    config : SLRConfig
        The task (``heads``, ``presence``, token law, ``Delta``); its ``D`` is replaced by each of
        ``settings.sizes``.
    settings : SpecialisationSettings
        The activation, the student heads, the sizes, the seeds, online SGD's step, batch and
        end, the cosine level, the logging and the test sequences.
    seed : the first run's seed at each ``D`` (seeds ``seed .. seed + settings.seeds - 1``).

    Returns
    -------
    SpecialisationStudy
        A summary per dimension and every run.
    """
    if not isinstance(config, SLRConfig):
        raise ConfigError(f"config must be an SLRConfig, got {type(config).__name__}")
    heads = config.heads if settings.student_heads is None else settings.student_heads
    runs, summaries = [], []
    for D in settings.sizes:
        if D < 2 * config.heads:  # exact teachers: orthogonal keys and values of every head
            raise ConfigError(f"D must be an integer >= {2 * config.heads}, got {D!r}")
        point = _sgd_settings(D, settings, heads)
        per_seed = [
            _heads_row(config.replace(D=D), point, seed + offset)
            for offset in range(settings.seeds)
        ]
        runs.extend(per_seed)
        summaries.append(summarise(D, per_seed))
    return SpecialisationStudy(
        settings.activation,
        heads,
        settings.eta,
        settings.batch,
        settings.t_max,
        settings.level,
        tuple(summaries),
        tuple(runs),
    )


def _sgd_settings(D: int, settings: SpecialisationSettings, heads: int) -> DynamicsSettings:
    """The settings of online SGD of ``heads`` student heads at ``D`` to ``settings.t_max``
    (``round(t_max D / eta)`` steps)."""
    from bayes_slr.studies.dynamics_data_methods import SGD, SGDSettings

    eta = settings.eta
    steps = max(1, round(settings.t_max * D / eta))
    return SGDSettings(
        method=SGD.name,
        D=D,
        start="random",
        sphere=False,
        t_max=steps * eta / D,
        log_points=settings.log_points,
        tolerance=DEFAULT_TOLERANCE,
        eta=eta,
        steps=steps,
        N_test=settings.N_test,
        batch=settings.batch,
        activation=settings.activation,
        student_heads=heads,
        level=settings.level,
    )
