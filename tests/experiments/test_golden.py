"""Golden outputs: a fixed set of commands gives the numbers recorded before the redesign.

Deterministic commands (quadrature, seeded Monte Carlo with fixed draws, fixed-point
solves) must match to float64 round-off. Posterior runs are Markov chains whose random
stream may change with the code's structure: there every overlap must agree within
five combined Monte Carlo standard errors (``mcse_mean`` of both runs) and the test
error within five combined test-set standard errors plus the draw-to-draw spread.
"""

from __future__ import annotations

import json
import math
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from commands import COMMANDS, GOLDEN, POSTERIOR, run_command  # noqa: E402

IGNORED = {"created", "versions", "device", "out"}
RTOL, ATOL = 1e-9, 1e-12
SOLVER_RESIDUAL = 1e-6
"""A fixed-point solve's stopping residual is compared by its stated error: below the tolerance, not
bit for bit.
"""


def _compare_exact(recorded, current, path: str = "") -> list[str]:
    """Paths where ``current`` differs from ``recorded`` beyond float64 round-off (keys only in
    ``current`` are new fields).
    """
    if isinstance(recorded, dict):
        problems = []
        for key, value in recorded.items():
            if key in IGNORED:
                continue
            if key not in current:
                problems.append(f"{path}/{key}: missing")
                continue
            if key == "residual":
                if not current[key] <= SOLVER_RESIDUAL:
                    problems.append(f"{path}/{key}: {current[key]!r} above {SOLVER_RESIDUAL}")
                continue
            problems += _compare_exact(value, current[key], f"{path}/{key}")
        return problems
    if isinstance(recorded, list):
        if len(recorded) != len(current):
            return [f"{path}: length {len(current)} != {len(recorded)}"]
        return [
            p
            for i, (a, b) in enumerate(zip(recorded, current))
            for p in _compare_exact(a, b, f"{path}[{i}]")
        ]
    if isinstance(recorded, float) and isinstance(current, (int, float)):
        return (
            []
            if math.isclose(recorded, current, rel_tol=RTOL, abs_tol=ATOL)
            else [f"{path}: {current!r} != {recorded!r}"]
        )
    return [] if recorded == current else [f"{path}: {current!r} != {recorded!r}"]


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_deterministic_command_matches_golden(name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    problems = _compare_exact(golden["output"], run_command(golden["arguments"]))
    assert not problems, "\n".join(problems[:20])


@pytest.mark.parametrize("name", sorted(POSTERIOR))
def test_posterior_matches_golden_within_monte_carlo_error(name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    recorded = golden["output"]
    (current,) = run_command(golden["arguments"])["rows"]  # the one posterior (its summary)
    for quantity, row in recorded["diagnostics"].items():
        now = current["diagnostics"][quantity]
        tolerance = 5.0 * math.hypot(row["mcse_mean"], now["mcse_mean"])
        assert abs(now["mean"] - row["mean"]) <= tolerance, (
            quantity,
            now["mean"],
            row["mean"],
            tolerance,
        )
    # the plain posterior-mean predictor is the one recorded before the Bayes-optimal (weighted) one
    # existed
    now_error = current["posterior_mean_f_error"]
    # a predictor averaged over S effective draws carries an extra error of about Var_post(f) / S,
    # and
    # Var_post(f) is at most the excess over the known-direction oracle
    posterior_variance = max(recorded["bayes_test_error"] - recorded["oracle_error"]["value"], 0.0)
    draws_term = 2.0 * posterior_variance / min(recorded["ess_bulk_min"], current["ess_bulk_min"])
    tolerance = 5.0 * math.hypot(recorded["stderr"], now_error["stderr"]) + draws_term
    assert abs(now_error["value"] - recorded["bayes_test_error"]) <= tolerance
    assert current["oracle_error"]["value"] == pytest.approx(
        recorded["oracle_error"]["value"], rel=RTOL, abs=ATOL
    )
