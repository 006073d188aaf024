"""One way to run every experiment, for the command line and the public API alike.

:func:`run_experiment` checks the outputs before any work, runs the experiment's points through
the resumable sweep runner (:func:`bayes_slr.records.run_sweep`) in this process or on a Dask
cluster, and returns the experiment's typed result with the failed points listed (the sweep goes
on past a failed point, which is not logged, so running again retries it).
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from bayes_slr.errors import ConfigError, check_int
from bayes_slr.experiments.base import (
    Experiment,
    Failure,
    Options,
    Provenance,
    Result,
)
from bayes_slr.interrupts import import_uninterrupted, raise_if_interrupted
from bayes_slr.numerics.record import JsonObject, converter, structure
from bayes_slr.progress import show_progress
from bayes_slr.records import (
    Executor,
    SweepLog,
    atomic_write,
    check_output_file,
    check_suffix,
    json_text,
    prepare_output_folder,
    run_context,
    run_sweep,
)
from bayes_slr.warning_categories import issue_warnings

RUN_ARGUMENTS: dict[str, tuple[Any, Any, str]] = {
    "out": (None, str | Path | None, "folder of a sweep (log and summary), or the output file"),
    "force": (False, bool, "overwrite an existing output file"),
    "workers": (None, int | None, "run the points on a local Dask cluster of this many workers"),
    "scheduler": (None, str | None, "run the points on an existing Dask scheduler"),
    "progress": (
        None,
        bool | None,
        "progress bars: on, off, or None to show them in a notebook (widgets) or on a terminal "
        "and not when stderr is a file or a pipe",
    ),
}
"""How an experiment runs, besides its options: ``name -> (default, type, help)``."""


_INNER_PROGRESS = contextvars.ContextVar("inner_progress", default=False)


def inner_progress() -> bool:
    """Whether a point being solved may show its own transient progress bar (points run in this
    process with progress on; never on Dask workers)."""
    return _INNER_PROGRESS.get()


@contextlib.contextmanager
def _points_show_progress(shown: bool) -> Iterator[None]:
    """Within: :func:`inner_progress` is ``shown`` (the points solved may show their own bars)."""
    token = _INNER_PROGRESS.set(shown)
    try:
        yield
    finally:
        _INNER_PROGRESS.reset(token)


def run_experiment(
    experiment: Experiment,
    options: Options,
    *,
    out: str | Path | None = None,
    force: bool = False,
    workers: int | None = None,
    scheduler: str | None = None,
    progress: bool | None = None,
) -> Result:
    """Run ``experiment`` with validated ``options`` and return its typed result.

    Parameters
    ----------
    experiment : a registered experiment (:data:`~bayes_slr.experiments.base.EXPERIMENTS`).
    options : its validated options; they run as
        :meth:`~bayes_slr.experiments.base.Options.resolved` returns them (every default filled
        in), which is what the result reports.
    out : where to keep the outputs. For a sweep (``experiment.output == "folder"``) a folder:
        ``NAME.jsonl`` holds every finished point with its configuration, seed and versions
        (running the same call again skips them) and ``NAME.json`` the summary. For a single
        output (``"file"``) the file itself (a data set, a posterior). Checked before any work.
    force : overwrite an existing output file.
    workers : run the points on a local Dask cluster of this many worker processes.
    scheduler : run the points on an existing Dask scheduler (``tcp://host:port``).
    progress : progress bars (``tqdm.auto``: widgets in a notebook); ``None`` shows them in a
        notebook or on a terminal only (:func:`bayes_slr.progress.show_progress`).

    Raises
    ------
    ConfigError
        An output that cannot be written, a folder holding another sweep's points, ``workers``
        below 1 or given with ``scheduler``: before any work.
    KeyboardInterrupt
        Interrupted (:class:`~bayes_slr.records.SweepInterrupted` for sweeps: the finished points
        are logged); nothing else is written.
    RunStopped
        A point could not go on (:class:`~bayes_slr.errors.RunStopped`: a diverging run); the
        points finished before it are logged, no summary is written.
    """
    if not isinstance(options, experiment.options_type):
        raise TypeError(f"{experiment.name} takes {experiment.options_type.__name__}")
    workers = _check_executor(workers, scheduler)
    progress = show_progress(progress)
    options = options.resolved()  # every default filled in: what is solved, logged, reported
    points = experiment.points(options)
    log = _prepare_output(experiment, options, points, out, force)
    import_uninterrupted("jax")  # before any solver imports it: Ctrl-C must not abort its import
    if experiment.output == "folder":
        folder = None if out is None else Path(out)
        solved, failures = _sweep(
            experiment, options, points, log, folder, workers, scheduler, progress
        )
    else:
        with _points_show_progress(progress):
            solved = [(point, experiment.solve(options, point)) for point in points]
        failures = ()
    result = experiment.collect(options, solved, provenance_of(experiment, options))
    if failures:
        result = dataclasses.replace(result, failures=failures)
    raise_if_interrupted()
    if out is not None:
        _write_output(experiment, result, Path(out))
    issue_warnings(result.warnings)
    return result


def _sweep(
    experiment: Experiment,
    options: Options,
    points: list,
    log: SweepLog | None,
    folder: Path | None,
    workers: int | None,
    scheduler: str | None,
    progress: bool,
) -> tuple[list[tuple[Any, Any]], tuple[Failure, ...]]:
    """Solve the points through the resumable sweep runner; the typed solved points and the
    failures."""
    in_process = workers is None and scheduler is None
    with _points_show_progress(progress and in_process), _executor(workers, scheduler) as executor:
        finished, failed = run_sweep(
            sweep_records(experiment, options, points),
            functools.partial(_solve_record, experiment, options, folder),
            log=log,
            seed_of=lambda point: experiment.seed(options),
            executor=executor,
            progress=progress,
            description=f"{experiment.name} {experiment.progress_label}",
        )
    solved = [
        (experiment.point_type.from_dict(key["point"]), structure(record, experiment.solved_type))
        for key, record in finished
    ]
    return solved, tuple(Failure(key["point"], message) for key, message in failed)


def sweep_settings(experiment: Experiment, options: Options) -> JsonObject:
    """The options every point of the sweep depends on besides its own coordinates: all of them
    but the experiment's ``sweep_axes`` (so extending a list of values reuses the logged
    points, and changing any other option starts new ones)."""
    return {
        name: value
        for name, value in options.to_dict().items()
        if name not in experiment.sweep_axes
    }


def sweep_records(experiment: Experiment, options: Options, points: list) -> list[JsonObject]:
    """The sweep log's record of each point (its key is ``SweepLog.point_key`` of it): the point's
    coordinates and the :func:`sweep_settings` it shares with the others."""
    settings = sweep_settings(experiment, options)
    return [{"point": point.to_dict(), "settings": settings} for point in points]


def provenance_of(experiment: Experiment, options: Options) -> Provenance:
    """The provenance of a result computed now in this process (the :func:`~bayes_slr.records.
    run_context` every output file records, with the experiment and its seed)."""
    return Provenance(experiment=experiment.name, seed=experiment.seed(options), **run_context())


def _solve_record(
    experiment: Experiment, options: Options, folder: Path | None, key: JsonObject
) -> dict:
    """``experiment.solve_in`` on a point given as its log key (what the sweep log and Dask
    carry), with the sweep's output folder; a row of a tagged union is written with its tag."""
    point = experiment.point_type.from_dict(key["point"])
    return converter.unstructure(
        experiment.solve_in(options, point, folder), experiment.solved_type
    )


