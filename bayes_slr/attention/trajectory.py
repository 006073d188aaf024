"""Trajectories of training dynamics (docs/dynamics.md): the logged points, the resumable state, the
divergence error.

One record type serves every method (gradient descent and online SGD on data in
:mod:`bayes_slr.attention.dynamics`, the order-parameter ODEs in :mod:`bayes_slr.formulas.flow`), so
a plot or a comparison never needs to know which produced a trajectory. Time is the ODE time of
docs/dynamics.md: ``eta`` per gradient-descent step, ``eta / D`` per online-SGD step.

A run of ``H_s`` student heads (docs/multihead.md, "Dynamics": on a multi-head task, or several
student heads) logs a :class:`HeadsPoint` instead of a :class:`TrajectoryPoint`: the ``H_s x H``
overlap matrices with the teacher heads and the ``H_s x H_s`` Gram matrices of the student heads
where one head has numbers; the same :class:`Trajectory` holds either, and
:class:`HeadsTrajectory` is the record of a heads run's points (a row keeps it;
:mod:`bayes_slr.formulas.multihead_flow` solves into it).
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

import numpy as np

from bayes_slr.errors import ConfigError, RunStopped
from bayes_slr.numerics.record import JsonObject, Record, converter, structure

OVERLAP_NAMES = ("m_k", "q_k", "m_v", "q_v", "k_vstar", "v_kstar", "k_v", "c")
"""Order parameters of a point (docs/model.md section 4, all divided by ``D``; ``c`` the erf
offset)."""


@dataclasses.dataclass(frozen=True)
class TrajectoryPoint(Record):
    """The state of a run at one logged step.

    Attributes
    ----------
    step : optimiser steps done (``None`` for an ODE).
    time : ODE time (docs/dynamics.md).
    m_k, q_k, m_v, q_v : overlaps ``k.k*/D``, ``k.k/D``, ``v.v*/D``, ``v.v/D``.
    k_vstar, v_kstar, k_v : cross overlaps ``k.v*/D``, ``v.k*/D``, ``k.v/D`` (zero on the manifold
        of docs/model.md section 4; order ``1/sqrt(D)`` from a random start).
    c : erf offset (0 for the other activations).
    test_error : excess test error ``E[(y - f)^2] - Delta``, Monte Carlo.
    test_stderr : its standard error.
    loss : what the method descends, at this point: the training objective (gradient descent), the
        current batch's mean ``(y - f)^2 / 2`` (online SGD), the population ``(E + Delta) / 2``
        (ODE).
    """

    step: int | None
    time: float
    m_k: float
    q_k: float
    m_v: float
    q_v: float
    k_vstar: float
    v_kstar: float
    k_v: float
    c: float
    test_error: float
    test_stderr: float
    loss: float


@dataclasses.dataclass(frozen=True, eq=False)
class Trajectory:
    """The logged points of one run (one seed, setting and method) and its settings.

    Attributes
    ----------
    settings : the run's full description (a :class:`~bayes_slr.numerics.record.Record`:
        :class:`~bayes_slr.attention.dynamics.TrainingRun` or
        :class:`~bayes_slr.formulas.flow.FlowRun`).
    points : the logged points in time order (:class:`HeadsPoint` for a run of student heads,
        module docstring).
    final : the last iterate, in the method's own form (``AttentionParams`` on data, the ODE
        state on the order parameters), to resume or score again.
    """

    settings: Record
    points: tuple[TrajectoryPoint, ...] | tuple[HeadsPoint, ...]
    final: Any = None

    @property
    def heads(self) -> HeadsTrajectory:
        """The points of a run of student heads as their record (its overlap matrices,
        cosines and crossing times)."""
        if not all(isinstance(point, HeadsPoint) for point in self.points):
            raise ConfigError("heads: this trajectory is of one head (its points are scalars)")
        return HeadsTrajectory(tuple(self.points))

    def column(self, name: str) -> np.ndarray:
        """One field of every point as a float array (``step``: ``nan`` for an ODE)."""
        names = [field.name for field in dataclasses.fields(TrajectoryPoint)]
        if name not in names:
            raise ConfigError(f"name must be one of {', '.join(names)}; got {name!r}")
        return np.array(
            [np.nan if getattr(p, name) is None else getattr(p, name) for p in self.points],
            dtype=float,
        )

    def interpolate(self, name: str, times: np.ndarray) -> np.ndarray:
        """``column(name)`` at ``times`` (within the logged range), linear in ``log time`` between
        logged points (linear from the point at time 0 to the next)."""
        values, logged = self.column(name), self.column("time")
        times = np.asarray(times, dtype=float)
        if np.any(times < logged[0]) or np.any(times > logged[-1] * (1.0 + 1e-12)):
            raise ConfigError(f"times must lie in the logged range [{logged[0]:g}, {logged[-1]:g}]")
        positive = logged > 0.0
        after_start = np.interp(
            np.log(np.maximum(times, logged[positive][0])),
            np.log(logged[positive]),
            values[positive],
        )
        if positive.all():
            return after_start
        early = times < logged[positive][0]
        before = np.interp(times, logged[:2], values[:2])
        return np.where(early, before, after_start)

    @property
    def last(self) -> TrajectoryPoint:
        """The last logged point."""
        return self.points[-1]

    def crossing_time(self, name: str, level: float, *, magnitude: bool = False) -> float:
        """:func:`first_crossing` of ``column(name)`` (of its absolute value with ``magnitude``:
        an odd activation can leave a saddle towards ``-k*`` as well as ``+k*``)."""
        values = self.column(name)
        return first_crossing(self.column("time"), np.abs(values) if magnitude else values, level)

    def to_dict(self) -> JsonObject:
        """JSON-ready: the settings' record and the points (not the final iterate)."""
        return {"settings": self.settings.to_dict(), "points": converter.unstructure(self.points)}

    @classmethod
    def from_dict(cls, record: JsonObject, settings_type: type[Record]) -> Trajectory:
        """Inverse of :meth:`to_dict`; ``settings_type`` (``TrainingRun``, ``FlowRun``) is the
        settings' record type. ``ConfigError`` if malformed."""
        try:
            settings, points = record["settings"], record["points"]
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"trajectory record is incomplete or malformed: {exc}") from exc
        return cls(
            structure(settings, settings_type), structure(points, tuple[TrajectoryPoint, ...])
        )


