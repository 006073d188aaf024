"""``gap``: the gap to Bayes across sequence lengths, the project's main measurement.

For one task (variant, ``nu``, length law) a row holds the population Bayes error, each
activation's population-optimal error (docs/model.md sections 2 and 4) and, with a sample ratio
``alpha`` (or a data file), the ERM test error of each activation at finite data (section 5)
beside the oracle: the error of each teacher's own Bayes predictor (known ``k*``, ``v*``) on the
same test sequences, the floor no estimator beats on them. The points (one Bayes error, one
population optimum and one ERM error per activation and task) run through the resumable sweep
runner (:mod:`bayes_slr.experiments.runner`). With several heads, or heads that may be absent,
the points are the same, heads an axis of each (the multi-head Bayes error, the optimum of
``H_s`` aligned heads, ERM with ``H_s`` heads), and a row's ``heads`` holds what the one-head
columns do not (its cells, tidy fields and notes: :func:`heads_lines`, :func:`heads_entry`,
:func:`heads_notes`).

The module imports without JAX: the computing layers are imported inside the functions that
:meth:`Gap.solve` and :meth:`Gap.collect` call.
"""

from __future__ import annotations

import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.attention.activations import OPTIONAL_ACTIVATIONS
from bayes_slr.experiments.base import (
    Experiment,
    Provenance,
    Result,
    flatten,
    register_experiment,
)
from bayes_slr.experiments.gap_records import GapOptions, GapPoint
from bayes_slr.experiments.tables import cell, format_table, plus_minus
from bayes_slr.experiments.task import (
    task_config,
)
from bayes_slr.numerics.paired import PairedDifference, difference_name
from bayes_slr.studies.gap import (
    DataSplit,
    bayes_point,
    data_split,
    erm_point,
    held_out_differences,
    population_point,
)
from bayes_slr.studies.gap_records import UPPER_BOUND, ERMError
from bayes_slr.studies.gap_rows import (
    DEFAULT_VARIANTS,
    GapRow,
    GapSolved,
    HeadsGap,
    erm_warnings,
    gap_row,
    matched_cosines,
    overlap_summary,
    takes_presence,
    tilted_location,
)


