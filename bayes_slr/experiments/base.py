"""What every measurement is made of: options, points, rows, a result, and the experiment object.

An experiment (one module in :mod:`bayes_slr.experiments`) defines

* ``Options``: a frozen dataclass of every setting, validated once in ``__post_init__`` (the only
  place a bad value is refused, with one :class:`~bayes_slr.errors.ConfigError` line naming the
  option and the accepted range; the layers below take the resolved settings and trust them).
  Each field is declared with :func:`option`, which holds its help text and its accepted range
  (``accepts``): the command line builds its flags from these fields, and the public API its
  keyword arguments, so names, defaults, help and ranges cannot differ.
* ``points(options)``: the independent units of work (frozen dataclasses), each a key of the
  resumable log;
* ``solve(options, point)``: computes one point (this is where JAX is imported: the module itself
  imports without it, so options are validated within milliseconds);
* ``collect(options, solved)``: assembles the typed :class:`Result` (rows, notes, warnings).

:func:`bayes_slr.experiments.runner.run_experiment` drives every experiment the same way: it
checks outputs before any work, skips points finished in the log, runs the others in this process
or on a Dask cluster, logs each as it finishes, and collects failed points instead of stopping.
"""

from __future__ import annotations

import abc
import dataclasses
import html
import types
import typing
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, ClassVar, Self

from bayes_slr.errors import Accepts, Each, OneOf, OrNone, validate_fields
from bayes_slr.numerics.record import JsonObject, Record, from_numpy, is_numpy
from bayes_slr.numerics.record import flatten as flatten  # the experiments' import
from bayes_slr.registry import Registry

ERROR_CONVENTION = (
    "excess test error E[(y - f(X))^2] - Delta: the noise floor is subtracted, so the zero "
    "predictor scores |v*|^2/D (1 for an exact teacher) and a perfect predictor 0"
)
"""How every error the toolkit reports is defined (docs/model.md); stated in every JSON output."""


@dataclasses.dataclass(frozen=True)
class OptionSpec:
    """What the command line needs to know of one option (the field's metadata).

    Attributes
    ----------
    help : one line, without the default (the command line appends the default it runs with), or
        a function returning it (a registry's descriptions, read when the help is shown).
    choices : accepted values, or a function returning them (a registry's names, read at parse
        time so a variant, activation or sampler registered by the user is offered).
    parse : turns one command-line word into a value (default: from the field's type).
    flag : the command-line name (default: ``--`` + the field name, underscores as dashes).
    aliases : older flag names, still accepted for one release with a one-line notice.
    cli : whether the option has a flag (``False`` for settings only the API sets).
    metavar : the placeholder shown in ``--help``.
    default_text : how ``--help`` states a default that is not a plain value (e.g. ``None``
        meaning "the variant's own").
    signature_default : the plain value a ``None`` default stands for when no file fixes the
        setting (``posterior``'s task and sampling settings); the API's signatures show it.
    accepts : the accepted range (:mod:`bayes_slr.errors`: ``Integer(1)``, ``Each(Number(0,
        strict=True))``, ...), checked when the options are built; ``None``: checked elsewhere
        (the task's fields by ``SLRConfig``) or anything goes.
    """

    help: str | Callable[[], str]
    choices: Sequence[str] | Callable[[], Sequence[str]] | None = None
    parse: Callable[[str], Any] | None = None
    flag: str | None = None
    aliases: tuple[str, ...] = ()
    cli: bool = True
    metavar: str | None = None
    default_text: str | None = None
    signature_default: Any = None
    accepts: Accepts | None = None

    def help_text(self) -> str:
        """The help line now (calling the registry when ``help`` is a function)."""
        return self.help() if callable(self.help) else self.help

    def stated_default(self, field_default: Any) -> str:
        """How help and docs state the default of a field whose declared default is
        ``field_default``."""
        if self.default_text:
            return self.default_text
        shown = field_default if self.signature_default is None else self.signature_default
        return default_text(shown)

    def choice_names(self) -> tuple[str, ...] | None:
        """The accepted values now (calling the registry when ``choices`` is a function)."""
        if self.choices is None:
            return None
        return tuple(self.choices() if callable(self.choices) else self.choices)


