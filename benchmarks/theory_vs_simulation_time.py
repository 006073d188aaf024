"""Time of the replica theory (per point, per curve) against the ERM simulation it predicts.

Run: ``.venv/bin/python benchmarks/theory_vs_simulation_time.py [--json out.json]``.
Prints wall-clock seconds and the ratios simulation / theory, all measured in this
process (first calls include compilation, reported separately).
"""

from __future__ import annotations

import argparse
import json
import time

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.replica_erm import erm_replica_point
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.erm import erm_study

CONFIG = SLRConfig("spiked", 200, LengthLaw.fixed(3), 2.0)
ALPHAS = (4.0, 8.0)
LAM, SEEDS, MC = 1.0, 5, 2048  # lam = 1: both activations replica-symmetric (docs/theory.md)


def timed(fn) -> tuple[float, object]:
    start = time.perf_counter()
    value = fn()
    return time.perf_counter() - start, value


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--json", help="also write the figures to this file")
    args = parser.parse_args()
    enable_compilation_cache()
    figures = {
        "config": CONFIG.to_dict(),
        "alphas": ALPHAS,
        "lam": LAM,
        "seeds": SEEDS,
        "mc_samples": MC,
    }
    figures["bayes_first_point_s"], _ = timed(
        lambda: bayes_replica_point(CONFIG, alpha=ALPHAS[0], mc_samples=MC)
    )
    figures["bayes_curve_s"], _ = timed(
        lambda: [bayes_replica_point(CONFIG, alpha=a, mc_samples=MC) for a in ALPHAS]
    )
    for activation in ("softmax", "linear"):
        first, _ = timed(
            lambda: erm_replica_point(CONFIG, activation, alpha=ALPHAS[0], lam=LAM, mc_samples=MC)
        )
        curve, _ = timed(
            lambda: [
                erm_replica_point(CONFIG, activation, alpha=a, lam=LAM, mc_samples=MC)
                for a in ALPHAS
            ]
        )
        simulation, _ = timed(
            lambda: [
                erm_study(
                    CONFIG, ERMSettings(activation=activation, alpha=a, lam=LAM, seeds=SEEDS), 0
                )
                for a in ALPHAS
            ]
        )
        figures[activation] = {
            "theory_first_point_s": first,
            "theory_curve_s": curve,
            "theory_per_point_s": curve / len(ALPHAS),
            "simulation_curve_s": simulation,
            "simulation_over_theory": simulation / curve,
        }
    print(json.dumps(figures, indent=1))
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(figures, handle, indent=1)


if __name__ == "__main__":
    main()
