"""ESS per second of the overlaps: NUTS summed-out vs NUTS with enumerated location vs exact Gibbs.

Same spiked task, data and chain settings for the three samplers; every chain starts
at the teacher so that all three sample the same (unimodal) posterior. Each sampler
runs twice with the same shapes: the first run includes compilation, the second is
timed (warm-up plus sampling) and its draws give the bulk ESS (ArviZ) of
``m_k, m_v, q_k, q_v``. The figure of merit is the smallest ESS over the overlaps per
second; ratios are against the enumerated NUTS run in the same process.

Run: ``.venv/bin/python benchmarks/posterior_ess_per_second.py [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import time

import arviz as az
import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.inference.posterior_io import OVERLAPS, overlaps
from bayes_slr.inference.samplers import make_nuts, run_gibbs, run_nuts
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import atomic_write, json_ready, provenance


def ess_of_overlaps(draws, teacher) -> dict[str, float]:
    """Bulk ESS of each overlap."""
    values = overlaps(draws.k, draws.v, teacher)
    return {name: float(az.ess(np.asarray(values[name]), method="bulk")) for name in OVERLAPS}


def timed(run):
    """Run twice; return the draws and the seconds of the first (with compilation) and second run."""
    start = time.perf_counter()
    run(jax.random.PRNGKey(0))
    first = time.perf_counter() - start
    start = time.perf_counter()
    draws = run(jax.random.PRNGKey(1))
    jax.block_until_ready(draws.k)
    return draws, first, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--D", type=int, default=20)
    parser.add_argument("--L", type=int, default=8)
    parser.add_argument("--nu", type=float, default=4.0)
    parser.add_argument("--Delta", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=10.0)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=300)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    enable_compilation_cache()

    config = SLRConfig("spiked", args.D, LengthLaw.fixed(args.L), args.nu, args.Delta)
    teacher = draw_teacher(jax.random.PRNGKey(10), config.D)
    batch = simulate(jax.random.PRNGKey(11), config, teacher, round(args.alpha * config.D))
    settings = {"chains": args.chains, "warmup": args.warmup, "samples": args.samples}

    def nuts_runner(enumerate_location: bool):
        mcmc = make_nuts(config, **settings, init="informed", teacher=teacher, enumerate_location=enumerate_location)
        return lambda key: run_nuts(key, config, batch, **settings, init="informed", teacher=teacher,
                                    enumerate_location=enumerate_location, mcmc=mcmc)

    runners = {
        "nuts_enumerated": nuts_runner(True),
        "nuts_summed_out": nuts_runner(False),
        "gibbs": lambda key: run_gibbs(key, config, batch, **settings, init="informed", teacher=teacher),
    }
    results = {}
    for name, run in runners.items():
        draws, first, warm = timed(run)
        ess = ess_of_overlaps(draws, teacher)
        results[name] = {"seconds_first_run": first, "seconds": warm, "compile_seconds_estimate": first - warm,
                         "ess_bulk": ess, "min_ess_per_second": min(ess.values()) / warm}
    baseline = results["nuts_enumerated"]["min_ess_per_second"]
    for row in results.values():
        row["ratio_to_enumerated"] = row["min_ess_per_second"] / baseline

    print(f"spiked D={config.D} L={args.L} nu={args.nu:g} Delta={args.Delta:g} alpha={args.alpha:g} "
          f"N={batch.y.shape[0]}; {args.chains} chains x ({args.warmup} warm-up + {args.samples} draws), "
          f"device {jax.devices()[0].platform}")
    print(f"{'sampler':>16} {'first run s':>11} {'warm run s':>10} {'min ESS':>8} {'min ESS/s':>10} {'x enum':>7}")
    for name, row in results.items():
        print(f"{name:>16} {row['seconds_first_run']:11.2f} {row['seconds']:10.2f} "
              f"{min(row['ess_bulk'].values()):8.0f} {row['min_ess_per_second']:10.1f} {row['ratio_to_enumerated']:7.2f}")
    if args.json:
        record = {**provenance({**config.to_dict(), "alpha": args.alpha, **settings}, 0), "results": results}
        atomic_write(args.json, lambda tmp: tmp.write_text(json.dumps(json_ready(record), indent=1)))


if __name__ == "__main__":
    main()
