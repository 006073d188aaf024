"""Exact Bayes error (quadrature) against Monte Carlo reaching a standard error of 1e-4.

Run: ``.venv/bin/python benchmarks/bayes_risk_exact_vs_mc.py [--L 10] [--nu 1] [--json out.json]``

Both routes run in this process, at the same point, timed after compilation:

1. Monte Carlo over the law of ``chi*``: a pilot run measures the per-sequence standard
   deviation, which fixes the number of sequences for a standard error of ``--target``;
   that run is timed (its second call, so compilation is excluded) and compared with
   the exact route's time per point (median of repeats). Targets: ratio >= 100.
2. The exact route at ``L = 10^4`` (fixed length, and uniform on ``{1..10^4}``): time
   per point after compilation. Target: < 50 ms on 2 CPU cores.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.records import atomic_write, check_output_file, json_text, provenance


def seconds(call: Callable[[], Any], repeats: int) -> tuple[float, Any]:
    """Median wall time of ``repeats`` calls (results blocked on), and the last result."""
    times, result = [], None
    for _ in range(repeats):
        start = time.perf_counter()
        result = jax.block_until_ready(call())
        times.append(time.perf_counter() - start)
    return statistics.median(times), result


def exact_vs_mc(config: SLRConfig, target: float, key: jax.Array) -> dict[str, Any]:
    """Time the exact route and Monte Carlo at the sample size that reaches ``target`` stderr."""
    bayes_error_exact(config)  # compile
    exact_time, exact = seconds(lambda: bayes_error_exact(config), repeats=20)
    pilot = bayes_risk_mc(config, 2**16, key).bayes_error
    samples = max(2, math.ceil((pilot.stderr * math.sqrt(pilot.count) / target) ** 2))
    bayes_risk_mc(config, samples, key)  # compile this batch shape
    mc_time, mc = seconds(lambda: bayes_risk_mc(config, samples, key), repeats=1)
    return {
        "point": config.to_dict(),
        "exact_value": exact.value,
        "exact_error_bound": exact.error_bound,
        "exact_seconds": exact_time,
        "mc_samples": mc.bayes_error.count,
        "mc_value": float(mc.bayes_error.mean),
        "mc_stderr": float(mc.bayes_error.stderr),
        "mc_seconds": mc_time,
        "mc_minus_exact_in_stderr": (float(mc.bayes_error.mean) - exact.value)
        / float(mc.bayes_error.stderr),
        "time_ratio_mc_over_exact": mc_time / exact_time,
    }


def exact_at_length(config: SLRConfig) -> dict[str, Any]:
    """First-call and steady time per point of the exact route."""
    start = time.perf_counter()
    bayes_error_exact(config)
    first = time.perf_counter() - start
    steady, exact = seconds(lambda: bayes_error_exact(config), repeats=10)
    return {
        "point": config.to_dict()["length"],
        "nu": config.nu,
        "value": exact.value,
        "error_bound": exact.error_bound,
        "first_call_seconds": first,
        "seconds_per_point": steady,
    }


def main() -> None:
    """Run both measurements, print them, optionally write JSON."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", choices=("spiked", "max"), default="spiked")
    parser.add_argument("--L", type=int, default=10)
    parser.add_argument("--nu", type=float, default=1.0)
    parser.add_argument(
        "--target", type=float, default=1e-4, help="Monte Carlo standard error to reach"
    )
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--json", type=Path, help="also write the figures to this file")
    args = parser.parse_args()
    out = check_output_file(args.json, force=True, name="json") if args.json else None
    enable_compilation_cache()
    print(f"device: {jax.devices()[0]}")

    config = SLRConfig(args.variant, 1, LengthLaw.fixed(args.L), args.nu)
    race = exact_vs_mc(config, args.target, jax.random.PRNGKey(args.seed))
    print(f"point {config.variant} L={args.L} nu={args.nu:g}")
    print(
        f"  exact  {race['exact_value']:.10f} (bound {race['exact_error_bound']:.1e})"
        f"  {1e3 * race['exact_seconds']:.2f} ms/point"
    )
    print(
        f"  MC     {race['mc_value']:.10f} +- {race['mc_stderr']:.1e} with "
        f"{race['mc_samples']} sequences"
        f"  {race['mc_seconds']:.2f} s  ({race['mc_minus_exact_in_stderr']:+.2f} stderr from exact)"
    )
    print(f"  time ratio MC / exact: {race['time_ratio_mc_over_exact']:.0f}x (target >= 100x)")

    large = [
        exact_at_length(SLRConfig(args.variant, 1, law, args.nu))
        for law in (LengthLaw.fixed(10_000), LengthLaw.uniform(10_000))
    ]
    for row in large:
        print(
            f"exact at {row['point']}: {row['value']:.10f} (bound {row['error_bound']:.1e})  "
            f"{1e3 * row['seconds_per_point']:.1f} ms/point after compilation "
            f"(first call {row['first_call_seconds']:.2f} s; target < 50 ms)"
        )
    if out is not None:
        record = {
            **provenance(vars(args) | {"json": str(out)}, args.seed),
            "race": race,
            "large_L": large,
        }
        atomic_write(out, lambda tmp: tmp.write_text(json_text(record, indent=2)))


if __name__ == "__main__":
    main()
