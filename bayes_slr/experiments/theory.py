"""``theory``: replica-symmetric test-error curves against alpha (docs/theory.md).

Points: the ridge-ERM equations per activation and ``alpha``, the Bayes-optimal state evolution
from the informed and the random start (``bayes``), optionally an L-BFGS simulation per ERM point
at a fixed size ``sqrt(N D)`` (as in the original work: ``D = size / sqrt(alpha)``), and the
population (``alpha -> inf``) values each curve must tend to, drawn as reference lines.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.attention.activations import activation_names, check_activation
from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import alpha_axis, new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    Delta_option,
    L_option,
    describe_nu,
    nu_option,
    seed_option,
    task_config,
    variable_length_option,
    variant_option,
)
from bayes_slr.models.spec import INITS, SLRConfig

DEFAULT_ALPHAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
HARD_PHASE_TOLERANCE = 1e-6
"""Bayes fixed points from the two starts further apart than this are reported as a hard phase."""
SIMULATION_TEST_SEQUENCES = 10_000


@dataclasses.dataclass(frozen=True)
class TheoryOptions(Options):
    """Settings of ``theory``: one task, the activations and sample ratios of the curves."""

    variant: str = variant_option()
    nu: float | None = nu_option()
    L: int = L_option()
    variable_length: bool = variable_length_option()
    Delta: float = Delta_option()
    activations: tuple[str, ...] = option(
        ("softmax", "linear"),
        "ERM activations (none: only --bayes)",
        choices=activation_names,
        aliases=("--activation",),
    )
    alpha: tuple[float, ...] = option(DEFAULT_ALPHAS, "sample ratios N/D, each > 0")
    lam: float = option(
        1.0,
        "ridge strength of ERM, >= 0 (below about 0.1 linear attention's RS solution is unstable)",
    )
    bayes: bool = option(False, "add the Bayes-optimal curve (informed and random starts)")
    erm_init: str = option(
        "random",
        "start of the ERM state evolution: random (uninformed) or informed",
        choices=INITS,
    )
    mc_samples: int = option(4096, "channel draws of the equations, >= 2")
    seed: int = seed_option("seed of the channel draws and of the simulations")
    simulate: int | None = option(
        None,
        "also train each ERM point by L-BFGS at sqrt(N D) = SIZE (D = SIZE / sqrt(alpha)), exact "
        "teachers |k*|^2 = |v*|^2 = D as the theory assumes",
        metavar="SIZE",
        default_text="none",
    )
    seeds: int = option(5, "teachers per simulated point, >= 2")

    def validate(self) -> None:
        """Refuse an unknown activation, ``alpha <= 0``, ``lam < 0``, a task the Bayes state
        evolution does not cover (with ``bayes``), fewer than two simulated teachers."""
        config = self.config()
        self._set("nu", config.nu)  # the variant's default made explicit: the record is complete
        for activation in self.activations:
            check_activation(activation)
        if not self.alpha:
            raise ConfigError("alpha: give at least one value > 0")
        for alpha in self.alpha:
            check_real("alpha", alpha, minimum=0.0, strict=True)
        check_real("lam", self.lam, minimum=0.0)
        check_choice("erm_init", self.erm_init, INITS)
        check_int("mc_samples", self.mc_samples, 2)
        check_int("seed", self.seed, 0)
        if self.bayes:
            from bayes_slr.theory.replica_bayes import check_bayes_config

            check_bayes_config(config)
        if not self.activations and not self.bayes:
            raise ConfigError("activations: give at least one activation, or bayes")
        if self.simulate is not None:
            check_int("simulate", self.simulate, 2)
            check_int("seeds", self.seeds, 2)

    def config(self) -> SLRConfig:
        """The task (``D`` is irrelevant to the equations)."""
        return task_config(self.variant, self.L, self.variable_length, self.nu, self.Delta)

    def dimension(self, alpha: float) -> int:
        """``D`` of the simulation at ``alpha`` (at least 2)."""
        return max(2, round(self.simulate / math.sqrt(alpha)))


@dataclasses.dataclass(frozen=True)
class TheoryPoint(Record):
    """One solve: ``source`` is ``theory`` (the equations), ``simulation`` (L-BFGS at finite
    ``D``) or ``population`` (the ``alpha -> inf`` value of ``estimator``, ``alpha = inf``)."""

    source: str
    alpha: float
    estimator: str
    init: str


@dataclasses.dataclass(frozen=True)
class ERMTheoryDiagnostics(Record):
    """Checks of an ERM fixed point (docs/theory.md part A)."""

    residual: float
    iterations: int
    prox_max_stationarity: float
    prox_min_curvature: float
    train_objective: float
    replicon: float
    replicon_stderr: float
    rs_stable: bool
    mc_samples: int
    lam: float


@dataclasses.dataclass(frozen=True)
class BayesTheoryDiagnostics(Record):
    """Checks of a Bayes-optimal fixed point (docs/theory.md part B)."""

    residual: float
    iterations: int
    posterior_mean_f_error: float
    test_error_stderr: float
    monte_carlo_error: float
    monte_carlo_stderr: float
    nishimori_gap: float
    nishimori_gap_stderr: float
    mc_samples: int


@dataclasses.dataclass(frozen=True)
class SimulationDiagnostics(Record):
    """An L-BFGS simulation point: the spread over teachers and the size."""

    stderr: float
    D: int
    N: int
    seeds: int
    per_seed_test_error: tuple[float, ...]
    iterations: int
    lam: float


@dataclasses.dataclass(frozen=True)
class PopulationDiagnostics(Record):
    """A population (``alpha -> inf``) value: the quadrature error bound of the Bayes error
    (``None`` for an activation's optimum, found by a numerical search) and the optimum's note
    (a limit, the search boundary), empty when there is nothing to say."""

    error_bound: float | None
    note: str


Diagnostics = (
    ERMTheoryDiagnostics | BayesTheoryDiagnostics | SimulationDiagnostics | PopulationDiagnostics
)


@dataclasses.dataclass(frozen=True)
class TheoryRow(Record):
    """One point of a curve.

    Attributes
    ----------
    source : ``theory``, ``simulation`` or ``population``.
    alpha : sample ratio (``inf`` for a population value).
    estimator : an activation (ERM) or ``bayes``.
    init : start of the iteration (``random`` or ``informed``).
    test_error : excess test error at the fixed point (mean over teachers for a simulation).
    overlaps : the order parameters (means over teachers for a simulation).
    converged : whether the fixed point (every simulated fit) was reached: never read the error
        otherwise.
    diagnostics : the source's checks.
    """

    source: str
    alpha: float
    estimator: str
    init: str
    test_error: float
    overlaps: dict[str, float]
    converged: bool
    diagnostics: Diagnostics

    @property
    def stderr(self) -> float | None:
        """The standard error of ``test_error`` where it has one."""
        if isinstance(self.diagnostics, SimulationDiagnostics):
            return self.diagnostics.stderr
        if isinstance(self.diagnostics, BayesTheoryDiagnostics):
            return self.diagnostics.test_error_stderr
        return None

    @property
    def rs_stable(self) -> bool | None:
        """Whether the replica-symmetric ERM solution is stable (``None`` where not defined)."""
        return getattr(self.diagnostics, "rs_stable", None)


def curve_warnings(rows: Sequence[TheoryRow]) -> list[str]:
    """One line per point whose number should not be read as it is, and per hard phase.

    Not converged; replica-symmetric but RS-unstable (replicon >= 1: trust simulations there);
    Bayes fixed points from the informed and the random start that differ (a hard phase).
    """
    warnings = []
    for row in rows:
        where = f"{row.estimator} ({row.source}, init {row.init}) at alpha={row.alpha:g}"
        if not row.converged:
            diverged = not all(math.isfinite(x) for x in row.overlaps.values())
            why = " (the iteration diverged to non-finite order parameters)" if diverged else ""
            warnings.append(f"{where}: not converged{why}; do not read its error")
        if row.rs_stable is False and math.isfinite(row.diagnostics.replicon):
            warnings.append(
                f"{where}: RS-unstable (replicon {row.diagnostics.replicon:.3g} >= 1); "
                "the replica-symmetric error is not trustworthy, compare with --simulate"
            )
    bayes = {
        (row.alpha, row.init): row.test_error
        for row in rows
        if row.estimator == "bayes" and row.source == "theory"
    }
    for alpha in sorted({alpha for alpha, _ in bayes}):
        informed, random = bayes.get((alpha, "informed")), bayes.get((alpha, "random"))
        if (
            informed is not None
            and random is not None
            and abs(informed - random) > (HARD_PHASE_TOLERANCE)
        ):
            warnings.append(
                f"bayes at alpha={alpha:g}: the random start ends at {random:.4g}, the informed "
                f"at {informed:.4g} (a hard phase)"
            )
    return warnings


TABLE_COLUMNS = [
    "source",
    "alpha",
    "estimator",
    "init",
    "test_error",
    "+-",
    "converged",
    "rs_stable",
    "iterations",
]


@dataclasses.dataclass(frozen=True)
class TheoryResult(Result[TheoryOptions, TheoryRow]):
    """The curves of ``theory``: one row per point (population values last, ``alpha = inf``)."""

    def table(self) -> str:
        """One line per point."""

        def line(row: TheoryRow) -> list[Any]:
            iterations = getattr(row.diagnostics, "iterations", "")
            stderr = "" if row.stderr is None else row.stderr
            stable = "" if row.rs_stable is None else row.rs_stable
            return [
                row.source,
                row.alpha,
                row.estimator,
                row.init,
                row.test_error,
                stderr,
                row.converged,
                stable,
                iterations,
            ]

        return format_table(TABLE_COLUMNS, [line(row) for row in self.rows])

    def title(self) -> str:
        """What the curves are of: task, ridge, draws, simulation size."""
        options = self.options
        config = options.config()
        title = (
            f"{config.variant} nu={describe_nu(config.nu)}, {config.length.describe()}, "
            f"Delta={config.Delta:g}, lam={options.lam:g}, {options.mc_samples} draws"
        )
        if options.simulate is not None:
            title += f"\nL-BFGS at sqrt(ND)={options.simulate}, {options.seeds} exact teachers"
        return title

    def plot(self, ax: Any = None) -> Any:
        """Test error against alpha: a line per (estimator, start) with its own dash style (the
        Bayes informed start dashed over the random start's solid line, so both show where they
        coincide), unconverged points hollow, RS-unstable ERM points crossed, simulations as
        error bars in the line's colour, population values as dotted horizontal lines."""
        ax = new_axes(ax, size=(7, 4.6))
        colours: dict[str, str] = {}
        curves = [r for r in self.rows if r.source == "theory"]
        styles = {"random": ("-", "o", 4), "informed": ("--", "^", 6)}
        for estimator, init in dict.fromkeys((r.estimator, r.init) for r in curves):
            curve = sorted(
                (r for r in curves if (r.estimator, r.init) == (estimator, init)),
                key=lambda r: r.alpha,
            )
            dash, marker, size = styles[init]
            (line,) = ax.plot(
                [r.alpha for r in curve],
                [r.test_error for r in curve],
                dash,
                marker=marker,
                ms=size,
                mfc="none" if init == "informed" else None,
                color=colours.get(estimator),
                label=f"{estimator}, {init} start (theory)",
            )
            colours.setdefault(estimator, line.get_color())
            bad = [r for r in curve if not r.converged]
            if bad:
                ax.plot(
                    [r.alpha for r in bad],
                    [r.test_error for r in bad],
                    "o",
                    mfc="white",
                    color=line.get_color(),
                    label=f"{estimator}: not converged",
                )
            unstable = [r for r in curve if r.rs_stable is False]
            if unstable:
                ax.plot(
                    [r.alpha for r in unstable],
                    [r.test_error for r in unstable],
                    "x",
                    ms=9,
                    color=line.get_color(),
                    label=f"{estimator}: RS-unstable",
                )
        for estimator in dict.fromkeys(r.estimator for r in self.rows if r.source == "simulation"):
            sims = sorted(
                (r for r in self.rows if r.source == "simulation" and r.estimator == estimator),
                key=lambda r: r.alpha,
            )
            ax.errorbar(
                [r.alpha for r in sims],
                [r.test_error for r in sims],
                [r.stderr for r in sims],
                fmt="s",
                mfc="none",
                capsize=2,
                color=colours.get(estimator),
                label=f"{estimator}: L-BFGS",
            )
        for row in (r for r in self.rows if r.source == "population"):
            ax.axhline(
                row.test_error,
                ls=":",
                lw=1,
                color=colours.get(row.estimator, "k"),
                label=f"{row.estimator}: population (alpha -> inf)",
            )
        alpha_axis(ax, self.options.alpha)
        ax.set(ylabel="excess test error", title=self.title())
        ax.title.set_fontsize(9)
        ax.legend(fontsize=7, loc="center left", bbox_to_anchor=(1.01, 0.5))
        return ax


class Theory(Experiment[TheoryOptions, TheoryPoint, TheoryRow, TheoryResult]):
    """Replica-symmetric curves (and simulations) against alpha."""

    name: ClassVar[str] = "theory"
    summary: ClassVar[str] = "high-dimensional (replica) test error against alpha"
    description: ClassVar[str] = (
        "Replica-symmetric equations in the limit N, D -> inf at fixed alpha (docs/theory.md): "
        "ridge ERM per activation, the Bayes-optimal state evolution from the informed and the "
        "random start (--bayes), L-BFGS simulations at a fixed sqrt(N D) (--simulate), and the "
        "population values every curve tends to as alpha -> inf."
    )
    options_type = TheoryOptions
    point_type = TheoryPoint
    solved_type = TheoryRow
    result_type = TheoryResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("alpha", "activations", "bayes", "simulate", "seeds")

    def points(self, options: TheoryOptions) -> list[TheoryPoint]:
        """ERM theory points, Bayes points (both starts), simulations, population values."""
        alphas, activations = options.alpha, options.activations
        points = [
            TheoryPoint("theory", alpha, activation, options.erm_init)
            for alpha in alphas
            for activation in activations
        ]
        estimators = list(activations)
        if options.bayes:
            points += [
                TheoryPoint("theory", alpha, "bayes", init)
                for alpha in alphas
                for init in ("informed", "random")
            ]
            estimators.append("bayes")
        if options.simulate is not None:
            points += [
                TheoryPoint("simulation", alpha, activation, "random")
                for alpha in alphas
                for activation in activations
            ]
        points += [TheoryPoint("population", math.inf, name, "random") for name in estimators]
        return points

    def solve(self, options: TheoryOptions, point: TheoryPoint) -> TheoryRow:
        """Solve the equations, simulate, or compute the population value of one point."""
        config = options.config()
        if point.source == "simulation":
            return _simulation_row(config, point, options)
        if point.source == "population":
            return _population_row(config, point.estimator)
        if point.estimator == "bayes":
            from bayes_slr.theory.replica_bayes import bayes_replica_point

            solved = bayes_replica_point(
                config,
                alpha=point.alpha,
                init=point.init,
                mc_samples=options.mc_samples,
                seed=options.seed,
            )
        else:
            from bayes_slr.theory.replica_erm import erm_replica_point

            solved = erm_replica_point(
                config,
                point.estimator,
                alpha=point.alpha,
                lam=options.lam,
                init=point.init,
                mc_samples=options.mc_samples,
                seed=options.seed,
            )
        return TheoryRow.from_dict({"source": "theory", **solved.to_row()})

    def collect(
        self,
        options: TheoryOptions,
        solved: Sequence[tuple[TheoryPoint, TheoryRow]],
        provenance: Provenance,
    ) -> TheoryResult:
        """The rows in the order of the points, with the warnings of the curve."""
        rows = tuple(row for _, row in solved)
        return TheoryResult(options, rows, provenance, warnings=tuple(curve_warnings(rows)))


def _simulation_row(config: SLRConfig, point: TheoryPoint, options: TheoryOptions) -> TheoryRow:
    """L-BFGS ERM from random starts at ``D = options.dimension(alpha)``, exact teachers: the
    mean over teachers, its standard error (spread over training sets included), mean overlaps."""
    from bayes_slr.experiments.erm import erm_experiment
    from bayes_slr.models.spec import training_size

    D = options.dimension(point.alpha)
    summary = erm_experiment(
        config.replace(D=D),
        point.estimator,
        alpha=point.alpha,
        lam=options.lam,
        seeds=options.seeds,
        seed=options.seed,
        N_test=SIMULATION_TEST_SEQUENCES,
        exact_teacher=True,
        predict_population=False,
    )
    names = summary.per_seed[0]["overlaps"].keys()
    overlaps = {
        name: sum(s["overlaps"][name] for s in summary.per_seed) / options.seeds for name in names
    }
    return TheoryRow(
        source="simulation",
        alpha=point.alpha,
        estimator=point.estimator,
        init="random",
        test_error=summary.test_error,
        overlaps=overlaps,
        converged=all(s["converged"] for s in summary.per_seed),
        diagnostics=SimulationDiagnostics(
            stderr=summary.stderr,
            D=D,
            N=training_size(point.alpha, D),
            seeds=options.seeds,
            per_seed_test_error=tuple(s["test_error"] for s in summary.per_seed),
            iterations=max(s["iterations"] for s in summary.per_seed),
            lam=options.lam,
        ),
    )


def _population_row(config: SLRConfig, estimator: str) -> TheoryRow:
    """The ``alpha -> inf`` value of ``estimator``: the population Bayes error, or the
    activation's population-optimal error (its large-norm limit where it has no finite
    optimum)."""
    if estimator == "bayes":
        from bayes_slr.theory.bayes import bayes_error_exact

        exact = bayes_error_exact(config)
        error, overlaps = exact.value, {"q_k": 1.0, "q_v": 1.0}
        diagnostics = PopulationDiagnostics(float(exact.error_bound), "")
    else:
        from bayes_slr.theory.optimum import optimal_population_error

        optimum = optimal_population_error(estimator, config)
        error = optimum.error
        overlaps = {name: float(getattr(optimum, name)) for name in ("m_k", "q_k", "m_v", "q_v")}
        diagnostics = PopulationDiagnostics(None, optimum.note)
    return TheoryRow(
        source="population",
        alpha=math.inf,
        estimator=estimator,
        init="random",
        test_error=float(error),
        overlaps=overlaps,
        converged=True,
        diagnostics=diagnostics,
    )


THEORY = register_experiment(Theory())
