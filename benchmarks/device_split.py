"""Posterior chains and test errors on one device against all devices, in the same process.

Run: ``.venv/bin/python benchmarks/device_split.py [--host-devices 2] [--json out.json]``

``--host-devices N`` splits the CPU into ``N`` XLA devices (set before JAX starts); on a
machine with several GPUs leave it out and the work spreads over the GPUs. One device is
``jax.default_device(jax.devices()[0])`` (the package's layout follows it). For the exact
Gibbs sampler (spiked, ``D = 100``, alpha 4, 8 chains, 300 + 300 steps) and the errors of
the posterior predictors on 40 000 test sequences it reports the time of the second call
on each layout, the ratio, and how far the numbers are apart (draws: largest absolute
difference; errors: largest relative difference).
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any


def _options() -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host-devices", type=int, help="split the CPU into this many devices")
    parser.add_argument("--json", type=Path, help="also write the results as JSON")
    return parser.parse_args()


def main() -> None:
    args = _options()
    if args.host_devices:
        os.environ["XLA_FLAGS"] = f"--xla_force_host_platform_device_count={args.host_devices}"
    import jax
    import numpy as np

    from bayes_slr import LengthLaw, SLRConfig
    from bayes_slr.inference.predictive import posterior_errors
    from bayes_slr.inference.samplers import sample_posterior
    from bayes_slr.jax_setup import enable_compilation_cache
    from bayes_slr.models.simulate import draw_teacher, simulate
    from bayes_slr.models.spec import training_size
    from bayes_slr.records import json_text, provenance

    enable_compilation_cache()
    config = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0, 0.1)
    key_teacher, key_data, key_run, key_test = jax.random.split(jax.random.PRNGKey(0), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, training_size(4.0, config.D))

    def chains() -> Any:
        return sample_posterior(
            key_run, config, batch, sampler="gibbs", chains=8, warmup=300, samples=300
        )

    def errors(draws: Any) -> Callable[[], np.ndarray]:
        def run() -> np.ndarray:
            e = posterior_errors(
                key_test, config, teacher, draws.k, draws.v, N_test=40_000, chunk_size=10_000
            )
            return np.array([e.bayes.value, e.bayes.stderr, e.plain.value, e.plain.stderr])

        return run

    def timed(work: Callable[[], Any], one_device: bool) -> tuple[Any, float]:
        with jax.default_device(jax.devices()[0]) if one_device else contextlib.nullcontext():
            work()
            start = time.perf_counter()
            out = work()
            return out, time.perf_counter() - start

    draws_one, chains_one = timed(chains, True)
    draws_all, chains_all = timed(chains, False)
    errors_one, score_one = timed(errors(draws_one), True)
    errors_all, score_all = timed(errors(draws_one), False)
    result = {
        "devices": [str(d) for d in jax.devices()],
        "chains_seconds_one_device": chains_one,
        "chains_seconds_all_devices": chains_all,
        "chains_speed_up": chains_one / chains_all,
        "draws_max_abs_difference": float(np.max(np.abs(draws_one.k - draws_all.k))),
        "errors_seconds_one_device": score_one,
        "errors_seconds_all_devices": score_all,
        "errors_speed_up": score_one / score_all,
        "errors_max_rel_difference": float(np.max(np.abs(errors_all / errors_one - 1))),
    }
    for name, value in result.items():
        print(f"{name:30s} {value:.4g}" if isinstance(value, float) else f"{name:30s} {value}")
    if args.json:
        args.json.write_text(
            json_text({**provenance({"argv": sys.argv[1:]}, None), **result}, indent=1)
        )


if __name__ == "__main__":
    main()
