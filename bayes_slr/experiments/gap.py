"""``gap``: the gap to Bayes across sequence lengths, the project's main measurement.

For one task (variant, ``nu``, length law) a row holds the population Bayes error, each
activation's population-optimal error (docs/model.md sections 2 and 4) and, with a sample ratio
``alpha`` (or a data file), the ERM test error of each activation at finite data (section 5)
beside the oracle: the error of each teacher's own Bayes predictor (known ``k*``, ``v*``) on the
same test sequences, the floor no estimator beats on them. The points (one Bayes error, one
population optimum and one ERM error per activation and task) run through the resumable sweep
runner (:mod:`bayes_slr.experiments.runner`).

The module imports without JAX: the computing layers are imported inside the functions that
:meth:`Gap.solve` and :meth:`Gap.collect` call.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from bayes_slr.attention.activations import activation_names, check_registered
from bayes_slr.attention.erm_settings import (
    DEFAULT_LAM_GRID,
    DEFAULT_N_TEST,
    DEFAULT_STARTS,
    OPTIMIZERS,
    VALIDATION_FRACTION,
    ERMSettings,
)
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    flatten,
    option,
    register_experiment,
)
from bayes_slr.experiments.data import DataSource, data_task
from bayes_slr.experiments.gap_erm import (
    ERMError,
    Estimate,
    erm_point,
    erm_warnings,
    held_out_differences,
)
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    DEFAULT_D,
    DEFAULT_DELTA,
    D_option,
    Delta_option,
    check_nonempty,
    describe_nu,
    lam_option,
    nu_option,
    resolved_nu,
    seed_option,
    task_config,
    variant_option,
)
from bayes_slr.models.dataset import DEFAULT_HOLDOUT, held_out_count
from bayes_slr.models.spec import INITS, LengthLaw, SLRConfig

DEFAULT_VARIANTS = ("spiked", "max")
"""The two default settings, each at its variant's own ``nu``: spiked ``nu = 2``, max
``nu = inf``."""
DEFAULT_LENGTHS = (2, 3, 5, 10, 30, 100)
DEFAULT_SEEDS = 4
KINDS = ("bayes", "population", "erm")


@dataclasses.dataclass(frozen=True)
class GapOptions(Options):
    """Settings of ``gap``: the tasks, the activations, and the finite-data (ERM) settings.

    With ``data`` the task (variant, ``nu``, ``Delta``, the length law, ``L``, ``D``) comes from
    the file (:func:`~bayes_slr.experiments.data.data_task`); a setting given beside it that
    contradicts the file is refused. After validation every setting holds the value the run uses
    (defaults filled in: ``result.options`` states what ran), ``source`` describes the data file
    and ``n_train`` is the number of training sequences taken from it. :meth:`replace` treats
    the filled-in values as given: to change the variant or the data file, build new options.
    """

    variant: str | None = variant_option(
        None,
        "token law",
        default_text="both default settings, spiked nu=2 and max nu=inf; with --data the "
        "file's, else spiked",
    )
    nu: float | None = nu_option("the variant's own: spiked 2, max inf; needs --variant")
    L: tuple[int, ...] | None = option(
        None,
        "sequence lengths, each >= 1 (Lbar of the uniform law with --variable-length)",
        default_text=f"{' '.join(map(str, DEFAULT_LENGTHS))}; with --data the file's Lbar",
    )
    variable_length: bool | None = option(
        None,
        "length uniform on {1..L} instead of fixed",
        default_text="fixed; with --data the file's law",
    )
    activations: tuple[str, ...] | None = option(
        None,
        "the activations compared",
        default_text="every registered activation: softmax linear erf softplus",
    )
    alpha: float | None = option(
        None,
        "sample ratio N/D, > 0: adds the ERM test error of each activation and the teachers' "
        "oracle error",
        default_text="none, population values only",
    )
    lam: float | str = lam_option(
        help="ridge of ERM: a number >= 0, or 'auto': chosen per seed by validation on a held-out "
        f"{VALIDATION_FRACTION:g} of the training set over {min(DEFAULT_LAM_GRID):g}.."
        f"{max(DEFAULT_LAM_GRID):g} ({len(DEFAULT_LAM_GRID)} log-spaced values)"
    )
    D: int | None = D_option(
        None, "token dimension of ERM, >= 1", default_text=f"{DEFAULT_D}; with --data the file's"
    )
    Delta: float | None = Delta_option(
        None, default_text=f"{DEFAULT_DELTA:g}; with --data the file's"
    )
    seeds: int | None = option(
        None,
        "ERM teachers and training sets, >= 1; with --data only 1 (one data set)",
        default_text=f"{DEFAULT_SEEDS}; 1 with --data",
    )
    starts: int = option(DEFAULT_STARTS, "random starts per ERM training set, >= 1")
    init: str = option(
        "random",
        "which ERM start is reported: the lowest-training-loss random start, or the informed "
        "start at the teacher (a reference, not an estimator)",
        choices=INITS,
    )
    optimizer: str = option(
        "lbfgs", "L-BFGS to |grad| <= 1e-6, or one pass of SGD", choices=OPTIMIZERS
    )
    N_test: int = option(
        DEFAULT_N_TEST, "fresh test sequences per ERM seed (when the teacher is known), >= 2"
    )
    seed: int = seed_option(
        "root seed of the ERM teachers, data, starts and test sequences, and of the --data split"
    )
    data: Path | None = option(
        None,
        "run ERM on this .npz data set (X, y; optional lengths, eps, k_star and v_star, config: "
        "the format simulate writes, docs/data.md) instead of simulated data; D, N and Lbar "
        "come from the arrays, variant, nu, Delta and the length law from its config record if "
        "it has one",
        metavar="FILE.npz",
        default_text="none: teachers and training sets are drawn",
    )
    holdout: float = option(
        DEFAULT_HOLDOUT,
        "with --data without a teacher (k_star, v_star): share of the sequences held out as the "
        "test set, chosen by --seed, in (0, 1)",
    )
    lam_grid: tuple[float, ...] = option(
        DEFAULT_LAM_GRID, "ridge values tried by lam='auto'", cli=False
    )
    source: DataSource | None = None
    """The data file and where each setting came from (set by validation; ``None`` without
    ``data``)."""
    n_train: int | None = None
    """Training sequences of the data file (set by validation): all with a teacher, else those
    not held out."""

    def validate(self) -> None:
        """Refuse any bad value (one line naming the option and the accepted range) and fill in
        the defaults, or the data file's settings."""
        self._check_values()
        if self.data is not None:
            self._resolve_data()
        else:
            self._fill_defaults()
        self.erm_settings()
        for (variant, nu), L in itertools.product(self.settings(), self.L):
            task_config(variant, L, self.variable_length, nu, self.Delta)

    def _check_values(self) -> None:
        """Refuse an unknown activation and any value out of range (each on its own)."""
        if self.activations is None:
            self._set("activations", tuple(activation_names()))
        check_nonempty("activations", self.activations)
        for activation in self.activations:
            check_registered("activations", activation)
        if self.L is not None:
            check_nonempty("L", self.L)
            self._set("L", tuple(check_int("L", L, 1) for L in self.L))
        if self.alpha is not None:
            check_real("alpha", self.alpha, minimum=0.0, strict=True)
        if self.D is not None:
            check_int("D", self.D, 1)
        if self.Delta is not None:
            check_real("Delta", self.Delta, minimum=0.0)
        if self.seeds is not None:
            check_int("seeds", self.seeds, 1)

    def _fill_defaults(self) -> None:
        """Without a data file: the variant's ``nu`` and the defaults of the settings not
        given."""
        if self.nu is not None and self.variant is None:
            raise ConfigError(
                "`nu` needs `variant` (without `variant` the two default settings run: "
                "spiked nu=2 and max nu=inf)"
            )
        if self.variant is not None:
            self._set("nu", resolved_nu(self.variant, self.nu))
        for name, default in (
            ("L", DEFAULT_LENGTHS),
            ("variable_length", False),
            ("D", DEFAULT_D),
            ("Delta", DEFAULT_DELTA),
            ("seeds", DEFAULT_SEEDS),
        ):
            if getattr(self, name) is None:
                self._set(name, default)
        self._set("source", None)  # set from a data file only
        self._set("n_train", None)

    def _resolve_data(self) -> None:
        """The task of the data file, reconciled with the settings given beside it."""
        if self.alpha is not None:
            raise ConfigError(
                "`alpha` does not apply with `data` (the data set fixes it: training sequences / D)"
            )
        if self.seeds not in (None, 1):
            raise ConfigError(
                f"`seeds` must be 1 with `data` (one data set: `seed` chooses the held-out "
                f"split and the random starts), got {self.seeds}"
            )
        given = {
            "variant": self.variant,
            "nu": self.nu,
            "Delta": self.Delta,
            "L": None if self.L is None else (self.L[0] if len(self.L) == 1 else self.L),
            "variable_length": self.variable_length,
            "D": self.D,
        }
        config, source = data_task(self.data, given)
        if not (config.length.is_fixed or config.length == LengthLaw.uniform(config.Lbar)):
            raise ConfigError(
                f"`data`: gap runs fixed or uniform length laws; the config record has "
                f"{config.length.describe()}"
            )
        n_held_out = 0 if source.teacher else held_out_count(self.holdout, source.N)
        for name, value in (
            ("variant", config.variant),
            ("nu", config.nu),
            ("Delta", config.Delta),
            ("L", (config.Lbar,)),
            ("variable_length", not config.length.is_fixed),
            ("D", config.D),
            ("seeds", 1),
            ("source", source),
            ("n_train", source.N - n_held_out),
        ):
            self._set(name, value)

    def settings(self) -> tuple[tuple[str, float], ...]:
        """The ``(variant, nu)`` pairs to run: both default settings without ``variant``."""
        if self.variant is None:
            return tuple((variant, resolved_nu(variant, None)) for variant in DEFAULT_VARIANTS)
        return ((self.variant, resolved_nu(self.variant, self.nu)),)

    @property
    def runs_erm(self) -> bool:
        """Whether ERM columns are computed (with ``alpha`` or ``data``)."""
        return self.alpha is not None or self.data is not None

    def training_ratio(self) -> float | None:
        """``alpha`` of ERM: given, or the data file's training sequences over ``D``."""
        return self.alpha if self.data is None else self.n_train / self.D

    def erm_settings(self) -> ERMSettings:
        """How each ERM point trains and scores (checked: a bad value is refused here)."""
        return ERMSettings(
            lam=self.lam,
            seeds=self.seeds or 1,
            seed=self.seed,
            init=self.init,
            starts=self.starts,
            optimizer=self.optimizer,
            N_test=self.N_test,
            lam_grid=self.lam_grid,
            predict_population=False,
        )