def option(default: Any, help: str | Callable[[], str], **spec: Any) -> Any:
    """A dataclass field of an ``Options`` class with its command-line description.

    Parameters
    ----------
    default : the value used when the option is not given (lists are given as tuples).
    help : one line of help (see :class:`OptionSpec`).
    **spec : further :class:`OptionSpec` attributes.
    """
    return dataclasses.field(default=default, metadata={"option": OptionSpec(help=help, **spec)})


def default_text(value: Any) -> str:
    """How a default is written in help and docs: lists space-separated, as they are typed;
    switches ``on``/``off``; ``None`` as ``none``."""
    if isinstance(value, (list, tuple)):
        return " ".join(default_text(item) for item in value)
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "none"
    if isinstance(value, float):
        return "inf" if value == float("inf") else f"{value:g}"
    return str(value)


def option_spec(field: dataclasses.Field) -> OptionSpec:
    """The :class:`OptionSpec` of an ``Options`` field."""
    spec = field.metadata.get("option")
    if spec is None:
        raise TypeError(f"field {field.name} was not declared with option()")
    return spec


@dataclasses.dataclass(frozen=True)
class Options(Record):
    """Base of every experiment's options: frozen, and validated once, in ``__post_init__``.

    Subclasses declare their fields with :func:`option` and override :meth:`validate`, which
    raises :class:`~bayes_slr.errors.ConfigError` on a bad value and changes nothing: the options
    keep the values as given (a list as a tuple, a NumPy number as the Python number, a
    whole-number float such as ``1e3`` of an integer option as the ``int``; a float that is not
    whole is refused by the option's check). A default
    that depends on another option or on a data file (the variant's ``nu``, a file's task) is
    filled in by :meth:`filled`, and :meth:`resolved` returns the options as they run, which is
    what the runner solves, logs and reports.
    """

    def __post_init__(self) -> None:
        types_ = self.field_types()
        for field in dataclasses.fields(self):
            value = getattr(self, field.name)
            if is_numpy(value):  # a NumPy scalar or array as the Python number or list
                value = from_numpy(field.name, value)
                self._set(field.name, value)
            if isinstance(value, list):
                value = tuple(value)
                self._set(field.name, value)
            elif _is_tuple_type(types_[field.name]) and isinstance(value, (int, float, str)):
                value = (value,)  # one value where a list is expected
                self._set(field.name, value)
            if _is_int_type(types_[field.name]):  # 1e3 and 10.0 as typed: whole numbers
                self._set(field.name, _whole_as_int(value))
        validate_fields(self, self.accepted_ranges(), keep=False)
        self.validate()

    @classmethod
    def accepted_ranges(cls) -> dict[str, Accepts]:
        """The options' table of name -> accepted range: each option's ``accepts`` (else its
        ``choices``) for one value, a non-empty list of them for a ``tuple`` field, and ``None``
        (not given) too where the field's type admits it."""
        types_ = cls.field_types()
        table: dict[str, Accepts] = {}
        for field in cls.option_fields():
            spec = option_spec(field)
            accepts = spec.accepts or (OneOf(spec.choices) if spec.choices else None)
            if accepts is None:
                continue
            if _is_tuple_type(types_[field.name]) and not isinstance(accepts, Each):
                accepts = Each(accepts)
            table[field.name] = OrNone(accepts) if is_optional(types_[field.name]) else accepts
        return table

    def validate(self) -> None:
        """Raise ``ConfigError`` on values that are out of range together (each option's own
        range is declared by its ``accepts``; nothing more to check by default)."""

    def filled(self) -> dict[str, object]:
        """The settings not given, and any setting the run reads differently (an ``int`` ratio
        as a ``float``), each with the value the run uses: nothing by default."""
        return {}

    def resolved(self) -> Self:
        """These options as they run: :meth:`filled` in place of what was not given (a new
        record, validated; these options stay as given). Resolving again changes nothing."""
        changed = {
            name: value
            for name, value in self.filled().items()
            if repr(value) != repr(getattr(self, name))  # 2 and 2.0 differ, as in a log's key
        }
        return dataclasses.replace(self, **changed) if changed else self

    def _set(self, name: str, value: Any) -> None:
        object.__setattr__(self, name, value)

    def replace(self, **changes: Any) -> Self:
        """A copy with some options changed (validated again)."""
        return dataclasses.replace(self, **changes)

    @classmethod
    def option_fields(cls) -> tuple[dataclasses.Field, ...]:
        """The fields declared with :func:`option`, in order."""
        return tuple(f for f in dataclasses.fields(cls) if "option" in f.metadata)

    @classmethod
    def renamed(cls) -> dict[str, str]:
        """``{old name: name}`` of the options renamed (each old flag of an option's ``aliases``
        as a Python name): the public functions and the sweep logs written before still accept
        the old names."""
        fields = cls.option_fields()
        names = {field.name for field in fields}
        return {
            old: field.name
            for field in fields
            for alias in option_spec(field).aliases
            if (old := alias.removeprefix("--").replace("-", "_")) not in names
        }

    @classmethod
    def with_current_names[T](cls, settings: dict[str, T]) -> dict[str, T]:
        """``settings`` (option name -> value) with each old name replaced by its option's."""
        renamed = cls.renamed()
        return {renamed.get(name, name): value for name, value in settings.items()}

    @classmethod
    def field_types(cls) -> dict[str, Any]:
        """Each field's type, resolved (the annotations are strings under ``from __future__``)."""
        return typing.get_type_hints(cls)