def _prepare_output(
    experiment: Experiment, options: Options, points: list, out: str | Path | None, force: bool
) -> SweepLog | None:
    """Check ``out`` before any work and open the sweep log of a folder output."""
    if out is None:
        return None
    if experiment.output is None:
        raise ConfigError(f"`out`: {experiment.name} writes no output file")
    if experiment.output == "file":
        check_suffix(out, experiment.output_suffixes, f"{experiment.name} writes")
        experiment.check_output(options, check_output_file(out, force=force))
        return None
    experiment.check_output(options, Path(out))
    _check_folder_owner(experiment, Path(out))
    folder = prepare_output_folder(out)
    log = open_log(experiment, folder / f"{experiment.name}.jsonl")
    keys = {SweepLog.point_key(record) for record in sweep_records(experiment, options, points)}
    others = [record for record in log if record["key"] not in keys]
    if others:
        raise ConfigError(
            f"`out`: {log.path} holds {len(others)} finished point(s) of other settings; give "
            "the same options to resume, its values and new ones to extend it, or another `out`"
        )
    return log


def open_log(experiment: Experiment, path: Path) -> SweepLog:
    """The sweep log of ``experiment`` at ``path``; a point logged before an option was renamed
    or added is keyed as this version writes it (:func:`in_current_terms`)."""
    return SweepLog(path, in_current_terms(experiment))


def in_current_terms(experiment: Experiment) -> Callable[[Any], Any]:
    """A point's log key written before, as this version writes it: an option renamed since under
    its name now (:meth:`~bayes_slr.experiments.base.Options.renamed`), and an option added since
    at its declared default (the value under which a run does what it did before the option
    existed; a key logged since holds every option, so it is unchanged)."""
    options_type = experiment.options_type
    added = {
        field.name: converter.unstructure(field.default)
        for field in options_type.option_fields()
        if field.name not in experiment.sweep_axes
    }

    def current(key: Any) -> Any:
        if not (isinstance(key, dict) and isinstance(key.get("settings"), dict)):
            return key
        return {**key, "settings": added | options_type.with_current_names(key["settings"])}

    return current


def _check_folder_owner(experiment: Experiment, folder: Path) -> None:
    """Refuse a folder that holds another command's sweep log (a folder belongs to the command
    that made it)."""
    if not folder.is_dir():
        return
    logs = sorted(path.name for path in folder.glob("*.jsonl") if path.stem != experiment.name)
    if logs:
        raise ConfigError(
            f"`out`: {folder} belongs to another command (it holds {', '.join(logs)}); give a "
            f"folder of its own to {experiment.name}"
        )


def _write_output(experiment: Experiment, result: Result, out: Path) -> None:
    """The summary of a sweep (``out/NAME.json``) or the single output file, written atomically."""
    if experiment.output == "file":
        atomic_write(out, result.save)
    else:
        summary = out / f"{experiment.name}.json"
        atomic_write(summary, lambda tmp: tmp.write_text(json_text(result.to_json()) + "\n"))


def _check_executor(workers: int | None, scheduler: str | None) -> int | None:
    """Refuse ``workers`` below 1, or ``workers`` with ``scheduler``, before any work; the
    ``workers`` as an ``int`` (``2.0`` as ``2``)."""
    if workers is not None and scheduler is not None:
        raise ConfigError("workers and scheduler exclude each other (give one)")
    return None if workers is None else check_int("workers", workers, 1)


@contextlib.contextmanager
def _executor(workers: int | None, scheduler: str | None) -> Iterator[Executor | None]:
    """A Dask executor (closed on exit) when ``workers`` or ``scheduler`` is given, else
    ``None`` (the points run in this process)."""
    if workers is None and scheduler is None:
        yield None
        return
    from bayes_slr.distributed import DaskExecutor

    with DaskExecutor(workers=workers, scheduler=scheduler) as executor:
        yield executor
