"""Monte Carlo sharded over devices: the host platform split into 2 devices gives the numbers of one device."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

SCRIPT = """
import json, os, sys
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=" + sys.argv[1]
import jax
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.inference.bayes_risk import bayes_risk_mc
for config in (SLRConfig("spiked", 1, LengthLaw.uniform(5), 2.0), SLRConfig("max", 1, LengthLaw.fixed(4), float("inf"))):
    r = bayes_risk_mc(config, 30_000, jax.random.PRNGKey(0), batch_size=4_000)
    print(json.dumps([len(jax.devices()), r.bayes_error.mean.item(), r.bayes_error.stderr.item(),
                      r.nishimori_gap.mean.item()]))
"""


def _run(devices: int) -> list[list[float]]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)}
    out = subprocess.run([sys.executable, "-c", SCRIPT, str(devices)], capture_output=True, text=True, env=env,
                         check=True, timeout=600)
    return [json.loads(line) for line in out.stdout.splitlines()]


def test_bayes_risk_monte_carlo_is_the_same_on_two_devices():
    one, two = _run(1), _run(2)
    assert [row[0] for row in one] == [1, 1] and [row[0] for row in two] == [2, 2]
    for a, b in zip(one, two):
        assert b[1:] == pytest.approx(a[1:], rel=1e-12, abs=1e-15)