@dataclasses.dataclass(frozen=True)
class GapPoint(Record):
    """One unit of work: the Bayes error of a task, or an activation's population optimum or ERM
    error (``kind``)."""

    variant: str
    nu: float
    L: int
    kind: str
    activation: str | None = None


@dataclasses.dataclass(frozen=True)
class BayesValue(Record):
    """The population Bayes error with known directions and its quadrature error bound."""

    error: float
    error_bound: float


@dataclasses.dataclass(frozen=True)
class OptimalOverlaps(Record):
    """Where an activation's population optimum is reached (docs/model.md section 4), and the
    note saying when it is a limit or an upper bound."""

    m_k: float
    q_k: float
    c: float
    m_v: float
    q_v: float
    note: str


@dataclasses.dataclass(frozen=True)
class ActivationOptimum(Record):
    """An activation's population-optimal error and its overlaps."""

    error: float
    overlaps: OptimalOverlaps


@dataclasses.dataclass(frozen=True)
class GapSolved(Record):
    """A solved point: the part its ``kind`` computes (the oracle comes with an ERM error: same
    teachers and test sequences)."""

    bayes: BayesValue | None = None
    population: ActivationOptimum | None = None
    erm: ERMError | None = None
    oracle: Estimate | None = None


@dataclasses.dataclass(frozen=True)
class GapRow(Record):
    """One task (variant, ``nu``, ``L``): population values, and ERM at finite data.

    Attributes
    ----------
    variant, nu, L, variable_length : the task.
    bayes, bayes_error_bound : the population Bayes error with known directions (excess over
        ``Delta``; a teacher with ``|k*|^2 = |v*|^2 = D``) and its quadrature error bound.
    population : each activation's population-optimal error (``D, alpha -> inf``).
    gap : ``population - bayes`` per activation.
    optimal_overlaps : where each optimum is reached, and its note.
    erm : each activation's ERM test error (``None`` without ``alpha`` or ``data``).
    oracle : the known-direction Bayes error of the teachers on the ERM test sequences (mean
        over seeds and its standard error; ``None`` without ERM or without a teacher).
    erm_paired_differences : data without a teacher: ``"a - b"`` for every two activations,
        the mean of the per-sequence difference of their errors on the held-out sequences and
        its standard error.
    notes, warnings : lines to read with the row (limits and bounds of the optima, the ridge
        chosen; numbers not to read as they stand).

    A part whose point failed is missing (``bayes`` ``None``, an activation absent).
    """

    variant: str
    nu: float
    L: int
    variable_length: bool
    bayes: float | None
    bayes_error_bound: float | None
    population: dict[str, float]
    gap: dict[str, float]
    optimal_overlaps: dict[str, OptimalOverlaps]
    erm: dict[str, ERMError] | None = None
    oracle: Estimate | None = None
    erm_paired_differences: dict[str, Estimate] | None = None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()

    def describe(self) -> str:
        """The task as a prefix of its notes: ``spiked nu=2 L=3`` (``L=U1..5`` for variable
        lengths)."""
        length = f"U1..{self.L}" if self.variable_length else str(self.L)
        return f"{self.variant} nu={describe_nu(self.nu)} L={length}"


