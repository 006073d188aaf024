"""The golden comparisons hold under other rounding: one XLA thread and XLA's CPU code without AVX
and FMA (x86), both at once, in a fresh process.

``make test-variation`` (``tests/variation.sh``) runs the whole suite under each condition apart,
one core (``taskset -c 0``) among them; this test keeps the cheapest version of that check
inside ``make test`` (without pinning: beside the other test worker, one core would make it
the slowest test of the suite). Its programs are compiled under those flags into a compilation
cache of their own beside the suite's (:func:`rounding_cache`): JAX's cache key holds the XLA
flags, so no program compiled with the default ones can be served, and a second run loads the
first one's programs instead of compiling them again (52 s -> 15 s of wall time on this 2-core
machine, two other jobs beside); ``make test-variation`` runs every condition with an empty
cache.
"""

from __future__ import annotations

import os
import platform
import subprocess
import sys
from pathlib import Path

import pytest

from bayes_slr.jax_setup import cache_folder

GOLDEN_TEST = Path(__file__).parent / "test_golden.py"
CI_COMMANDS = ("theory_small", "bayes_risk_mc")
"""At CI size: the fixed-point solve (whose last digits other rounding moves) and the seeded Monte
Carlo, the cheapest of the golden commands; ``BAYES_SLR_FULL=1`` runs them all."""


def rounding_cache() -> Path:
    """The compilation cache of the runs under other rounding: the suite's folder name with
    ``-other-rounding`` appended, beside it (an empty one when the suite's is)."""
    folder = cache_folder()
    return folder.with_name(folder.name + "-other-rounding")


def rounding_conditions(cache: Path) -> dict[str, str]:
    """The environment of a run whose floating-point rounding differs from the default one."""
    flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    if platform.machine().lower() in ("x86_64", "amd64"):
        flags += " --xla_cpu_max_isa=SSE4_2"
    inherited = {k: v for k, v in os.environ.items() if k != "PYTEST_ADDOPTS"}  # run's own options
    return {
        **inherited,
        "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip(),
        "BAYES_SLR_CACHE": str(cache),
    }


@pytest.mark.slow
def test_golden_commands_match_under_other_rounding(full_size):
    environment = rounding_conditions(rounding_cache())
    test = f"{GOLDEN_TEST}::test_deterministic_command_matches_golden"
    selection = [] if full_size else ["-k", " or ".join(CI_COMMANDS)]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test, *selection]
    # the timeout only stops a hang: a cold compilation on a loaded 2-core machine takes minutes
    done = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=1800)
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "passed" in done.stdout and "failed" not in done.stdout