@dataclasses.dataclass(frozen=True)
class Failure(Record):
    """A point whose computation raised: the sweep went on, the point was not logged."""

    point: JsonObject
    message: str


@dataclasses.dataclass(frozen=True)
class Provenance(Record):
    """Where a result comes from: what every output file and ``--json`` records.

    Attributes
    ----------
    experiment : the experiment's name (the command).
    seed : the root seed (``None`` for deterministic computations).
    versions : Python's and the packages' versions.
    device : the JAX platform the points ran on.
    created : UTC time, ISO 8601.
    error_convention : :data:`ERROR_CONVENTION`.
    """

    experiment: str
    seed: int | None
    versions: dict[str, str]
    device: str
    created: str
    error_convention: str = ERROR_CONVENTION


@dataclasses.dataclass(frozen=True)
class Result[O: Options, R: Record]:
    """The typed outcome of an experiment: its options, one row per point, notes and warnings.

    Subclasses implement :meth:`rows_table` and, where a figure makes sense, :meth:`plot`; every
    subclass is declared with ``@dataclasses.dataclass(frozen=True, repr=False)`` so that it keeps
    the short :meth:`__repr__` (a test checks it).

    Attributes
    ----------
    options : the validated options it ran with.
    rows : the typed rows, in the order of the options' grid.
    notes : lines to read with the numbers (limits, choices made, where settings came from).
    warnings : lines naming numbers not to read as they stand (not converged, unstable, ...).
    failures : points whose computation raised (not logged: running again retries them).
    provenance : see :class:`Provenance`.
    """

    options: O
    rows: tuple[R, ...]
    provenance: Provenance
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    failures: tuple[Failure, ...] = ()

    def to_json(self) -> JsonObject:
        """One JSON-ready object: provenance (versions, time, seed, error convention), the full
        options, rows, notes, warnings and failed points."""
        return {
            **self.provenance.to_dict(),
            "config": self.options.to_dict(),
            "rows": [row.to_dict() for row in self.rows],
            "notes": list(self.notes),
            "warnings": list(self.warnings),
            "failures": [failure.to_dict() for failure in self.failures],
        }

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One flat dict per point, every cell a scalar (:func:`~bayes_slr.numerics.record.flatten`:
        nested fields joined by ``_``): the rows of :meth:`to_pandas`, with its column names.

        Subclasses with one row per several measured quantities override it to stay tidy.
        """
        return [flatten(row.to_dict()) for row in self.rows]

    def to_pandas(self) -> Any:
        """A ``pandas.DataFrame`` of :meth:`tidy_rows`, one tidy row per point, with snake_case
        column names (nested fields joined by ``_``, so every column is an attribute of the
        frame)."""
        import pandas as pd

        return pd.DataFrame(self.tidy_rows())

    @abc.abstractmethod
    def rows_table(self) -> str:
        """The rows as a plain-text table (without the notes and warnings)."""

    def table(self) -> str:
        """What the command line prints: :meth:`rows_table`, then one ``note:`` line per note
        and one ``warning:`` line per warning."""
        lines = [self.rows_table()]
        lines += [f"note: {note}" for note in self.notes]
        lines += [f"warning: {warning}" for warning in self.warnings]
        return "\n".join(line for line in lines if line)

    def headline(self) -> str:
        """One line: the command, how many rows, failed points, notes and warnings."""
        counts = [_count(len(self.rows), "row")]
        counts += [_count(len(self.failures), "failed point")] if self.failures else []
        counts += [_count(len(self.notes), "note"), _count(len(self.warnings), "warning")]
        return f"{type(self).__name__} of {self.provenance.experiment}: {', '.join(counts)}"

    def __repr__(self) -> str:
        """The headline and the first lines of the table (the full dataclass, provenance
        included, is in :meth:`to_json`)."""
        table = self.rows_table().splitlines()
        shown = table[:REPR_TABLE_LINES]
        if len(table) > REPR_TABLE_LINES:
            shown.append(f"... ({len(table) - REPR_TABLE_LINES} more lines: .table())")
        return "\n".join([self.headline(), *shown])

    def _repr_html_(self) -> str:
        """How Jupyter shows a result: the headline, the table, the notes, and the warnings
        highlighted."""
        parts = [
            f"<p><b>{html.escape(self.headline())}</b></p>",
            f"<pre>{html.escape(self.rows_table())}</pre>",
        ]
        if self.notes:
            items = "".join(f"<li>{html.escape(note)}</li>" for note in self.notes)
            parts.append(f"<p>Notes</p><ul>{items}</ul>")
        if self.warnings:
            items = "".join(f"<li>{html.escape(warning)}</li>" for warning in self.warnings)
            parts.append(
                '<div style="background:#fff3cd;color:#664d03;padding:0.3em 0.6em">'
                f"<b>Warnings</b><ul>{items}</ul></div>"
            )
        return "\n".join(parts)

    def plot(self, ax: Any = None) -> Any:
        """Draw the result on ``ax`` (a new figure when ``None``); return the axes."""
        raise NotImplementedError(f"{type(self).__name__} has no plot")

    @classmethod
    def has_plot(cls) -> bool:
        """Whether the result draws a figure (the command line then offers ``--plot``)."""
        return cls.plot is not Result.plot

    def save_plot(self, path: str | Path) -> Path:
        """Draw :meth:`plot` on a new figure and write it as an image, atomically."""
        from bayes_slr.experiments.figures import save_figure

        return save_figure(self.plot, path)

    def save(self, path: Path) -> None:
        """Write the single output file of an experiment whose ``output`` is ``"file"``."""
        raise NotImplementedError(f"{type(self).__name__} writes no output file")


REPR_TABLE_LINES = 12
"""How many lines of the table a result's ``repr`` shows."""


