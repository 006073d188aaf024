"""Work laid out over devices: the host platform split into 2 devices gives the numbers of one
device.

One script runs in a subprocess with 1 and with 2 host devices (``XLA_FLAGS`` must be set
before JAX starts): the Monte Carlo Bayes risk (batches over devices), posterior chains
(the chain axis over devices) and test errors (each test chunk's sequences over devices);
inside ``jax.default_device`` everything stays on that device.

Tolerances. A chain's numbers depend only on its key and start, and each device runs the
same per-chain program on fewer chains; but XLA compiles the vmapped program for another
batch size and may round a matrix product differently in the last bit (``X @ k`` on fewer
rows), so nothing here is bit for bit in general. A wrong key, start or layout would differ
by O(1). Draws are compared absolutely, their log-densities relatively:

* Gibbs draws: 1e-12 (measured 4e-16: exact conditional draws do not amplify rounding).
* Gibbs-HMC draws: 1e-10 (measured 1e-13 after 30 steps: leapfrog moves amplify it).
* NUTS draws: 1e-6 (about 1e-9 after 40 steps: long trajectories amplify it more).
* Test errors and Monte Carlo Bayes risk: 1e-12 relative (per-sequence values differ in
  the last bit at most, and the Bayes-risk sums are added in another order).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

SCRIPT = Path(__file__).with_name("devices_script.py")


@pytest.fixture(scope="module")
def runs(tmp_path_factory) -> dict[int, tuple[dict, dict[str, np.ndarray]]]:
    """The script's output with 1 and with 2 host devices (both processes at once)."""
    folder = tmp_path_factory.mktemp("devices")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    processes = {
        n: subprocess.Popen(
            [sys.executable, str(SCRIPT), str(n), str(folder / f"{n}.npz")],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            env=env,
        )
        for n in (1, 2)
    }
    results = {}
    for n, process in processes.items():
        stdout, stderr = process.communicate(timeout=600)
        assert process.returncode == 0, stderr
        results[n] = json.loads(stdout.splitlines()[-1]), dict(np.load(folder / f"{n}.npz"))
    return results


def test_the_work_is_laid_out_over_two_devices(runs):
    assert runs[1][0]["devices"] == 1 and runs[2][0]["devices"] == 2
    layout = runs[2][0]["layout"]
    assert layout["chains"] == [[0, 2], [1, 2]]  # 4 chains: 2 on each device
    assert layout["test chunk"] == layout["predictions"] == [[0, 500], [1, 500]]
    assert layout["pinned chains"] == [[1, 4]] and layout["pinned chunk"] == [
        [1, 1000]
    ]  # jax.default_device
    assert all(len(shards) == 1 for shards in runs[1][0]["layout"].values())


def test_bayes_risk_monte_carlo_is_the_same_on_two_devices(runs):
    for one, two in zip(runs[1][0]["risk"], runs[2][0]["risk"]):
        assert two == pytest.approx(one, rel=1e-12, abs=1e-15)


@pytest.mark.parametrize(
    ("sampler", "tolerance"), [("gibbs", 1e-12), ("gibbs-hmc", 1e-10), ("nuts", 1e-6)]
)
def test_chains_are_the_same_on_two_devices(runs, sampler, tolerance):
    one, two = runs[1][1], runs[2][1]
    for name in ("k", "v"):
        np.testing.assert_allclose(
            two[f"{sampler} {name}"], one[f"{sampler} {name}"], rtol=0, atol=tolerance
        )
    np.testing.assert_allclose(
        two[f"{sampler} log_density"], one[f"{sampler} log_density"], rtol=tolerance
    )


def test_test_errors_are_the_same_on_two_devices(runs):
    one, two = runs[1][0]["errors"], runs[2][0]["errors"]
    assert set(one) == {"bayes", "plain", "zero"}
    for name in one:
        assert two[name] == pytest.approx(one[name], rel=1e-12, abs=1e-15)
