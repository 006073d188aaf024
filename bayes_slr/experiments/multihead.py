"""``multihead``: the population answers of multi-head SLR against the presence ``rho``.

One row per ``rho`` (docs/multihead.md sections 3 to 6): the Bayes error with known directions
(quadrature) and each activation's population optimum of ``H`` student heads aligned one to one
with the teacher's, each with its Monte Carlo check (mean +- standard error). The table marks
the optima that are only upper bounds on the optimum over all overlaps, and beside each of them
shows the optimum over all overlaps (searched, by Monte Carlo) and its paired difference with the
aligned one. The computation is :func:`bayes_slr.studies.gap.population_row`: ``gap``'s
population points (the Bayes error, each activation's optimum), one head or several, with their
Monte Carlo checks.

Named for its command, as every experiment module is: the command sweeps the presence ``rho``,
an axis only multi-head SLR has, and its rows are the population study's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.attention.activations import check_activation
from bayes_slr.errors import ConfigError, check_int
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
from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.tables import format_table, plus_minus
from bayes_slr.experiments.task import (
    MANY,
    check_nonempty,
    describe_nu,
    options_task,
    seed_option,
    task_option,
)
from bayes_slr.formulas.optimum_record import (
    CHECK_SEQUENCES,
    SEARCH_SEQUENCES,
    AllOverlapsOptimum,
)
from bayes_slr.memory import MC_ENTRIES, check_float64, check_mc_memory
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.gap_records import (
    UPPER_BOUND,
    MonteCarloCheck,
    MultiHeadPopulationRow,
    PopulationSettings,
)
from bayes_slr.studies.gap_rows import check_heads_activations

ACTIVATIONS = ("softmax", "softmax1", "bayes_softmax", "linear")


@dataclasses.dataclass(frozen=True)
class MultiHeadOptions(Options):
    """Settings of ``multihead``: one task, swept over the presence ``rho``."""

    variant: str = task_option("variant")
    L: int = task_option("L")
    variable_length: bool = task_option("variable_length")
    nu: float | None = task_option("nu")
    heads: int = task_option("heads", default=2)
    presence: tuple[float, ...] = task_option(
        "presence",
        MANY,
        default=(0.25, 0.5, 0.75, 1.0),
        help="probabilities rho in (0, 1] that a head's token is present, one row each (spiked "
        "for rho < 1)",
    )
    activations: tuple[str, ...] = option(
        ACTIVATIONS, "activations whose population optimum is computed (theory terms needed)"
    )
    mc_sequences: int = option(
        20_000, "Monte Carlo sequences of each check, >= 2, or 0 for no check"
    )
    search_sequences: int = option(
        SEARCH_SEQUENCES,
        "sequences of the sample on which the optimum over all overlaps is searched where the "
        "aligned optimum is an upper bound, >= 2, or 0 for no search",
    )
    paired_sequences: int = option(
        CHECK_SEQUENCES,
        "fresh sequences on which the optimum found and the aligned one are compared, >= 2",
    )
    seed: int = seed_option("seed of the Monte Carlo draws (the same for every point)")

    def validate(self) -> None:
        """Refuse a bad task (``presence`` outside ``(0, 1]``, ``heads < 1``, the max law with
        ``presence < 1``), an activation without theory terms (or with a constant in its
        denominator on a tilted location law), a check or a search of one sequence, or a search
        sample that does not fit in memory."""
        check_int("seed", self.seed, 0)
        for name in ("mc_sequences", "search_sequences"):
            if check_int(name, getattr(self, name), 0) == 1:
                raise ConfigError(f"{name} must be 0 (none) or >= 2, got 1")
        check_int("paired_sequences", self.paired_sequences, 2)
        check_nonempty("presence", self.presence)
        check_nonempty("activations", self.activations)
        for activation in self.activations:
            check_activation(activation, "activations")
        configs = [self.config(rho) for rho in self.presence]  # a bad task first
        for config in configs:
            check_heads_activations(config, self.activations)
            check_mc_memory(self.mc_sequences, config.Lbar, config.heads, "use a smaller L")
            check_float64(
                f"L = {config.Lbar}, heads = {config.heads}",
                MC_ENTRIES * self.search_sequences * config.Lbar * config.heads,
                f"{MC_ENTRIES} numbers per sequence, token and head of the search sample",
                "use a smaller --search-sequences or L",
            )

    def config(self, presence: float) -> SLRConfig:
        """The task of one presence."""
        return options_task(self, Delta=0.0, presence=presence)

    def filled(self) -> dict[str, object]:
        """The variant's default ``nu`` and the activations' own names made explicit."""
        return {
            "nu": self.config(self.presence[0]).nu,
            "activations": tuple(check_activation(a, "activations") for a in self.activations),
        }

    def settings(self) -> PopulationSettings:
        """What the study computes at each presence."""
        return PopulationSettings(
            self.activations, self.mc_sequences, self.search_sequences, self.paired_sequences
        )


@dataclasses.dataclass(frozen=True)
class MultiHeadPoint(Record):
    """One presence ``rho``."""

    presence: float


def _check_cell(check: MonteCarloCheck | None) -> list[str]:
    """The Monte Carlo cell of a value (none without checks)."""
    return [] if check is None else [plus_minus(check.mean, check.stderr)]


@dataclasses.dataclass(frozen=True, repr=False)
class MultiHeadResult(Result[MultiHeadOptions, MultiHeadPopulationRow]):
    """The rows of ``multihead``, one per presence."""

    def rows_table(self) -> str:
        """One line per ``rho``: the Bayes error and each activation's optimum, each followed
        by its Monte Carlo check; ``^`` marks an upper bound (heads aligned one to one), beside
        which the optimum over all overlaps and its paired difference are shown where searched."""
        checks = self.options.mc_sequences > 0
        searched = [
            any(row.optima[i].all_overlaps is not None for row in self.rows)
            for i in range(len(self.options.activations))
        ]
        header = ["rho", "bayes"] + (["MC"] if checks else [])
        for activation, search in zip(self.options.activations, searched, strict=True):
            header += [activation] + (["MC"] if checks else [])
            header += [f"{activation} all", "all - aligned"] if search else []
        lines, bounded = [], False
        for row in self.rows:
            line = [f"{row.presence:g}", f"{row.bayes_error:.6f}", *_check_cell(row.bayes_mc)]
            for optimum, search in zip(row.optima, searched, strict=True):
                mark = " ^" if optimum.scope == UPPER_BOUND else ""
                bounded = bounded or bool(mark)
                line += [f"{optimum.error:.6f}{mark}", *_check_cell(optimum.mc)]
                line += _all_overlaps_cells(optimum.all_overlaps) if search else []
            lines.append(line)
        text = [format_table(header, lines)]
        if bounded:
            text.append(
                "^: optimum of heads aligned one to one, an upper bound on the optimum over all "
                "overlaps; unmarked optima are over all overlaps"
            )
        if any(searched):
            text.append(
                "all: the optimum over all overlaps (heads may mix teacher heads), searched on "
                f"{self.options.search_sequences} sequences and scored on "
                f"{self.options.paired_sequences} fresh ones; all - aligned: the point searched "
                "minus the aligned optimum on the same sequences (+- paired standard error; where "
                "it is >= 0, all is the aligned point's score); '=': the aligned optimum is over "
                "all overlaps"
            )
        return "\n".join(text)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One row per (presence, activation): the task, the Bayes error and its check, the
        activation's optimum, scope, overlaps (``overlaps_*``), check (``mc_*``) and optimum
        over all overlaps (``all_overlaps_*``, ``None`` where the aligned one is over all
        overlaps or not searched)."""
        tidy = []
        for row in self.rows:
            task = {k: v for k, v in row.to_dict().items() if k not in ("optima", "bayes_mc")}
            task.update(flatten({"bayes_mc": _check_dict(row.bayes_mc)}))
            for optimum in row.optima:
                entry = {**task, **flatten(optimum.to_dict())}
                tidy.append(entry)
        return tidy

    def plot(self, ax: Any = None) -> Any:
        """Error against ``rho``: each activation's optimum of aligned heads and the Bayes error
        (black), with the Monte Carlo checks as error bars, and the optima over all overlaps
        where searched (crosses, two-standard-error bars)."""
        ax = new_axes(ax, size=(6.4, 4.4))
        rows = sorted(self.rows, key=lambda r: r.presence)
        rho = [r.presence for r in rows]
        for index, activation in enumerate(self.options.activations):
            optima = [r.optima[index] for r in rows]
            line = ax.plot(rho, [o.error for o in optima], "o-", ms=4, label=activation)[0]
            _error_bars(ax, rho, [o.mc for o in optima], line.get_color())
            searched = [(x, o.all_overlaps) for x, o in zip(rho, optima, strict=True)]
            searched = [(x, found) for x, found in searched if found is not None]
            if searched:
                ax.errorbar(
                    [x for x, _ in searched],
                    [found.error for _, found in searched],
                    yerr=[2 * found.stderr for _, found in searched],
                    fmt="x",
                    color=line.get_color(),
                    capsize=3,
                )
        if any(o.all_overlaps is not None for r in rows for o in r.optima):
            ax.plot([], [], "x", color="gray", label="over all overlaps (searched)")
        ax.plot(rho, [r.bayes_error for r in rows], "k--", lw=1.2, label="Bayes", zorder=5)
        _error_bars(ax, rho, [r.bayes_mc for r in rows], "black")
        o = self.options
        length = f"L ~ U{{1..{o.L}}}" if o.variable_length else f"L = {o.L}"
        nu = describe_nu(rows[0].nu) if rows else "?"
        ax.set(
            xlabel="presence rho",
            ylabel="excess test error",
            title=f"{o.variant}-SLR, H = {o.heads}, {length}, nu = {nu}: population optima",
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
        return ax


def _all_overlaps_cells(found: AllOverlapsOptimum | None) -> list[str]:
    """The optimum over all overlaps and its paired difference with the aligned one (``=`` where
    the aligned optimum is over all overlaps)."""
    if found is None:
        return ["=", "="]
    return [
        plus_minus(found.error, found.stderr, 5),
        plus_minus(found.difference, found.difference_stderr, 5),
    ]


def _check_dict(check: MonteCarloCheck | None) -> dict[str, Any]:
    return {} if check is None else check.to_dict()


def _error_bars(ax: Any, x: list[float], checks: list[MonteCarloCheck | None], color: str) -> None:
    """The Monte Carlo checks as points with two-standard-error bars (none without checks)."""
    shown = [(xi, c) for xi, c in zip(x, checks, strict=True) if c is not None]
    if shown:
        ax.errorbar(
            [xi for xi, _ in shown],
            [c.mean for _, c in shown],
            yerr=[2 * c.stderr for _, c in shown],
            fmt="none",
            ecolor=color,
            capsize=3,
            alpha=0.7,
        )


class MultiHead(
    Experiment[MultiHeadOptions, MultiHeadPoint, MultiHeadPopulationRow, MultiHeadResult]
):
    """Bayes error and each activation's population optimum of multi-head SLR against rho."""

    name: ClassVar[str] = "multihead"
    summary: ClassVar[str] = "multi-head SLR: Bayes error and each activation's optimum against rho"
    description: ClassVar[str] = (
        "One row per presence rho (docs/multihead.md sections 3 to 6): the population Bayes "
        "error with known directions (quadrature) and each activation's population optimum of "
        "H student heads aligned one to one with the teacher's (quadrature), each checked by "
        "Monte Carlo (mean +- standard error, the same draws for every activation). An optimum "
        "is over all overlaps for one head or where it equals the Bayes error; otherwise heads "
        "mixing teacher heads may do better: it is marked as an upper bound, and the optimum "
        "over all overlaps is searched beside it (several starts on one sample of sequences) "
        "and scored against it on the same fresh sequences (paired difference)."
    )
    options_type = MultiHeadOptions
    point_type = MultiHeadPoint
    solved_type = MultiHeadPopulationRow
    result_type = MultiHeadResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("presence",)

    def points(self, options: MultiHeadOptions) -> list[MultiHeadPoint]:
        """One point per presence, in the order given."""
        return [MultiHeadPoint(rho) for rho in options.presence]

    def solve(self, options: MultiHeadOptions, point: MultiHeadPoint) -> MultiHeadPopulationRow:
        """The study's row of one presence."""
        from bayes_slr.studies.gap import population_row

        return population_row(options.config(point.presence), options.settings(), options.seed)

    def collect(
        self,
        options: MultiHeadOptions,
        solved: Sequence[tuple[MultiHeadPoint, MultiHeadPopulationRow]],
        provenance: Provenance,
    ) -> MultiHeadResult:
        """The rows in the order of the points; the optima's notes (limits) as notes."""
        rows = tuple(row for _, row in solved)
        notes = tuple(
            f"rho={row.presence:g}: {optimum.activation}: {optimum.overlaps.note}"
            for row in rows
            for optimum in row.optima
            if optimum.overlaps.note
        )
        return MultiHeadResult(options, rows, provenance, notes)

    def seed(self, options: MultiHeadOptions) -> int | None:
        """The seed of the Monte Carlo checks (none without checks)."""
        return options.seed if options.mc_sequences > 0 else None


MULTIHEAD = register_experiment(MultiHead())
