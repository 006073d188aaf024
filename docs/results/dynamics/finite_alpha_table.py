"""The "Finite alpha" table of docs/dynamics.md from the stored ``finite_alpha_*.json``.

Run from the repository root: ``python docs/results/dynamics/finite_alpha_table.py``. One line
per (variant, lam, D, step size and steps, activation): mean over seeds (and its standard error) of
GD's end error and of the L-BFGS minimum's (same test sequences), the replica error (or none) and
its replicon, the largest objective gap and GD gradient norm, the settling time of GD's error at
the minimum's, and the seeds at the minimum.
"""

import json
import math
import pathlib
import statistics

HERE = pathlib.Path(__file__).parent


def spread(values: list[float]) -> str:
    """Mean of ``values`` and its standard error over seeds."""
    mean = statistics.fmean(values)
    if len(values) == 1:
        return f"{mean:.3f}"
    return f"{mean:.3f} +- {statistics.stdev(values) / math.sqrt(len(values)):.3f}"


def line(setting: list[str], activation: str, rows: list[dict]) -> str:
    """One table line for the rows of one activation."""
    erm = [row["erm"] for row in rows]
    replica = erm[0]["replica_error"]
    replicon = erm[0]["replica_replicon"]
    theory = "-" if replica is None else f"{replica:.3f}"
    theory += "" if replicon is None else f" (replicon {replicon:.2f})"
    reach = [e["erm_reach_time"] for e in erm]
    reached = [r for r in reach if r is not None]
    settle = "-" if not reached else f"{min(reached):g}-{max(reached):g}"
    return " | ".join(
        [
            "",
            *setting,
            activation,
            spread([row["final_error"] for row in rows]),
            spread([e["lbfgs_error"] for e in erm]),
            theory,
            f"{max(abs(e['objective_gap']) for e in erm):.1e}",
            f"{max(e['gd_grad_norm'] for e in erm):.0e}",
            f"{settle} ({len(reached)}/{len(erm)})",
            f"{sum(e['at_minimum'] for e in erm)}/{len(erm)}",
            "",
        ]
    ).strip()


VARIANTS = ("spiked", "max")
"""The order of the table's blocks; within one, ``lam`` descending, then ``D`` and ``eta``."""


def order(result: dict) -> tuple:
    """Sort key of a stored run: its place in the table."""
    options = result["config"]
    return (VARIANTS.index(options["variant"]), -options["lam"], options["D"], options["eta"])


results = [json.loads(path.read_text()) for path in HERE.glob("finite_alpha_*.json")]
# the others are the replica points of `bayes-slr theory`
for result in sorted((r for r in results if r["experiment"] == "dynamics"), key=order):
    options = result["config"]
    setting = [
        f"{options['variant']} nu={options['nu']:g}",
        f"{options['lam']:g}",
        f"{options['D']}",
        f"{options['eta']:g}, {options['steps']}",
    ]
    activations = dict.fromkeys(row["activation"] for row in result["rows"])
    for activation in activations:
        rows = [row for row in result["rows"] if row["activation"] == activation]
        print(line(setting, activation, rows))
