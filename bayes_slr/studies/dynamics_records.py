"""The typed records of a ``dynamics`` point (docs/dynamics.md): its trajectory and its row.

They import without JAX: the experiment reads them back from a sweep log or a JSON output, and
:func:`bayes_slr.studies.dynamics.dynamics_point` returns them.
"""

from __future__ import annotations

import dataclasses

from bayes_slr.numerics.record import Record
from bayes_slr.studies.dynamics_erm import ERMComparison

ESCAPE_LEVEL = 0.4
"""An escape from the start: the larger of ``|m_k|`` and ``|k.v*/D|`` reaches this level."""


@dataclasses.dataclass(frozen=True)
class DynamicsTrajectory(Record):
    """The logged points of one run, one tuple per quantity (docs/dynamics.md).

    Attributes
    ----------
    step : optimiser steps at each logged point (``None`` for the ODEs).
    time : ODE time (``eta`` per gd step, ``eta / D`` per sgd step).
    m_k, q_k, m_v, q_v : overlaps ``k.k*/D``, ``k.k/D``, ``v.v*/D``, ``v.v/D``.
    k_vstar, v_kstar, k_v : cross overlaps (0 for the ODEs: their manifold).
    c : erf offset.
    test_error, test_stderr : excess test error and its standard error (the ODEs: the population
        error of the overlaps, Monte Carlo or closed form).
    loss : what the method descends at this point.
    """

    step: tuple[int, ...] | None
    time: tuple[float, ...]
    m_k: tuple[float, ...]
    q_k: tuple[float, ...]
    m_v: tuple[float, ...]
    q_v: tuple[float, ...]
    k_vstar: tuple[float, ...]
    v_kstar: tuple[float, ...]
    k_v: tuple[float, ...]
    c: tuple[float, ...]
    test_error: tuple[float, ...]
    test_stderr: tuple[float, ...]
    loss: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class DynamicsRow(Record):
    """One run and how it ended.

    Attributes
    ----------
    activation, seed, method, start, sphere, D : what ran (``D``: the dimension of a data run,
        the start's of an ODE).
    steps : optimiser steps (``None`` for the ODEs); ``t_max`` the time reached.
    trajectory : the logged points.
    final_error, final_stderr : test error at the end and its standard error.
    m_k, q_k, m_v, q_v, c : overlaps at the end.
    population_optimum : the activation's best population error (``None`` where the theory has
        none for it); ``optimum_note`` says when it is a limit (``|k| -> inf``).
    bayes_error : the population Bayes error of the task.
    escape_time : first time the larger of ``|m_k|`` and ``|k.v*/D|`` reaches
        :data:`ESCAPE_LEVEL` (``None``: the start is past it, or the run never got there).
    reach_time : first logged time with the test error within ``tolerance`` of the optimum.
    reached : whether the final test error is within ``tolerance`` of the population optimum.
    erm : gd with ``compare_erm``: the end against the L-BFGS minimum of the same objective and
        the replica theory (:class:`~bayes_slr.studies.dynamics_erm.ERMComparison`); else
        ``None``.
    """

    activation: str
    seed: int
    method: str
    start: str
    sphere: bool
    D: int
    steps: int | None
    t_max: float
    trajectory: DynamicsTrajectory
    final_error: float
    final_stderr: float
    m_k: float
    q_k: float
    m_v: float
    q_v: float
    c: float
    population_optimum: float | None
    optimum_note: str
    bayes_error: float
    escape_time: float | None
    reach_time: float | None
    reached: bool | None
    erm: ERMComparison | None = None


POINT_FIELDS = tuple(field.name for field in dataclasses.fields(DynamicsTrajectory))
"""The quantities of a logged point."""
