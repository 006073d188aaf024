"""Bad values are refused before JAX (or any other heavy library) is imported, so a refusal is
immediate: the options are parsed and validated by code that needs neither."""

from __future__ import annotations

import subprocess
import sys

import pytest

HEAVY = ("jax", "jaxlib", "numpyro", "scipy", "arviz", "xarray", "matplotlib", "distributed")

SCRIPT = """
import sys
from bayes_slr.cli.main import main
try:
    code = main(sys.argv[1:])
except SystemExit as exc:  # a refusal by the parser itself (an unknown choice)
    code = exc.code
heavy = sorted(name for name in {heavy} if name in sys.modules)
print("HEAVY", ",".join(heavy))
sys.exit(code)
"""


@pytest.mark.parametrize(
    "argv",
    [
        ["theory", "--lam", "-1"],
        ["theory", "--alpha", "0"],
        ["theory", "--activations", "sigmoid"],
        ["bayes-risk", "--nu", "-1"],
        ["bayes-risk", "--variant", "max", "--L", "0"],
        ["simulate", "--nu", "inf"],
        ["amp", "--seeds", "0"],
        ["amp", "--damping", "2"],
        ["gap", "--alpha", "-1"],
        ["gap", "--L", "0"],
        ["posterior", "--alpha", "0"],
        ["posterior", "--nu", "-1"],
        ["posterior-sweep", "--alpha", "1", "nan"],
        ["phase", "--Delta", "-1"],
        ["phase", "--alpha-max", "0"],
        ["phase", "--variant", "max", "--nu", "200"],
        ["dynamics", "--eta", "0"],
        ["dynamics", "--method", "gd"],
        ["dynamics", "--method", "gd", "--alpha", "4", "--replica-samples", "1"],
    ],
)
def test_a_bad_value_is_refused_without_importing_jax(argv):
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert result.stderr.count("error:") == 1
    assert result.stdout.strip() == "HEAVY", f"imported before refusing: {result.stdout}"


@pytest.mark.parametrize(
    "argv",
    [
        ["gap", "--variant", "spiked", "--L", "3", "--alpha", "1", "--D", "10000000"],
        ["gap", "--heads", "2", "--alpha", "1", "--D", "10000000"],
        ["dynamics", "--method", "gd", "--alpha", "1", "--D", "10000000"],
        ["dynamics", "--heads", "2", "--D", "100000", "--t-max", "1"],
        ["dynamics", "--method", "flow", "--ode-draws", "10000000000"],
        ["theory", "--simulate", "10000000"],
        ["theory", "--variant", "max", "--nu", "3", "--bayes", "--channel-draws", "10000000000"],
        ["phase", "--channel-draws", "10000000000"],
        ["theory", "--L", "30000", "--activations", "softmax"],
        ["multihead", "--L", "1000000"],
        ["posterior-sweep", "--alpha", "1", "--D", "10000000"],
        ["posterior", "--alpha", "1", "--D", "10000000"],
        ["simulate", "--N", "1000000", "--D", "10000000"],
    ],
)
def test_a_size_that_cannot_fit_is_refused_with_its_estimate_before_jax(argv):
    """Every command estimates its peak memory (:mod:`bayes_slr.memory`) before allocating: an
    absurd size is refused with the estimate in GiB, exit 2, nothing imported."""
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(heavy=HEAVY), *argv],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 2, result.stderr
    assert "GiB" in result.stderr and result.stderr.count("error:") == 1, result.stderr
    assert result.stdout.strip() == "HEAVY", f"imported before refusing: {result.stdout}"
