"""A 40-point gap sweep with ERM, in process against a local Dask cluster of 2 workers.

Run: ``.venv/bin/python benchmarks/sweep_scaling.py [--json out.json]``

Reports, measured in this process:

1. the serial time of the sweep, the time on ``DaskExecutor(workers=2)`` (cluster start
   excluded and reported apart), the speed-up and its ratio to the ideal 2x of this 2-core
   machine; the two sweeps must give the same rows;
2. the same sweep again on the same workers after each has run the whole sweep itself
   (``client.run``), so every worker has traced every kernel and shape (each ``L`` is its
   own shape): the steady-state speed-up; the first sweep's extra time over it is the
   workers' warm-up;
3. Dask's per-task overhead: 40 points of a solve that returns at once, the time per point,
   against the mean time of a real point.

Each run starts from a warm JAX persistent compilation cache (a first serial pass fills
it); what fresh workers still pay is importing the package and tracing each kernel.
"""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import bayes_slr
from bayes_slr.distributed import DaskExecutor
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.records import json_text, provenance, run_sweep

LENGTHS = (2, 3, 4, 5, 6, 8, 10, 12)
ACTIVATIONS = ("softmax", "linear")  # per L: Bayes + 2 population + 2 ERM points = 5; 8 L -> 40
OPTIONS = {
    "variant": "spiked",
    "nu": 2.0,
    "L": LENGTHS,
    "activations": ACTIVATIONS,
    "alpha": 4.0,
    "lam": 1.0,
    "D": 50,
    "seeds": 2,
    "N_test": 5_000,
    "Delta": 0.0,
}


def sweep(scheduler: str | None = None) -> tuple[list, float]:
    """Rows of the 40-point sweep (in this process, or on the Dask ``scheduler``) and its wall
    time."""
    start = time.perf_counter()
    result = bayes_slr.gap(**OPTIONS, scheduler=scheduler, progress=False)
    return [row.to_dict() for row in result.rows], time.perf_counter() - start


def _instant(point: dict) -> dict:
    return {"i": point["i"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    args = parser.parse_args()
    enable_compilation_cache()
    sweep()  # fills the compilation cache for the worker processes too
    serial_rows, serial = sweep()
    start = time.perf_counter()
    with DaskExecutor(workers=2) as executor:
        address = executor.client.scheduler.address
        startup = time.perf_counter() - start
        parallel_rows, parallel = sweep(address)
        executor.client.run(sweep)
        warm_rows, warm = sweep(address)
        start = time.perf_counter()
        run_sweep([{"i": i} for i in range(40)], _instant, executor=executor, progress=False)
        overhead = (time.perf_counter() - start) / 40
    result = {
        "points": 40,
        "serial_seconds": serial,
        "dask_2_workers_seconds": parallel,
        "cluster_start_seconds": startup,
        "speed_up": serial / parallel,
        "fraction_of_ideal_2x": serial / parallel / 2,
        "dask_2_warm_workers_seconds": warm,
        "worker_warm_up_seconds": parallel - warm,
        "steady_state_speed_up": serial / warm,
        "steady_state_fraction_of_ideal_2x": serial / warm / 2,
        "same_rows": all(
            json_text(rows, indent=None) == json_text(serial_rows, indent=None)
            for rows in (parallel_rows, warm_rows)
        ),
        "dask_overhead_per_point_seconds": overhead,
        "mean_point_seconds": serial / 40,
        "overhead_fraction_of_a_point": overhead / (serial / 40),
    }
    for name, value in result.items():
        print(f"{name:34s} {value:.4g}" if isinstance(value, float) else f"{name:34s} {value}")
    if args.json:
        args.json.write_text(json_text({**provenance({}, None), **result}, indent=1))


if __name__ == "__main__":
    main()
