"""What the lazy third-party imports of the registries cost (bayes_slr.lazy), and what they save.

Run: ``.venv/bin/python benchmarks/lazy_import_overhead.py [--json out.json]``.

The variant and activation modules reach JAX through lazy module proxies, so that the registries
and the validation of options import without it. Measured in this process, each against a baseline
run in the same process:

1. **Compiled code**: a jitted function of the variant and activation objects is lowered with the
   proxies and with the real modules put back in their place: the two programs (StableHLO text)
   must be the same, and their run times are compared (ratio, best of several repeats).
2. **Eager dispatch**: un-jitted calls of the same methods (every ``jnp`` look-up goes through the
   module's globals): lazy / real time per call.
3. **Import and refusal**: a fresh interpreter that imports the registries, builds an ``SLRConfig``
   and refuses ``nu < 0`` (no JAX imported), against a fresh interpreter that imports JAX alone:
   the ratio of their wall times (both measured here, one after the other).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import time

import jax
import jax.numpy as jnp

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention import activations
from bayes_slr.models import variants
from bayes_slr.records import package_versions

ROUNDS = 15
N, LBAR = 20_000, 8
VALIDATE = (
    "import bayes_slr, math\n"
    "from bayes_slr import ConfigError, LengthLaw, SLRConfig\n"
    "from bayes_slr.inference.sampler_registry import sampler_choices\n"
    "sampler_choices()\n"
    "try:\n"
    "    SLRConfig('spiked', 10, LengthLaw.fixed(3), -1.0)\n"
    "except ConfigError:\n"
    "    pass\n"
)
PROXIED = {variants: ("jax", "jnp"), activations: ("jax", "jnp")}


@contextlib.contextmanager
def real_modules():
    """The variant and activation modules with their proxies replaced by the real modules."""
    saved = {
        (module, name): getattr(module, name) for module, names in PROXIED.items() for name in names
    }
    real = {"jax": jax, "jnp": jnp}
    for module, name in saved:
        setattr(module, name, real[name])
    try:
        yield
    finally:
        for (module, name), value in saved.items():
            setattr(module, name, value)


def workload(chi: jax.Array, mask: jax.Array) -> jax.Array:
    """Location posteriors of both variants and the weights of two activations."""
    total = jnp.zeros(chi.shape[0])
    for law in (variants.get_variant("spiked"), variants.get_variant("max")):
        total = total + law.location_posterior(chi, mask, 2.0)[:, 0]
    for name in ("softmax", "erf"):
        total = total + activations.get_activation(name).weights(chi, mask, 0.3)[:, 0]
    return total


def interleaved_best(calls: dict, rounds: int = ROUNDS) -> dict[str, float]:
    """Smallest wall time of each ``calls[label] = (context, function)``, measured in turns (one
    call of each per round, after a warm-up call of each), so that a load change hits both alike.
    """
    times: dict[str, list[float]] = {label: [] for label in calls}
    for round_ in range(rounds + 1):
        for label, (context, function) in calls.items():
            with context():
                start = time.perf_counter()
                jax.block_until_ready(function())
                if round_:
                    times[label].append(time.perf_counter() - start)
    return {label: min(values) for label, values in times.items()}


def interpreter_seconds(code: str) -> float:
    """Wall time of ``python -c code`` in a fresh interpreter (best of three)."""
    times = []
    for _ in range(3):
        start = time.perf_counter()
        subprocess.run([sys.executable, "-c", code], check=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--json", help="write the measurements to this file")
    args = parser.parse_args()
    key_chi, key_len = jax.random.split(jax.random.PRNGKey(0))
    chi = jax.random.normal(key_chi, (N, LBAR))
    mask = jnp.arange(LBAR) < jax.random.randint(key_len, (N, 1), 1, LBAR + 1)

    contexts = {"lazy": contextlib.nullcontext, "real": real_modules}
    programs, compiled = {}, {}
    for label, context in contexts.items():
        with context():
            lowered = jax.jit(workload).lower(chi, mask)
            programs[label] = lowered.as_text()
            compiled[label] = lowered.compile()
    jitted = interleaved_best(
        {label: (contextlib.nullcontext, lambda f=f: f(chi, mask)) for label, f in compiled.items()}
    )
    small_chi, small_mask = chi[:64], mask[:64]
    eager = interleaved_best(
        {
            label: (context, lambda: workload(small_chi, small_mask))
            for label, context in contexts.items()
        }
    )

    validate = interpreter_seconds(VALIDATE)
    import_jax = interpreter_seconds("import jax")
    result = {
        "same_program": programs["lazy"] == programs["real"],
        "jitted_seconds": jitted,
        "jitted_ratio_lazy_over_real": jitted["lazy"] / jitted["real"],
        "eager_seconds": eager,
        "eager_ratio_lazy_over_real": eager["lazy"] / eager["real"],
        "validate_without_jax_seconds": validate,
        "import_jax_seconds": import_jax,
        "validate_over_import_jax": validate / import_jax,
        "shape": {"N": N, "Lbar": LBAR},
        "versions": package_versions(),
    }
    print(
        f"compiled program identical with and without the proxies: {result['same_program']}\n"
        f"jitted run time, lazy / real modules: {result['jitted_ratio_lazy_over_real']:.3f} "
        f"({jitted['lazy'] * 1e3:.2f} ms / {jitted['real'] * 1e3:.2f} ms, N = {N}, Lbar = {LBAR})\n"
        f"eager dispatch, lazy / real modules: {result['eager_ratio_lazy_over_real']:.3f} "
        f"({eager['lazy'] * 1e3:.2f} ms / {eager['real'] * 1e3:.2f} ms per call)\n"
        f"fresh interpreter, registries + refusal of nu < 0 (no JAX) / import jax alone: "
        f"{result['validate_over_import_jax']:.2f} ({validate:.2f} s / {import_jax:.2f} s)"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)


if __name__ == "__main__":
    main()
