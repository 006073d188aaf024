"""Result files: provenance, atomic writes, and resumable JSON-lines sweeps."""

from __future__ import annotations

import contextlib
import datetime as _dt
import errno
import json
import math
import os
import platform
import tempfile
from collections.abc import Callable, Iterable, Iterator, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any, Protocol

from bayes_slr.errors import ConfigError, RunStopped
from bayes_slr.interrupts import raise_if_interrupted
from bayes_slr.jax_setup import release_compiled_programs
from bayes_slr.numerics.record import JsonObject
from bayes_slr.progress import progress_bar

TRACKED_PACKAGES = (
    "bayes-slr",
    "jax",
    "jaxlib",
    "numpyro",
    "arviz",
    "numpy",
    "scipy",
    "optax",
    "matplotlib",
)


def package_versions() -> dict[str, str]:
    """Versions of Python and of the packages a result depends on."""
    versions = {"python": platform.python_version()}
    for name in TRACKED_PACKAGES:
        try:
            versions[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            versions[name] = "not installed"
    return versions


def run_context() -> JsonObject:
    """Where and when a result is computed, the part of every provenance that is not the
    computation's own: ``versions`` (:func:`package_versions`), ``device`` (JAX's platform) and
    ``created`` (UTC time, ISO 8601)."""
    import jax

    return {
        "versions": package_versions(),
        "device": str(jax.devices()[0].platform),
        "created": _dt.datetime.now(_dt.UTC).isoformat(timespec="seconds"),
    }


def provenance(config: JsonObject, seed: int | None) -> JsonObject:
    """What every result file records: full configuration, seed, and the :func:`run_context`
    (package versions, device, time)."""
    return {"config": config, "seed": seed, **run_context()}


LEGACY_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}
"""The strings that sweep logs, posterior files and data records written before held for
non-finite floats, and the floats they stand for (:func:`read_json` reads them)."""


def read_json(text: str) -> Any:
    """JSON text the toolkit wrote, now or before, as Python values.

    ``1e999`` is ``inf`` and ``null`` is ``None`` (:func:`json_text`); the strings ``"inf"``,
    ``"-inf"`` and ``"nan"`` that files written before hold for non-finite numbers are floats
    again, so old logs, posterior files and data records read as they did.
    """
    return _legacy_numbers(json.loads(text))


def as_json_values(value: Any) -> Any:
    """``value`` as it reads back from its JSON text (``read_json(json_text(value))``): plain
    dicts, lists, numbers and strings, ``nan`` as ``None``; what a sweep keeps of a result,
    whether the point was solved now or read from the log."""
    return read_json(json_text(value, indent=None))


