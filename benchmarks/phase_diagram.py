"""Cost of the Bayes-optimal state evolution on the quadrature channel, and of a phase diagram.

Spiked SLR, ``nu = 2``, ``L = 3``. In one process, after a first call that compiles:

* one channel evaluation (``psi`` and both scores by quadrature);
* one state-evolution point to ``1e-10`` (``alpha = 1``, ``Delta = 0.1``, uninformative start),
  against the Monte Carlo solver it replaces (``bayes_replica_point``, 16384 draws, ``1e-9``) on
  the same point;
* the thresholds of one task (``Delta = 0.001``: ``alpha_sp``, ``alpha_alg``, ``alpha_IT`` to
  ``1e-5``) in channel evaluations, state-evolution solves and seconds;
* a 10-value phase diagram (``Delta`` from 0 to 0.003): the wall time of all thresholds, and its
  ratio to one state-evolution point.

Run: ``.venv/bin/python benchmarks/phase_diagram.py [--json out.json] [--quick]`` (``--quick``:
three values of ``Delta``).
"""

from __future__ import annotations

import argparse
import json
import time

import numpy as np

from bayes_slr.formulas.bayes_channel import BayesChannel
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.state_evolution import state_evolution
from bayes_slr.formulas.thresholds import thresholds
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig

CONFIG = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
DELTAS = (0.0, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 1.5e-3, 2e-3, 2.5e-3, 3e-3)
RANGE = (0.5, 4.0)
TOL = 1e-5


def seconds_of(fn) -> tuple[float, object]:
    """Wall time of one call, and its value."""
    clock = time.perf_counter()
    value = fn()
    return time.perf_counter() - clock, value


def measure(quick: bool) -> dict:
    """Every figure of the module docstring, in this process."""
    figures: dict = {"config": CONFIG.to_dict(), "range": RANGE, "tol": TOL}
    channel = BayesChannel(CONFIG)
    figures["first_evaluation_s"], _ = seconds_of(lambda: channel.raw(np.array([0.5, 0.5])))
    repeats = 10
    total, _ = seconds_of(
        lambda: [channel.raw(np.array([0.5, 0.5 + 1e-3 * i])) for i in range(1, repeats + 1)]
    )
    figures["evaluation_s"] = total / repeats
    fresh = BayesChannel(CONFIG)
    figures["point_s"], point = seconds_of(lambda: state_evolution(CONFIG, 1.0, channel=fresh))
    figures["point_evaluations"] = point.evaluations
    bayes_replica_point(CONFIG, alpha=1.0, mc_samples=16384)  # compiles
    figures["monte_carlo_point_s"], _ = seconds_of(
        lambda: bayes_replica_point(CONFIG, alpha=1.0, mc_samples=16384, seed=1)
    )
    figures["point_over_monte_carlo_point"] = figures["point_s"] / figures["monte_carlo_point_s"]
    total, found = seconds_of(lambda: thresholds(CONFIG.replace(Delta=1e-3), *RANGE, tol=TOL))
    figures["thresholds_delta_0.001"] = {
        "seconds": total,
        "evaluations": found.evaluations,
        "state_evolution_solves": found.solves,
        "curve_points": len(found.curve),
        "values": {r.name: r.describe(*RANGE) for r in found.all()},
        "over_one_point": total / figures["point_s"],
    }
    deltas = DELTAS[::4] if quick else DELTAS
    diagram, evaluations = {}, 0
    clock = time.perf_counter()
    for Delta in deltas:
        found = thresholds(CONFIG.replace(Delta=Delta), *RANGE, tol=TOL)
        evaluations += found.evaluations
        diagram[str(Delta)] = {r.name: r.describe(*RANGE) for r in found.all()}
    total = time.perf_counter() - clock
    figures["diagram"] = {
        "deltas": len(deltas),
        "seconds": total,
        "evaluations": evaluations,
        "over_one_point": total / figures["point_s"],
        "thresholds": diagram,
    }
    return figures


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    parser.add_argument("--quick", action="store_true", help="three values of Delta")
    arguments = parser.parse_args()
    enable_compilation_cache()
    result = measure(arguments.quick)
    print(json.dumps(result, indent=1))
    if arguments.json:
        with open(arguments.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
