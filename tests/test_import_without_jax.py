"""The registries and the validation of options import without the heavy libraries, and importing
the package turns on float64 whether JAX was imported before it or after.

Each check runs in a fresh interpreter (``sys.modules`` of this one already holds JAX), with
``JAX_ENABLE_X64`` removed from its environment so that only the package can turn float64 on.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap

import pytest

HEAVY = ("jax", "jaxlib", "numpyro", "scipy", "arviz", "xarray", "matplotlib", "distributed")

VALIDATE = textwrap.dedent(
    """
    import json, math, sys

    import bayes_slr
    import bayes_slr.attention.activations as activations
    import bayes_slr.errors
    import bayes_slr.inference.sampler_registry as samplers
    import bayes_slr.models.spec
    import bayes_slr.models.variants as variants
    import bayes_slr.registry
    from bayes_slr import ConfigError, LengthLaw, SLRConfig

    spiked = SLRConfig("spiked", 10, LengthLaw.fixed(3), 2.0, 0.1)
    accepted = [
        spiked.to_dict(),
        SLRConfig("max", 10, LengthLaw.uniform(4), math.inf).to_dict(),
        samplers.check_sampling_arguments(
            spiked, sampler="auto", chains=4, warmup=0, samples=10, init="random"
        ),
        samplers.resolve_sampler(spiked.replace(variant="max"), "auto"),
    ]
    bad = {
        "nu < 0": lambda: SLRConfig("spiked", 10, LengthLaw.fixed(3), -1.0),
        "nu = inf, spiked": lambda: SLRConfig("spiked", 10, LengthLaw.fixed(3), math.inf),
        "L < 1": lambda: LengthLaw.fixed(0),
        "D < 1": lambda: SLRConfig("spiked", 0, LengthLaw.fixed(3), 1.0),
        "unknown variant": lambda: SLRConfig("nope", 10, LengthLaw.fixed(3), 1.0),
        "unknown activation": lambda: activations.check_activation("nope"),
        "unknown sampler": lambda: samplers.check_sampling_arguments(
            spiked, sampler="nope", chains=4, warmup=0, samples=1, init="random"
        ),
        "unsupported sampler": lambda: samplers.check_sampling_arguments(
            spiked.replace(variant="max"), sampler="gibbs", chains=4, warmup=0, samples=1,
            init="random",
        ),
        "chains < 1": lambda: samplers.check_sampling_arguments(
            spiked, sampler="auto", chains=0, warmup=0, samples=1, init="random"
        ),
        "location integrals, 100 < nu < inf": lambda: variants.get_variant(
            "max"
        ).check_field_location(150.0),
    }
    refusals = {}
    for case, make in bad.items():
        try:
            make()
        except ConfigError as exc:
            refusals[case] = str(exc)
    print(json.dumps({
        "names": [
            variants.variant_names(), activations.activation_names(), samplers.sampler_choices()
        ],
        "accepted": accepted,
        "refusals": refusals,
        "heavy": sorted({name.split(".")[0] for name in sys.modules} & set(sys.argv[1:])),
    }, default=str))
    """
)

DTYPE = "import jax.numpy as jnp; print(jnp.zeros(1).dtype)"


def _run(code: str, *args: str, environment: dict | None = None) -> str:
    env = {k: v for k, v in os.environ.items() if k != "JAX_ENABLE_X64"}
    env.update(environment or {})
    result = subprocess.run(
        [sys.executable, "-c", code, *args],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return result.stdout.strip()


def test_registries_and_validation_import_no_heavy_library():
    """Listing the names, building and refusing configurations and sampling options: no JAX,
    NumPyro, SciPy, ArviZ, xarray, Matplotlib or Dask in ``sys.modules``."""
    report = json.loads(_run(VALIDATE, *HEAVY))
    assert report["heavy"] == []
    variants, activations, samplers = report["names"]
    assert {"spiked", "max"} <= set(variants)
    assert {"softmax", "linear", "erf", "softplus"} <= set(activations)
    assert samplers[:4] == ["auto", "gibbs", "gibbs-hmc", "nuts"]
    assert report["accepted"][2:] == [[4, 0, 10], "gibbs-hmc"]
    refusals = report["refusals"]
    expected = {
        "nu < 0": "nu must be",
        "nu = inf, spiked": "nu must be a finite number >= 0 for the spiked variant",
        "L < 1": "L must be an integer >= 1",
        "D < 1": "D must be an integer >= 1",
        "unknown variant": "variant must be one of spiked, max",
        "unknown activation": "activation must be one of softmax",
        "unknown sampler": "sampler must be one of auto, gibbs, gibbs-hmc, nuts",
        "unsupported sampler": "sampler gibbs does not support the max variant",
        "chains < 1": "chains must be an integer >= 1",
        "location integrals, 100 < nu < inf": "nu must be <= 100 or inf for the max variant",
    }
    assert set(refusals) == set(expected)
    for case, message in expected.items():
        assert message in refusals[case], (case, refusals[case])


@pytest.mark.parametrize(
    "code, environment",
    [
        (f"import jax; import bayes_slr; {DTYPE}", None),
        (f"import bayes_slr; import jax; {DTYPE}", None),
        (f"import bayes_slr; {DTYPE}", {"JAX_ENABLE_X64": "0"}),
    ],
    ids=["jax-first", "package-first", "x64-off-in-environment"],
)
def test_the_package_turns_on_float64(code, environment):
    assert _run(code, environment=environment) == "float64"


def test_the_public_functions_stay_functions_after_every_subpackage_is_imported():
    """No public name is also a subpackage: importing every subpackage (the import system binds
    each on its parent) leaves ``bayes_slr.theory`` and the other public functions as they were."""
    script = textwrap.dedent(
        """
        import pkgutil, importlib, inspect
        import bayes_slr
        for module in pkgutil.walk_packages(bayes_slr.__path__, "bayes_slr."):
            if not module.name.endswith("__main__"):  # that one runs the command line
                importlib.import_module(module.name)
        names = [n for n in bayes_slr.__all__ if callable(getattr(bayes_slr, n))]
        print(all(inspect.isfunction(getattr(bayes_slr, n)) for n in names
                  if n[0].islower()), "theory" in names)
        """
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.split() == ["True", "True"]
