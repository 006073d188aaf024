"""The one error type for bad input, the checks that raise it, and the error that stops a run."""

from __future__ import annotations

import math
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
    ``minimum``.
    """
    if (
        isinstance(value, bool)
        or not isinstance(value, (int, Real))
        or (isinstance(value, Real) and not float(value).is_integer())
    ):
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    if int(value) < minimum:
        raise ConfigError(f"{name} must be an integer >= {minimum}, got {value!r}")
    return int(value)


def check_real(
    name: str,
    value: object,
    *,
    minimum: float | None = None,
    strict: bool = False,
    allow_inf: bool = False,
) -> float:
    """Return ``value`` as a float after checking it is a number in the accepted range.

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
    bound = "" if minimum is None else (f" > {minimum:g}" if strict else f" >= {minimum:g}")
    accepted = f"a number{bound}" + (" (inf allowed)" if allow_inf else " (finite)")
    if isinstance(value, bool) or not isinstance(value, Real):
        raise ConfigError(f"{name} must be {accepted}, got {value!r}")
    x = float(value)
    if math.isnan(x) or (math.isinf(x) and not (allow_inf and x > 0)):
        raise ConfigError(f"{name} must be {accepted}, got {value!r}")
    if minimum is not None and (x < minimum or (strict and x == minimum)):
        raise ConfigError(f"{name} must be {accepted}, got {value!r}")
    return x


def check_choice(name: str, value: object, choices: tuple[str, ...]) -> str:
    """Return ``value`` if it is one of ``choices``, else raise ``ConfigError``."""
    if value not in choices:
        raise ConfigError(f"{name} must be one of {', '.join(choices)}; got {value!r}")
    return str(value)