def optimum_notes(activation: str, overlaps: OptimalOverlaps) -> list[str]:
    """The note of a population optimum that is a limit (``|k| -> inf``) or an upper bound."""
    note = overlaps.note
    if not note:
        return []
    if "no finite optimum" in note:
        kind = " is a limit (|k| -> inf)"
    elif "boundary" in note:
        kind = " is an upper bound on its optimum"
    else:
        kind = ""
    return [f"population {activation}{kind}: {note}"]


def row_notes(
    population: dict[str, float],
    optimal_overlaps: dict[str, OptimalOverlaps],
    erm: dict[str, ERMError] | None,
    activations: Sequence[str],
) -> tuple[list[str], list[str]]:
    """What a reader must know with a row: ``(notes, warnings)``.

    Notes: limits and upper bounds of the population optima, the ridge chosen by validation.
    Warnings (numbers not to read as they stand): :func:`erm_warnings`.
    """
    notes, warnings = [], []
    for activation in activations:
        if activation in optimal_overlaps:
            notes += optimum_notes(activation, optimal_overlaps[activation])
    for activation, part in (erm or {}).items():
        if part.lam_auto:
            notes.append(
                f"ERM {activation}: lam chosen by held-out validation per seed: "
                + ", ".join(f"{x:.3g}" for x in part.lam)
            )
        warnings += erm_warnings(activation, part, population.get(activation))
    return notes, warnings


