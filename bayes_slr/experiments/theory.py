"""``theory``: replica-symmetric test-error curves against alpha (docs/theory.md).

Points: the ridge-ERM equations per activation and ``alpha``, the Bayes-optimal state evolution
(``bayes``: two rows per ``alpha``, ``bayes`` the global maximiser of the free entropy over the
fixed points and ``amp`` the fixed point reached from the uninformative start, AMP's; by
quadrature where the variant allows, else Monte Carlo over ``channel_draws`` channel draws),
optionally an L-BFGS simulation per ERM point at a fixed size ``sqrt(N D)`` (as in the original
work: ``D = size / sqrt(alpha)``), and the population (``alpha -> inf``) values each curve must
tend to, drawn as reference lines.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.attention.activations import activation_names, check_registered
from bayes_slr.errors import ConfigError, Each, Integer, Number, check_int
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import alpha_axis, mark_unconverged, new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    OneTask,
    describe_nu,
    seed_option,
    task_option,
)
from bayes_slr.formulas.result import (
    REPLICA_DRAWS,
    REPLICA_MAX_DRAWS,
    REPLICA_REPLICATES,
    REPLICA_TARGET_STDERR,
)
from bayes_slr.memory import check_channel_memory, check_erm_memory
from bayes_slr.models.spec import INITS, SLRConfig, training_size
from bayes_slr.numerics.rounding import matched_digits
from bayes_slr.studies.theory_records import (
    BAYES_ESTIMATORS,
    TheoryRow,
    TheorySettings,
    bayes_notes,
    curve_warnings,
)

DEFAULT_ALPHAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)
ERM_DRAWS, ERM_REPLICATES = REPLICA_DRAWS, REPLICA_REPLICATES


@dataclasses.dataclass(frozen=True)
class TheoryOptions(OneTask, Options):
    """Settings of ``theory``: one task, the activations and sample ratios of the curves."""

    variant: str = task_option("variant")
    nu: float | None = task_option("nu")
    L: int = task_option("L")
    variable_length: bool = task_option("variable_length")
    Delta: float = task_option("Delta")
    activations: tuple[str, ...] = option(
        ("softmax", "linear"),
        "ERM activations (none: only --bayes)",
        choices=activation_names,
        aliases=("--activation",),
        accepts=Each(check_registered, empty=True),
    )
    alpha: tuple[float, ...] = option(
        DEFAULT_ALPHAS, "sample ratios N/D, each > 0", accepts=Number(0.0, strict=True)
    )
    lam: float = option(
        1.0,
        "ridge strength of ERM, >= 0 (below about 0.1 linear attention's RS solution is unstable)",
        accepts=Number(0.0),
    )
    bayes: bool = option(
        False,
        "add the Bayes-optimal curve (the free entropy's global maximiser) and AMP's (random "
        "start)",
    )
    erm_init: str = option(
        "random",
        "start of the ERM state evolution: random (uninformed) or informed",
        choices=INITS,
    )
    channel_draws: int = option(
        ERM_DRAWS,
        "channel draws of the equations (ERM: Sobol points shared by the replicates, at least 2 "
        "each; Bayes only where the variant has no quadrature: Monte Carlo draws, >= 2)",
        aliases=("--mc-samples",),
        accepts=Integer(2),
    )
    replicates: int = option(
        ERM_REPLICATES,
        "independent Sobol scramblings per ERM point, >= 2: the point is solved on all their "
        "points, each alone to first order; their spread is its standard error",
        accepts=Integer(2),
    )
    target_stderr: float | None = option(
        None,
        "ERM points add Sobol points of the same scramblings until the test error's standard "
        f"error is below this, at most {REPLICA_MAX_DRAWS} points (or --channel-draws), >= 0; "
        "0: the --channel-draws points whatever the error",
        default_text=f"{REPLICA_TARGET_STDERR:g} at the default --channel-draws, else 0",
        accepts=Number(0.0),
    )
    seed: int = seed_option("seed of the channel draws and of the simulations")
    simulate: int | None = option(
        None,
        "also train each ERM point by L-BFGS at sqrt(N D) = SIZE (D = SIZE / sqrt(alpha)), exact "
        "teachers |k*|^2 = |v*|^2 = D as the theory assumes",
        metavar="SIZE",
        default_text="none",
        accepts=Integer(2),
    )
    seeds: int = option(5, "teachers per simulated point, >= 2", accepts=Integer(2))

    def validate(self) -> None:
        """Refuse an unknown activation, ``alpha <= 0``, ``lam < 0``, a task the Bayes state
        evolution does not cover (with ``bayes``), fewer than two simulated teachers."""
        config = self.config()
        if self.activations:
            check_int("channel_draws", self.channel_draws, 2 * self.replicates)
        if self.bayes:  # the variant's own check: no JAX before the options are valid
            config.law.check_bayes_theory_nu(config.nu)
        if not self.activations and not self.bayes:
            raise ConfigError("activations: give at least one activation, or bayes")
        self._check_memory(config)

    def _check_memory(self, config: SLRConfig) -> None:
        """Refuse channel draws or simulations that would not fit in memory (before any)."""
        check_channel_memory(
            self.channel_draws, config.Lbar, "use fewer channel_draws", prox=bool(self.activations)
        )
        if self.simulate is None:
            return
        settings = self.settings()
        for alpha in self.alpha:
            D = settings.dimension(alpha)
            check_erm_memory(
                f"simulate = {self.simulate} (alpha = {alpha:g}, D = {D}), seeds = {self.seeds}",
                training_size(alpha, D),
                config.Lbar,
                D,
                self.seeds,
                "use a smaller simulate, seeds or L",
            )

    def settings(self, point: TheoryPoint | None = None) -> TheorySettings:
        """How the rows are solved (with ``point``: that row's settings)."""
        target = self.target_stderr
        if target is None:
            target = REPLICA_TARGET_STDERR if self.channel_draws == ERM_DRAWS else 0.0
        return TheorySettings(
            self.lam,
            self.channel_draws,
            self.simulate,
            self.seeds,
            self.replicates,
            target_stderr=target or None,
            **({} if point is None else dataclasses.asdict(point)),
        )


@dataclasses.dataclass(frozen=True)
class TheoryPoint(Record):
    """One solve: ``source`` is ``theory`` (the equations), ``simulation`` (L-BFGS at finite
    ``D``) or ``population`` (the ``alpha -> inf`` value of ``estimator``, ``alpha = inf``)."""

    source: str
    alpha: float
    estimator: str
    init: str


TABLE_COLUMNS = [
    "source",
    "alpha",
    "estimator",
    "init",
    "test_error",
    "stderr",
    "converged",
    "rs_stable",
    "iterations",
    "Phi",
    "mutual_info/D",
]


def _error_cells(row: TheoryRow) -> tuple[Any, Any]:
    """The test error and its standard error, to the decimal of the error's second significant
    digit; 0 where no random draw enters, blank where the error is not known."""
    matched = matched_digits(row.test_error, row.stderr)
    if matched is not None:
        return matched
    return row.test_error, "" if row.stderr is None else row.stderr


def _information(row: TheoryRow) -> Any:
    """``I / D`` of a ``bayes`` row (blank elsewhere)."""
    value = getattr(row.diagnostics, "mutual_information", math.nan)
    return "" if math.isnan(value) else value


@dataclasses.dataclass(frozen=True, repr=False)
class TheoryResult(Result[TheoryOptions, TheoryRow]):
    """The curves of ``theory``: one row per point (population values last, ``alpha = inf``)."""

    def rows_table(self) -> str:
        """One line per point."""

        def line(row: TheoryRow) -> list[Any]:
            diagnostics = row.diagnostics
            iterations = getattr(diagnostics, "iterations", getattr(diagnostics, "evaluations", ""))
            stable = "" if row.rs_stable is None else row.rs_stable
            error, stderr = _error_cells(row)
            return [
                row.source,
                row.alpha,
                row.estimator,
                "" if row.source == "population" else row.init,
                error,
                stderr,
                row.converged,
                stable,
                iterations,
                getattr(row.diagnostics, "free_entropy", ""),
                _information(row),
            ]

        return format_table(TABLE_COLUMNS, [line(row) for row in self.rows])

    def title(self) -> str:
        """What the curves are of: task, ridge, draws, simulation size."""
        options = self.options
        config = options.config()
        title = (
            f"{config.variant} nu={describe_nu(config.nu)}, {config.length.describe()}, "
            f"Delta={config.Delta:g}, lam={options.lam:g}, {options.channel_draws} draws x "
            f"{options.replicates} scramblings"
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
        labels = {
            "bayes": "bayes: max free entropy (theory)",
            "amp": "amp: random start (theory)",
        }
        for estimator, init in dict.fromkeys(_curve_key(r) for r in curves):
            curve = sorted(
                (r for r in curves if _curve_key(r) == (estimator, init)),
                key=lambda r: r.alpha,
            )
            # the Bayes-optimal curve dashed over AMP's solid one, in one colour
            if estimator in BAYES_ESTIMATORS:
                init = "informed" if estimator == "bayes" else "random"
            dash, marker, size = styles[init]
            colour_key = "bayes" if estimator in BAYES_ESTIMATORS else estimator
            (line,) = ax.plot(
                [r.alpha for r in curve],
                [r.test_error for r in curve],
                dash,
                marker=marker,
                ms=size,
                mfc="none" if init == "informed" else None,
                color=colours.get(colour_key),
                label=labels.get(estimator, f"{estimator}, {init} start (theory)"),
            )
            colours.setdefault(colour_key, line.get_color())
            _mark_unconverged_and_unstable(ax, curve, estimator, line.get_color())
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


def _mark_unconverged_and_unstable(
    ax: Any, curve: list[TheoryRow], estimator: str, colour: str
) -> None:
    """Mark the points of a theory curve that did not converge (hollow) and the RS-unstable ones
    (crossed)."""
    mark_unconverged(ax, curve, colour, f"{estimator}: not converged")
    unstable = [r for r in curve if r.rs_stable is False]
    if unstable:
        ax.plot(
            [r.alpha for r in unstable],
            [r.test_error for r in unstable],
            "x",
            ms=9,
            color=colour,
            label=f"{estimator}: RS-unstable",
        )


def _curve_key(row: TheoryRow) -> tuple[str, str]:
    """One curve per activation and start; one per Bayes estimator (``bayes`` rows change start
    where the Bayes-optimal branch does)."""
    return (row.estimator, "") if row.estimator in BAYES_ESTIMATORS else (row.estimator, row.init)


class Theory(Experiment[TheoryOptions, TheoryPoint, TheoryRow, TheoryResult]):
    """Replica-symmetric curves (and simulations) against alpha."""

    name: ClassVar[str] = "theory"
    summary: ClassVar[str] = "high-dimensional (replica) test error against alpha"
    description: ClassVar[str] = (
        "Replica-symmetric equations in the limit N, D -> inf at fixed alpha (docs/theory.md): "
        "ridge ERM per activation, the Bayes-optimal state evolution (--bayes: the bayes row is "
        "the fixed point of largest free entropy, the amp row AMP's from a random start), "
        "L-BFGS simulations at a fixed sqrt(N D) (--simulate), and the population values every "
        "curve tends to as alpha -> inf."
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
                TheoryPoint("theory", alpha, name, "random" if name == "amp" else "either")
                for alpha in alphas
                for name in BAYES_ESTIMATORS
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
        from bayes_slr.studies.theory import theory_row

        return theory_row(options.config(), options.settings(point), options.seed)

    def collect(
        self,
        options: TheoryOptions,
        solved: Sequence[tuple[TheoryPoint, TheoryRow]],
        provenance: Provenance,
    ) -> TheoryResult:
        """The rows in the order of the points, with the warnings of the curve."""
        rows = tuple(row for _, row in solved)
        return TheoryResult(
            options,
            rows,
            provenance,
            notes=tuple(bayes_notes(rows)),
            warnings=tuple(curve_warnings(rows)),
        )


THEORY = register_experiment(Theory())
