"""Golden outputs: a fixed set of commands gives the numbers recorded before the redesign.

The golden files were written by another process, on another machine, with other library
builds: every number is compared within the accuracy of the computation that gives it, never
to the digits one machine printed (rounding differs with the CPU's kernels, the thread split
and the XLA build; ``make test-variation`` runs these tests under such changes).

* Inputs echoed in the output (configuration, ``L``, ``nu``, draw counts) and flags: equal.
* Quadrature: within the two runs' quadrature error bounds.
* Monte Carlo with a recorded standard error: within five combined standard errors.
* Fixed-point solves (``theory`` rows): within the distance at which the iteration stops
  from its fixed point, measured by re-solving far more tightly (:func:`solve_propagation`);
  their standard errors (the spread of the replicates, each a chord step with a Jacobian by
  central differences at the solve's stopping point) within how far they move when the solve
  stops elsewhere, measured by re-solving somewhat more tightly.
* Solver diagnostics (residuals, stationarity, iteration counts): against their thresholds.

Posterior runs are Markov chains: every overlap within five combined Monte Carlo standard
errors (``mcse_mean`` of both runs), the test error within five combined test-set standard
errors plus the draw-to-draw spread.
"""

from __future__ import annotations

import functools
import inspect
import json
import math
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.formulas.phase import bayes_branches
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.replica_erm import erm_replica_point
from bayes_slr.formulas.state_evolution import state_evolution
from bayes_slr.models.spec import LengthLaw, SLRConfig

sys.path.insert(0, str(Path(__file__).parent / "golden"))
from commands import COMMANDS, GOLDEN, POSTERIOR, run_command  # noqa: E402

IGNORED = {"created", "versions", "device", "out"}
ROUNDING = 1e-12
"""Float64 rounding left in any number (sums of thousands of terms, each to 1e-16 relative)."""
QUADRATURE_BOUND = 1e-7
"""What ``bayes_error_exact`` and ``population_terms`` promise for every quadrature they give
(their docstrings: "below 1e-7; typically 1e-9"), when a file records no bound of its own."""
POPULATION_ERROR_BOUND = 20 * QUADRATURE_BOUND
"""The optimum ``E = 1 - A^2 / B`` of ``gap``: A and B within ``QUADRATURE_BOUND`` each move it by
``(2 A / B + A^2 / B^2) QUADRATURE_BOUND = (2 sqrt(R) + R) QUADRATURE_BOUND`` with
``R = (1 - E) / B <= 1 / B <= L`` (weights summing to one have ``sum s^2 >= 1 / L``), at most
16.4 times the bound for the golden rows (``L <= 10``). The search's stopping point
(Nelder-Mead ``xatol`` 1e-6, ``fatol`` 1e-12) moves an optimum's value only at second order."""
MONTE_CARLO_SES = 5.0
"""Two Monte Carlo estimates agree within this many combined standard errors."""
SOLVE_SAFETY = 2.0
"""The stopping distance is measured at one stop; another stop of the same iteration lands within
a factor of it (the contraction varies little over the last steps)."""
STATIONARITY_THRESHOLD = 1e-6
"""``erm_replica_point`` calls a point converged only with every proximal problem below this."""
ITERATION_SLACK = 2
"""Other rounding can move the step at which the residual crosses its tolerance by a step or two."""

Problem = str | None
Rule = Callable[[str, float, float, tuple[tuple[dict, dict], ...]], Problem]
"""``rule(path, recorded, current, parents)``: a problem, or None; ``parents`` are the
``(recorded, current)`` dicts above the number, innermost last."""


def within(path: str, recorded: float, current: float, tolerance: float, why: str) -> Problem:
    """A problem when ``|current - recorded| > tolerance`` (``why``: where it comes from)."""
    if abs(current - recorded) <= tolerance:
        return None
    return f"{path}: {current!r} != {recorded!r} beyond {tolerance:.3g} ({why})"


def exact(path: str, recorded: Any, current: Any) -> Problem:
    """Inputs and counts: equal."""
    return None if recorded == current else f"{path}: {current!r} != {recorded!r}"


ROW_IDENTITY = ("source", "alpha", "estimator", "init", "variant", "L", "nu", "variable_length")
"""The fields that say which point a row is: rows are matched on them, so rows added since the
golden file was recorded (theory's population values) are new rows, not differences."""