@dataclasses.dataclass(frozen=True, eq=False)
class Checkpoint:
    """Everything needed to continue a run exactly where it stopped.

    Attributes
    ----------
    step : optimiser steps done (the ODE: ``None``).
    state : the iterate (``AttentionParams`` on data; the ODE state vector).
    points : the points logged so far (the last one is at ``step``).
    """

    step: int | None
    state: Any
    points: tuple[TrajectoryPoint, ...] | tuple[HeadsPoint, ...]


OnLog = Callable[[Checkpoint], None]
"""Called after every logged point with the run's checkpoint: a progress bar reads
``checkpoint.step``; a resumable driver stores it and passes it back as ``resume=``."""


class DivergenceError(RunStopped, ArithmeticError):
    """A run whose loss became NaN or exploded: one line naming the step size, and the last
    finite iterate. A command that meets one stops (:class:`~bayes_slr.errors.RunStopped`).

    Attributes
    ----------
    method : the method of the run.
    eta : the step size of the run.
    loss : the loss that stopped the run (``nan``, ``inf`` or above the run's limit).
    at : the step (or time) where it appeared.
    checkpoint : the last finite iterate and the points logged up to it (``checkpoint.step`` is
        its step); ``None`` when already the start was not finite.
    kept : where the last finite iterate was written (the end of the message: ``""`` says it is
        kept in the error itself).
    label : which run diverged (the start of the message; ``""``: the run is known).
    """

    def __init__(
        self,
        method: str,
        eta: float,
        loss: float,
        at: float,
        checkpoint: Checkpoint | None,
        kept: str = "",
        label: str = "",
    ) -> None:
        self.method, self.eta, self.loss, self.at = method, eta, loss, at
        self.checkpoint, self.kept, self.label = checkpoint, kept, label
        iterate = (
            "the start itself is not finite"
            if checkpoint is None
            else f"the last finite iterate ({_where(checkpoint)}) is {kept or 'kept'}"
        )
        super().__init__(
            f"{label + ': ' if label else ''}{method} diverged with step size eta = {eta:g}: the "
            f"loss was {loss:.3g} at step {at:g}; {iterate}"
        )

    def kept_as(self, kept: str, label: str) -> DivergenceError:
        """The same error, its message naming the run (``label``) and saying where the iterate
        went (``kept``: ``"kept in F"``, ``"not kept ..."``)."""
        return DivergenceError(
            self.method, self.eta, self.loss, self.at, self.checkpoint, kept, label
        )


def _where(checkpoint: Checkpoint) -> str:
    """``step 12`` of a run on data, ``t = 3.5`` of an ODE."""
    if checkpoint.step is None:
        return f"t = {checkpoint.points[-1].time:g}"
    return f"step {checkpoint.step}"


def first_crossing(times: np.ndarray, values: np.ndarray, level: float) -> float:
    """First time ``values`` reaches ``level`` from the side it starts on, read between the two
    logged points around the crossing (linear in time); ``nan`` if it never does.

    Used for escape times: a run that starts at a saddle with overlaps of order ``1/sqrt(D)``
    escapes when an overlap (or the largest of several) reaches a fixed level. The error of the
    linear reading is at most ``dt^2 max|f''| / (8 min|f'|)`` over the bracketing interval of
    length ``dt`` (zero for a trajectory linear there).
    """
    times, values = np.asarray(times, dtype=float), np.asarray(values, dtype=float)
    side = np.sign(values[0] - level)
    if side == 0:
        return float(times[0])
    crossed = np.nonzero(np.sign(values - level) != side)[0]
    if crossed.size == 0:
        return math.nan
    i = int(crossed[0])
    fraction = (level - values[i - 1]) / (values[i] - values[i - 1])
    return float(times[i - 1] + fraction * (times[i] - times[i - 1]))