def _count(number: int, noun: str) -> str:
    return f"{number} {noun}" + ("" if number == 1 else "s")


class Experiment[O: Options, P: Record, S: Record, R: Result](abc.ABC):
    """One measurement: how its options become points, how a point is solved, how the solved
    points become a result.

    Class attributes
    ----------------
    name : the command and the stem of its output files (``gap`` -> ``gap.jsonl``).
    summary : one line for ``bayes-slr --help``.
    description : a paragraph for ``bayes-slr NAME --help``.
    options_type, point_type, solved_type, result_type : the experiment's dataclasses.
    output : what ``out=`` is: ``"folder"`` (a resumable sweep log and a summary), ``"file"``
        (one output file, e.g. a posterior or a data set), or ``None`` (no output file).
    output_help : what the output file holds, or what a folder holds besides the log and the
        summary (the ``--out`` help).
    output_suffixes : the suffixes an output file (``output == "file"``) may have, the first the
        one to give (``.npz``): any other is refused before any work.
    sweep_axes : the options whose values are spread over the points (e.g. ``alpha``): a point's
        key in the log is its own fields and every other option.
    progress_label : what the progress bar counts (the points; an experiment whose points are
        not its rows says what they are).
    """

    name: ClassVar[str]
    summary: ClassVar[str]
    description: ClassVar[str] = ""
    options_type: ClassVar[type[Options]]
    point_type: ClassVar[type[Record]]
    solved_type: ClassVar[type[Record]]
    result_type: ClassVar[type[Result]]
    output: ClassVar[str | None] = "folder"
    output_help: ClassVar[str] = ""
    output_suffixes: ClassVar[tuple[str, ...]] = ()
    sweep_axes: ClassVar[tuple[str, ...]] = ()
    progress_label: ClassVar[str] = "points"

    @abc.abstractmethod
    def points(self, options: O) -> list[P]:
        """The independent units of work of ``options``, in the order the rows are reported."""

    @abc.abstractmethod
    def solve(self, options: O, point: P) -> S:
        """Compute one point (may import JAX and run for a long time)."""

    def solve_in(self, options: O, point: P, folder: Path | None) -> S:
        """Solve a point of a sweep whose output folder is ``folder`` (``None`` without ``out``).

        An experiment that keeps a file per point beside the log (a posterior's netCDF) overrides
        it; by default :meth:`solve`.
        """
        return self.solve(options, point)

    def check_output(self, options: O, out: Path) -> None:
        """Refuse (``ConfigError``), before any work, an ``out`` that these options cannot write;
        the runner has already checked that it can be written. Nothing to refuse by default."""

    @abc.abstractmethod
    def collect(self, options: O, solved: Sequence[tuple[P, S]], provenance: Provenance) -> R:
        """Assemble the result from the solved points (in the order of :meth:`points`)."""

    def seed(self, options: O) -> int | None:
        """The root seed recorded with the result (``options.seed`` when there is one)."""
        return getattr(options, "seed", None)


