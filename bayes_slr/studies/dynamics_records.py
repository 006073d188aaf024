"""The typed records of a ``dynamics`` point (docs/dynamics.md): its trajectory and its row, of
one head or of ``H_s`` student heads (docs/multihead.md, "Dynamics"), the tagged union of the
two, and the specialisation study's.

They import without JAX: the experiment reads them back from a sweep log or a JSON output, and
:mod:`bayes_slr.studies.dynamics` returns them. A point of one-head SLR with one student head is
a :class:`DynamicsRow`; a point with several heads, absent heads or several student heads is a
:class:`HeadsDynamicsRow`. :data:`DynamicsRun` is their tagged union: the sweep log writes each
row with its tag (``kind``) and reads it back by it; a row written without one (a log written
before, or the rows of the JSON output) is read as the record whose fields are its keys, so a
one-head row reads as it did.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

from bayes_slr.attention.trajectory import HeadsTrajectory, Matrix
from bayes_slr.errors import Accepts, Each, Integer, Number, OrNone, validate_fields
from bayes_slr.numerics.record import Record, register_tagged_union
from bayes_slr.studies.dynamics_erm import ERMComparison

ESCAPE_LEVEL = 0.4
"""An escape from the start: the larger of ``|m_k|`` and ``|k.v*/D|`` reaches this level."""
SPECIALISATION_LEVEL = 0.5
"""The cosine level a run of heads is read at
(:func:`~bayes_slr.studies.dynamics.read_specialisation`)."""


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


@dataclasses.dataclass(frozen=True)
class Specialisation(Record):
    """How one run of ``H_s`` student heads specialised (times are ODE times; ``nan`` where a
    level is never reached; :func:`~bayes_slr.studies.dynamics.read_specialisation`).

    Attributes
    ----------
    level : the cosine level read.
    crossing_times : ``H_s x H``: the first time the cosine of student key ``j`` with teacher key
        ``h`` reaches the level.
    escape_time : the first of them: the run leaves its random start.
    permutation : per student head, the teacher head it ends matched with (the assignment of
        distinct teacher heads maximising the final ``|cos_k| + |cos_v|``), ``None`` for an extra
        head.
    head_times : per student head, the first time its key's cosine with its matched teacher head
        exceeds its largest cosine with the other teacher heads by the level (``nan`` for an extra
        head): the time it specialises.
    specialised : every matched head is specialised at the end (its final gap at least the level);
        a run that is not has stalled.
    specialisation_time : the last matched head's time (``nan`` unless specialised).
    plateau : ``specialisation_time - escape_time``: the time spent with the heads unspecialised
        after leaving the start.
    cross_overlap : the largest ``|cross overlap|`` at the end
        (:attr:`~bayes_slr.attention.trajectory.HeadsPoint.largest_cross_overlap`): how far the
        run ended from the manifold of the ODEs.
    """

    level: float
    crossing_times: Matrix
    escape_time: float
    permutation: tuple[int | None, ...]
    head_times: tuple[float, ...]
    specialised: bool
    specialisation_time: float
    plateau: float
    cross_overlap: float


@dataclasses.dataclass(frozen=True)
class HeadsDynamicsRow(Record):
    """One run of ``H_s`` student heads on an ``H``-head teacher and how it ended.

    Attributes
    ----------
    activation, seed, method, D : what ran (``D``: the dimension of a data run, the start's of
        an ODE).
    student_heads : ``H_s``.
    steps : optimiser steps (``None`` for the ODEs); ``t_max`` the time reached.
    trajectory : the logged overlap matrices and errors.
    final_error, final_stderr : the test error at the end (the ODEs: the population error of
        their draws) and its standard error.
    cosines_k, cosines_v : ``H_s x H``: the cosines of each student key (value) with each teacher
        key (value) at the end.
    specialisation : how the heads specialised (:class:`Specialisation`).
    population_optimum : the best population error of ``H`` aligned heads of the activation
        (``None`` where ``H_s != H`` or the theory has none); ``optimum_note`` says why or when it
        is a limit.
    bayes_error : the population Bayes error of the task.
    erm : gd with ``compare_erm``: the end against the L-BFGS minimum of the same objective
        (:func:`~bayes_slr.studies.dynamics_erm.compare_with_erm`; no replica number: the
        replica equations are one head's); else ``None``.
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
    specialisation: Specialisation
    population_optimum: float | None
    optimum_note: str
    bayes_error: float
    erm: ERMComparison | None = None


DynamicsRun = DynamicsRow | HeadsDynamicsRow
"""A ``dynamics`` point's row: one head, or several (module docstring)."""
register_tagged_union(DynamicsRun, {"one_head": DynamicsRow, "heads": HeadsDynamicsRow})


def optimum_warnings(rows: Sequence[DynamicsRun]) -> list[str]:
    """One line per activation of ``rows`` whose population optimum has a note (a limit, or
    none)."""
    notes = {row.activation: row.optimum_note for row in rows if row.optimum_note}
    return [f"{activation}: {note}" for activation, note in notes.items()]


@dataclasses.dataclass(frozen=True)
class SpecialisationSummary(Record):
    """The runs of one dimension: means over the specialised seeds with their standard errors
    (``nan`` with fewer than two).

    Attributes
    ----------
    D : the dimension.
    seeds : runs.
    specialised : runs whose heads all specialised by the end; ``seeds - specialised`` stalled.
    escape_time, escape_stderr : over every run.
    specialisation_time, specialisation_stderr : over the specialised runs.
    plateau, plateau_stderr : over the specialised runs.
    final_error, final_error_stderr : over every run.
    """

    D: int
    seeds: int
    specialised: int
    escape_time: float
    escape_stderr: float
    specialisation_time: float
    specialisation_stderr: float
    plateau: float
    plateau_stderr: float
    final_error: float
    final_error_stderr: float


SPECIALISATION_ACCEPTS: dict[str, Accepts] = {
    "student_heads": OrNone(Integer(1)),
    "sizes": Each(Integer(1)),
    "seeds": Integer(1),
    "eta": Number(0.0, strict=True),
    "t_max": Number(0.0, strict=True),
    "level": Number(0.0, strict=True, below=1.0),
}
"""The accepted range of each field of :class:`SpecialisationSettings` checked when it is built
(the activation: any, registered or ``softmax1``, ``bayes_softmax``)."""


@dataclasses.dataclass(frozen=True)
class SpecialisationSettings(Record):
    """The settings of :func:`~bayes_slr.studies.dynamics.specialisation_study`, checked when
    built.

    Attributes
    ----------
    activation : any activation (registered, or ``softmax1``, ``bayes_softmax``).
    student_heads : ``H_s >= 1``; ``None``: the teacher's ``H``.
    sizes : dimensions, each ``>= 2 H`` (exact teacher).
    seeds : runs per dimension (seeds ``seed .. seed + seeds - 1``).
    eta, batch : the step per sequence and the batch of online SGD (time ``eta / D`` per step).
    t_max : the time every run ends at (``round(t_max D / eta)`` steps).
    level : the cosine level, in ``(0, 1)``.
    log_points : logged steps per run (the resolution of the times read).
    N_test : fresh test sequences per run.
    """

    activation: str = "softmax"
    student_heads: int | None = None
    sizes: tuple[int, ...] = (50, 100, 200)
    seeds: int = 8
    eta: float = 1.0
    batch: int = 32
    t_max: float = 150.0
    level: float = SPECIALISATION_LEVEL
    log_points: int = 96
    N_test: int = 4000

    def __post_init__(self) -> None:
        validate_fields(self, SPECIALISATION_ACCEPTS)


@dataclasses.dataclass(frozen=True)
class SpecialisationStudy(Record):
    """Specialisation of ``H_s`` heads against ``D``.

    Attributes
    ----------
    activation, student_heads, eta, batch, t_max, level : the settings.
    summaries : one per dimension, in the order given.
    runs : every run, dimension by dimension, seed by seed (online SGD's rows).
    """

    activation: str
    student_heads: int
    eta: float
    batch: int
    t_max: float
    level: float
    summaries: tuple[SpecialisationSummary, ...]
    runs: tuple[HeadsDynamicsRow, ...]