def log_spaced_steps(steps: int, points: int) -> np.ndarray:
    """Step counts at which a run of ``steps`` steps is logged: 0, then about ``points``
    log-spaced counts up to ``steps`` (distinct integers, ``steps`` always last).
    """
    spaced = np.unique(np.round(np.geomspace(1.0, steps, points - 1)).astype(np.int64))
    return np.concatenate([[0], spaced])


def log_spaced_times(t_max: float, t_min: float, points: int) -> np.ndarray:
    """Times at which an ODE is logged: 0, then ``points - 1`` log-spaced times from ``t_min`` to
    ``t_max``."""
    return np.concatenate([[0.0], np.geomspace(t_min, t_max, points - 1)])


Matrix = tuple[tuple[float, ...], ...]
"""A matrix field of a record (rows of floats)."""
CROSS_NAMES = ("k_vstar", "v_kstar", "k_v")
"""The cross overlaps of a :class:`HeadsPoint`."""


def as_matrix(values: np.ndarray) -> Matrix:
    """A 2-d array as nested tuples of floats (a record's field)."""
    return tuple(tuple(float(x) for x in row) for row in np.asarray(values, dtype=float))


@dataclasses.dataclass(frozen=True)
class HeadsPoint(Record):
    """The state of ``H_s`` student heads at one logged time, all overlaps divided by ``D``.

    Attributes
    ----------
    step : optimiser steps done (``None`` for an ODE).
    time : ODE time.
    m_k, m_v : ``H_s x H`` overlaps ``k_j.k_h*/D`` and ``v_j.v_h*/D`` (rows: student heads).
    q_k, q_v : ``H_s x H_s`` Gram matrices ``k_i.k_j/D`` and ``v_i.v_j/D``.
    c : per student head, the trained offset (0 for the activations without one).
    test_error : excess test error ``E[(y - f)^2] - Delta`` (Monte Carlo).
    test_stderr : its standard error.
    k_vstar, v_kstar : ``H_s x H`` cross overlaps ``k_j.v_h*/D`` and ``v_j.k_h*/D``.
    k_v : ``H_s x H_s`` cross overlaps ``k_i.v_j/D``. The three vanish on the manifold the ODEs
        live on (their points hold zeros); from a random start they are of order ``1/sqrt(D)``.
    """

    step: int | None
    time: float
    m_k: Matrix
    q_k: Matrix
    m_v: Matrix
    q_v: Matrix
    c: tuple[float, ...]
    test_error: float
    test_stderr: float
    k_vstar: Matrix
    v_kstar: Matrix
    k_v: Matrix

    @property
    def largest_cross_overlap(self) -> float:
        """The largest ``|entry|`` of ``k_vstar``, ``v_kstar``, ``k_v``: how far the point is
        from the manifold of vanishing cross overlaps."""
        return float(max(np.max(np.abs(getattr(self, n))) for n in CROSS_NAMES))

    def cosines(self, which: str = "k") -> np.ndarray:
        """``H_s x H`` cosines of the student keys (``"k"``) or values (``"v"``) with the teacher
        heads' (teacher squared norms ``D``, as the exact teacher's and the ODE's): ``m_jh /
        sqrt(q_jj)``, 0 for a zero student vector."""
        if which not in ("k", "v"):
            raise ConfigError(f"which must be 'k' or 'v', got {which!r}")
        m = np.asarray(getattr(self, f"m_{which}"))
        norms = np.sqrt(np.diag(np.asarray(getattr(self, f"q_{which}"))))[:, None]
        return np.divide(m, norms, out=np.zeros_like(m), where=norms > 0)


@dataclasses.dataclass(frozen=True)
class HeadsTrajectory(Record):
    """The logged points of one run of ``H_s`` heads, in time order."""

    points: tuple[HeadsPoint, ...]

    def times(self) -> np.ndarray:
        """The logged times."""
        return np.array([p.time for p in self.points])

    def stacked(self, name: str) -> np.ndarray:
        """A field of every point stacked along a leading time axis (``m_k``: ``(T, H_s, H)``,
        ``test_error``: ``(T,)``)."""
        names = [field.name for field in dataclasses.fields(HeadsPoint)]
        if name not in names or name == "step":
            raise ConfigError(f"name must be one of {', '.join(names[1:])}; got {name!r}")
        return np.array([getattr(p, name) for p in self.points], dtype=float)

    def cosines(self, which: str = "k") -> np.ndarray:
        """:meth:`HeadsPoint.cosines` of every point, ``(T, H_s, H)``."""
        return np.array([p.cosines(which) for p in self.points])

    @property
    def last(self) -> HeadsPoint:
        """The last logged point."""
        return self.points[-1]

    def crossing_times(self, level: float = 0.5, which: str = "k") -> np.ndarray:
        """``H_s x H`` first times the cosine of student head ``j`` with teacher head ``h``
        reaches ``level`` (:func:`~bayes_slr.attention.trajectory.first_crossing`, linear in time
        between logged points; ``nan`` where it never does)."""
        cosines, times = self.cosines(which), self.times()
        heads, teachers = cosines.shape[1:]
        return np.array(
            [
                [first_crossing(times, cosines[:, j, h], level) for h in range(teachers)]
                for j in range(heads)
            ]
        )
