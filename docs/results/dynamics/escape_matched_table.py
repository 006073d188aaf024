"""The "escape at matched starts" table of docs/dynamics.md from ``escape_matched/*.json``.

Run from the repository root: ``python docs/results/dynamics/escape_matched_table.py``. The JSONs
are the ``--out`` summaries of ``bayes-slr dynamics --method sgd`` and ``--method sgd-ode`` with
the same seeds, so each ODE starts at the overlaps of the SGD run of its seed. One line per ``D``:
the escape times (``max(|m_k|, |k.v*/D|) = 0.4``, read linearly between logged points) of the runs
and of their ODEs, the paired differences (mean +- standard error, and the largest), the same
read from every fifth logged point (a 40-point log grid) and the largest shift of one escape
time between the two readings, and the escape time of the ODE from
the old positive start ``m = +0.1 / sqrt(D)`` (the ODE of seed 0 restarted there).
"""

import json
import math
import pathlib
import statistics

import numpy as np

from bayes_slr.attention.trajectory import first_crossing
from bayes_slr.experiments.task import task_config
from bayes_slr.formulas.flow import FlowRun, Overlaps, solve_flow

HERE = pathlib.Path(__file__).parent / "escape_matched"
LEVEL = 0.4


def escape(row: dict, every: int = 1) -> float:
    """The escape time of a row, from every ``every``-th logged point (0 and the last kept)."""
    trajectory = row["trajectory"]
    keep = sorted({*range(0, len(trajectory["time"]), every), len(trajectory["time"]) - 1})
    distance = np.maximum(np.abs(trajectory["m_k"]), np.abs(trajectory["k_vstar"]))[keep]
    return first_crossing(np.asarray(trajectory["time"])[keep], -distance, -LEVEL)


def mean_se(values: list[float]) -> str:
    return (
        f"{statistics.fmean(values):+.3f} +- "
        f"{statistics.stdev(values) / math.sqrt(len(values)):.3f}"
    )


def positive_start(options: dict) -> float:
    """The escape time of the SGD ODE of ``options`` from ``m_k = m_v = +0.1 / sqrt(D)``."""
    config = task_config(
        options["variant"],
        options["L"],
        options["variable_length"],
        options["nu"],
        options["Delta"],
        options["D"],
    )
    run = FlowRun(
        config,
        options["activations"][0],
        Overlaps.typical_start("random", options["D"], config),
        t_max=options["t_max"],
        method="sgd",
        eta=options["eta"],
        batch=options["batch"],
        log_points=options["log_points"],
        mc_samples=options["mc_samples"],
    )
    trajectory = solve_flow(run)
    distance = np.abs(trajectory.column("m_k"))
    return first_crossing(trajectory.column("time"), -distance, -LEVEL)


def main() -> None:
    print(
        "| D | seeds | SGD escape | ODE escape (matched) | SGD - ODE | largest difference "
        "| SGD - ODE, 40 points | largest shift, 40 points | ODE from +0.1/sqrt(D) |"
    )
    print("|---|---|---|---|---|---|---|---|---|")
    for D in (500, 2000):
        sgd = json.loads((HERE / f"sgd_D{D}.json").read_text())
        ode = json.loads((HERE / f"sgd-ode_D{D}.json").read_text())
        pairs = {row["seed"]: [row] for row in sgd["rows"]}
        for row in ode["rows"]:
            pairs[row["seed"]].append(row)
        for seed, (a, b) in pairs.items():
            assert a["trajectory"]["m_k"][0] == b["trajectory"]["m_k"][0], seed  # matched
        fine = [escape(a) - escape(b) for a, b in pairs.values()]
        coarse = [escape(a, 5) - escape(b, 5) for a, b in pairs.values()]
        times = [escape(a) for a, _ in pairs.values()], [escape(b) for _, b in pairs.values()]
        shift = max(abs(escape(r) - escape(r, 5)) for pair in pairs.values() for r in pair)
        print(
            f"| {D} | {len(pairs)} | {min(times[0]):.3f} to {max(times[0]):.3f} "
            f"| {min(times[1]):.3f} to {max(times[1]):.3f} | {mean_se(fine)} "
            f"| {max(fine, key=abs):+.3f} | {mean_se(coarse)} | {shift:.3f} "
            f"| {positive_start(ode['config']):.3f} |"
        )


if __name__ == "__main__":
    main()
