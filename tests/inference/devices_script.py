"""Run by test_devices.py as ``python devices_script.py N_DEVICES OUT.npz``.

Bayes risk, chains and test errors on N host devices (``XLA_FLAGS`` is set before JAX
starts); prints one JSON line and saves the draws.
"""

import json
import os
import sys

os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=" + sys.argv[1]
import jax
import numpy as np

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.inference.kernels import SamplerData
from bayes_slr.inference.kernels.base import scan_chains
from bayes_slr.inference.predictive import PosteriorPredictor, posterior_errors
from bayes_slr.inference.sampler_registry import get_sampler
from bayes_slr.inference.samplers import initial_positions, sample_posterior
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.scoring import excess_test_error, zero_predictor
from bayes_slr.models.simulate import draw_teacher, iterate_batches, simulate
from bayes_slr.numerics.devices import device_count

enable_compilation_cache()
out = {"devices": len(jax.devices()), "risk": []}
for config in (
    SLRConfig("spiked", 1, LengthLaw.uniform(5), 2.0),
    SLRConfig("max", 1, LengthLaw.fixed(4), float("inf")),
):
    r = bayes_risk_mc(config, 30_000, jax.random.PRNGKey(0), batch_size=4_000)
    out["risk"].append(
        [r.bayes_error.mean.item(), r.bayes_error.stderr.item(), r.nishimori_gap.mean.item()]
    )
draws, errors = {}, {}
for variant, sampler, chains in (
    ("spiked", "gibbs", 3),
    ("max", "gibbs-hmc", 2),
    ("spiked", "nuts", 2),
):
    config = SLRConfig(variant, 6, LengthLaw.uniform(3), 2.0, 0.1)
    key_teacher, key_data, key_run, key_test = jax.random.split(jax.random.PRNGKey(3), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, 24)
    d = sample_posterior(
        key_run, config, batch, sampler=sampler, chains=chains, warmup=15, samples=15
    )
    draws.update(
        {f"{sampler} k": d.k, f"{sampler} v": d.v, f"{sampler} log_density": d.log_density}
    )
    if sampler == "gibbs":
        e = posterior_errors(
            key_test, config, teacher, d.k, d.v, N_test=3_000, chunk_size=1_000, groups=3
        )
        z = excess_test_error(
            key_test, config, teacher, zero_predictor, N_test=2_501, chunk_size=1_000
        )
        errors = {
            name: [x.value, x.stderr]
            for name, x in (("bayes", e.bayes), ("plain", e.plain), ("zero", z))
        }
        kernel = get_sampler(sampler).make_kernel(config, 2)
        k0, v0 = initial_positions(key_run, config, 4, "random", None)
        (k, _), _ = scan_chains(
            kernel,
            jax.random.split(key_run, 4),
            SamplerData.of(batch),
            k0,
            v0,
            warmup=2,
            samples=2,
            n_devices=len(jax.devices()),
        )
        chunk = next(iterate_batches(key_test, config, teacher, 1_000, 1_000))
        f = PosteriorPredictor(config, d.k, d.v)(chunk.X, chunk.lengths)
        with jax.default_device(
            jax.devices()[-1]
        ):  # asked for on one device: everything runs there
            (k_pinned, _), _ = scan_chains(
                kernel,
                jax.random.split(key_run, 4),
                SamplerData.of(batch),
                k0,
                v0,
                warmup=2,
                samples=2,
                n_devices=device_count(),
            )
            chunk_pinned = next(iterate_batches(key_test, config, teacher, 1_000, 1_000))
        out["layout"] = {
            name: sorted((s.device.id, s.data.shape[0]) for s in x.addressable_shards)
            for name, x in (
                ("chains", k),
                ("test chunk", chunk.X),
                ("predictions", f),
                ("pinned chains", k_pinned),
                ("pinned chunk", chunk_pinned.X),
            )
        }
out["errors"] = errors
np.savez(sys.argv[2], **draws)
print(json.dumps(out))
