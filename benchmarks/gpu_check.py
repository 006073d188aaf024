"""A prepared GPU check: the main kernels on the GPU against the CPU in the same run, and their
numbers agree.

Run where a GPU is available, in one call that ``--budget`` (default 240 s) keeps under
5 minutes (``docs/performance.md`` has the CPU column as measured on a 2-core machine;
``--quick`` is a 30-second smoke test):
``.venv/bin/python benchmarks/gpu_check.py --json gpu_check.json``

For each kernel it runs the same computation with ``jax.default_device`` set to the CPU
and to the first accelerator (the package's device layout follows it), times the second
call (the first compiles), and checks that the two numbers agree within the kernel's own
error (4 Monte Carlo standard errors, or 1e-9 relative for deterministic float64
computations). Kernels: the exact Bayes risk (quadrature), the Monte Carlo Bayes risk, ERM
by L-BFGS at ``D = 2000`` (one random start), the exact Gibbs sampler at ``D = 200`` with 2
and with 8 chains (how the chain axis scales on each device), a replica-theory point,
and AMP at ``D = 4000`` (``N L D = 9.6e7`` token entries; ``D = 8000`` would take most of
the 5 minutes on the CPU alone) in float64 and float32. Rows are printed, and written to
``--json``, as they finish; a kernel that would start after ``--budget`` seconds is
skipped (so a one-shot run on a lent machine always ends with its table). Without an
accelerator it says so and runs the CPU column only. Results go to
``docs/performance.md`` by hand.
"""

from __future__ import annotations

import argparse
import math
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import jax
import jax.numpy as jnp

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import training_size
from bayes_slr.records import json_text, provenance
from bayes_slr.studies.amp import amp_check_kernel
from bayes_slr.studies.erm import erm_study

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)

Kernel = Callable[[], tuple[float, float]]  # () -> (value, tolerance of a CPU/GPU comparison)


def _exact_bayes_risk() -> tuple[float, float]:
    value = bayes_error_exact(SPIKED.replace(length=LengthLaw.uniform(1000))).value
    return value, 1e-9 * abs(value)


def _monte_carlo_bayes_risk(samples: int) -> Kernel:
    def run() -> tuple[float, float]:
        result = bayes_risk_mc(
            SPIKED.replace(length=LengthLaw.fixed(10)), samples, jax.random.PRNGKey(0)
        )
        return float(result.bayes_error.mean), 4 * float(result.bayes_error.stderr)

    return run


def _erm(D: int) -> Kernel:
    def run() -> tuple[float, float]:
        summary = erm_study(
            SPIKED.replace(D=D),
            ERMSettings(activation="softmax", alpha=4.0, lam=1.0, seeds=1, starts=1, N_test=10_000),
            0,
        )
        return summary.test_error, 4 * summary.stderr + 1e-6

    return run


def _gibbs(D: int, chains: int) -> Kernel:
    def run() -> tuple[float, float]:
        config = SPIKED.replace(D=D)
        key_t, key_d, key_s = jax.random.split(jax.random.PRNGKey(1), 3)
        teacher = draw_teacher(key_t, D, exact=True)
        batch = simulate(key_d, config, teacher, training_size(4.0, D))
        draws = sample_posterior(
            key_s, config, batch, sampler="gibbs", chains=chains, warmup=100, samples=100
        )
        m_k = jnp.mean(draws.k @ teacher.k_star / D)
        spread = jnp.std(draws.k @ teacher.k_star / D)
        return float(m_k), 4 * float(spread) / math.sqrt(25 * chains)

    return run


def _theory_point() -> tuple[float, float]:
    point = bayes_replica_point(SPIKED, alpha=2.0, mc_samples=2048, seed=0)
    return point.test_error, 1e-6


def kernels(quick: bool) -> dict[str, Kernel]:
    """The kernels to compare, at the sizes of the issue (smaller with ``quick``)."""
    D_erm, D_gibbs, D_amp = (200, 50, 1000) if quick else (2000, 200, 4000)
    chosen = {
        "exact Bayes risk (L ~ U{1..1000})": _exact_bayes_risk,
        "Monte Carlo Bayes risk (L = 10)": _monte_carlo_bayes_risk(200_000 if quick else 4_000_000),
        f"ERM L-BFGS softmax (D = {D_erm}, alpha = 4)": _erm(D_erm),
        **{
            f"Gibbs (D = {D_gibbs}, alpha = 4, {chains} chains)": _gibbs(D_gibbs, chains)
            for chains in (2, 8)
        },
        "state-evolution point (alpha = 2)": _theory_point,
    }
    for dtype in ("float64", "float32"):
        chosen[f"AMP (D = {D_amp}, alpha = 2, {dtype})"] = amp_check_kernel(
            SPIKED.replace(D=D_amp), dtype=dtype
        )
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
    parser.add_argument(
        "--json", type=Path, help="also write the table as JSON (rewritten after every row)"
    )
    parser.add_argument(
        "--quick", action="store_true", help="small sizes (a smoke test of the script)"
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=240.0,
        help="seconds after which the kernels not yet started are skipped",
    )
    args = parser.parse_args()
    started = time.perf_counter()
    enable_compilation_cache()
    cpu = jax.devices("cpu")[0]
    accelerators = [d for d in jax.devices() if d.platform != "cpu"]
    gpu = accelerators[0] if accelerators else None
    print(
        f"CPU: {cpu.device_kind}; accelerator: "
        f"{gpu.device_kind if gpu else 'none (CPU column only)'}"
    )
    rows: list[dict[str, Any]] = []
    print(
        f"{'kernel':40s} {'CPU s':>8s} {'GPU s':>8s} {'speed-up':>8s} {'CPU value':>12s} "
        f"{'GPU value':>12s} agree"
    )
    for name, kernel in kernels(args.quick).items():
        if time.perf_counter() - started > args.budget:
            rows.append({"kernel": name, "skipped": f"past --budget {args.budget:g} s"})
            print(f"{name:40s} skipped: past --budget {args.budget:g} s", flush=True)
            continue
        cpu_value, cpu_tol, cpu_time = timed(kernel, cpu)
        row: dict[str, Any] = {"kernel": name, "cpu_seconds": cpu_time, "cpu_value": cpu_value}
        cells = f"{'-':>8s} {'-':>8s} {cpu_value:12.6g} {'-':>12s} -"
        if gpu is not None:
            gpu_value, gpu_tol, gpu_time = timed(kernel, gpu)
            agree = abs(gpu_value - cpu_value) <= math.hypot(cpu_tol, gpu_tol)
            row.update(
                gpu_seconds=gpu_time,
                gpu_value=gpu_value,
                speed_up=cpu_time / gpu_time,
                agree=agree,
                tolerance=math.hypot(cpu_tol, gpu_tol),
            )
            cells = (
                f"{gpu_time:8.3f} {cpu_time / gpu_time:8.1f} {cpu_value:12.6g} "
                f"{gpu_value:12.6g} {agree}"
            )
        rows.append(row)
        print(f"{name:40s} {cpu_time:8.3f} {cells}", flush=True)
        if args.json:
            record = {**provenance({"quick": args.quick}, None), "rows": rows}
            args.json.write_text(json_text(record, indent=1))
    print(f"total {time.perf_counter() - started:.0f} s (compilation and both devices included)")


if __name__ == "__main__":
    main()
