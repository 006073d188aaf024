"""Trajectories of ``H_s`` student heads on an ``H``-head teacher (docs/multihead.md, "Dynamics").

One record type serves online SGD on data (:mod:`bayes_slr.attention.multihead_sgd`) and the
order-parameter ODEs (:mod:`bayes_slr.formulas.multihead_flow`): at each logged time the
``H_s x H`` overlap matrices with the teacher heads, the ``H_s x H_s`` Gram matrices of the
student heads, the offsets and the test error. Time is the ODE time of docs/dynamics.md (``eta / D``
per online-SGD step).
"""

from __future__ import annotations

import dataclasses

import numpy as np

from bayes_slr.attention.trajectory import first_crossing
from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import Record

Matrix = tuple[tuple[float, ...], ...]
MATRIX_NAMES = ("m_k", "q_k", "m_v", "q_v")
CROSS_NAMES = ("k_vstar", "v_kstar", "k_v")


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