@dataclasses.dataclass(frozen=True, repr=False)
class GapResult(Result[GapOptions, GapRow]):
    """The rows of ``gap``, one per task."""

    def rows_table(self) -> str:
        """One line per task: the population values, their gaps and, with ERM, the oracle and
        the ERM errors (``*``: see the warnings); for data without a teacher, the paired
        differences of the ERM errors below; with several heads, ``^`` on an optimum that is an
        upper bound and the heads ERM found below."""
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
            line += [
                population_cell(row.population[a], row.heads, a) if a in row.population else FAILED
                for a in activations
            ]
            line += [row.gap.get(a, "-" if a in row.population else FAILED) for a in activations]
            if with_oracle:
                oracle = row.oracle
                line.append("-" if oracle is None else plus_minus(oracle.value, oracle.stderr))
            if with_erm:
                for a in activations:
                    erm = (row.erm or {}).get(a)
                    cell = FAILED if erm is None else _erm_cell(erm)
                    if erm is not None and erm_warnings(a, erm, row.population.get(a)):
                        cell, starred = cell + " *", True
                    line.append(cell)
            lines.append(line)
        text = [format_table(header, lines)]
        paired = [line for row in self.rows for line in _paired_lines(row, activations)]
        text += [PAIRED_HEADER, *paired] if paired else []
        if starred:
            text.append("*: see the warnings below")
        for row in self.rows:
            text += heads_lines(row, row.describe())
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

        return draw_gap(self.options, self.rows, ax)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One row per (task, activation): the task, ``activation``, the population Bayes error,
        the activation's population optimum (``population``), ``gap``, its overlaps
        (``optimum_*``), the oracle and the ERM error (``erm_*``; the fit left out). Tidy per
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
                entry.update(flatten(overlaps.to_dict(), "optimum_"))
            entry |= heads_entry(row.heads, activation, erm)
            if self.options.runs_erm:
                entry["oracle"] = None if row.oracle is None else row.oracle.value
                entry["oracle_stderr"] = None if row.oracle is None else row.oracle.stderr
                if erm is not None:
                    fields = flatten(erm.to_dict(), "erm_")
                    entry.update({k: v for k, v in fields.items() if not k.startswith("erm_fit")})
            tidy.append(entry)
        return tidy

    def differences_to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of the ERM paired differences, one tidy row per (task,
        difference): the task, ``difference`` (``"softmax - linear"``, ``"softmax - oracle"``,
        ...), its sides ``a`` and ``b``, ``value``, ``stderr``, the teachers ``n``,
        ``unpaired_stderr`` (the two sides' errors taken apart; pairs of activations) and
        ``sign`` (``+1``/``-1`` decided at 95%, ``0`` undecided:
        :meth:`~bayes_slr.numerics.paired.PairedDifference.sign`)."""
        import pandas as pd

        tidy = []
        for row in self.rows:
            for name, d in (row.erm_paired_differences or {}).items():
                a, b = name.split(" - ", 1)
                task = {"variant": row.variant, "nu": row.nu, "L": row.L}
                tidy.append(
                    task
                    | {"variable_length": row.variable_length, "difference": name, "a": a, "b": b}
                    | d.to_dict()
                    | {"sign": d.sign()}
                )
        return pd.DataFrame(tidy)


FAILED = "failed"
"""A table cell whose point failed (listed with the failures)."""


def _erm_cell(erm: ERMError) -> str:
    """``error+-stderr``, and the ridge when chosen by validation."""
    cell = plus_minus(erm.test_error, erm.stderr)
    if erm.lam_auto:
        low, high = min(erm.lam), max(erm.lam)
        cell += f" lam={low:.2g}" + ("" if low == high else f"..{high:.2g}")
    return cell


PAIRED_HEADER = (
    "ERM paired differences (mean over the teachers of the per-teacher difference +- its stderr, "
    "docs/erm.md; <, >: the sign decided at 95% (Student's t over the teachers), ~: undecided):"
)
"""The line above the paired differences of the rows."""


def _relation(a: str, b: str, difference: PairedDifference) -> str:
    """``a < b -0.0912+-0.0123``: the decided relation and the difference."""
    symbol = {1: ">", -1: "<", 0: "~"}[difference.sign()]
    return f"{a} {symbol} {b} {difference.value:+.4f}+-{difference.stderr:.4f}"


def _paired_lines(row: GapRow, activations: Sequence[str]) -> list[str]:
    """The paired differences of a row's ERM errors: the pairs of activations (with the unpaired
    error of the two taken apart), then each activation against the oracle and the zero
    predictor, on one line each."""
    differences = row.erm_paired_differences or {}
    if not differences:
        return []
    sides = {side for name in differences for side in name.split(" - ", 1)}
    found = [a for a in activations if a in sides]
    teachers = max(d.n or 1 for d in differences.values())
    drawn = row.oracle is not None  # else held-out sequences of a file
    scope = f"{teachers} teacher{'s' * (teachers > 1)}" if drawn else "held-out sequences"
    pairs = []
    for a, b in itertools.combinations(found, 2):
        d = differences.get(difference_name(a, b))
        if d is not None:
            unpaired = "" if d.unpaired_stderr is None else f" (unpaired +-{d.unpaired_stderr:.4f})"
            pairs.append(_relation(a, b, d) + unpaired)
    lines = [" ".join([f"  {row.describe()}, {scope}:", "; ".join(pairs)]).rstrip()]
    for reference in ("oracle", "zero"):
        found_reference = [
            _relation(a, reference, differences[difference_name(a, reference)])
            for a in found
            if difference_name(a, reference) in differences
        ]
        if found_reference:
            lines.append(f"    vs {reference}: " + ", ".join(found_reference))
    return lines


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
        "random start is reported, with a warning when the random starts disagree. With "
        "--heads or --presence (docs/multihead.md): the multi-head Bayes error, each "
        "activation's optimum of --student-heads heads aligned one to one (^: an upper bound on "
        "the optimum over all overlaps) and ERM with those heads beside the oracle, with the "
        "heads it found."
    )
    options_type = GapOptions
    point_type = GapPoint
    solved_type = GapSolved
    result_type = GapResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("variant", "nu", "L", "activations")
    progress_label: ClassVar[str] = "computations (per task: its Bayes error, each activation's)"

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
        config = task_config(
            point.variant,
            point.L,
            options.variable_length,
            point.nu,
            0.0,
            1,
            options.heads,
            options.presence,
        )
        if point.kind == "bayes":
            return GapSolved(bayes=bayes_point(config))
        if point.kind == "population":
            heads = (options.heads_of_student,) if options.multihead else ()
            return GapSolved(population=population_point(config, point.activation, *heads))
        erm, oracle = erm_point(
            config.replace(D=options.D, Delta=options.Delta),
            options.erm_settings().replace(
                activation=point.activation,
                alpha=None if options.data is not None else options.alpha,
            ),
            options.seed,
            _split(options),
        )
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
    """The row of one task from its solved points
    (:func:`~bayes_slr.studies.gap_rows.gap_row`), with the paired differences of a data file
    without a teacher."""
    variant, nu, L = task
    config = task_config(
        variant, L, options.variable_length, nu, 0.0, 1, options.heads, options.presence
    )
    student_heads = options.heads_of_student if options.multihead else None
    row = gap_row(
        config,
        bool(options.variable_length),
        parts,
        options.activations,
        options.runs_erm,
        student_heads,
    )
    if options.data is not None and not options.source.teacher:
        held_out = _held_out(options, row)
        if held_out is not None:
            together = held_out | (row.erm_paired_differences or {})
            row = dataclasses.replace(row, erm_paired_differences=together)
    return row


def _split(options: GapOptions) -> DataSplit | None:
    """The data file split by the seed (``None`` for drawn data)."""
    return None if options.data is None else data_split(options.data, options.holdout, options.seed)


def _held_out(options: GapOptions, row: GapRow) -> dict[str, PairedDifference] | None:
    """The paired differences of a data row without a teacher on its held-out sequences
    (:func:`~bayes_slr.studies.gap.held_out_differences`); ``None`` when a fit is missing
    (a failed point)."""
    fits = {a: (row.erm or {}).get(a) for a in options.activations}
    if any(part is None or part.fit is None for part in fits.values()):
        return None
    config = task_config(row.variant, row.L, row.variable_length, row.nu, options.Delta, options.D)
    test = _split(options).test
    return held_out_differences(config, {a: part.fit for a, part in fits.items()}, test)


def _column_notes(options: GapOptions, rows: list[GapRow]) -> list[str]:
    """What each column is: the data file and its settings, then, with ERM, the population, the
    oracle and the ERM columns."""
    notes = _heads_notes(options, rows) if options.multihead else []
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


def _heads_notes(options: GapOptions, rows: list[GapRow]) -> list[str]:
    """What the columns of a multi-head task are, and what its defaults left out."""
    bounded = any(UPPER_BOUND in row.heads.scopes.values() for row in rows if row.heads is not None)
    given = options.activations is not None
    return heads_notes(
        options.heads, options.presence, options.student_heads, bounded
    ) + left_out_notes(
        options.variant, options.presence, given, options.settings(), DEFAULT_VARIANTS
    )


def _erm_column(options: GapOptions) -> str:
    """What the ERM columns measure, and on which sequences."""
    alpha = options.training_ratio()
    if options.multihead and options.data is None:
        return (
            f"test error of {options.heads_of_student}-head attention trained by ERM at alpha = "
            f"{alpha:g}, D = {options.D}, from {options.starts} random start(s) (k, v ~ N(0, I); "
            f"the lowest objective is the fit), on {options.N_test} fresh sequences per exact "
            f"teacher, +- its standard error over {options.seeds} seed(s){_lam_column(options)}; "
            "below the table, its gap to pop bayes and the heads it found (student head -> "
            "teacher head)"
        )
    if options.data is None:
        return (
            f"test error of attention trained by ERM at alpha = {alpha:g}, D = {options.D}, on "
            f"{options.N_test} fresh sequences per teacher, +- its standard error over "
            f"{options.seeds} seed(s) (teachers and training sets){_lam_column(options)}"
        )
    student = f"{options.heads_of_student}-head attention" if options.multihead else "attention"
    if options.source.teacher:
        return (
            f"test error of {student} trained by ERM on the file's {options.n_train} sequences "
            f"(alpha = {alpha:g}), on {options.N_test} fresh sequences of its teacher, +- their "
            f"standard error{_lam_column(options)}"
        )
    held_out = options.source.N - options.n_train
    return (
        f"test error of {student} trained by ERM on {options.n_train} of the file's sequences "
        f"(alpha = {alpha:g}), on the other {held_out} (held out by holdout and seed), +- the "
        f"standard error over them{_lam_column(options)}; the file has no teacher, so there is "
        "no oracle"
    )


def _lam_column(options: GapOptions) -> str:
    """What ``lam=`` in an ERM cell is (only shown when chosen by validation)."""
    if options.lam != "auto":
        return ""
    return "; lam=: the ridge chosen per seed by validation on the training set (range over seeds)"


UPPER_BOUND_MARK = " ^"
"""Appended to an optimum of aligned heads that is an upper bound on the optimum over all
overlaps."""


def left_out_notes(
    variant: str | None,
    presence: float,
    activations_given: bool,
    settings: Sequence[tuple[str, float]],
    default_variants: Sequence[str],
) -> list[str]:
    """What a multi-head ``gap`` left out of its defaults: a default setting whose heads are
    always present (max, when ``presence < 1``), and softmax-1 and Bayes-softmax beside a
    setting with a tilted location law."""
    notes = []
    skipped = [name for name in default_variants if not takes_presence(name, presence)]
    if variant is None and skipped:
        notes.append(
            f"{', '.join(skipped)} left out: its heads are always present (presence 1 only)"
        )
    if not activations_given and any(tilted_location(v, nu) for v, nu in settings):
        notes.append(
            f"{', '.join(OPTIONAL_ACTIVATIONS)} left out: no population terms on the max law's "
            "location (give --variant spiked)"
        )
    return notes


def population_cell(value: float, heads: HeadsGap | None, activation: str) -> float | str:
    """An optimum's cell: the value, marked when it is an upper bound."""
    if heads is None or heads.scopes.get(activation) != UPPER_BOUND:
        return value
    return cell(value) + UPPER_BOUND_MARK