def _legacy_numbers(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _legacy_numbers(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_legacy_numbers(v) for v in value]
    if isinstance(value, str):
        return LEGACY_NON_FINITE.get(value, value)
    return value


def json_text(value: Any, *, indent: int | None = 2, sort_keys: bool = False) -> str:
    """``value`` as standard JSON text: every float keeps one JSON type (a number). Every JSON
    the toolkit writes (outputs, sweep logs, posterior and data files) is written by it, and read
    back by :func:`read_json`.

    ``+-inf`` is written as the number ``+-1e999``, which JSON readers parse as infinity (Python,
    JavaScript, R's jsonlite, pandas) or as the largest float; ``nan`` (an undefined value) is
    written as ``null``. NumPy scalars and arrays become numbers and lists.
    """

    def encode(item: Any) -> Any:
        if isinstance(item, dict):
            return {str(k): encode(v) for k, v in item.items()}
        if isinstance(item, (list, tuple)):
            return [encode(v) for v in item]
        if hasattr(item, "item") and getattr(item, "ndim", 1) == 0:
            item = item.item()
        if hasattr(item, "tolist"):
            return encode(item.tolist())
        if isinstance(item, float) and not math.isfinite(item):
            return None if math.isnan(item) else (_INF if item > 0 else _MINUS_INF)
        return item

    text = json.dumps(encode(value), indent=indent, sort_keys=sort_keys, allow_nan=False)
    return text.replace(f'"{_INF}"', "1e999").replace(f'"{_MINUS_INF}"', "-1e999")


_INF, _MINUS_INF = "__bayes_slr_plus_infinity__", "__bayes_slr_minus_infinity__"
"""Placeholders of infinities while :func:`json_text` encodes."""


def _try_create_in(folder: Path, name: str) -> None:
    """Raise ``ConfigError`` unless a file can really be created in ``folder`` (``os.access`` says
    yes to root on read-only or virtual file systems such as ``/proc``)."""
    try:
        with tempfile.NamedTemporaryFile(dir=folder, prefix=".bayes-slr-write-check."):
            pass
    except OSError as exc:
        reason = exc.strerror
        if exc.errno == errno.ENOENT and folder.is_dir():  # e.g. /proc: the folder is there
            reason = "its file system does not accept new files"
        raise ConfigError(f"`{name}`: cannot write in folder {folder} ({reason})") from None


def check_output_file(path: str | os.PathLike, *, force: bool, name: str = "out") -> Path:
    """Refuse, before any work, an output file that exists (unless ``force``) or that could not
    be written (its folder missing, a file, read-only, or not a real file system).

    A file derived from a resumable log (a plot of a sweep with ``out``) passes ``force=True``:
    running again updates it. ``name`` is the option the path was given as.
    """
    path = Path(path)
    if path.is_dir():
        raise ConfigError(f"`{name}`: {path} is a folder, expected a file path")
    if path.exists() and not force:
        raise ConfigError(f"`{name}`: {path} exists; set `force` to overwrite it")
    folder = path.parent
    if not folder.is_dir():
        what = "is not a folder" if folder.exists() else "does not exist"
        raise ConfigError(f"`{name}`: {folder} {what}")
    _try_create_in(folder, name)
    return path


def check_suffix(
    path: str | os.PathLike, suffixes: Sequence[str], what: str, name: str = "out"
) -> None:
    """Refuse (``ConfigError`` naming ``name``) a file whose suffix is not one of ``suffixes``
    (any suffix when empty), ``what`` saying what is written (``"posterior writes"``)."""
    suffix = Path(path).suffix
    if suffixes and suffix.lower() not in suffixes:
        raise ConfigError(
            f"`{name}`: {what} {', '.join(suffixes)} files, got {str(path)!r} "
            f"({'no suffix' if not suffix else 'suffix ' + suffix}); name it e.g. "
            f"{Path(path).with_suffix(suffixes[0]).name}"
        )


def prepare_output_folder(path: str | os.PathLike, *, name: str = "out") -> Path:
    """Create the output folder ``path`` (and its parents) if needed and check that files can be
    written in it; ``ConfigError`` naming ``name`` otherwise. Called before any work."""
    folder = Path(path)
    if folder.exists() and not folder.is_dir():
        raise ConfigError(f"`{name}`: {folder} is a file, expected a folder")
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ConfigError(f"`{name}`: cannot create folder {folder} ({exc.strerror})") from None
    _try_create_in(folder, name)
    return folder


def atomic_write(path: str | os.PathLike, write: Callable[[Path], None]) -> Path:
    """Call ``write(tmp_path)`` on a temporary file beside ``path``, then rename it onto ``path``.

    A failure (or interruption) leaves no partial file at ``path``. The file gets the
    permissions a plain ``open`` would give it (``0666`` less the umask).
    """
    path = Path(path)
    fd, tmp = tempfile.mkstemp(
        prefix=f".{path.name}.", suffix=".tmp" + path.suffix, dir=path.parent or "."
    )
    os.close(fd)
    try:
        write(Path(tmp))
        os.chmod(
            tmp, 0o666 & ~_umask()
        )  # mkstemp makes the file private; give it the user's usual mode
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
    return path


def _umask() -> int:
    """The process's file-creation mask (read by setting and restoring it)."""
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


class SweepLog:
    """A JSON-lines file of finished sweep points, so a re-run skips them.

    Each line is ``{"key": ..., "provenance": {...}, "result": {...}}``. A line is
    written whole and flushed to disk before the next point starts; a run killed
    mid-write leaves at most one unterminated last line, which is dropped on load.

    Parameters
    ----------
    path : path of the ``.jsonl`` file (created on first append).
    current : a logged point in today's terms (e.g. options renamed since it was written), so
        that its key is the one a run asks for now; default: as written.
    """

    def __init__(
        self, path: str | os.PathLike, current: Callable[[Any], Any] | None = None
    ) -> None:
        self.path = Path(path)
        self._current = current
        self._done: dict[str, JsonObject] = {}
        if self.path.exists():
            self._load()
        elif not self.path.parent.is_dir():
            raise ConfigError(f"`out`: folder {self.path.parent} does not exist")

    def _load(self) -> None:
        text = self.path.read_text(encoding="utf-8", errors="replace")
        complete, _, unterminated = text.rpartition("\n")
        if unterminated:
            # a point interrupted while being written: drop it so the next append starts clean
            with open(self.path, "r+b") as handle:
                handle.truncate(len((complete + "\n").encode("utf-8")) if complete else 0)
        for number, line in enumerate(complete.split("\n"), start=1):
            if not line.strip():
                continue
            try:
                record = read_json(line)
                key = record["key"] = self.canonical_key(record["key"], self._current)
                record["result"]
            except (json.JSONDecodeError, KeyError, TypeError) as exc:
                raise ConfigError(
                    f"`out`: {self.path} line {number} is not a bayes-slr sweep record ({exc}); "
                    "move the file away or give another `out`"
                ) from exc
            self._done[key] = record

    @staticmethod
    def point_key(point: JsonObject) -> str:
        """Canonical key of a sweep point (its full configuration)."""
        return json_text(point, indent=None, sort_keys=True)

    @staticmethod
    def canonical_key(key: str, current: Callable[[Any], Any] | None = None) -> str:
        """A key as :meth:`point_key` writes it now: one written before held non-finite numbers
        as strings, and ``current`` gives the point of a key written before in today's terms
        (options renamed since)."""
        point = read_json(key)
        return SweepLog.point_key(point if current is None else current(point))

    def result(self, point: JsonObject) -> JsonObject | None:
        """The stored result of ``point``, or None if it has not finished."""
        record = self._done.get(self.point_key(point))
        return None if record is None else record["result"]

    def append(self, point: JsonObject, result: JsonObject, seed: int | None) -> None:
        """Record a finished point (full configuration, seed, versions) durably."""
        key = self.point_key(point)
        record = {"key": key, "provenance": provenance(point, seed), "result": result}
        line = json_text(record, indent=None, sort_keys=True)
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(line + "\n")
            handle.flush()
            os.fsync(handle.fileno())
        self._done[key] = read_json(line)

    def __iter__(self) -> Iterator[JsonObject]:
        return iter(self._done.values())


def open_sweep_log(folder: str | os.PathLike, name: str) -> SweepLog:
    """Create the output folder if needed and open its resumable sweep log ``folder/name``."""
    return SweepLog(prepare_output_folder(folder) / name)


Point = JsonObject
Solved = JsonObject
"""A point's result in its JSON form (what the log stores)."""
Solve = Callable[[Point], Solved]
Running = dict[str, int]
"""Points running now, by the worker running them (a label such as ``"w0"``, or ``"local"``)."""


class Executor(Protocol):
    """How the points of a sweep are run: in this process, or on a cluster.

    ``run`` yields each point with its result, or with the exception its computation
    raised, as soon as it completes (in any order). It calls ``on_running`` (if given)
    with the points running now, by worker, whenever that changes.
    """

    def run(
        self,
        solve: Solve,
        points: Sequence[Point],
        *,
        on_running: Callable[[Running], None] | None = None,
    ) -> Iterator[tuple[Point, Solved | BaseException]]:
        """Run ``solve`` on every point; yield ``(point, result or exception)`` as
        each completes.
        """
        ...


LOCAL = "local"
"""The worker label of the points the serial executor runs in this process."""


class SerialExecutor:
    """Run the points one after another in this process."""

    def run(
        self,
        solve: Solve,
        points: Sequence[Point],
        *,
        on_running: Callable[[Running], None] | None = None,
    ) -> Iterator[tuple[Point, Solved | BaseException]]:
        """Yield ``(point, solve(point))`` in order, or the exception a point raised (Ctrl-C
        propagates).
        """
        report = on_running or (lambda running: None)
        for point in points:
            report({LOCAL: 1})
            try:
                yield point, solve(point)
            except Exception as exc:  # noqa: BLE001 - a failed point is reported, the sweep goes on
                yield point, exc
        report({})


def progress_postfix(failed: int, running: Running) -> dict[str, int | str]:
    """What the sweep's progress bar shows after its counts: ``failed=3, running=2 on w0,w1`` (zeros
    left out).
    """
    postfix: dict[str, int | str] = {"failed": failed} if failed else {}
    if running:
        postfix["running"] = f"{sum(running.values())} on {','.join(sorted(running))}"
    return postfix


class SweepInterrupted(KeyboardInterrupt):
    """The user interrupted a sweep (Ctrl-C); the finished points are in the log (a
    ``KeyboardInterrupt``).
    """

    def __init__(self, kept: int, total: int, log: SweepLog | None) -> None:
        if kept == 0:
            where = "nothing kept"
        elif log is not None:
            where = f"kept in {log.path}; run the same command again to resume"
        else:
            where = "not kept (give `out` a folder to make the sweep resumable)"
        super().__init__(f"interrupted: {kept} of {total} points finished, {where}")
        self.kept, self.total = kept, total


def run_sweep(
    points: Iterable[Point],
    solve: Solve,
    *,
    log: SweepLog | None = None,
    seed_of: Callable[[Point], int | None] = lambda point: None,
    executor: Executor | None = None,
    progress: bool = True,
    description: str = "points",
) -> tuple[list[tuple[Point, Solved]], list[tuple[Point, str]]]:
    """Run a resumable sweep: skip the points finished in ``log``, solve the others, log each as it
    finishes; a point whose computation raises is reported and the sweep goes on.

    Parameters
    ----------
    points : the sweep's points, each a JSON-ready dict holding its full configuration.
    solve : computes one point's result (a JSON-ready dict).
    log : finished points are read from it and appended to it as they complete.
    seed_of : the seed recorded with a point's result.
    executor : how pending points are run; default :class:`SerialExecutor`.
    progress : show one progress bar on stderr: points done of all, and after them the
        points failed and those running now with the workers running them
        (``failed=1, running=2 on w0,w1``; the serial executor runs one ``on local``).
    description : label of the progress bar.

    Returns
    -------
    finished : ``(point, result)`` for the finished points, in the order of ``points``. A result
        is the JSON form the log stores (:func:`as_json_values`: ``inf`` a float, ``nan``
        ``None``), whether the point was solved now or read from the log.
    failures : ``(point, message)`` for the points whose computation raised (not logged, so
        running again retries them).

    Raises
    ------
    SweepInterrupted
        On Ctrl-C (also one that Python swallowed in a callback, see
        :mod:`bayes_slr.interrupts`), after the finished points are safely logged.
    RunStopped
        A point raised it (:class:`~bayes_slr.errors.RunStopped`, e.g. a diverging run): the sweep
        stops there, the points finished before it are logged.
    """
    points = list(points)
    solve = ReleasingPrograms(solve)
    results, pending = _logged_and_pending(points, log)
    failures: list[tuple[Point, str]] = []
    bar = progress_bar(
        total=len(points), initial=len(results), desc=description, unit="point", show=progress
    )
    running: Running = {}

    def show_running(now: Running) -> None:
        running.clear()
        running.update(now)
        bar.set_postfix(progress_postfix(len(failures), running))

    try:
        for point, outcome in (executor or SerialExecutor()).run(
            solve, pending, on_running=show_running
        ):
            raise_if_interrupted()
            if isinstance(outcome, RunStopped):
                raise outcome
            if isinstance(outcome, BaseException):
                failures.append((point, f"{type(outcome).__name__}: {outcome}"))
                bar.set_postfix(progress_postfix(len(failures), running), refresh=False)
                bar.update(1)
                continue
            outcome = as_json_values(outcome)
            if log is not None:
                log.append(point, outcome, seed_of(point))
            results[SweepLog.point_key(point)] = outcome
            bar.update(1)
        raise_if_interrupted()
    except KeyboardInterrupt:
        raise SweepInterrupted(len(results), len(points), log) from None
    finally:
        bar.close()
    return _in_order(points, results), failures


class ReleasingPrograms:
    """``solve`` followed, in the process that ran it (this one, or a Dask worker), by
    :func:`~bayes_slr.jax_setup.release_compiled_programs`: a long sweep never holds so many
    compiled programs that the kernel's limit on memory maps stops the next one loading."""

    def __init__(self, solve: Solve) -> None:
        self.solve = solve

    def __call__(self, point: Point) -> Solved:
        """The point's result; the programs released afterwards when they hold too many maps."""
        try:
            return self.solve(point)
        finally:
            release_compiled_programs()


def _logged_and_pending(
    points: list[Point], log: SweepLog | None
) -> tuple[dict[str, Solved], list[Point]]:
    """The results ``log`` holds for ``points`` (by point key) and the points still to solve."""
    results: dict[str, Solved] = {}
    pending = []
    for point in points:
        done = log.result(point) if log is not None else None
        if done is None:
            pending.append(point)
        else:
            results[SweepLog.point_key(point)] = done
    return results, pending


def _in_order(points: list[Point], results: dict[str, Solved]) -> list[tuple[Point, Solved]]:
    """``(point, result)`` of the finished points in the order of ``points``."""
    return [
        (point, results[key]) for point in points if (key := SweepLog.point_key(point)) in results
    ]
