"""The golden comparisons hold under other rounding: one XLA thread, one core, XLA's CPU code
without AVX and FMA (x86), and a cold compilation cache, all at once, in a fresh process.

``make test-variation`` (``tests/variation.sh``) runs the whole suite under each condition apart;
this test keeps the cheapest version of that check inside ``make test``.
"""

from __future__ import annotations

import os
import platform
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

GOLDEN_TEST = Path(__file__).parent / "test_golden.py"
CI_COMMANDS = ("theory_small", "bayes_risk_mc")
"""At CI size: the fixed-point solve (whose last digits other rounding moves) and the seeded Monte
Carlo, the cheapest of the golden commands; ``BAYES_SLR_FULL=1`` runs them all."""


def rounding_conditions(cache: Path) -> tuple[list[str], dict[str, str]]:
    """Command prefix and environment of a run whose floating-point rounding differs from the
    default one."""
    flags = "--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1"
    if platform.machine().lower() in ("x86_64", "amd64"):
        flags += " --xla_cpu_max_isa=SSE4_2"
    environment = {
        **os.environ,
        "XLA_FLAGS": f"{os.environ.get('XLA_FLAGS', '')} {flags}".strip(),
        "BAYES_SLR_CACHE": str(cache),
    }
    prefix = ["taskset", "-c", "0"] if shutil.which("taskset") else []
    return prefix, environment


@pytest.mark.slow
def test_golden_commands_match_under_other_rounding(tmp_path, full_size):
    prefix, environment = rounding_conditions(tmp_path / "cache")
    test = f"{GOLDEN_TEST}::test_deterministic_command_matches_golden"
    selection = [] if full_size else ["-k", " or ".join(CI_COMMANDS)]
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", test, *selection]
    done = subprocess.run(
        [*prefix, *command], env=environment, capture_output=True, text=True, timeout=900
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "passed" in done.stdout and "failed" not in done.stdout
