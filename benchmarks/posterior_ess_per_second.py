"""ESS per second of the overlaps, per sampler kernel, and the cost of the Bayes-optimal predictor.

1. Samplers: for each variant and size ``D``, every registered kernel that supports the variant
   (spiked: exact Gibbs, NUTS; max: Gibbs-HMC, collapsed Gibbs, NUTS) on the same posterior
   (same data, same chain settings), all sizes in one process. Every chain
   starts at the teacher so that all samplers sample the same (unimodal) posterior. Each
   sampler runs twice with the same shapes: the first run includes compilation, the second
   is timed (warm-up plus sampling) and its draws give the bulk ESS (ArviZ) of
   ``m_k, m_v, q_k, q_v``. Figure of merit: the smallest ESS over the overlaps per second;
   the ratio is against NUTS (target for max-SLR: >= 5).
2. Predictor: seconds to evaluate the weighted (Bayes-optimal) predictor against the plain
   average on the same draws and test sequences (target: <= 2x).

Run: ``.venv/bin/python benchmarks/posterior_ess_per_second.py [--variant spiked max] [--D 50
100] [--skip collapsed] [--no-predictor] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import time

import arviz as az
import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.inference.posterior_io import OVERLAPS, overlaps
from bayes_slr.inference.predictive import PosteriorPredictor, posterior_mean_predictor
from bayes_slr.inference.sampler_registry import samplers_supporting
from bayes_slr.inference.samplers import resolve_sampler, sample_posterior
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import atomic_write, json_text, provenance


def ess_of_overlaps(draws, teacher) -> dict[str, float]:
    """Bulk ESS of each overlap."""
    values = overlaps(draws.k, draws.v, teacher)
    return {name: float(az.ess(np.asarray(values[name]), method="bulk")) for name in OVERLAPS}


def timed(run):
    """Run twice; return the result of the second run and the seconds of the first and
    second run.
    """
    start = time.perf_counter()
    jax.block_until_ready(run(jax.random.PRNGKey(0)))
    first = time.perf_counter() - start
    start = time.perf_counter()
    result = jax.block_until_ready(run(jax.random.PRNGKey(1)))
    return result, first, time.perf_counter() - start


def sampler_rows(config, teacher, batch, settings, skip=()) -> dict[str, dict]:
    """Timed rows of the default sampler, every other sampler supporting the variant but those in
    ``skip``, and NUTS; the default sampler's draws."""
    rows = {}
    auto = resolve_sampler(config, "auto")
    others = [name for name in samplers_supporting(config.law) if name not in (auto, "nuts", *skip)]
    for sampler in (auto, *others, "nuts"):

        def run(key, sampler=sampler):
            draws = sample_posterior(
                key, config, batch, sampler=sampler, **settings, init="informed", teacher=teacher
            )
            return draws

        sampler_draws, first, warm = timed(run)
        if sampler == auto:
            draws = sampler_draws  # the predictor row uses the default sampler's draws
        ess = ess_of_overlaps(sampler_draws, teacher)
        rows[sampler] = {
            "seconds_first_run": first,
            "seconds": warm,
            "ess_bulk": ess,
            "min_ess_per_second": min(ess.values()) / warm,
        }
    base = rows["nuts"]["min_ess_per_second"]
    for row in rows.values():
        row["ratio_to_nuts"] = row["min_ess_per_second"] / base
    return rows, draws


def predictor_row(config, teacher, draws, n_test: int, max_draws: int) -> dict:
    test = simulate(jax.random.PRNGKey(99), config, teacher, n_test)
    weighted = PosteriorPredictor(config, draws.k, draws.v, max_draws=max_draws)
    plain_draws = (
        draws.k.reshape(-1, config.D)[: weighted.draws],
        draws.v.reshape(-1, config.D)[: weighted.draws],
    )
    _, _, weighted_s = timed(lambda key: weighted(test.X, test.lengths))
    _, _, plain_s = timed(
        lambda key: posterior_mean_predictor(config, *plain_draws, test.X, test.lengths)
    )
    return {
        "weighted_seconds": weighted_s,
        "plain_seconds": plain_s,
        "ratio": weighted_s / plain_s,
        "n_test": n_test,
        "draws": weighted.draws,
    }


def variant_rows(variant: str, D: int, args: argparse.Namespace, settings: dict) -> dict:
    """The sampler rows (and the predictor row) of one variant at one size; printed."""
    config = SLRConfig(variant, D, LengthLaw.fixed(args.L), args.nu, args.Delta)
    teacher = draw_teacher(jax.random.PRNGKey(10), config.D)
    batch = simulate(jax.random.PRNGKey(11), config, teacher, round(args.alpha * config.D))
    rows, draws = sampler_rows(config, teacher, batch, settings, args.skip)
    label = f"{variant} D={D}:"
    print(
        f"{label} {'sampler':>10} {'first run s':>11} {'warm run s':>10} {'min ESS':>8} "
        f"{'min ESS/s':>10} {'x nuts':>7}",
        flush=True,
    )
    for name, row in rows.items():
        print(
            f"{'':{len(label)}} {name:>10} {row['seconds_first_run']:11.2f} "
            f"{row['seconds']:10.2f} "
            f"{min(row['ess_bulk'].values()):8.0f} {row['min_ess_per_second']:10.1f} "
            f"{row['ratio_to_nuts']:7.2f}",
            flush=True,
        )
    if args.no_predictor:
        return {"samplers": rows}
    predictor = predictor_row(config, teacher, draws, args.n_test, args.chains * args.samples)
    print(
        f"{'':{len(label)}} predictor on {predictor['n_test']} sequences x "
        f"{predictor['draws']} draws: "
        f"weighted {predictor['weighted_seconds']:.2f} s, plain "
        f"{predictor['plain_seconds']:.2f} s "
        f"(ratio {predictor['ratio']:.2f})",
        flush=True,
    )
    return {"samplers": rows, "predictor": predictor}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["spiked", "max"])
    parser.add_argument("--D", type=int, nargs="+", default=[50])
    parser.add_argument("--L", type=int, default=3)
    parser.add_argument("--nu", type=float, default=2.0)
    parser.add_argument("--Delta", type=float, default=0.1)
    parser.add_argument("--alpha", type=float, default=4.0)
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=500)
    parser.add_argument("--samples", type=int, default=500)
    parser.add_argument("--n-test", type=int, default=10_000)
    parser.add_argument(
        "--skip", nargs="+", default=[], help="leave out these samplers (not the default, not NUTS)"
    )
    parser.add_argument(
        "--no-predictor", action="store_true", help="time the samplers only, not the predictor"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()
    enable_compilation_cache()
    settings = {"chains": args.chains, "warmup": args.warmup, "samples": args.samples}
    results = {}
    print(
        f"D={args.D} L={args.L} nu={args.nu:g} Delta={args.Delta:g} alpha={args.alpha:g}; "
        f"{args.chains} chains x "
        f"({args.warmup} warm-up + {args.samples} draws), device {jax.devices()[0].platform}"
    )
    for variant in args.variant:
        for D in args.D:
            results[f"{variant} D={D}"] = variant_rows(variant, D, args, settings)
    if args.json:
        record = {
            **provenance(
                {
                    "D": args.D,
                    "L": args.L,
                    "nu": args.nu,
                    "Delta": args.Delta,
                    "alpha": args.alpha,
                    **settings,
                },
                0,
            ),
            "results": results,
        }
        atomic_write(args.json, lambda tmp: tmp.write_text(json_text(record, indent=1)))


if __name__ == "__main__":
    main()