@dataclasses.dataclass(frozen=True, repr=False)
class GapResult(Result[GapOptions, GapRow]):
    """The rows of ``gap``, one per task."""

    def rows_table(self) -> str:
        """One line per task: the population values, their gaps and, with ERM, the oracle and
        the ERM errors (``*``: see the warnings); for data without a teacher, the paired
        differences of the ERM errors below."""
        activations = self.options.activations
        with_erm = self.options.runs_erm
        with_oracle = any(row.oracle is not None for row in self.rows)
        prefix = "pop " if with_erm else ""
        header = ["variant", "nu", "L", f"{prefix}bayes"]
        header += [f"{prefix}{a}" for a in activations] + [f"gap {a}" for a in activations]
        header += (["oracle"] if with_oracle else []) + (
            [f"ERM {a}" for a in activations] if with_erm else []
        )
        lines, starred = [], False
        for row in self.rows:
            line = [row.variant, row.nu, ("U1.." if row.variable_length else "") + str(row.L)]
            line.append(FAILED if row.bayes is None else row.bayes)
            line += [row.population.get(a, FAILED) for a in activations]
            line += [row.gap.get(a, "-" if a in row.population else FAILED) for a in activations]
            if with_oracle:
                line.append("-" if row.oracle is None else _estimate_cell(row.oracle))
            if with_erm:
                for a in activations:
                    erm = (row.erm or {}).get(a)
                    cell = FAILED if erm is None else _erm_cell(erm)
                    if erm is not None and erm_warnings(a, erm, row.population.get(a)):
                        cell, starred = cell + " *", True
                    line.append(cell)
            lines.append(line)
        text = [format_table(header, lines)]
        if starred:
            text.append("*: see the warnings below")
        for row in self.rows:
            text += _paired_lines(row)
        return "\n".join(text)

    def plot(self, ax: Any = None) -> Any:
        """Error against ``L`` (log axis) per activation with the Bayes curve and, with ERM, the
        ERM errors and the oracle; one panel per (variant, ``nu``)
        (:mod:`bayes_slr.experiments.gap_figure`: a value above the axis is drawn at its edge
        with an arrow and its value, and the panel's title says so).

        Parameters
        ----------
        ax : one Matplotlib axes per (variant, ``nu``) setting of the result (a single axes
            when there is one), or ``None`` for a new figure (its title states the ERM
            settings).

        Returns
        -------
        The axes (an array of them when there are several settings).
        """
        from bayes_slr.experiments.gap_figure import draw_gap

        return draw_gap(self, ax)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One row per (task, activation): the task, ``activation``, the population Bayes error,
        the activation's population optimum (``population``), ``gap``, its overlaps
        (``optimum.*``), the oracle and the ERM error (``erm.*``; the fit left out). Tidy per
        activation because every measured quantity but the Bayes error and the oracle belongs
        to one activation: ``sns.lineplot(df, x="L", y="population", hue="activation")``."""
        tidy = []
        for row, activation in itertools.product(self.rows, self.options.activations):
            overlaps = row.optimal_overlaps.get(activation)
            erm = (row.erm or {}).get(activation)
            entry = {
                "variant": row.variant,
                "nu": row.nu,
                "L": row.L,
                "variable_length": row.variable_length,
                "activation": activation,
                "bayes": row.bayes,
                "bayes_error_bound": row.bayes_error_bound,
                "population": row.population.get(activation),
                "gap": row.gap.get(activation),
            }
            if overlaps is not None:
                entry.update(flatten(overlaps.to_dict(), "optimum."))
            if self.options.runs_erm:
                entry["oracle"] = None if row.oracle is None else row.oracle.value
                entry["oracle_stderr"] = None if row.oracle is None else row.oracle.stderr
                if erm is not None:
                    fields = flatten(erm.to_dict(), "erm.")
                    entry.update({k: v for k, v in fields.items() if not k.startswith("erm.fit")})
            tidy.append(entry)
        return tidy


FAILED = "failed"
"""A table cell whose point failed (listed with the failures)."""


def _estimate_cell(estimate: Estimate) -> str:
    return f"{estimate.value:.4f}+-{estimate.stderr:.4f}"


def _erm_cell(erm: ERMError) -> str:
    """``error+-stderr``, and the ridge when chosen by validation."""
    cell = f"{erm.test_error:.4f}+-{erm.stderr:.4f}"
    if erm.lam_auto:
        low, high = min(erm.lam), max(erm.lam)
        cell += f" lam={low:.2g}" + ("" if low == high else f"..{high:.2g}")
    return cell


def _paired_lines(row: GapRow) -> list[str]:
    """The paired differences of a ``data`` row's ERM errors (held-out sequences), one line
    each."""
    if not row.erm_paired_differences:
        return []
    return [
        "ERM paired differences on the same held-out sequences (mean of the per-sequence "
        "difference of the errors +- its stderr):"
    ] + [
        f"  {name}: {d.value:+.4f} +- {d.stderr:.4f}"
        for name, d in row.erm_paired_differences.items()
    ]


def bayes_point(config: SLRConfig) -> BayesValue:
    """The population Bayes error with its quadrature bound."""
    from bayes_slr.formulas.bayes import bayes_error_exact

    exact = bayes_error_exact(config)
    return BayesValue(float(exact.value), float(exact.error_bound))


def population_point(config: SLRConfig, activation: str) -> ActivationOptimum:
    """The population-optimal error of one activation, with its optimal overlaps and note."""
    from bayes_slr.formulas.optimum import optimal_population_error

    optimum = optimal_population_error(activation, config)
    overlaps = OptimalOverlaps(
        *(float(getattr(optimum, name)) for name in ("m_k", "q_k", "c", "m_v", "q_v")),
        optimum.note,
    )
    return ActivationOptimum(float(optimum.error), overlaps)


class Gap(Experiment[GapOptions, GapPoint, GapSolved, GapResult]):
    """Bayes error against each activation's error across lengths."""

    name: ClassVar[str] = "gap"
    summary: ClassVar[str] = "Bayes error and each activation's error across L"
    description: ClassVar[str] = (
        "One row per (variant, nu, L): the population Bayes error, each activation's "
        "population-optimal error and its gap to Bayes (D, alpha -> inf). Without --variant: "
        "spiked nu=2 and max-SLR nu=inf. With --alpha (or --data), the ERM test error of each "
        "activation at finite data beside the oracle (the teachers' own Bayes predictor on the "
        "same test sequences): each seed is trained from --starts random starts "
        "(k, v ~ N(0, 0.01 I)) and from the teacher (a reference); the lowest-training-loss "
        "random start is reported, with a warning when the random starts disagree."
    )
    options_type = GapOptions
    point_type = GapPoint
    solved_type = GapSolved
    result_type = GapResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("variant", "nu", "L", "activations")

    def points(self, options: GapOptions) -> list[GapPoint]:
        """Per setting and length: the Bayes error, each activation's population optimum, and
        with ERM each activation's ERM error."""
        points = []
        for (variant, nu), L in itertools.product(options.settings(), options.L):
            points.append(GapPoint(variant, nu, L, "bayes"))
            points += [GapPoint(variant, nu, L, "population", a) for a in options.activations]
            if options.runs_erm:
                points += [GapPoint(variant, nu, L, "erm", a) for a in options.activations]
        return points

    def solve(self, options: GapOptions, point: GapPoint) -> GapSolved:
        """The Bayes error, an activation's population optimum, or its ERM error and the
        oracle."""
        config = task_config(point.variant, point.L, options.variable_length, point.nu, 0.0)
        if point.kind == "bayes":
            return GapSolved(bayes=bayes_point(config))
        if point.kind == "population":
            return GapSolved(population=population_point(config, point.activation))
        erm, oracle = erm_point(config, point.activation, options)
        return GapSolved(erm=erm, oracle=oracle)

    def collect(
        self,
        options: GapOptions,
        solved: Sequence[tuple[GapPoint, GapSolved]],
        provenance: Provenance,
    ) -> GapResult:
        """One row per task, in the order of the points; notes say what each column is."""
        parts: dict[tuple[str, float, int], dict[tuple[str, str | None], GapSolved]] = {}
        for point, result in solved:
            parts.setdefault((point.variant, point.nu, point.L), {})[
                (point.kind, point.activation)
            ] = result
        tasks = [
            (variant, nu, L)
            for (variant, nu), L in itertools.product(options.settings(), options.L)
        ]
        rows = [_row(options, task, parts.get(task, {})) for task in tasks]
        notes = _column_notes(options, rows) + [
            f"{row.describe()}: {line}" for row in rows for line in row.notes
        ]
        warnings = [f"{row.describe()}: {line}" for row in rows for line in row.warnings]
        return GapResult(options, tuple(rows), provenance, tuple(notes), tuple(warnings))

    def seed(self, options: GapOptions) -> int | None:
        """The root seed of the ERM draws (none for population values only)."""
        return options.seed if options.runs_erm else None