def _identity(row: dict) -> tuple:
    return tuple((key, row[key]) for key in ROW_IDENTITY if key in row)


def matched_rows(recorded: list, current: list) -> list:
    """``current``'s rows in the order of ``recorded``'s, matched by identity (``current``
    unchanged when a recorded row has no match: the length check then reports it)."""
    if not (recorded and all(isinstance(row, dict) for row in [*recorded, *current])):
        return current
    by_identity = {_identity(row): row for row in current}
    matched = [by_identity.get(_identity(row)) for row in recorded]
    return current if any(row is None for row in matched) else matched


def compare(recorded: Any, current: Any, rule: Rule, path: str = "", parents=()) -> list[str]:
    """Paths where ``current`` differs from ``recorded`` beyond what ``rule`` allows (keys only in
    ``current`` are new fields, rows only in ``current`` new rows)."""
    if isinstance(recorded, dict):
        problems = []
        for key, value in recorded.items():
            if key in IGNORED:
                continue
            if key not in current:
                problems.append(f"{path}/{key}: missing")
                continue
            inner = (*parents, (recorded, current))
            problems += compare(value, current[key], rule, f"{path}/{key}", inner)
        return problems
    if isinstance(recorded, list):
        current = matched_rows(recorded, current)
        if len(recorded) != len(current):
            return [f"{path}: length {len(current)} != {len(recorded)}"]
        return [
            p
            for i, (a, b) in enumerate(zip(recorded, current))
            for p in compare(a, b, rule, f"{path}[{i}]", parents)
        ]
    numbers = (int, float)
    if (
        isinstance(recorded, numbers)
        and isinstance(current, numbers)
        and not isinstance(recorded, bool)
        and not path.startswith("/config")
    ):
        problem = rule(path, recorded, current, parents)
        return [] if problem is None else [problem]
    problem = exact(path, recorded, current)
    return [] if problem is None else [problem]


def gap_rule(path: str, recorded: float, current: float, parents) -> Problem:
    """``gap`` without ERM: the Bayes error by quadrature, the activations' optima by search."""
    if re.search(r"/rows\[\d+\]/bayes$", path):
        return within(path, recorded, current, 2 * QUADRATURE_BOUND, "two quadrature bounds")
    if "/population/" in path:
        return within(path, recorded, current, 2 * POPULATION_ERROR_BOUND, "two optima's bounds")
    if "/gap/" in path:
        tolerance = 2 * (POPULATION_ERROR_BOUND + QUADRATURE_BOUND)
        return within(path, recorded, current, tolerance, "optimum minus Bayes, both bounded")
    return exact(path, recorded, current)


def bayes_risk_rule(samples: int | None) -> Rule:
    """``bayes-risk``: each row records its accuracy in ``stderr`` (the quadrature bound, or the
    Monte Carlo standard error over ``samples`` draws)."""

    def rule(path: str, recorded: float, current: float, parents) -> Problem:
        old_row, new_row = parents[-1]
        if path.endswith("/bayes_error"):
            if samples is None:
                tolerance = old_row["stderr"] + new_row["stderr"] + ROUNDING
                return within(path, recorded, current, tolerance, "the two quadrature bounds")
            tolerance = MONTE_CARLO_SES * math.hypot(old_row["stderr"], new_row["stderr"])
            return within(path, recorded, current, tolerance, "five combined standard errors")
        if path.endswith("/stderr"):
            if samples is None:  # a bound: checked against what the quadrature promises
                ok = current <= QUADRATURE_BOUND
                return None if ok else f"{path}: quadrature bound {current!r} above 1e-7"
            # a sample standard deviation over n draws is itself within 1/sqrt(2(n-1)) relative
            relative = MONTE_CARLO_SES / math.sqrt(2 * (samples - 1))
            return within(path, recorded, current, relative * recorded, "its own sampling error")
        return exact(path, recorded, current)

    return rule


