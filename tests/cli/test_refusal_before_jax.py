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
