"""The one error type for bad input, the checks that raise it (and the accepted ranges that
settings and options declare as data), and the error that stops a run."""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable, Mapping, Sequence
from numbers import Real


class ConfigError(ValueError):
    """Bad input: the message names the parameter and the accepted range."""


class RunStopped(Exception):
    """A computation that cannot go on (a training run that diverged): the sweep stops at the
    point that raised it (the points finished before stay in its log), nothing else is written,
    and the command line prints its one-line message and exits 3. The message says what was
    kept, and where."""


def check_int(name: str, value: object, minimum: int) -> int:
    """Return ``value`` as an int, or raise ``ConfigError`` unless it is an integer >=
    ``minimum`` (:class:`Integer`)."""
    return Integer(minimum)(name, value)


def check_real(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    strict: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is a number in the accepted range
    (:class:`Number`).

    Parameters
    ----------
    name : str
        Parameter name used in the error message.
    value : object
        The value to check.
    minimum : float, optional
        Lower bound; ``strict`` makes it exclusive.
    strict : bool
        Whether the bound excludes ``minimum`` itself.
    allow_inf : bool
        Whether ``+inf`` is accepted.
    """
    return Number(minimum, strict, allow_inf)(name, value)


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ConfigError`` (:class:`OneOf`)."""
    return OneOf(choices)(name, value)


# Accepted ranges declared as data: a settings or options type states, per parameter, what it
# accepts (one table), and one call of :func:`validate_fields` checks them all when it is built.


@dataclasses.dataclass(frozen=True)
class Integer:
    """Accepts an integer ``>= minimum`` (a whole float such as ``1e3`` as the ``int``)."""

    minimum: int = 0

    def __call__(self, name: str, value: object) -> int:
        if (
            isinstance(value, bool)
            or not isinstance(value, (int, Real))
            or (isinstance(value, Real) and not float(value).is_integer())
            or int(value) < self.minimum
        ):
            raise ConfigError(f"{name} must be an integer >= {self.minimum}, got {value!r}")
        return int(value)


@dataclasses.dataclass(frozen=True)
class Number:
    """Accepts a number ``>= minimum`` (``> minimum`` when ``strict``), ``< below`` when given,
    finite unless ``allow_inf``."""

    minimum: float | None = None
    strict: bool = False
    allow_inf: bool = False
    below: float | None = None

    def __call__(self, name: str, value: object) -> float:
        if self.below is not None:
            x = Number()(name, value)
            low = -math.inf if self.minimum is None else self.minimum
            if not (low < x if self.strict else low <= x) or not x < self.below:
                bracket = "(" if self.strict or self.minimum is None else "["
                raise ConfigError(
                    f"{name} must be in {bracket}{low:g}, {self.below:g}), got {value!r}"
                )
            return x
        minimum, strict = self.minimum, self.strict
        bound = "" if minimum is None else (f" > {minimum:g}" if strict else f" >= {minimum:g}")
        accepted = f"a number{bound}" + (" (inf allowed)" if self.allow_inf else " (finite)")
        if isinstance(value, bool) or not isinstance(value, Real):
            raise ConfigError(f"{name} must be {accepted}, got {value!r}")
        x = float(value)
        if (
            math.isnan(x)
            or (math.isinf(x) and not (self.allow_inf and x > 0))
            or (minimum is not None and (x < minimum or (strict and x == minimum)))
        ):
            raise ConfigError(f"{name} must be {accepted}, got {value!r}")
        return x


@dataclasses.dataclass(frozen=True)
class OneOf:
    """Accepts one of ``choices``, or of what ``choices()`` returns (a registry's names, read when
    checked, so a name registered by the user is accepted)."""

    choices: tuple[str, ...] | Callable[[], Sequence[str]]

    def __call__(self, name: str, value: object) -> str:
        names = tuple(self.choices() if callable(self.choices) else self.choices)
        if value not in names:
            raise ConfigError(f"{name} must be one of {', '.join(names)}; got {value!r}")
        return str(value)


@dataclasses.dataclass(frozen=True)
class Each:
    """Accepts a list whose every value ``item`` accepts (any value when ``None``), as a tuple;
    non-empty unless ``empty``."""

    item: Callable[[str, object], object] | None = None
    empty: bool = False

    def __call__(self, name: str, values: object) -> tuple:
        if not isinstance(values, (tuple, list)) or (len(values) == 0 and not self.empty):
            raise ConfigError(f"{name}: give at least one value")
        if self.item is None:
            return tuple(values)
        return tuple(self.item(name, value) for value in values)


@dataclasses.dataclass(frozen=True)
class OrNone:
    """Accepts ``None`` (not given) or what ``item`` accepts."""

    item: Callable[[str, object], object]

    def __call__(self, name: str, value: object) -> object:
        return None if value is None else self.item(name, value)


type Accepts = Callable[[str, object], object]
"""What a parameter accepts: called with its name and value, it returns the value as the record
keeps it (an ``int`` for ``1e3``, a tuple for a list) or raises :class:`ConfigError` naming the
parameter and the accepted range."""


def accepted_values(
    values: Mapping[str, object], accepts: Mapping[str, Accepts]
) -> dict[str, object]:
    """Every value of ``values`` (keyword arguments), as the table ``accepts`` (name -> accepted
    range; it names every one of them) accepts it, in the order given: the one check of a
    function's keyword arguments."""
    return {name: accepts[name](name, value) for name, value in values.items()}


def validate_fields(record: object, accepts: Mapping[str, Accepts], *, keep: bool = True) -> None:
    """Check every field of a frozen dataclass ``record`` named in ``accepts`` (its table of
    parameter -> accepted range), in the table's order, and keep each as accepted (``keep``; else
    leave the record as given: an experiment's options are kept as the user gave them).

    The one check of a settings or options type, called once when it is built: the layers that
    take the record trust it.
    """
    for name, accepted in accepts.items():
        value = accepted(name, getattr(record, name))
        if keep:
            object.__setattr__(record, name, value)
