"""Theory curves: ERM per activation and Bayes-optimal points over ``alpha``, resumable.

Optionally each ERM point is paired with an L-BFGS simulation at a fixed size
``sqrt(N D)`` (as in the original work: ``D = size / sqrt(alpha)``), so one resumable
sweep holds both sides of the comparison.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any

from bayes_slr.attention.activations import check_activation
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.experiments.erm import erm_experiment
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.records import Executor, SweepLog, run_sweep
from bayes_slr.theory.replica_bayes import bayes_replica_point, check_bayes_config
from bayes_slr.theory.replica_erm import erm_replica_point

HARD_PHASE_TOLERANCE = 1e-6
"""Bayes fixed points from the two starts further apart than this are reported as a hard phase."""


@dataclasses.dataclass(frozen=True)
class SimulationOptions:
    """ERM simulations paired with the theory points.

    Attributes
    ----------
    size : ``sqrt(N D)``, the same at every ``alpha``: ``D = round(size / sqrt(alpha))``.
    seeds : independent teachers and training sets per point (mean and standard error).
    N_test : fresh test samples per seed.
    exact_teacher : teachers with ``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``, as the theory
        assumes (docs/theory.md); with prior draws the teacher norms fluctuate by
        ``O(1/sqrt(D))`` and inflate the spread over seeds.
    """

    size: int
    seeds: int = 5
    N_test: int = 10_000
    exact_teacher: bool = True

    def __post_init__(self) -> None:
        check_int("simulate", self.size, 2)
        check_int("seeds", self.seeds, 2)
        check_int("N_test", self.N_test, 1)

    def dimension(self, alpha: float) -> int:
        """``D`` at ``alpha`` (at least 2)."""
        return max(2, round(self.size / math.sqrt(alpha)))


def simulation_point(
    config: SLRConfig,
    activation: str,
    alpha: float,
    lam: float,
    options: SimulationOptions,
    seed: int,
) -> dict[str, Any]:
    """L-BFGS ERM from random starts at ``D = options.dimension(alpha)``: a row like the theory
    rows.

    ``test_error`` is the mean over seeds and ``diagnostics["stderr"]`` its standard error
    (spread over training sets included); ``overlaps`` are means over seeds.
    """
    D = options.dimension(alpha)
    summary = erm_experiment(
        config.replace(D=D),
        activation,
        alpha=alpha,
        lam=lam,
        seeds=options.seeds,
        seed=seed,
        N_test=options.N_test,
        exact_teacher=options.exact_teacher,
        predict_population=False,
    )
    names = summary.per_seed[0]["overlaps"].keys()
    overlaps = {
        name: sum(s["overlaps"][name] for s in summary.per_seed) / options.seeds for name in names
    }
    return {
        "source": "simulation",
        "alpha": alpha,
        "estimator": activation,
        "test_error": summary.test_error,
        "overlaps": overlaps,
        "converged": all(s["converged"] for s in summary.per_seed),
        "init": "random",
        "diagnostics": {
            "stderr": summary.stderr,
            "D": D,
            "N": training_size(alpha, D),
            "seeds": options.seeds,
            "per_seed_test_error": [s["test_error"] for s in summary.per_seed],
            "iterations": max(s["iterations"] for s in summary.per_seed),
            "lam": lam,
        },
    }


def validate_curve(
    config: SLRConfig,
    activations: Sequence[str],
    alphas: Sequence[float],
    lam: float,
    bayes: bool,
    mc_samples: int,
) -> None:
    """Raise ``ConfigError`` before any computation on an unknown activation, ``alpha <= 0`` or
    ``lam < 0``.
    """
    for activation in activations:
        check_activation(activation)
    if not alphas:
        raise ConfigError("alpha: give at least one value > 0")
    for alpha in alphas:
        check_real("alpha", alpha, minimum=0.0, strict=True)
    check_real("lam", lam, minimum=0.0)
    check_int("mc_samples", mc_samples, 2)
    if bayes:
        check_bayes_config(config)
    if not activations and not bayes:
        raise ConfigError("activation: give at least one activation, or --bayes")


def theory_curve(
    config: SLRConfig,
    activations: Sequence[str],
    alphas: Sequence[float],
    *,
    lam: float,
    bayes: bool = False,
    erm_init: str = "random",
    mc_samples: int = 4096,
    seed: int = 0,
    simulation: SimulationOptions | None = None,
    log: SweepLog | None = None,
    executor: Executor | None = None,
    progress: bool = True,
    failures: list[tuple[dict[str, Any], str]] | None = None,
) -> list[dict[str, Any]]:
    """Solve every point of the curve (each ``alpha`` x activation, plus Bayes from both starts).

    Parameters
    ----------
    config : SLRConfig
    activations : ERM activations.
    alphas : sample ratios, each ``> 0``.
    lam : ridge strength of ERM, ``>= 0``.
    bayes : also solve the Bayes-optimal state evolution from the informed and the
        random (uninformed) start (both rows are returned, so a hard phase shows as a difference).
    erm_init : start of the ERM iteration.
    mc_samples, seed : channel draws (``seed`` is also the base seed of the simulations).
    simulation : if given, one ERM simulation row per ERM theory row (:func:`simulation_point`).
    log : finished points are read from / appended to it (resumable).
    executor : how the points are run (:func:`~bayes_slr.records.run_sweep`).
    progress : progress bar on stderr.
    failures : collects the points that raised (the sweep goes on); None: the first failure raises.

    Returns
    -------
    list of dict
        One row per point: ``{"source": "theory", **TheoryPoint.to_row()}``, or a
        :func:`simulation_point` row (``"source": "simulation"``).
    """
    validate_curve(config, activations, alphas, lam, bayes, mc_samples)
    jobs = [
        ("theory", alpha, activation, erm_init) for alpha in alphas for activation in activations
    ]
    if bayes:
        jobs += [
            ("theory", alpha, "bayes", init) for alpha in alphas for init in ("informed", "random")
        ]
    if simulation is not None:
        jobs += [
            ("simulation", alpha, activation, "random")
            for alpha in alphas
            for activation in activations
        ]
    points = []
    for source, alpha, estimator, init in jobs:
        point = {
            "config": config.replace(D=1).to_dict(),
            "alpha": alpha,
            "estimator": estimator,
            "init": init,
            "lam": lam if estimator != "bayes" else None,
            "seed": seed,
        }
        if source == "theory":
            point["mc_samples"] = mc_samples
        else:
            point["simulation"] = dataclasses.asdict(simulation)
        points.append(point)

    def solve(point: dict[str, Any]) -> dict[str, Any]:
        source = "simulation" if "simulation" in point else "theory"
        return _solve_point(
            config,
            source,
            point["alpha"],
            point["estimator"],
            point["init"],
            lam,
            mc_samples,
            seed,
            simulation,
        )

    done, failed = run_sweep(
        points,
        solve,
        log=log,
        seed_of=lambda point: seed,
        executor=executor,
        progress=progress,
        description="theory",
    )
    if failures is not None:
        failures.extend(failed)
    return [row for _, row in done]


def _solve_point(
    config, source, alpha, estimator, init, lam, mc_samples, seed, simulation
) -> dict[str, Any]:
    if source == "simulation":
        return simulation_point(config, estimator, alpha, lam, simulation, seed)
    if estimator == "bayes":
        solved = bayes_replica_point(
            config, alpha=alpha, init=init, mc_samples=mc_samples, seed=seed
        )
    else:
        solved = erm_replica_point(
            config, estimator, alpha=alpha, lam=lam, init=init, mc_samples=mc_samples, seed=seed
        )
    return {"source": "theory", **solved.to_row()}


def curve_warnings(rows: Sequence[dict[str, Any]]) -> list[str]:
    """One line per point whose number should not be read as it is, and per hard phase.

    Not converged; replica-symmetric but RS-unstable (replicon >= 1: trust simulations there);
    Bayes fixed points from the informed and the random start that differ (a hard phase).
    """
    warnings = []
    for row in rows:
        where = (
            f"{row['estimator']} ({row['source']}, init {row['init']}) at alpha={row['alpha']:g}"
        )
        if not row["converged"]:
            warnings.append(f"{where}: not converged; do not read its error")
        if row["diagnostics"].get("rs_stable") is False:
            warnings.append(
                f"{where}: RS-unstable (replicon {row['diagnostics']['replicon']:.3g} >= 1); "
                "the replica-symmetric error is not trustworthy, compare with --simulate"
            )
    bayes = {
        (row["alpha"], row["init"]): row["test_error"]
        for row in rows
        if row["estimator"] == "bayes"
    }
    for alpha in sorted({alpha for alpha, _ in bayes}):
        informed, random = bayes.get((alpha, "informed")), bayes.get((alpha, "random"))
        if (
            informed is not None
            and random is not None
            and abs(informed - random) > HARD_PHASE_TOLERANCE
        ):
            warnings.append(
                f"bayes at alpha={alpha:g}: the random start ends at {random:.4g}, the informed at "
                f"{informed:.4g} (a hard phase)"
            )
    return warnings
