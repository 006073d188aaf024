"""The row of a multi-head ``dynamics`` point (docs/multihead.md, "Dynamics"), the union of
the two rows a ``dynamics`` point gives and the warnings of their optima; importable without
JAX.

A point of one-head SLR with one student head is a
:class:`~bayes_slr.studies.dynamics_records.DynamicsRow`, as before; a point with several heads,
absent heads or several student heads is a :class:`HeadsDynamicsRow`. :data:`DynamicsRun` is
their tagged union: the sweep log writes each row with its tag (``kind``) and reads it back by
it; a row written without one (a log written before, or the rows of the JSON output) is read
as the record whose fields are its keys, so a one-head row reads as it did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bayes_slr.attention.multihead_trajectory import HeadsTrajectory, Matrix
from bayes_slr.numerics.record import Record, register_tagged_union
from bayes_slr.studies.dynamics_records import DynamicsRow


@dataclasses.dataclass(frozen=True)
class HeadsDynamicsRow(Record):
    """One run of ``H_s`` student heads on an ``H``-head teacher and how it ended (times are ODE
    times; ``nan`` where a level is never reached).

    Attributes
    ----------
    activation, seed, method, D : what ran (``D``: the dimension of the online-SGD run, the
        start's of an ODE).
    student_heads : ``H_s``.
    steps : optimiser steps (``None`` for the ODEs); ``t_max`` the time reached.
    trajectory : the logged overlap matrices and errors.
    final_error, final_stderr : the test error at the end (the ODEs: the population error of
        their draws) and its standard error.
    cosines_k, cosines_v : ``H_s x H``: the cosines of each student key (value) with each teacher
        key (value) at the end.
    permutation : per student head, the teacher head it ends matched with (``None``: an extra
        head).
    escape_time : the first time a key cosine reaches the level: the run leaves its start.
    head_times : per student head, when it specialises on its matched teacher head.
    specialised : every matched head specialised at the end; a run that is not has stalled.
    specialisation_time, plateau : the last head's time, and its distance from the escape
        (``nan`` unless specialised).
    cross_overlap : the largest ``|cross overlap|`` at the end.
    population_optimum : the best population error of ``H`` aligned heads of the activation
        (``None`` where ``H_s != H`` or the theory has none); ``optimum_note`` says why or when it
        is a limit.
    bayes_error : the population Bayes error of the task.
    """

    activation: str
    seed: int
    method: str
    D: int
    student_heads: int
    steps: int | None
    t_max: float
    trajectory: HeadsTrajectory
    final_error: float
    final_stderr: float
    cosines_k: Matrix
    cosines_v: Matrix
    permutation: tuple[int | None, ...]
    escape_time: float
    head_times: tuple[float, ...]
    specialised: bool
    specialisation_time: float
    plateau: float
    cross_overlap: float
    population_optimum: float | None
    optimum_note: str
    bayes_error: float


DynamicsRun = DynamicsRow | HeadsDynamicsRow
"""A ``dynamics`` point's row: one head, or several (module docstring)."""
register_tagged_union(DynamicsRun, {"one_head": DynamicsRow, "heads": HeadsDynamicsRow})


def optimum_warnings(rows: Sequence[DynamicsRun]) -> list[str]:
    """One line per activation of ``rows`` whose population optimum has a note (a limit, or
    none)."""
    notes = {row.activation: row.optimum_note for row in rows if row.optimum_note}
    return [f"{activation}: {note}" for activation, note in notes.items()]
