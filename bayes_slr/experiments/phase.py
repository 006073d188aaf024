"""``phase``: the thresholds of the Bayes-optimal problem over a grid of one setting
(docs/theory.md part D).

One point per value of the swept setting (``Delta``, ``nu`` or ``L``: the one given as a list of
several values; the others are single values): the thresholds of the state evolution located by
:func:`~bayes_slr.formulas.thresholds.thresholds` on ``[alpha_min, alpha_max]`` (docs/theory.md part
D). Convention: ``alpha_sp <= alpha_IT <= alpha_alg``; AMP from a random start is Bayes-optimal
except on ``alpha_IT < alpha < alpha_alg`` (the hard phase), and below ``alpha_IT`` the low-error
(informed) branch is not reached by any estimator. A threshold is a float: ``nan`` where it does
not exist (or no transition was seen), ``-inf`` / ``inf`` where it lies below ``alpha_min`` /
above ``alpha_max``.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.errors import ConfigError, Integer, Number
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    MANY,
    options_task,
    resolved_nu,
    seed_option,
    task_option,
)
from bayes_slr.memory import check_channel_memory
from bayes_slr.numerics.record import JsonObject
from bayes_slr.studies.phase_records import (
    MERGE_TOL,
    SETTINGS,
    THRESHOLDS,
    PhaseCurves,
    PhaseRow,
    PhaseSettings,
)

TABLE_THRESHOLDS = THRESHOLDS[1:]
"""The table's columns: alpha_WR is none in SLR by construction (a note says why; the rows and the
JSON keep it)."""
DEFAULT_DELTAS = (0.0, 0.001, 0.002, 0.005)
"""Spiked ``nu = 2``, ``L = 3``: the hard phase is widest at ``Delta = 0`` and closes between
``Delta = 0.002`` and ``0.003`` (docs/theory.md part D)."""
CURVE_POINTS = 33
"""Points of the initial scan of the fixed-point curve (``theory.fixed_point_curve.CURVE_POINTS``,
repeated here so the options import without JAX; a test keeps them equal)."""
DEFAULT_MC_SAMPLES = 65536
"""Channel draws where the variant has no quadrature (``theory.bayes_channel``'s default)."""
VALUE_CONVENTION = (
    "thresholds: nan = none (no such transition for this task, or none seen on the scan: see "
    "the row's notes), -inf = below alpha_min, inf = above alpha_max; tolerances holds each "
    "located value's error bound (0 for a closed form)"
)
PHASE_CONVENTION = (
    "alpha_sp <= alpha_IT <= alpha_alg: AMP (random start) is Bayes-optimal except in the hard "
    "phase alpha_IT < alpha < alpha_alg; alpha_WR is none in SLR (q = 0 is never a fixed point); "
    "alpha_PR (exact recovery of v) exists only at Delta = 0"
)


@dataclasses.dataclass(frozen=True)
class PhaseOptions(Options):
    """Settings of ``phase``: one task with one setting swept, and the range of ``alpha``."""

    variant: str = task_option("variant")
    nu: tuple[float, ...] | None = task_option("nu", MANY, note="; several values sweep nu")
    L: tuple[int, ...] = task_option("L", MANY, note="; several values sweep L")
    variable_length: bool = task_option("variable_length")
    Delta: tuple[float, ...] = task_option(
        "Delta",
        MANY,
        default=DEFAULT_DELTAS,
        note="; several values sweep Delta (give one to sweep nu or L)",
    )
    alpha_min: float = option(
        0.5,
        "lower end of the alpha range reported (a threshold below: -inf), > 0",
        accepts=Number(0.0, strict=True),
    )
    alpha_max: float = option(
        2.0,
        "upper end of the alpha range reported (a threshold above: inf), > alpha-min, finite",
        accepts=Number(0.0, strict=True),
    )
    tol: float = option(
        1e-5,
        "error bound of each located threshold, in (0, (alpha-max - alpha-min) / 4)",
        accepts=Number(0.0, strict=True),
    )
    scan: int = option(
        CURVE_POINTS,
        "points of the scan of the fixed-point curve, >= 5 (an S narrower than its spacing is "
        "missed)",
        accepts=Integer(5),
    )
    channel_draws: int = option(
        DEFAULT_MC_SAMPLES,
        "channel draws where the variant has no quadrature (max-SLR with L >= 3), >= 2",
        aliases=("--mc-samples",),
        accepts=Integer(2),
    )
    seed: int = seed_option("seed of the channel draws (Monte Carlo channels only)")
    curves: bool = option(
        True,
        "with Delta swept: also trace alpha_sp, alpha_IT and alpha_alg as curves of Delta by "
        f"continuation up to where they merge (located to {MERGE_TOL:g} in Delta; quadrature "
        "channels only), and draw the regions between them in the (Delta, alpha) plane",
    )
    curve_points: int = option(
        10, "samples of the threshold curves below their merge, >= 2 (--curves)", accepts=Integer(2)
    )

    def validate(self) -> None:
        """Refuse a bad range or tolerance, more than one swept setting, or a task the
        Bayes-optimal theory does not cover (without importing JAX)."""
        swept = [name for name in SETTINGS if len(self.values(name)) > 1]
        if len(swept) > 1:
            hint = "; Delta's default is a list" if self.Delta == DEFAULT_DELTAS else ""
            raise ConfigError(
                f"{' and '.join(swept)}: sweep one setting at a time (give the others one "
                f"value, e.g. --Delta 0{hint})"
            )
        alpha_min, alpha_max, tol = self.alpha_min, self.alpha_max, self.tol
        if alpha_max <= alpha_min:
            raise ConfigError(
                f"alpha_max must be a number > alpha_min = {alpha_min:g}, got {alpha_max:g}"
            )
        if tol >= (alpha_max - alpha_min) / 4:
            raise ConfigError(
                f"tol must be a number in (0, (alpha_max - alpha_min) / 4 = "
                f"{(alpha_max - alpha_min) / 4:g}), got {tol:g}"
            )
        for point in self.grid():
            config = options_task(self, nu=point.nu, L=point.L, Delta=point.Delta)
            config.law.check_bayes_theory_nu(config.nu)
            check_channel_memory(self.channel_draws, config.Lbar, "use fewer channel_draws")

    def filled(self) -> dict[str, object]:
        """The variant's default ``nu`` made explicit: the record is complete."""
        return {"nu": self.nus()}

    def values(self, name: str) -> tuple[float, ...]:
        """The values of the setting ``name`` (``nu``: :meth:`nus`)."""
        return self.nus() if name == "nu" else getattr(self, name)

    def nus(self) -> tuple[float, ...]:
        """The signal strengths (the variant's default when none were given)."""
        return self.nu if self.nu is not None else (resolved_nu(self.variant, None),)

    def settings(self) -> PhaseSettings:
        """How the thresholds of every task are located."""
        return PhaseSettings(
            alpha_min=self.alpha_min,
            alpha_max=self.alpha_max,
            tol=self.tol,
            scan=self.scan,
            channel_draws=self.channel_draws,
            curve_points=self.curve_points,
            variable_length=self.variable_length,
        )

    def swept(self) -> str:
        """The setting the diagram is drawn against: the one with several values (``Delta`` when
        every setting has one value)."""
        return next((name for name in SETTINGS if len(self.values(name)) > 1), "Delta")

    def grid(self) -> list[PhasePoint]:
        """One point per value of the swept setting, in the order given."""
        return [
            PhasePoint(nu=float(nu), L=int(L), Delta=float(Delta))
            for nu in self.nus()
            for L in self.L
            for Delta in self.Delta
        ]


@dataclasses.dataclass(frozen=True)
class PhasePoint(Record):
    """One task of the grid."""

    nu: float
    L: int
    Delta: float


REGIONS = (
    ("impossible", "0.75", "impossible: alpha < alpha_IT (low error out of reach)"),
    ("hard", "C3", "hard: alpha_IT < alpha < alpha_alg (AMP not Bayes-optimal)"),
    ("easy", "C2", "easy: AMP (random start) Bayes-optimal"),
)


@dataclasses.dataclass(frozen=True, repr=False)
class PhaseResult(Result[PhaseOptions, PhaseRow]):
    """The thresholds per value of the swept setting, and (``Delta`` swept, ``--curves``) the
    threshold curves up to their merge."""

    curves: PhaseCurves | None = None

    def to_json(self) -> JsonObject:
        """The common JSON, and ``curves`` (``null`` when not traced)."""
        return {
            **super().to_json(),
            "curves": None if self.curves is None else self.curves.to_dict(),
        }

    def rows_table(self) -> str:
        """One line per task: the swept setting, each threshold, the hard phase."""
        swept = self.options.swept()
        shown = TABLE_THRESHOLDS
        header = [swept, *shown, "hard_phase", "method", "evaluations"]
        lines = [
            [
                row.setting_text(swept),
                *(row.describe(name) for name in shown),
                row.hard_phase,
                row.method,
                row.evaluations,
            ]
            for row in self.rows
        ]
        return format_table(header, lines)

    def regions(self, row: PhaseRow) -> list[tuple[str, float, float]]:
        """``(region, start, end)`` over ``[alpha_min, alpha_max]`` for one row
        (:meth:`~bayes_slr.studies.phase_records.PhaseRow.regions`)."""
        return row.regions(self.options.alpha_min, self.options.alpha_max)

    def plot(self, ax: Any = None) -> Any:
        """The phase diagram: with threshold curves, the ``(Delta, alpha)`` plane
        (:meth:`plot_curves`); else one horizontal bar per value of the swept setting, split into
        the impossible, hard and easy regions of ``alpha``, ``alpha_sp`` (the informed branch
        appears) marked with a tick."""
        if self.curves is not None:
            return self.plot_curves(ax)
        created = ax is None
        ax = new_axes(ax, size=(7, 2.2 + 0.45 * len(self.rows)))
        swept = self.options.swept()
        labelled: set[str] = set()
        colours = {name: colour for name, colour, _ in REGIONS}
        texts = {name: text for name, _, text in REGIONS}
        for index, row in enumerate(self.rows):
            for name, start, end in self.regions(row):
                ax.barh(
                    index,
                    end - start,
                    left=start,
                    height=0.6,
                    color=colours[name],
                    label=None if name in labelled else texts[name],
                )
                labelled.add(name)
            if math.isfinite(row.alpha_sp):
                ax.plot(
                    [row.alpha_sp] * 2,
                    [index - 0.35, index + 0.35],
                    "k:",
                    lw=1.5,
                    label=None if "sp" in labelled else "alpha_sp: the informed branch appears",
                )
                labelled.add("sp")
        ax.set_yticks(range(len(self.rows)), [row.setting_text(swept) for row in self.rows])
        ax.set_ylabel(swept)
        ax.invert_yaxis()
        ax.set_xlim(self.options.alpha_min, self.options.alpha_max)
        ax.set_xlabel("alpha = N / D")
        first = self.rows[0] if self.rows else None
        fixed = [
            f"{name}={first.setting_text(name)}" for name in SETTINGS if name != swept and first
        ]
        length = "L ~ U{1..L}" if self.options.variable_length else ""
        ax.set_title(
            f"{self.options.variant}-SLR, " + ", ".join(fixed + ([length] if length else [])),
            fontsize=9,
        )
        if created:  # below the axes, inside the figure (constrained layout makes room)
            ax.figure.legend(fontsize=7, loc="outside lower center", ncol=2)
        else:
            ax.legend(fontsize=7)
        return ax

    def plot_curves(self, ax: Any = None) -> Any:
        """The ``(Delta, alpha)`` plane: impossible below ``alpha_IT(Delta)``, hard between it and
        ``alpha_alg(Delta)``, easy elsewhere (above ``alpha_alg``, and everywhere past the merge,
        where the fixed point is unique); ``alpha_sp`` dotted, the merge point with its error
        bars, and the thresholds of the rows (the solver at each grid value) as markers."""
        created = ax is None
        ax = new_axes(ax, size=(7, 4.6))
        curves, low, high = self.curves, self.options.alpha_min, self.options.alpha_max
        right = max([*self.options.Delta, 1.25 * curves.merge_Delta])
        colours = {name: colour for name, colour, _ in REGIONS}
        texts = {name: text for name, _, text in REGIONS}
        ax.axvspan(0.0, right, color=colours["easy"], alpha=0.35, lw=0, label=texts["easy"])
        ax.fill_between(
            curves.Delta,
            low,
            curves.alpha_IT,
            color=colours["impossible"],
            lw=0,
            label=texts["impossible"],
        )
        ax.fill_between(
            curves.Delta,
            curves.alpha_IT,
            curves.alpha_alg,
            color=colours["hard"],
            lw=0,
            label=texts["hard"],
        )
        ax.plot(curves.Delta, curves.alpha_IT, "k-", lw=1.2, label="alpha_IT")
        ax.plot(curves.Delta, curves.alpha_alg, "k--", lw=1.2, label="alpha_alg")
        ax.plot(
            curves.Delta,
            curves.alpha_sp,
            "k:",
            lw=1.5,
            label="alpha_sp: the informed branch appears",
        )
        ax.errorbar(
            [curves.merge_Delta],
            [curves.merge_alpha],
            xerr=[curves.merge_tolerance],
            yerr=[curves.merge_alpha_tolerance],
            fmt="o",
            color="k",
            ms=4,
            label=f"merge: Delta = {curves.merge_Delta:.5g} +- {curves.merge_tolerance:.0g}",
        )
        for name, marker in (("alpha_sp", "v"), ("alpha_IT", "o"), ("alpha_alg", "^")):
            points = [(r.Delta, r.threshold(name)) for r in self.rows]
            points = [(d, a) for d, a in points if math.isfinite(a)]
            if points:
                ax.plot(
                    *zip(*points),
                    marker,
                    mfc="none",
                    color="C0",
                    ms=6,
                    label=f"{name}, solver at each --Delta" if name == "alpha_IT" else None,
                )
        ax.set_xlim(0.0, right)
        bottom, top = min(curves.alpha_sp), max(curves.alpha_alg)
        margin = 0.15 * (top - bottom)
        ax.set_ylim(max(low, bottom - margin), min(high, top + margin))
        ax.set_xlabel("Delta (label noise variance)")
        ax.set_ylabel("alpha = N / D")
        first = self.rows[0] if self.rows else None
        fixed = [f"{name}={first.setting_text(name)}" for name in ("nu", "L") if first]
        length = ["L ~ U{1..L}"] if self.options.variable_length else []
        ax.set_title(f"{self.options.variant}-SLR, " + ", ".join(fixed + length), fontsize=9)
        if created:
            ax.figure.legend(fontsize=7, loc="outside lower center", ncol=2)
        else:
            ax.legend(fontsize=7)
        return ax


class Phase(Experiment[PhaseOptions, PhasePoint, PhaseRow, PhaseResult]):
    """The thresholds of the Bayes-optimal state evolution over one swept setting."""

    name: ClassVar[str] = "phase"
    summary: ClassVar[str] = (
        "phase diagram: the thresholds alpha_sp, alpha_IT, alpha_alg (and alpha_PR) per task"
    )
    description: ClassVar[str] = (
        "Thresholds of the Bayes-optimal state evolution (docs/theory.md part D) over a grid of "
        "one setting (--Delta, --nu or --L given as several values), each located on "
        "[alpha-min, alpha-max] to within tol from the fixed-point curve alpha(q_v) and the free "
        "entropy: alpha_sp (the informed branch appears), alpha_IT (the Bayes error jumps), "
        "alpha_alg (AMP from a random start jumps), alpha_PR (exact recovery, Delta = 0) and "
        "alpha_WR (none in SLR). AMP is Bayes-optimal except for alpha_IT < alpha < alpha_alg."
    )
    options_type = PhaseOptions
    point_type = PhasePoint
    solved_type = PhaseRow
    result_type = PhaseResult
    sweep_axes: ClassVar[tuple[str, ...]] = SETTINGS

    def points(self, options: PhaseOptions) -> list[PhasePoint]:
        """One point per value of the swept setting."""
        return options.grid()

    def solve(self, options: PhaseOptions, point: PhasePoint) -> PhaseRow:
        """The thresholds of one task."""
        from bayes_slr.studies.phase import phase_row

        config = options_task(options, nu=point.nu, L=point.L, Delta=point.Delta)
        return phase_row(config, options.settings(), options.seed)

    def collect(
        self,
        options: PhaseOptions,
        solved: Sequence[tuple[PhasePoint, PhaseRow]],
        provenance: Provenance,
    ) -> PhaseResult:
        """The rows in the order of the grid, with the conventions and the distinct notes."""
        rows = tuple(row for _, row in solved)
        notes = [VALUE_CONVENTION, PHASE_CONVENTION]
        notes += [note for row in rows for note in row.missing_notes()]
        if rows:
            notes.append(f"alpha_WR: {rows[0].notes['alpha_WR']}")
        curves, why_not = _curves(options, rows)
        notes.append(curves.describe() if curves is not None else why_not)
        warnings = [warning for row in rows for warning in row.monte_carlo_warnings()]
        return PhaseResult(
            options,
            rows,
            provenance,
            notes=tuple(dict.fromkeys(note for note in notes if note)),
            warnings=tuple(warnings),
            curves=curves,
        )


def _curves(options: PhaseOptions, rows: Sequence[PhaseRow]) -> tuple[PhaseCurves | None, str]:
    """The threshold curves of the task (``Delta`` swept, ``--curves``, a quadrature channel),
    or ``None`` and why not (``""``: not asked)."""
    if not options.curves or options.swept() != "Delta" or len(options.Delta) < 2:
        return None, ""
    if not rows or any(row.method != "quadrature" for row in rows):
        return None, "curves: not traced (they need a quadrature channel; this task has none)"
    from bayes_slr.studies.phase import phase_curves

    config = options_task(options, nu=rows[0].nu, L=rows[0].L, Delta=0.0)
    try:
        return phase_curves(config, options.settings()), ""
    except ConfigError as exc:
        return None, f"curves: not traced ({exc})"


PHASE = register_experiment(Phase())
