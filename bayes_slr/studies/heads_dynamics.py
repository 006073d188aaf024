"""One multi-head ``dynamics`` point: a method's run of ``H_s`` student heads on an ``H``-head
teacher, read for specialisation (docs/multihead.md, "Dynamics").

:func:`heads_dynamics_point` takes the task, a method's settings record
(:mod:`bayes_slr.studies.dynamics_methods`; the method must have multi-head equations) and the
seed, runs the method's :meth:`~bayes_slr.studies.dynamics_methods.DynamicsMethod.heads_trajectory`
and returns a typed :class:`~bayes_slr.studies.heads_dynamics_records.HeadsDynamicsRow`: the
trajectory, the end (error, cosine matrices), the teacher head each student head matched, when
each specialised or whether the run stalled
(:func:`~bayes_slr.studies.multihead_dynamics.read_specialisation`), beside the aligned heads'
population optimum and the Bayes error.
"""

from __future__ import annotations

import functools

from bayes_slr.attention.multihead_trajectory import as_matrix
from bayes_slr.errors import ConfigError
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.dynamics_methods import DynamicsSettings, get_dynamics_method
from bayes_slr.studies.heads_dynamics_records import HeadsDynamicsRow
from bayes_slr.studies.multihead_dynamics import read_specialisation


@functools.cache
def heads_references(
    activation: str, config: SLRConfig, student_heads: int
) -> tuple[float | None, str, float]:
    """The population optimum of ``H`` aligned heads of ``activation`` (``None`` where
    ``student_heads != H`` or the theory has none), its note, and the Bayes error of ``config``
    (cached: every seed shares them)."""
    from bayes_slr.formulas.multihead import multihead_bayes_error_exact
    from bayes_slr.formulas.optimum import optimal_population_error

    bayes = float(multihead_bayes_error_exact(config).value)
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


def heads_dynamics_point(
    config: SLRConfig,
    activation: str,
    student_heads: int,
    seed: int,
    settings: DynamicsSettings,
) -> HeadsDynamicsRow:
    """Run one multi-head point and read it for specialisation.

    Parameters
    ----------
    config : SLRConfig
        The task (``heads``, ``presence``; its ``D``: the dimension of an online-SGD run, the
        start's of an ODE).
    activation : str
        An activation.
    student_heads : int
        ``H_s >= 1``.
    seed : int
        The seed of the teacher, start, test set and stream (an ODE: its start and draws).
    settings : DynamicsSettings
        The method's settings record (its ``method`` names a registered method with
        multi-head equations).

    Returns
    -------
    HeadsDynamicsRow
    """
    method = get_dynamics_method(settings.method)
    if not method.multihead:
        raise ConfigError(f"method {method.name} has no multi-head equations")
    trajectory = method.heads_trajectory(config, activation, student_heads, seed, settings)
    run = read_specialisation(trajectory, settings.D, seed)
    optimum, note, bayes = heads_references(activation, config, student_heads)
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
        final_error=run.final_error,
        final_stderr=run.final_stderr,
        cosines_k=as_matrix(last.cosines("k")),
        cosines_v=as_matrix(last.cosines("v")),
        permutation=run.permutation,
        escape_time=run.escape_time,
        head_times=run.head_times,
        specialised=run.specialised,
        specialisation_time=run.specialisation_time,
        plateau=run.plateau,
        cross_overlap=run.cross_overlap,
        population_optimum=optimum,
        optimum_note=note,
        bayes_error=bayes,
    )
