"""The points of ``posterior`` and ``posterior-sweep`` (imported inside ``solve``: the study they
call imports JAX).

:func:`run_posterior` and :func:`sweep_point` build the
:class:`~bayes_slr.studies.posterior_records.SamplingSettings` of their options and call
:func:`~bayes_slr.studies.posterior.sample_tree` and :func:`~bayes_slr.studies.posterior.summarise`;
a posterior read from a file, a data file and a sweep point's file are handled here.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import xarray as xr

from bayes_slr.errors import ConfigError
from bayes_slr.experiments.posterior_options import PosteriorOptions, SamplingOptions
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.inference import posterior_io
from bayes_slr.models.dataset import training_and_test
from bayes_slr.models.spec import training_size
from bayes_slr.records import as_json_values
from bayes_slr.studies.posterior import sample_tree, summarise
from bayes_slr.studies.posterior_file import settings_record
from bayes_slr.studies.posterior_records import DataRun, PosteriorSummary


def run_posterior(options: PosteriorOptions) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of ``posterior``: read from ``source``, sampled on ``data``, or on simulated
    data; its tree (with the ERM fits) and its summary and its summary."""
    if options.source is not None:
        tree = posterior_io.load_posterior(options.source)
        summary = summarise(tree, options.settings())
        note = (
            f"re-summarised from {options.source}: the task, seed and sampling settings are the "
            "file's"
        )
        return tree, dataclasses.replace(summary, notes=(note, *summary.notes))
    if options.data is not None:
        return posterior_on_data(options)
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
    record = posterior_io.record_of(tree)
    config = options.task()
    expected = as_json_values(
        {
            **config.to_dict(),
            **settings_record(options.settings(), alpha, training_size(alpha, config.D), ""),
        }
    )
    evaluation = ("sampler", "N_test", "max_draws")
    same = record.get("seed") == options.seed and all(
        record["config"].get(name) == value
        for name, value in expected.items()
        if name not in evaluation
    )
    return tree if same else None


def posterior_on_data(options: PosteriorOptions) -> tuple[xr.DataTree, PosteriorSummary]:
    """The posterior of ``options.data`` and its summary (bring-your-own data).

    With a teacher in the file every sequence is a training sequence and the summary is
    summarised's as for drawn data (test errors on fresh sequences of the teacher).
    Without one, ``round(holdout N)`` sequences chosen by the seed are held out
    (:func:`~bayes_slr.models.dataset.split_holdout`), the posterior is sampled on the rest,
    and every error (Bayes-optimal and plain posterior predictors, zero predictor, ERM softmax
    and linear trained on the same rest) is measured on them.
    """
    config, source = options.task(), options.data_source()
    train, test = training_and_test(source.load(), options.holdout, options.seed)
    about = DataRun(
        source,
        train.N,
        0 if test is None else test.N,
        None if test is None else options.holdout,
    )
    tree = sample_tree(
        config,
        train.N / config.D,
        options.settings(),
        options.seed,
        data=(train.teacher, train.as_batch()),
        about_data=about,
        progress=inner_progress(),
    )
    return tree, summarise(tree, options.settings(), held_out=test)


def point_file(folder: Path, alpha: float) -> Path:
    """The posterior file of the sweep point ``alpha`` in the output folder ``folder``."""
    return Path(folder) / f"posterior_alpha{alpha:g}.nc"