BAYES_ESTIMATORS = ("bayes", "amp")
"""``theory --bayes`` rows: fixed points of the state evolution on the quadrature channel."""
SEARCH_TOLERANCE = 1e-5
"""An activation's population optimum is a Nelder-Mead search (``xatol`` 1e-6 in its parameters):
its overlaps (the arg-min) are within this, relative; its error only moves at second order."""
JACOBIAN_TOLERANCE = 1e-6
"""``spectral_radius`` of a Bayes fixed point comes from a Jacobian by central differences."""


def solver_tolerance(estimator: str) -> float:
    """The stopping tolerance (residual) a theory row is solved to by default."""
    if estimator in BAYES_ESTIMATORS:
        return inspect.signature(state_evolution).parameters["tol"].default
    solve = bayes_replica_point if estimator == "bayes" else erm_replica_point
    return inspect.signature(solve).parameters["tol"].default


def branch_numbers(config: SLRConfig, alpha: float, estimator: str, **tol) -> tuple[dict, float]:
    """The numbers of a ``bayes`` or ``amp`` row that are functions of its fixed point, and the
    fixed point's residual."""
    branches = bayes_branches(config, alpha, **tol)
    fixed = branches.bayes if estimator == "bayes" else branches.amp
    numbers = {
        "test_error": fixed.test_error,
        "q_k": fixed.point.q_k,
        "q_v": fixed.point.q_v,
        "free_entropy": fixed.free_entropy.value,
    }
    if estimator == "bayes":
        numbers["mutual_information"] = branches.mutual_information
    return numbers, fixed.point.residual


def solved_numbers(point) -> dict[str, float]:
    """The numbers of a theory point that are functions of its fixed point."""
    skipped = {"residual", "iterations", "prox_max_stationarity", "mc_samples", "lam"}
    numbers = {"test_error": point.test_error, **point.overlaps}
    for name, value in point.diagnostics.to_dict().items():
        if name not in skipped and isinstance(value, float):
            numbers[name] = value
        if isinstance(value, dict):  # the overlaps' standard errors
            numbers |= {f"{name}/{key}": entry for key, entry in value.items()}
    return numbers


class Propagation(NamedTuple):
    """How far a theory row's results move per unit of the solve's stopping residual."""

    numbers: float
    """Its numbers, from the fixed point (the factor ``K`` of :func:`solve_propagation`)."""
    errors: float
    """Its standard errors (``0`` for a row without replicates)."""


@functools.cache
def golden_solve_propagation(name: str) -> tuple[Propagation, ...]:
    """:func:`solve_propagation` of golden command ``name`` (solved once per test process)."""
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    return tuple(solve_propagation(golden["output"], seed_of(golden["arguments"])))