def _row(
    options: GapOptions,
    task: tuple[str, float, int],
    parts: dict[tuple[str, str | None], GapSolved],
) -> GapRow:
    """The row of one task from its solved points (a failed point leaves its part out)."""
    variant, nu, L = task
    activations = options.activations
    bayes = parts.get(("bayes", None))
    optima = {
        a: parts[("population", a)].population for a in activations if ("population", a) in parts
    }
    erm = (
        {a: parts[("erm", a)] for a in activations if ("erm", a) in parts}
        if options.runs_erm
        else None
    )
    population = {a: optimum.error for a, optimum in optima.items()}
    bayes_error = None if bayes is None else bayes.bayes.error
    gap = {} if bayes_error is None else {a: e - bayes_error for a, e in population.items()}
    erm_errors = None if erm is None else {a: part.erm for a, part in erm.items()}
    overlaps = {a: optimum.overlaps for a, optimum in optima.items()}
    notes, warnings = row_notes(population, overlaps, erm_errors, activations)
    row = GapRow(
        variant,
        nu,
        L,
        bool(options.variable_length),
        bayes_error,
        None if bayes is None else bayes.bayes.error_bound,
        population,
        gap,
        overlaps,
        erm=erm_errors,
        oracle=next((part.oracle for part in (erm or {}).values()), None),
        notes=tuple(notes),
        warnings=tuple(warnings),
    )
    if options.data is not None and not options.source.teacher:
        row = dataclasses.replace(row, erm_paired_differences=held_out_differences(options, row))
    return row


