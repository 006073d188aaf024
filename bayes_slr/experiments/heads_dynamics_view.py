"""The table, tidy frame and figure of multi-head ``dynamics`` runs (docs/multihead.md,
"Dynamics"): one line per run with its end (error, key cosine matrix), the teacher head each
student head matched, when each specialised and whether the run stalled; the head-overlap
trajectories (the cosine of each student key with each teacher key against time)."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.studies.heads_dynamics_records import HeadsDynamicsRow

LEVEL = 0.5
"""The cosine level the specialisation is read at
(:func:`~bayes_slr.studies.multihead_dynamics.read_specialisation`'s default)."""

COLUMNS = (
    "activation",
    "seed",
    "method",
    "student_heads",
    "steps",
    "t_max",
    "final_error",
    "final_stderr",
    "population_optimum",
    "bayes_error",
    "cos_k",
    "matched",
    "escape_time",
    "specialised_at",
    "stalled",
)


def heads_notes(data: bool) -> tuple[str, ...]:
    """The notes of a multi-head table: the clock, how the cosines are read, and what the ODEs'
    error is (``data``: a run on data at ``D`` rather than an ODE)."""
    error = (
        "final_error: the test error on fresh sequences"
        if data
        else "final_error: the population error on the ODE's Monte Carlo draws"
    )
    return (
        "time is the ODE clock (eta/D per sgd step); cos_k: the final cosines of the student "
        "keys (rows) with the teacher keys (columns); matched: the teacher head of each student "
        "head (the assignment maximising |cos_k| + |cos_v|); escape_time: first time a key "
        f"cosine reaches {LEVEL:g}; specialised_at: when each head's cosine with its teacher "
        f"head exceeds its largest with another by {LEVEL:g}; stalled: a head not specialised at "
        "the end (docs/multihead.md)",
        f"{error}; population_optimum: the best of aligned heads, one per teacher head",
    )


def _matrix(rows: Sequence[Sequence[float]]) -> str:
    """A small matrix in one cell: rows separated by ``;``."""
    return "; ".join(" ".join(f"{x:.2f}" for x in row) for row in rows)


def _cell(row: HeadsDynamicsRow, column: str) -> Any:
    if column == "cos_k":
        return _matrix(row.cosines_k)
    if column == "matched":
        return " ".join(f"{j}->{'-' if h is None else h}" for j, h in enumerate(row.permutation))
    if column == "specialised_at":
        return " ".join("-" if math.isnan(t) else f"{t:.3g}" for t in row.head_times)
    if column == "stalled":
        return "no" if row.specialised else "yes"
    value = getattr(row, column)
    return "-" if value is None else value


def heads_table(rows: Sequence[HeadsDynamicsRow]) -> str:
    """One line per run (module docstring): ``cos_k`` is the final ``H_s x H`` key cosine
    matrix (rows: student heads), ``matched`` each student head's teacher head, ``specialised_at``
    each head's specialisation time."""
    return format_table(list(COLUMNS), [[_cell(row, c) for c in COLUMNS] for row in rows])


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
