"""One ``dynamics`` point: a method's run of one ``(activation, seed)`` and how it ended.

:func:`dynamics_point` takes the task, a method's settings record
(:mod:`bayes_slr.studies.dynamics_methods`) and the seed, runs the method, and returns a typed
:class:`~bayes_slr.studies.dynamics_records.DynamicsRow`: the logged trajectory, the end, the
activation's population optimum and the Bayes error, the escape and reach times, and the
method's own comparison (``gd``: the ERM minimum).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from bayes_slr.errors import ConfigError
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.dynamics_methods import DynamicsSettings, get_dynamics_method
from bayes_slr.studies.dynamics_records import (
    ESCAPE_LEVEL,
    POINT_FIELDS,
    DynamicsRow,
    DynamicsTrajectory,
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
    activation: str,
    seed: int,
    settings: DynamicsSettings,
    train: Callable[[Any], Any] | None = None,
) -> DynamicsRow:
    """Run one point and compare its end with the theory.

    Parameters
    ----------
    config : the task (its ``D``: the dimension of a data run, the start's of an ODE).
    activation : a registered activation.
    seed : the seed of the teacher, data, start, test set and stream (an ODE: its start and
        draws).
    settings : the method's settings record (its ``method`` names the registered method).
    train : how a data method runs its ``TrainingRun`` (default ``train_dynamics``; the
        experiment's keeps checkpoints).

    Returns
    -------
    DynamicsRow
    """
    method = get_dynamics_method(settings.method)
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
