"""``posterior-sweep``: the Bayes-optimal test error against alpha, one posterior per alpha
(resumable).

Each point is the posterior of ``posterior`` at one alpha (the same settings,
:class:`~bayes_slr.experiments.posterior_options.SamplingOptions`, the same seed, so the same
teacher at every alpha); with ``out`` each point's posterior is kept as
``posterior_alpha<alpha>.nc`` beside the log, written once the point is summarised.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.errors import Number
from bayes_slr.experiments.base import (
    Experiment,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import alpha_axis, new_axes
from bayes_slr.experiments.posterior import tidy_summary
from bayes_slr.experiments.posterior_options import SamplingOptions
from bayes_slr.experiments.posterior_report import PLAIN, WEIGHTED, sweep_table
from bayes_slr.experiments.task import describe_nu
from bayes_slr.models.spec import training_size
from bayes_slr.studies.posterior_records import ERM_ACTIVATIONS, PosteriorRun, PosteriorSummary

ORACLE_LABEL = "known-direction (oracle) error of this teacher"
NOT_CONVERGED_LABEL = "not converged (hollow): see the warnings"


@dataclasses.dataclass(frozen=True)
class PosteriorSweepOptions(SamplingOptions):
    """Settings of ``posterior-sweep``: those of ``posterior`` at every alpha of a list."""

    alpha: tuple[float, ...] = option(
        (), "values of N / D, each > 0", default_text="required", accepts=Number(0.0, strict=True)
    )

    def validate(self) -> None:
        """Refuse an empty or invalid alpha and every invalid setting of ``posterior``."""
        run = self.resolution()
        for alpha in self.alpha:
            training_size(alpha, run.config.D)

    def filled(self) -> dict[str, object]:
        """Those of :class:`SamplingOptions`, and each alpha as a number (``2`` as ``2.0``)."""
        return {**super().filled(), "alpha": tuple(float(alpha) for alpha in self.alpha)}

    def simulated_alphas(self, run: PosteriorRun) -> tuple[float, ...]:
        """The largest alpha (its training set is the largest; a bad alpha is refused later)."""
        valid = [a for a in self.alpha if isinstance(a, (int, float)) and a > 0]
        return (max(valid),) if valid else ()


@dataclasses.dataclass(frozen=True)
class SweepPoint(Record):
    """One alpha."""

    alpha: float


@dataclasses.dataclass(frozen=True, repr=False)
class PosteriorSweepResult(Result[PosteriorSweepOptions, PosteriorSummary]):
    """One posterior summary per alpha."""

    def rows_table(self) -> str:
        """One line per alpha (:func:`~bayes_slr.experiments.posterior_report.sweep_table`)."""
        return sweep_table(self.rows, ERM_ACTIVATIONS)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One flat row per alpha (diagnostics tables left out: they are in ``rows``)."""
        return [tidy_summary(row) for row in self.rows]

    def plot(self, ax: Any = None) -> Any:
        """Test error against alpha: the Bayes-optimal predictor (draws weighted by ``p(X | k)``)
        and the plain posterior mean of ``f`` with standard-error bars, points whose chains did
        not converge hollow; ERM; the teacher's known-direction error (its ``alpha -> inf``
        limit at this ``D``, with its standard-error band), the population Bayes error and the
        prior-predictive error. The legend sits beside the axes."""
        ax = new_axes(ax, size=(9.0, 4.4))
        rows = sorted(self.rows, key=lambda row: row.alpha)
        alphas = [row.alpha for row in rows]
        for label, errors, style in (
            (WEIGHTED, [row.bayes_error for row in rows], {"fmt": "o-", "color": "k"}),
            (PLAIN, [row.posterior_mean_f_error for row in rows], {"fmt": "D:", "color": "C4"}),
        ):
            ax.errorbar(
                alphas,
                [e.value for e in errors],
                yerr=[e.stderr for e in errors],
                capsize=2,
                ms=5,
                label=label,
                **style,
            )
        unconverged = [row for row in rows if not row.converged]
        if unconverged:
            ax.plot(
                [row.alpha for row in unconverged],
                [row.bayes_error.value for row in unconverged],
                "o",
                ms=9,
                mfc="white",
                mec="C3",
                mew=1.5,
                zorder=5,
                label=NOT_CONVERGED_LABEL,
            )
        if rows and all(row.erm for row in rows):
            for activation, marker, colour in zip(ERM_ACTIVATIONS, "s^", ("C0", "C1"), strict=True):
                ax.errorbar(
                    alphas,
                    [row.erm[activation].test_error for row in rows],
                    yerr=[row.erm[activation].stderr for row in rows],
                    fmt=f"{marker}--",
                    color=colour,
                    mfc="none",
                    capsize=2,
                    label=f"ERM {activation}",
                )
        self._references(ax, rows)
        if alphas:
            alpha_axis(ax, alphas)
        options = self.options
        task = options.task()
        ax.set(
            ylabel="excess test error",
            title=f"{task.variant}, D = {task.D}, {task.length.describe()}, "
            f"nu = {describe_nu(task.nu)}, Delta = {task.Delta:g}",
        )
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.02, 1.0), borderaxespad=0)
        return ax

    @staticmethod
    def _references(ax: Any, rows: Sequence[PosteriorSummary]) -> None:
        """The oracle error with its band (one teacher for every alpha: the same value in every
        row), the population Bayes error and the prior-predictive error."""
        oracle = [row.oracle_error for row in rows if row.oracle_error is not None]
        if oracle:
            value = sum(o.value for o in oracle) / len(oracle)
            stderr = sum(o.stderr for o in oracle) / len(oracle)
            ax.axhline(value, color="C2", ls="-.", label=ORACLE_LABEL)
            ax.axhspan(value - stderr, value + stderr, color="C2", alpha=0.15, lw=0)
        if rows:
            ax.axhline(
                rows[0].population_bayes_error,
                color="k",
                ls=":",
                label="population Bayes (alpha -> inf)",
            )
            prior = sum(row.prior_predictive_error.value for row in rows) / len(rows)
            ax.axhline(prior, color="grey", ls=":", label="prior predictive (alpha -> 0)")