def solve_propagation(output: dict, seed: int) -> list[Propagation]:
    """Per theory row: how far its numbers sit from the fixed point, and how far its standard
    errors move, per unit of stopping residual.

    The row is solved as the command solves it and again with a tolerance 1e-4 times smaller;
    the largest relative difference ``|x - x_tight| / max(1, |x_tight|)`` over the row's numbers,
    divided by the first solve's residual, is the factor ``K``: a solve stopped at residual
    ``r <= tol`` is within ``K r`` of the fixed point (``d / (1 - rho)`` for damping ``d``
    and contraction ``rho``; measured below 0.1 to 2 here).

    The standard errors of a replica row are the spread of its replicates, each the fixed point
    of its own draws to first order about the solve's stopping point, with a Jacobian by central
    differences there: they have no limit to measure against (at 1e-4 times the tolerance the
    replicates' solves do not stop), and the differences amplify where the solve stopped. Their
    factor is the largest movement of any of them when the row is solved again to 10 and to 100
    times smaller tolerances, per unit of the first solve's residual (measured 2 to 11 for
    ``theory_small``, against below 0.1 for its numbers).
    """
    settings = output["config"]
    length = (LengthLaw.uniform if settings["variable_length"] else LengthLaw.fixed)(settings["L"])
    config = SLRConfig(settings["variant"], 1, length, float(settings["nu"]), settings["Delta"])
    factors = []
    for row in output["rows"]:
        if row["source"] == "population":  # no solve: quadrature or a search (theory_rule)
            factors.append(Propagation(0.0, 0.0))
            continue
        if row["estimator"] in BAYES_ESTIMATORS:
            a, residual = branch_numbers(config, row["alpha"], row["estimator"])
            tight = 1e-4 * solver_tolerance(row["estimator"])
            b, _ = branch_numbers(config, row["alpha"], row["estimator"], tol=tight)
            moved = max(abs(a[name] - b[name]) / max(1.0, abs(b[name])) for name in a)
            factors.append(Propagation(moved / max(residual, ROUNDING), 0.0))
            continue
        estimator, options = (
            row["estimator"],
            {
                "alpha": row["alpha"],
                "init": row["init"],
                "mc_samples": row["diagnostics"]["mc_samples"],
                "seed": seed,
            },
        )
        if estimator == "bayes":
            solve = lambda **tol: bayes_replica_point(config, **options, **tol)  # noqa: E731
        else:
            lam, replicates = row["diagnostics"]["lam"], row["diagnostics"]["replicates"]
            solve = lambda **tol: erm_replica_point(  # noqa: E731
                config, estimator, lam=lam, replicates=replicates, **options, **tol
            )
        stopped = solve()
        residual = max(stopped.diagnostics.residual, ROUNDING)
        a = solved_numbers(stopped)
        b = solved_numbers(solve(tol=1e-4 * solver_tolerance(estimator)))
        numbers = [name for name in a if not is_standard_error(name)]
        moved = max(abs(a[name] - b[name]) / max(1.0, abs(b[name])) for name in numbers)
        errors = [name for name in a if is_standard_error(name) and math.isfinite(a[name])]
        spread = 0.0
        for shrink in (10.0, 100.0):
            c = solved_numbers(solve(tol=solver_tolerance(estimator) / shrink))
            spread = max(
                [spread, *(abs(a[name] - c[name]) / max(1.0, abs(c[name])) for name in errors)]
            )
        factors.append(Propagation(moved / residual, spread / residual))
    return factors


def is_standard_error(name: str) -> bool:
    """Whether a theory row's number ``name`` (a path below the row) is a standard error."""
    return "stderr" in name


def theory_rule(factors: tuple[Propagation, ...]) -> Rule:
    """``theory``: a row's numbers within ``2 SOLVE_SAFETY K tol`` (relative), both runs having
    stopped within ``K tol`` of the same fixed point, its standard errors likewise with their own
    factor; diagnostics against their thresholds."""

    def rule(path: str, recorded: float, current: float, parents) -> Problem:
        row = re.match(r"/rows\[(\d+)\]", path)
        if row is None:  # the provenance's seed
            return exact(path, recorded, current)
        index = int(row.group(1))
        old_output, _ = parents[0]
        estimator = old_output["rows"][index]["estimator"]
        tol = solver_tolerance(estimator)
        name = path.rsplit("/", 1)[1]
        if name in {"alpha", "mc_samples", "replicates", "lam"}:
            return exact(path, recorded, current)
        if old_output["rows"][index]["source"] == "population":
            if name == "test_error":
                bound = 2 * POPULATION_ERROR_BOUND
                return within(path, recorded, current, bound, "two optima's bounds")
            if name == "error_bound":
                ok = current <= QUADRATURE_BOUND
                return None if ok else f"{path}: quadrature bound {current!r} above 1e-7"
            bound = SEARCH_TOLERANCE * max(1.0, abs(recorded))
            return within(path, recorded, current, bound, "the search's arg-min")
        if estimator in BAYES_ESTIMATORS:
            if name == "evaluations":  # a cost, not a result
                return None if current > 0 else f"{path}: {current} channel evaluations"
            if name == "spectral_radius":
                return within(path, recorded, current, JACOBIAN_TOLERANCE, "central differences")
            # the solver promises |F(q) - q| < tol: numbers within K tol of the fixed point, K >= 1
            if name != "residual":
                scale = max(1.0, abs(recorded))
                factor = max(factors[index].numbers, 1.0)
                tolerance = 2 * SOLVE_SAFETY * factor * tol * scale + ROUNDING
                return within(path, recorded, current, tolerance, f"fixed point to {tol:g}")
        if name == "residual":
            return None if current <= tol else f"{path}: {current!r} above its tolerance {tol}"
        if name == "prox_max_stationarity":
            ok = current < STATIONARITY_THRESHOLD
            return None if ok else f"{path}: {current!r} not below {STATIONARITY_THRESHOLD}"
        if name == "iterations":
            ok = abs(current - recorded) <= ITERATION_SLACK
            return None if ok else f"{path}: {current} iterations, recorded {recorded}"
        scale = max(1.0, abs(recorded))
        factor = factors[index].errors if is_standard_error(path) else factors[index].numbers
        tolerance = 2 * SOLVE_SAFETY * factor * tol * scale + ROUNDING
        return within(path, recorded, current, tolerance, f"solve stopped at residual {tol:g}")

    return rule


