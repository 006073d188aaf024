"""The points of ``posterior`` and ``posterior-sweep`` (imported inside ``solve``: the studies
they call, :mod:`bayes_slr.studies.posterior`, import JAX), and what belongs to the run: the note
of a re-summarised file, a sweep point's file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import xarray as xr

from bayes_slr.experiments.posterior_options import PosteriorOptions, SamplingOptions
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.inference import posterior_io
from bayes_slr.studies.posterior import kept_point, posterior_on_data, sample_tree, summarise
from bayes_slr.studies.posterior_records import PosteriorSummary


def run_posterior(options: PosteriorOptions) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of ``posterior``: read from ``source``, sampled on ``data``, or on simulated
    data (one head or several); its tree (with the ERM fits) and its summary."""
    if options.source is not None:
        tree = posterior_io.load_posterior(options.source)
        summary = summarise(tree, options.settings())
        note = (
            f"re-summarised from {options.source}: the task, seed and sampling settings are the "
            "file's"
        )
        return tree, dataclasses.replace(summary, notes=(note, *summary.notes))
    if options.data is not None:
        return posterior_on_data(
            options.task(),
            options.settings(),
            options.seed,
            source=options.data_source(),
            holdout=options.holdout,
            progress=inner_progress(),
        )
    tree = sample_tree(
        options.task(), options.settings(options.alpha), options.seed, progress=inner_progress()
    )
    return tree, summarise(tree, options.settings())


def sweep_point(options: SamplingOptions, alpha: float, folder: Path | None) -> PosteriorSummary:
    """One point of ``posterior-sweep``; with ``folder``, its posterior is kept there in
    :func:`point_file` (:func:`~bayes_slr.studies.posterior.kept_point`: written once
    summarised, read back when an interrupted run left it)."""
    path = None if folder is None else point_file(folder, alpha)
    return kept_point(
        options.task(), options.settings(alpha), options.seed, path, progress=inner_progress()
    )


def point_file(folder: Path, alpha: float) -> Path:
    """The posterior file of the sweep point ``alpha`` in the output folder ``folder``."""
    return Path(folder) / f"posterior_alpha{alpha:g}.nc"