class PosteriorSweep(
    Experiment[PosteriorSweepOptions, SweepPoint, PosteriorSummary, PosteriorSweepResult]
):
    """The posterior of ``posterior`` at each alpha."""

    name: ClassVar[str] = "posterior-sweep"
    summary: ClassVar[str] = "Bayes-optimal test error against alpha (resumable)"
    description: ClassVar[str] = (
        "The posterior of bayes-slr posterior at each alpha (same settings and seed, so the same "
        "teacher), one row per alpha; with --out each point's posterior is kept as "
        "posterior_alpha<alpha>.nc beside the log, and running the same command again resumes."
    )
    options_type = PosteriorSweepOptions
    point_type = SweepPoint
    solved_type = PosteriorSummary
    result_type = PosteriorSweepResult
    output_help: ClassVar[str] = (
        "posterior_alpha<alpha>.nc per finished point (the posterior netCDF, as posterior --out "
        "writes it)"
    )
    sweep_axes: ClassVar[tuple[str, ...]] = ("alpha",)

    def points(self, options: PosteriorSweepOptions) -> list[SweepPoint]:
        """One point per alpha, in the order given."""
        return [SweepPoint(alpha) for alpha in options.alpha]

    def solve(self, options: PosteriorSweepOptions, point: SweepPoint) -> PosteriorSummary:
        """The posterior of one alpha (no file kept)."""
        return self.solve_in(options, point, None)

    def solve_in(
        self, options: PosteriorSweepOptions, point: SweepPoint, folder: Any
    ) -> PosteriorSummary:
        """The posterior of one alpha, kept in ``folder`` once summarised."""
        from bayes_slr.experiments._posterior_point import sweep_point

        return sweep_point(options, point.alpha, folder)

    def collect(
        self,
        options: PosteriorSweepOptions,
        solved: Sequence[tuple[SweepPoint, PosteriorSummary]],
        provenance: Provenance,
    ) -> PosteriorSweepResult:
        """The rows in the order of alpha given; each point's warnings prefixed by its alpha."""
        rows = tuple(row for _, row in solved)
        notes = tuple(dict.fromkeys(note for row in rows for note in row.notes))
        warnings = tuple(f"alpha {row.alpha:g}: {w}" for row in rows for w in row.warnings)
        return PosteriorSweepResult(options, rows, provenance, notes=notes, warnings=warnings)


POSTERIOR_SWEEP = register_experiment(PosteriorSweep())
