"""The record base: frozen dataclasses that convert to and from JSON-ready dicts.

Every layer returns typed records built on :class:`Record` (a run's settings, a trajectory's
points, a population optimum, an experiment's points and rows), so no layer hands another a dict
read by string keys; only the JSON boundary (logs, outputs) sees the dicts. It imports without JAX.
"""

from __future__ import annotations

import dataclasses
import math
import typing
from pathlib import Path
from typing import Any, Self

import cattrs

from bayes_slr.errors import ConfigError

JsonObject = dict[str, Any]
"""A decoded JSON object (string keys, JSON-ready values): what :meth:`Record.to_dict` gives and
a JSON file, a log line or a file's JSON attribute holds. Only the JSON boundary holds one (records
written and read, logs, outputs); a layer hands another a typed record, never this."""

converter = cattrs.Converter()
"""Turns records (JSON-ready dicts) into typed objects and back. Every JSON the toolkit writes
holds ``nan`` as ``null`` (:func:`bayes_slr.records.json_text`): a plain ``float`` field reads
``null`` as ``nan``, a ``float | None`` field as ``None`` (no number either way). Floats also
accept the strings ``"inf"``, ``"-inf"`` and ``"nan"`` of files written before. A type that is
not a record registers its own hooks here (the task :class:`~bayes_slr.models.spec.SLRConfig`
does)."""
converter.register_structure_hook(
    float, lambda value, _: math.nan if value is None else float(value)
)
converter.register_structure_hook(Path, lambda value, _: Path(value))
converter.register_unstructure_hook(Path, str)


def structure[T](data: Any, kind: type[T]) -> T:
    """``data`` (a JSON-ready value) as an object of ``kind`` (a record, or a union of records);
    ``ConfigError`` when it does not fit, naming why: the record's own refusal (a value its
    checks reject) or the field that is missing or of the wrong type."""
    name = getattr(kind, "__name__", kind)
    try:
        return converter.structure(data, kind)
    except cattrs.BaseValidationError as exc:
        raise ConfigError(f"a {name} record does not fit ({'; '.join(_reasons(exc))})") from exc
    except (KeyError, TypeError, ValueError) as exc:
        raise ConfigError(f"a {name} record does not fit ({exc})") from exc


def _reasons(error: cattrs.BaseValidationError) -> list[str]:
    """Why a record did not fit: the messages of the ``ConfigError`` its checks raised, else
    cattrs' account of each field that is missing or of the wrong type."""
    refused = error.subgroup(lambda exc: isinstance(exc, ConfigError))
    if refused is None:
        return cattrs.transform_error(error)
    found: list[str] = []
    pending: list[BaseException] = [refused]
    while pending:
        item = pending.pop()
        if isinstance(item, BaseExceptionGroup):
            pending.extend(reversed(item.exceptions))
        else:
            found.append(str(item))
    return found


@dataclasses.dataclass(frozen=True)
class Record:
    """A frozen dataclass that converts to and from a JSON-ready dict (points, rows, parts)."""

    def to_dict(self) -> JsonObject:
        """The fields as a dict of JSON-ready values (nested records as dicts, tuples as lists)."""
        return converter.unstructure(self)

    @classmethod
    def from_dict(cls, data: JsonObject) -> Self:
        """Inverse of :meth:`to_dict`; ``ConfigError`` when ``data`` does not fit the fields."""
        return structure(data, cls)


def register_tagged_union(union: Any, kinds: dict[str, type[Record]], tag: str = "kind") -> None:
    """Make ``union`` (of the records ``kinds`` names) a tagged union: a value is written with
    ``tag`` naming its kind and read back by that tag, never guessed from its fields. A dict
    without the tag (written before the union carried one) is the record whose fields are
    exactly its keys (fields added since with a default may be missing); ``ConfigError`` when
    no tag and no record's fields fit, or the tag is unknown."""
    if set(typing.get_args(union)) != set(kinds.values()):
        raise TypeError(f"the kinds {sorted(kinds)} are not the members of {union}")
    if any(tag in _field_names(record) for record in kinds.values()):
        raise TypeError(f"a member of {union} has a field named {tag!r}, the tag")
    kind_of = {record: kind for kind, record in kinds.items()}

    def to_dict(value: Record) -> JsonObject:
        return {tag: kind_of[type(value)], **converter.unstructure(value)}

    def from_dict(data: Any, _: Any) -> Record:
        if not isinstance(data, dict):
            raise ConfigError(f"a {tag}-tagged record must be a JSON object, got {data!r}")
        fields = {name: value for name, value in data.items() if name != tag}
        kind = data[tag] if tag in data else _untagged_kind(kinds, set(fields))
        if kind not in kinds:
            raise ConfigError(f"unknown {tag} {kind!r} (one of {', '.join(kinds)})")
        return structure(fields, kinds[kind])

    converter.register_unstructure_hook_func(lambda kind: kind == union, to_dict)
    converter.register_structure_hook_func(lambda kind: kind == union, from_dict)


def _untagged_kind(kinds: dict[str, type[Record]], names: set[str]) -> str:
    """The kind of an untagged record written before: the one whose fields are ``names``, up to
    fields added since with a default."""
    found = [
        kind
        for kind, record in kinds.items()
        if _required_names(record) <= names <= _field_names(record)
    ]
    if len(found) != 1:
        raise ConfigError(f"no one record has exactly the fields {', '.join(sorted(names))}")
    return found[0]


def _field_names(record: type[Record]) -> set[str]:
    return {field.name for field in dataclasses.fields(record)}


def _required_names(record: type[Record]) -> set[str]:
    return {
        field.name
        for field in dataclasses.fields(record)
        if field.default is dataclasses.MISSING and field.default_factory is dataclasses.MISSING
    }


def is_numpy(value: Any) -> bool:
    """Whether ``value`` is a NumPy scalar or array, or a list or tuple holding one."""
    if isinstance(value, (list, tuple)):
        return any(is_numpy(item) for item in value)
    return type(value).__module__ == "numpy"


def from_numpy(name: str, value: Any) -> Any:
    """A NumPy scalar as the Python number, a 1-D array (or a sequence holding NumPy scalars)
    as a tuple of Python numbers; ``ConfigError`` for an array of more dimensions."""
    if isinstance(value, (list, tuple)):
        return tuple(from_numpy(name, item) for item in value)
    if getattr(value, "ndim", 0) > 1:
        raise ConfigError(f"{name} must be a number or a 1-D sequence (got shape {value.shape})")
    plain = value.tolist()
    return tuple(plain) if isinstance(plain, list) else plain


def flatten(record: JsonObject, prefix: str = "") -> JsonObject:
    """A JSON object as one tidy row, every cell a scalar: ``{"a": {"b": 1}}`` as ``{"a_b": 1}``
    (the names of ``pandas`` columns and attributes), a list of numbers as one column per item
    (``{"lam": [0.1, 1]}`` as ``{"lam_0": 0.1, "lam_1": 1}``), a list of lines of text as one
    cell (joined by ``"; "``); any other list stays a value."""
    flat: JsonObject = {}
    for key, value in record.items():
        name = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, f"{name}_"))
        elif isinstance(value, (list, tuple)) and all(isinstance(v, str) for v in value):
            flat[name] = "; ".join(value)
        elif isinstance(value, (list, tuple)) and all(_is_number(v) for v in value):
            flat.update({f"{name}_{i}": item for i, item in enumerate(value)})
        else:
            flat[name] = value
    return flat


def _is_number(value: object) -> bool:
    """A JSON number or null (a missing number)."""
    return value is None or (isinstance(value, (int, float)) and not isinstance(value, bool))
