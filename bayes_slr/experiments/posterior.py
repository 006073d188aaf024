"""``posterior``: sample the finite-alpha posterior of ``(k*, v*)`` and measure the Bayes-optimal
test error (docs/posterior.md).

One point: a teacher and ``N = round(alpha D)`` training sequences are drawn (or read from a data
file with ``data``, or a posterior file written before is re-summarised with ``source``), the
posterior is sampled, and :class:`PosteriorResult` reports convergence diagnostics, overlaps, the
errors of the Bayes-optimal predictor and of the plain posterior mean, reference errors, the start
check and ERM on the same data; its ArviZ ``DataTree`` is ``result.tree`` and the netCDF output.

:class:`~bayes_slr.experiments.posterior_options.SamplingOptions` declares the settings
``posterior`` and ``posterior-sweep`` (:mod:`bayes_slr.experiments.posterior_sweep`) share
(:mod:`bayes_slr.experiments.posterior_options`).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from bayes_slr.errors import ConfigError
from bayes_slr.experiments.base import (
    Experiment,
    Provenance,
    Record,
    Result,
    flatten,
    register_experiment,
)
from bayes_slr.experiments.posterior_options import FILE_HELP, PosteriorOptions
from bayes_slr.experiments.posterior_report import posterior_report
from bayes_slr.studies.posterior_records import PosteriorSummary


@dataclasses.dataclass(frozen=True)
class PosteriorPoint(Record):
    """The one point of ``posterior`` (its coordinates are the options)."""


@dataclasses.dataclass(frozen=True)
class PosteriorSample(Record):
    """A solved posterior: its summary and its ArviZ ``DataTree`` (never logged: ``posterior``
    is one point, written as netCDF)."""

    summary: PosteriorSummary
    tree: Any


@dataclasses.dataclass(frozen=True, repr=False)
class PosteriorResult(Result[PosteriorOptions, PosteriorSummary]):
    """The posterior of ``posterior``: one row (:attr:`summary`) and the draws (:attr:`tree`).

    Attributes
    ----------
    tree : the ArviZ ``xarray.DataTree`` (draws, data, teacher, start-check chains, ERM fits;
        the layout of docs/posterior.md); ``save`` writes it as netCDF.
    """

    tree: Any = None

    @property
    def summary(self) -> PosteriorSummary:
        """The one row."""
        return self.rows[0]

    def rows_table(self) -> str:
        """The report: settings, diagnostics table, errors, references, start check, ERM."""
        return posterior_report(self.summary, self.options)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One flat row (the diagnostics table is left out: it is ``summary.diagnostics``)."""
        return [tidy_summary(self.summary)]

    def plot(self, ax: Any = None) -> Any:
        """Trace, marginal density and rank plots of the overlaps (ArviZ), one row each, on a new
        figure; returns its first axes. With ``ax``: the overlaps' traces, one line per chain."""
        from bayes_slr.inference.diagnostics import plot_diagnostics, plot_overlap_traces

        if ax is not None:
            return plot_overlap_traces(self.tree, ax)
        return plot_diagnostics(self.tree).axes[0]

    def save(self, path: Path) -> None:
        """Write :attr:`tree` as netCDF (re-summarise it with ``source``)."""
        from bayes_slr.inference.posterior_io import save_posterior

        save_posterior(self.tree, path, force=True)


def tidy_summary(row: PosteriorSummary) -> dict[str, Any]:
    """A summary as one flat dict (nested fields joined by ``_``), without its diagnostics table
    and its notes and warnings (lines of text)."""
    data = row.to_dict()
    for name in ("diagnostics", "notes", "warnings"):
        data.pop(name)
    return flatten(data)


class Posterior(Experiment[PosteriorOptions, PosteriorPoint, PosteriorSample, PosteriorResult]):
    """One finite-alpha posterior and its Bayes-optimal test error."""

    name: ClassVar[str] = "posterior"
    summary: ClassVar[str] = "sample the finite-alpha posterior; Bayes-optimal test error"
    description: ClassVar[str] = (
        "Draw a teacher and N = round(alpha D) training sequences (or read them with --data), "
        "sample the posterior of (k*, v*) (--sampler auto: exact Gibbs for spiked, Gibbs-HMC "
        "for max), and report convergence diagnostics, posterior overlaps, the test errors "
        "(excess over Delta) of the Bayes-optimal predictor (draws weighted by p(X | k)) and of "
        "the plain posterior mean of f, reference errors, the start check and ERM (softmax, "
        "linear) on the same data. --from re-summarises a posterior written with --out. "
        "With --heads or --presence (spiked; docs/multihead.md section 8) or a multi-head --data "
        "file: the posterior of every head (--sampler auto: NUTS with the heads' states summed "
        "out), diagnostics of label-free (matched) overlaps and the same errors, references, "
        "start check and ERM (H-head students). " + FILE_HELP
    )
    options_type = PosteriorOptions
    point_type = PosteriorPoint
    solved_type = PosteriorSample
    result_type = PosteriorResult
    output: ClassVar[str | None] = "file"
    output_help: ClassVar[str] = (
        "netCDF file of the posterior (ArviZ DataTree: draws, data, teacher, start-check chains, "
        "ERM fits); re-summarise it with --from"
    )
    output_suffixes: ClassVar[tuple[str, ...]] = (".nc", ".nc4", ".netcdf")

    def points(self, options: PosteriorOptions) -> list[PosteriorPoint]:
        """The one point."""
        return [PosteriorPoint()]

    def solve(self, options: PosteriorOptions, point: PosteriorPoint) -> PosteriorSample:
        """Sample (or read) the posterior and summarise it."""
        from bayes_slr.experiments._posterior_point import run_posterior

        tree, summary = run_posterior(options)
        return PosteriorSample(summary, tree)

    def collect(
        self,
        options: PosteriorOptions,
        solved: Sequence[tuple[PosteriorPoint, PosteriorSample]],
        provenance: Provenance,
    ) -> PosteriorResult:
        """The result of the one point."""
        ((_, sample),) = solved
        summary = sample.summary
        return PosteriorResult(
            options,
            (summary,),
            provenance,
            notes=summary.notes,
            warnings=summary.warnings,
            tree=sample.tree,
        )

    def check_output(self, options: PosteriorOptions, out: Path) -> None:
        """Refuse ``out`` for data without a teacher (the held-out split is not stored)."""
        source = options.data_source()
        if source is not None and not source.teacher:
            raise ConfigError(
                "`out` needs a teacher in the `data` file: without one the held-out split is not "
                "stored, so the file could not be re-summarised by `source`"
            )


POSTERIOR = register_experiment(Posterior())