def heads_lines(row: GapRow, prefix: str) -> list[str]:
    """Below the table: per activation, ERM's gap to the Bayes error and the heads it found."""
    heads = row.heads
    if heads is None or not row.erm:
        return []
    return [
        f"{prefix}: ERM {a}: gap to pop bayes {(heads.erm_gap or {}).get(a, float('nan')):+.4f} "
        f"+- {erm.stderr:.4f}; {overlap_summary(erm.heads)}"
        for a, erm in row.erm.items()
        if erm.heads is not None
    ]


def heads_notes(heads: int, presence: float, student_heads: int, bounded: bool) -> list[str]:
    """What the columns of a multi-head table are."""
    notes = [
        f"H = {heads} teacher heads, presence rho = {presence:g}, H_s = {student_heads} student "
        "heads (docs/multihead.md): bayes is the Bayes error with known directions, <activation> "
        "the population optimum of H_s heads aligned one to one with the teacher's (extra heads "
        "silenced)"
    ]
    if bounded:
        notes.append(
            "^: an upper bound on the optimum over all overlaps (heads that mix teacher heads may "
            "do better); unmarked optima are over all overlaps"
        )
    return notes


def heads_entry(heads: HeadsGap | None, activation: str, erm: ERMError | None) -> dict[str, object]:
    """A tidy row's multi-head fields of one activation: the heads, the optimum's scope and
    ERM's gap to Bayes and the smallest matched cosines of the heads it found (``erm_gap``,
    ``erm_min_cos_*``; its error is the one-head ``erm_*`` fields)."""
    if heads is None:
        return {}
    entry: dict[str, object] = {
        "heads": heads.heads,
        "presence": heads.presence,
        "student_heads": heads.student_heads,
        "scope": heads.scopes.get(activation),
    }
    if erm is not None and erm.heads is not None:
        key, value = matched_cosines(erm.heads)
        entry |= {
            "erm_gap": (heads.erm_gap or {}).get(activation),
            "erm_min_cos_k": key,
            "erm_min_cos_v": value,
        }
    return entry


GAP = register_experiment(Gap())
