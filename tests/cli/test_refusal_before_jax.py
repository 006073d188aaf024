"""Bad values are refused before JAX (or any other heavy library) is imported, so a refusal is
immediate: the options are parsed and validated by code that needs neither."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

HEAVY = ("jax", "jaxlib", "numpyro", "scipy", "arviz", "xarray", "matplotlib", "distributed")

SCRIPT = """
import contextlib, io, json, sys
from bayes_slr.cli.main import main
for argv in json.loads(sys.argv[1]):
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr):
        try:
            code = main(argv)
        except SystemExit as exc:  # a refusal by the parser itself (an unknown choice)
            code = exc.code
    heavy = sorted(name for name in {heavy} if name in sys.modules)
    print(json.dumps([code, stderr.getvalue(), heavy]))
"""
"""Runs the refusals one after another in one fresh process (one interpreter start instead of
one each: 32 starts took 18 s of a test run): after each, the heavy libraries imported so far.
A refusal that imported one fails, and so does every later one (the library stays imported)."""

BAD_VALUES = [
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
]

SIZES_THAT_CANNOT_FIT = [
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
]


@pytest.fixture(scope="module")
def refusals() -> dict[tuple[str, ...], tuple[int, str, list[str]]]:
    """Every command line of this module run in one fresh process (:data:`SCRIPT`): its exit
    code, what it wrote on stderr and the heavy libraries imported by then."""
    every = BAD_VALUES + SIZES_THAT_CANNOT_FIT
    result = subprocess.run(
        [sys.executable, "-c", SCRIPT.format(heavy=HEAVY), json.dumps(every)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert len(lines) == len(every), result.stdout
    return {tuple(argv): tuple(json.loads(line)) for argv, line in zip(every, lines, strict=True)}


@pytest.mark.parametrize("argv", BAD_VALUES, ids=" ".join)
def test_a_bad_value_is_refused_without_importing_jax(argv, refusals):
    code, stderr, heavy = refusals[tuple(argv)]
    assert code == 2, stderr
    assert stderr.count("error:") == 1, stderr
    assert heavy == [], f"imported before refusing: {heavy}"


@pytest.mark.parametrize("argv", SIZES_THAT_CANNOT_FIT, ids=" ".join)
def test_a_size_that_cannot_fit_is_refused_with_its_estimate_before_jax(argv, refusals):
    """Every command estimates its peak memory (:mod:`bayes_slr.memory`) before allocating: an
    absurd size is refused with the estimate in GiB, exit 2, nothing imported."""
    code, stderr, heavy = refusals[tuple(argv)]
    assert code == 2, stderr
    assert "GiB" in stderr and stderr.count("error:") == 1, stderr
    assert heavy == [], f"imported before refusing: {heavy}"