def _column_notes(options: GapOptions, rows: list[GapRow]) -> list[str]:
    """What each column is: the data file and its settings, then, with ERM, the population, the
    oracle and the ERM columns."""
    notes = []
    if options.source is not None:
        config = task_config(
            options.variant,
            options.L[0],
            options.variable_length,
            options.nu,
            options.Delta,
            options.D,
        )
        notes.append(options.source.describe(config))
    if not options.runs_erm:
        return notes
    notes.append(
        "pop bayes, pop <activation>: population values (D, alpha -> inf, a teacher with "
        "|k*|^2 = |v*|^2 = D): the Bayes error with known directions and each activation's best "
        "error; gap <activation> = pop <activation> - pop bayes"
    )
    if any(row.oracle is not None for row in rows):
        notes.append(
            "oracle: the error of each teacher's own Bayes predictor (known k*, v*) on the same "
            "test sequences as ERM: no estimator does better on them, so read ERM against it; "
            "it differs from pop bayes through the teacher's norms |k*|^2/D, |v*|^2/D"
        )
    notes.append(f"ERM <activation>: {_erm_column(options)}")
    return notes


def _erm_column(options: GapOptions) -> str:
    """What the ERM columns measure, and on which sequences."""
    alpha = options.training_ratio()
    if options.data is None:
        return (
            f"test error of attention trained by ERM at alpha = {alpha:g}, D = {options.D}, on "
            f"{options.N_test} fresh sequences per teacher, +- its standard error over "
            f"{options.seeds} seed(s) (teachers and training sets){_lam_column(options)}"
        )
    if options.source.teacher:
        return (
            f"test error of attention trained by ERM on the file's {options.n_train} sequences "
            f"(alpha = {alpha:g}), on {options.N_test} fresh sequences of its teacher, +- their "
            f"standard error{_lam_column(options)}"
        )
    held_out = options.source.N - options.n_train
    return (
        f"test error of attention trained by ERM on {options.n_train} of the file's sequences "
        f"(alpha = {alpha:g}), on the other {held_out} (held out by holdout and seed), +- the "
        f"standard error over them{_lam_column(options)}; the file has no teacher, so there is "
        "no oracle"
    )


def _lam_column(options: GapOptions) -> str:
    """What ``lam=`` in an ERM cell is (only shown when chosen by validation)."""
    if options.lam != "auto":
        return ""
    return "; lam=: the ridge chosen per seed by validation on the training set (range over seeds)"


GAP = register_experiment(Gap())
