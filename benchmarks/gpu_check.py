"""A prepared GPU check: the main kernels on the GPU against the CPU in the same run, and their numbers agree.

Run where a GPU is available (one call, under 5 minutes):
``.venv/bin/python benchmarks/gpu_check.py [--json out.json] [--quick]``

For each kernel it runs the same computation with ``jax.default_device`` set to the CPU
and to the first accelerator, times the second call (the first compiles), and checks that
the two numbers agree within the kernel's own error (its Monte Carlo standard error, or
1e-9 relative for deterministic float64 computations). Kernels: the exact Bayes risk
(quadrature), the Monte Carlo Bayes risk, ERM by L-BFGS at ``D = 2000``, the exact Gibbs
sampler at ``D = 200``, a replica-theory point, and a whole AMP point at ``D = 4000``.
Everything runs in float64 (the package's precision); AMP also in float32.
Without an accelerator it says so and runs the CPU column only. Results go to
``docs/performance.md`` by hand.
"""

from __future__ import annotations

import argparse
import json
import math
import time
from pathlib import Path
from typing import Any, Callable

import jax
import jax.numpy as jnp

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.experiments.erm import erm_experiment
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import training_size
from bayes_slr.records import json_ready, provenance
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.replica_bayes import bayes_replica_point

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)

Kernel = Callable[[], tuple[float, float]]  # () -> (value, tolerance of a CPU/GPU comparison)


def _exact_bayes_risk() -> tuple[float, float]:
    value = bayes_error_exact(SPIKED.replace(length=LengthLaw.uniform(1000))).value
    return value, 1e-9 * abs(value)


def _monte_carlo_bayes_risk(samples: int) -> Kernel:
    def run() -> tuple[float, float]:
        result = bayes_risk_mc(SPIKED.replace(length=LengthLaw.fixed(10)), samples, jax.random.PRNGKey(0))
        return float(result.bayes_error.mean), 4 * float(result.bayes_error.stderr)

    return run


def _erm(D: int) -> Kernel:
    def run() -> tuple[float, float]:
        summary = erm_experiment(SPIKED.replace(D=D), "softmax", alpha=4.0, lam=1.0, seeds=1, N_test=10_000)
        return summary.test_error, 4 * summary.stderr + 1e-6

    return run


def _gibbs(D: int) -> Kernel:
    def run() -> tuple[float, float]:
        config = SPIKED.replace(D=D)
        key_t, key_d, key_s = jax.random.split(jax.random.PRNGKey(1), 3)
        teacher = draw_teacher(key_t, D, exact=True)
        batch = simulate(key_d, config, teacher, training_size(4.0, D))
        draws = sample_posterior(key_s, config, batch, sampler="gibbs", chains=2, warmup=200, samples=200)
        m_k = jnp.mean(draws.k @ teacher.k_star / D)
        spread = jnp.std(draws.k @ teacher.k_star / D)
        return float(m_k), 4 * float(spread) / math.sqrt(50)

    return run


def _amp(D: int, dtype: str) -> Kernel:
    def run() -> tuple[float, float]:
        options = AMPOptions(dtype=dtype, state_evolution=False, history=False, n_test=10_000)
        row = amp_point(SPIKED.replace(D=D), 4.0, 0, options)
        return row["test_error"], 4 * row["stderr"]

    return run


def _theory_point() -> tuple[float, float]:
    point = bayes_replica_point(SPIKED, alpha=2.0, mc_samples=2048, seed=0)
    return point.test_error, 1e-6


def kernels(quick: bool) -> dict[str, Kernel]:
    """The kernels to compare, at the sizes of the issue (smaller with ``quick``)."""
    chosen = {
        "exact Bayes risk (L ~ U{1..1000})": _exact_bayes_risk,
        "Monte Carlo Bayes risk (L = 10)": _monte_carlo_bayes_risk(200_000 if quick else 4_000_000),
        f"ERM L-BFGS softmax (D = {200 if quick else 2000}, alpha = 4)": _erm(200 if quick else 2000),
        f"Gibbs (D = {50 if quick else 200}, alpha = 4)": _gibbs(50 if quick else 200),
        "state-evolution point (alpha = 2)": _theory_point,
    }
    for dtype in ("float64", "float32"):
        chosen[f"AMP ({dtype}, D = {1000 if quick else 4000}, alpha = 4)"] = _amp(1000 if quick else 4000, dtype)
    return chosen


def timed(kernel: Kernel, device: jax.Device) -> tuple[float, float, float]:
    """``(value, tolerance, seconds)`` on ``device``: the second call is timed."""
    with jax.default_device(device):
        kernel()
        start = time.perf_counter()
        value, tolerance = kernel()
        return value, tolerance, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", type=Path, help="also write the table as JSON")
    parser.add_argument("--quick", action="store_true", help="small sizes (a smoke test of the script)")
    args = parser.parse_args()
    enable_compilation_cache()
    cpu = jax.devices("cpu")[0]
    accelerators = [d for d in jax.devices() if d.platform != "cpu"]
    gpu = accelerators[0] if accelerators else None
    print(f"CPU: {cpu.device_kind}; accelerator: {gpu.device_kind if gpu else 'none (CPU column only)'}")
    rows = []
    print(f"{'kernel':48s} {'CPU s':>9s} {'GPU s':>9s} {'speed-up':>9s} {'agree':>6s}")
    for name, kernel in kernels(args.quick).items():
        cpu_value, cpu_tol, cpu_time = timed(kernel, cpu)
        row: dict[str, Any] = {"kernel": name, "cpu_seconds": cpu_time, "cpu_value": cpu_value}
        if gpu is not None:
            gpu_value, gpu_tol, gpu_time = timed(kernel, gpu)
            agree = abs(gpu_value - cpu_value) <= math.hypot(cpu_tol, gpu_tol)
            row.update(gpu_seconds=gpu_time, gpu_value=gpu_value, speed_up=cpu_time / gpu_time, agree=agree)
        rows.append(row)
        gpu_cells = (f"{row['gpu_seconds']:9.3f} {row['speed_up']:9.1f} {str(row['agree']):>6s}" if gpu is not None
                     else f"{'-':>9s} {'-':>9s} {'-':>6s}")
        print(f"{name:48s} {cpu_time:9.3f} {gpu_cells}", flush=True)
    if args.json:
        record = {**provenance({"quick": args.quick}, None), "rows": rows}
        args.json.write_text(json.dumps(json_ready(record), indent=1))


if __name__ == "__main__":
    main()
