"""The points of ``posterior`` and ``posterior-sweep`` (imported inside ``solve``: the studies
they call, :mod:`bayes_slr.studies.posterior`, import JAX), and what belongs to the run: the note
of a re-summarised file, a sweep point's file."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import xarray as xr

from bayes_slr.errors import ConfigError
from bayes_slr.experiments.posterior_options import PosteriorOptions, SamplingOptions
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.inference import posterior_io
from bayes_slr.studies.multihead_posterior import multihead_posterior
from bayes_slr.studies.multihead_posterior_records import MultiHeadPosteriorSummary
from bayes_slr.studies.posterior import posterior_on_data, sample_tree, summarise
from bayes_slr.studies.posterior_file import sampled_with
from bayes_slr.studies.posterior_records import PosteriorSummary


def run_posterior(
    options: PosteriorOptions,
) -> tuple[xr.DataTree, PosteriorSummary | MultiHeadPosteriorSummary]:
    """The posterior of ``posterior``: read from ``source``, sampled on ``data``, or on simulated
    data (of several heads: :func:`~bayes_slr.studies.multihead_posterior.multihead_posterior`);
    its tree (with the ERM fits) and its summary."""
    if options.task().multihead:
        return multihead_posterior(
            options.task(),
            options.alpha,
            options.settings(),
            options.seed,
            progress=inner_progress(),
        )
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
            options.data_source(),
            options.holdout,
            options.settings(),
            options.seed,
            progress=inner_progress(),
        )
    tree = sample_tree(
        options.task(), options.alpha, options.settings(), options.seed, progress=inner_progress()
    )
    return tree, summarise(tree, options.settings())


def sweep_point(options: SamplingOptions, alpha: float, folder: Path | None) -> PosteriorSummary:
    """One point of ``posterior-sweep``; with ``folder``, its posterior is written there
    atomically once summarised (:func:`point_file`), so a
    file exists only for a finished point. A file of this very point left by an interrupted
    run (written, not yet logged) is read instead of sampling again."""
    path = None if folder is None else point_file(folder, alpha)
    tree = _earlier_tree(path, options, alpha)
    if tree is None:
        tree = sample_tree(
            options.task(), alpha, options.settings(), options.seed, progress=inner_progress()
        )
    summary = summarise(tree, options.settings())
    if path is not None:
        posterior_io.save_posterior(tree, path, force=True)
    return summary


def _earlier_tree(path: Path | None, options: SamplingOptions, alpha: float) -> xr.DataTree | None:
    """The posterior at ``path`` if it was sampled with these settings, else ``None``."""
    if path is None or not path.is_file():
        return None
    try:
        tree = posterior_io.load_posterior(path)
    except ConfigError:
        return None
    same = sampled_with(tree, options.task(), alpha, options.settings(), options.seed)
    return tree if same else None


def point_file(folder: Path, alpha: float) -> Path:
    """The posterior file of the sweep point ``alpha`` in the output folder ``folder``."""
    return Path(folder) / f"posterior_alpha{alpha:g}.nc"
