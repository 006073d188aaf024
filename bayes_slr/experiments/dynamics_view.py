"""The table, tidy frame and figure of ``dynamics`` runs, of one head or of student heads.

One head (docs/dynamics.md): one line per run with its end, the optimum, the Bayes error, the
escape and reach times (and gd's comparison with the ERM minimum); one frame row per logged
point; the test error against the step or time. Student heads (docs/multihead.md, "Dynamics"):
one line per run with its end (error, key cosine matrix), the teacher head each student head
matched, when each specialised and whether the run stalled; one frame row per logged point,
student head and teacher head; the head-overlap trajectories (the cosine of each student key
with each teacher key against time). A result's rows are all of one kind (its options say which),
and :func:`runs_table` and :func:`runs_frame` take either.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.studies.dynamics_records import (
    POINT_FIELDS,
    SPECIALISATION_LEVEL,
    DynamicsRow,
    DynamicsRun,
    HeadsDynamicsRow,
)

ERM_COLUMNS = (
    "lbfgs_error",
    "replica_error",
    "replica_stderr",
    "objective_gap",
    "erm_reach_time",
    "at_minimum",
)
"""The comparison's columns of the ``dynamics`` table (the rest is in ``--json``)."""
RUN = ("activation", "seed", "method")
ENDS = ("steps", "t_max", "final_error", "final_stderr", "population_optimum", "bayes_error")
"""The columns of every table: the run, and its end beside the references."""
COLUMNS = (*RUN, *ENDS, "escape_time", "reach_time", "reached")
"""The columns of a one-head table."""
HEADS_COLUMNS = (
    *RUN,
    "student_heads",
    *ENDS,
    "cos_k",
    "matched",
    "escape_time",
    "specialised_at",
    "stalled",
)
"""The columns of a table of student heads."""


def runs_table(rows: Sequence[DynamicsRun]) -> str:
    """The table of ``rows``: :func:`one_head_table` or :func:`heads_table`."""
    if rows and isinstance(rows[0], HeadsDynamicsRow):
        return heads_table(rows)  # type: ignore[arg-type]  (a result's rows are of one kind)
    return one_head_table(rows)  # type: ignore[arg-type]


def runs_frame(rows: Sequence[DynamicsRun]) -> Any:
    """The tidy frame of ``rows``' logged points: :func:`one_head_trajectories` or
    :func:`heads_trajectories`."""
    if rows and isinstance(rows[0], HeadsDynamicsRow):
        return heads_trajectories(rows)  # type: ignore[arg-type]
    return one_head_trajectories(rows)  # type: ignore[arg-type]


def one_head_table(rows: Sequence[DynamicsRow]) -> str:
    """One line per run: final error, optimum, Bayes error, steps, escape time, reached; for gd
    with the comparison, the L-BFGS and replica errors, the objective gap, the settling time and
    whether GD ended at the minimum."""
    columns = COLUMNS + (ERM_COLUMNS if any(r.erm for r in rows) else ())

    def cell(row: DynamicsRow, column: str) -> Any:
        if column in ERM_COLUMNS:
            return _erm_cell(row.erm, column)
        value = getattr(row, column)
        if isinstance(value, bool) or column == "reached":
            return "n/a" if value is None else ("yes" if value else "no")
        return "-" if value is None else value

    return format_table(list(columns), [[cell(r, c) for c in columns] for r in rows])


def _erm_cell(erm: Any, column: str) -> Any:
    """A cell of gd's comparison with the ERM minimum (``erm``: ``None`` without one)."""
    value = getattr(erm, column, None)
    if isinstance(value, bool):
        return "yes" if value else "no"
    return "-" if value is None else value


def one_head_trajectories(rows: Sequence[DynamicsRow]) -> Any:
    """A ``pandas.DataFrame`` with one row per logged point of every run: its activation, seed
    and method, the point's step, time, overlaps and test error, and the run's optimum and Bayes
    error."""
    import pandas as pd

    tidy = []
    for row in rows:
        trajectory = row.trajectory
        for i in range(len(trajectory.time)):
            point = {
                name: (None if getattr(trajectory, name) is None else getattr(trajectory, name)[i])
                for name in POINT_FIELDS
            }
            tidy.append(
                {
                    "activation": row.activation,
                    "seed": row.seed,
                    "method": row.method,
                    **point,
                    "population_optimum": row.population_optimum,
                    "bayes_error": row.bayes_error,
                }
            )
    return pd.DataFrame(tidy)


def plot_errors(rows: Sequence[DynamicsRow], data: bool, title: str, ax: Any = None) -> Any:
    """Test error against the step (``data``: gd, sgd) or the time (ODEs) on a log axis, one
    curve per run (one colour per activation); horizontal lines: the Bayes error and each
    activation's population optimum."""
    ax = new_axes(ax, size=(6, 4))
    colours = {a: f"C{i}" for i, a in enumerate(dict.fromkeys(r.activation for r in rows))}
    labelled: set[str] = set()
    for row in rows:
        x = row.trajectory.step if data else row.trajectory.time
        pairs = [(xi, e) for xi, e in zip(x, row.trajectory.test_error, strict=True) if xi > 0]
        label = None if row.activation in labelled else row.activation
        labelled.add(row.activation)
        ax.plot(
            [p[0] for p in pairs],
            [p[1] for p in pairs],
            color=colours[row.activation],
            lw=1.0,
            alpha=0.8,
            label=label,
        )
    optima = {r.activation: r.population_optimum for r in rows}
    for activation, optimum in optima.items():
        if optimum is not None:
            ax.axhline(optimum, color=colours[activation], lw=0.6, ls="--")
    if rows:
        ax.axhline(rows[0].bayes_error, color="k", lw=1.0, label="Bayes error")
    ax.set(
        xscale="log",
        xlabel="step" if data else "time t",
        ylabel="excess test error",
        title=title,
    )
    ax.legend(fontsize=8)
    return ax