def seed_of(arguments: list[str]) -> int:
    """The command's ``--seed`` (0, the CLI's default, when not given)."""
    return int(arguments[arguments.index("--seed") + 1]) if "--seed" in arguments else 0


def rule_for(name: str, golden: dict) -> Rule:
    """How the numbers of golden command ``name`` are compared."""
    arguments = golden["arguments"]
    if arguments[0] == "gap":
        return gap_rule
    if arguments[0] == "bayes-risk":
        mc = "--method" in arguments and arguments[arguments.index("--method") + 1] == "mc"
        return bayes_risk_rule(int(arguments[arguments.index("--samples") + 1]) if mc else None)
    if arguments[0] == "theory":
        return theory_rule(golden_solve_propagation(name))
    raise AssertionError(f"golden command {name}: no stated accuracy for {arguments[0]}")


def recorded_output(golden: dict) -> dict:
    """The recorded output with its options under their names now (an option renamed since the
    file was recorded keeps its value under the new name: the command still takes the old flag,
    with a notice)."""
    output = golden["output"]
    options_type = EXPERIMENTS.get(golden["arguments"][0]).options_type
    return {**output, "config": options_type.with_current_names(output["config"])}


@pytest.mark.parametrize("name", sorted(COMMANDS))
def test_deterministic_command_matches_golden(name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    current = run_command(golden["arguments"])
    problems = compare(recorded_output(golden), current, rule_for(name, golden))
    assert not problems, "\n".join(problems[:20])


def test_theory_tolerance_is_below_the_differences_it_must_catch() -> None:
    """The solver tolerance is not so loose that it hides a change: a 1% change of ``lam`` moves
    the golden ERM row's overlaps far beyond it."""
    golden = json.loads((GOLDEN / "theory_small.json").read_text())
    output = golden["output"]
    rule = theory_rule(golden_solve_propagation("theory_small"))
    shifted = [*golden["arguments"]]
    shifted[shifted.index("--lam") + 1] = "1.01"
    shifted.remove("--bayes")
    changed = run_command(shifted)
    erm_only = {**output, "rows": output["rows"][:1], "config": changed["config"]}
    changed = {**changed, "rows": [r for r in changed["rows"] if r["source"] == "theory"]}
    problems = compare(erm_only, changed, rule)
    assert any("/overlaps/m_k" in p for p in problems), problems


@pytest.mark.parametrize("name", sorted(POSTERIOR))
def test_posterior_matches_golden_within_monte_carlo_error(name: str) -> None:
    golden = json.loads((GOLDEN / f"{name}.json").read_text())
    recorded = golden["output"]
    (current,) = run_command(golden["arguments"])["rows"]  # the one posterior (its summary)
    for quantity, row in recorded["diagnostics"].items():
        now = current["diagnostics"][quantity]
        tolerance = MONTE_CARLO_SES * math.hypot(row["mcse_mean"], now["mcse_mean"])
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
    # and Var_post(f) is at most the excess over the known-direction oracle
    posterior_variance = max(recorded["bayes_test_error"] - recorded["oracle_error"]["value"], 0.0)
    draws_term = 2.0 * posterior_variance / min(recorded["ess_bulk_min"], current["ess_bulk_min"])
    tolerance = MONTE_CARLO_SES * math.hypot(recorded["stderr"], now_error["stderr"]) + draws_term
    assert abs(now_error["value"] - recorded["bayes_test_error"]) <= tolerance
    # the oracle's error is a Monte Carlo mean over the N-test fresh sequences
    old, new = recorded["oracle_error"], current["oracle_error"]
    tolerance = MONTE_CARLO_SES * math.hypot(old["stderr"], new["stderr"])
    assert abs(new["value"] - old["value"]) <= tolerance
