"""What the start check and the default chain lengths cost a posterior, as same-process ratios.

For each setting, ``bayes_slr.posterior`` runs (ERM off, so only sampling and evaluation count)
with and without ``check_start``, and with the previous default chain lengths (500 warm-up steps
and 500 draws per chain) against the current ones (1000 and 2000), each twice in one process: the
first call compiles, the second is timed. Ratios to the cheapest run are what to read (the
machine is shared: absolute seconds vary with its load).

Run: ``.venv/bin/python benchmarks/posterior_start_check_cost.py [--json out.json]``; defaults:
the README's posterior example (spiked, D = 100, alpha = 4) and its sweep's slowest-mixing point
(D = 20, alpha = 1).
"""

from __future__ import annotations

import argparse
import time

import bayes_slr
from bayes_slr.records import atomic_write, json_text, package_versions

SETTINGS = ({"D": 100, "alpha": 4.0}, {"D": 20, "alpha": 1.0})
LENGTHS = {"previous (500 + 500)": (500, 500), "current (1000 + 2000)": (1000, 2000)}


def timed(**options) -> tuple[float, bayes_slr.experiments.posterior.PosteriorResult]:
    """Seconds of the second of two identical runs (the first compiles), and its result."""
    bayes_slr.posterior(**options, erm=False, progress=False)
    start = time.perf_counter()
    result = bayes_slr.posterior(**options, erm=False, progress=False)
    return time.perf_counter() - start, result


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json")
    args = parser.parse_args()
    records = []
    for setting in SETTINGS:
        runs = {}
        for lengths, (warmup, samples) in LENGTHS.items():
            for check in (False, True):
                seconds, result = timed(
                    **setting, warmup=warmup, samples=samples, check_start=check
                )
                runs[(lengths, check)] = seconds
                summary = result.summary
                records.append(
                    {
                        **setting,
                        "options": result.options.to_dict(),
                        "lengths": lengths,
                        "check_start": check,
                        "seconds": seconds,
                        "rhat_max": summary.rhat_max,
                        "ess_bulk_min": summary.ess_bulk_min,
                        "warnings": list(result.warnings),
                    }
                )
        cheapest = min(runs.values())
        for (lengths, check), seconds in runs.items():
            record = next(
                r
                for r in records
                if r["D"] == setting["D"] and r["lengths"] == lengths and r["check_start"] == check
            )
            record["ratio"] = seconds / cheapest
            print(
                f"D {setting['D']} alpha {setting['alpha']:g} {lengths:>22} check_start "
                f"{str(check):5}: {seconds:6.1f} s, x{seconds / cheapest:.2f}; r_hat max "
                f"{record['rhat_max']:.3f}, ESS bulk min {record['ess_bulk_min']:.0f}",
                flush=True,
            )
    if args.json:
        text = json_text({"versions": package_versions(), "runs": records}, indent=1)
        atomic_write(args.json, lambda tmp: tmp.write_text(text))


if __name__ == "__main__":
    main()