def heads_notes(data: bool) -> tuple[str, ...]:
    """The notes of a multi-head table: the clock, how the cosines are read, and what the ODEs'
    error is (``data``: a run on data at ``D`` rather than an ODE)."""
    error = (
        "final_error: the test error on fresh sequences"
        if data
        else "final_error: the population error on the ODE's Monte Carlo draws"
    )
    return (
        "time is the ODE clock (eta per gd step, eta/D per sgd step); cos_k: the final cosines "
        "of the student keys (rows) with the teacher keys (columns); matched: the teacher head of "
        "each student head (the assignment maximising |cos_k| + |cos_v|); escape_time: first "
        "time a key "
        f"cosine reaches {SPECIALISATION_LEVEL:g}; specialised_at: when each head's cosine with "
        f"its teacher head exceeds its largest with another by {SPECIALISATION_LEVEL:g}; "
        "stalled: a head not specialised at the end (docs/multihead.md)",
        f"{error}; population_optimum: the best of aligned heads, one per teacher head",
    )


def _matrix(rows: Sequence[Sequence[float]]) -> str:
    """A small matrix in one cell: rows separated by ``;``."""
    return "; ".join(" ".join(f"{x:.2f}" for x in row) for row in rows)


def _cell(row: HeadsDynamicsRow, column: str) -> Any:
    if column in ERM_COLUMNS:
        return _erm_cell(row.erm, column)
    if column == "cos_k":
        return _matrix(row.cosines_k)
    read = row.specialisation
    if column == "matched":
        return " ".join(f"{j}->{'-' if h is None else h}" for j, h in enumerate(read.permutation))
    if column == "specialised_at":
        return " ".join("-" if math.isnan(t) else f"{t:.3g}" for t in read.head_times)
    if column == "stalled":
        return "no" if read.specialised else "yes"
    if column == "escape_time":
        return read.escape_time
    value = getattr(row, column)
    return "-" if value is None else value


def heads_table(rows: Sequence[HeadsDynamicsRow]) -> str:
    """One line per run (module docstring): ``cos_k`` is the final ``H_s x H`` key cosine
    matrix (rows: student heads), ``matched`` each student head's teacher head, ``specialised_at``
    each head's specialisation time; for gd with the comparison, its columns as one head's."""
    columns = list(HEADS_COLUMNS + (ERM_COLUMNS if any(r.erm for r in rows) else ()))
    return format_table(columns, [[_cell(row, c) for c in columns] for row in rows])


def heads_trajectories(rows: Sequence[HeadsDynamicsRow]) -> Any:
    """A ``pandas.DataFrame`` with one row per logged point, student head and teacher head of
    every run: its activation, seed and method, the point's step and time, the key and value
    overlaps and cosines of that pair, and the test error."""
    import pandas as pd

    tidy = []
    for row in rows:
        trajectory = row.trajectory
        cos_k, cos_v = trajectory.cosines("k"), trajectory.cosines("v")
        m_k, m_v = trajectory.stacked("m_k"), trajectory.stacked("m_v")
        for i, point in enumerate(trajectory.points):
            for j, h in np.ndindex(cos_k.shape[1:]):
                tidy.append(
                    {
                        "activation": row.activation,
                        "seed": row.seed,
                        "method": row.method,
                        "step": point.step,
                        "time": point.time,
                        "student": j,
                        "teacher": h,
                        "m_k": m_k[i, j, h],
                        "m_v": m_v[i, j, h],
                        "cos_k": cos_k[i, j, h],
                        "cos_v": cos_v[i, j, h],
                        "test_error": point.test_error,
                    }
                )
    return pd.DataFrame(tidy)


def plot_head_overlaps(rows: Sequence[HeadsDynamicsRow], title: str, ax: Any = None) -> Any:
    """The cosine of each student key with each teacher key against the time on a log axis: one
    colour per (student head, teacher head), one line style per run."""
    ax = new_axes(ax, size=(6, 4))
    styles = {"-": "solid", "--": "dashed", ":": "dotted", "-.": "dash-dot"}
    for r, row in enumerate(rows):
        times, cosines = row.trajectory.times(), row.trajectory.cosines("k")
        later = times > 0
        for pair, (j, h) in enumerate(np.ndindex(cosines.shape[1:])):
            label = f"student {j}, teacher {h}" if r == 0 else None
            ax.plot(
                times[later],
                cosines[later, j, h],
                color=f"C{pair}",
                ls=list(styles)[r % len(styles)],
                lw=1.0,
                label=label,
            )
    ax.axhline(0.0, color="k", lw=0.5)
    runs = ", ".join(
        f"{name}: {row.activation} seed {row.seed}"
        for name, row in zip(styles.values(), rows, strict=False)
    )
    ax.set(
        xscale="log",
        xlabel="time t",
        ylabel="cos(student key, teacher key)",
        title=f"{title}\n{runs}{' ...' if len(rows) > len(styles) else ''}",
    )
    ax.legend(fontsize=8)
    return ax