EXPERIMENTS: Registry[Experiment] = Registry("experiment", Experiment)
"""Every measurement, by name: the command line has one subcommand per entry."""


def register_experiment(experiment: Experiment) -> Experiment:
    """Add ``experiment`` to :data:`EXPERIMENTS` (a command and an API function) and return it."""
    return EXPERIMENTS.register(experiment)


def _whole_as_int(value: Any) -> Any:
    """A float that is a whole number as the ``int`` (in a tuple, each); anything else as is."""
    if isinstance(value, tuple):
        return tuple(_whole_as_int(item) for item in value)
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


def _is_int_type(annotation: Any) -> bool:
    """Whether a resolved field type holds integers only: ``int``, ``int | None``,
    ``tuple[int, ...]`` (or ``| None``), never a type that also admits ``float``."""
    if is_optional(annotation):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    if typing.get_origin(annotation) is tuple:
        return set(typing.get_args(annotation)) <= {int, Ellipsis}
    return annotation is int


def _is_tuple_type(annotation: Any) -> bool:
    """Whether a resolved field type is ``tuple[...]`` (or ``tuple[...] | None``)."""
    if is_optional(annotation):
        annotation = next(a for a in typing.get_args(annotation) if a is not type(None))
    return typing.get_origin(annotation) is tuple


def is_optional(annotation: Any) -> bool:
    """Whether a resolved field type admits ``None`` (``X | None``)."""
    return isinstance(annotation, types.UnionType | typing._UnionGenericAlias) and type(
        None
    ) in typing.get_args(annotation)
