"""Command-line flags built from an experiment's ``Options`` fields (one declaration per option).

Each field declared with :func:`~bayes_slr.experiments.base.option` becomes one flag whose name,
type, accepted values, default and help come from the field, so the command line and the
public API cannot disagree. Flags are parsed with ``argparse.SUPPRESS`` defaults: only the
options typed on the command line reach the ``Options`` constructor, which fills in its own
defaults (and can tell a typed value from a default, e.g. to refuse a flag that contradicts a
data file).
"""

from __future__ import annotations

import argparse
import math
import sys
import types
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any, NoReturn

from bayes_slr.experiments.base import Options, option_spec


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command (exit 2), not the usage
    block."""

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` and a pointer to ``--help``, then exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")

    def parse_args(self, args: Any = None, namespace: Any = None) -> argparse.Namespace:
        """Parse ``args``; a word no parser knows is refused by the command it was given to
        (``bayes-slr theory: error: unrecognized arguments: --heads 2``, pointing to that
        command's ``--help``), not by the top level."""
        parsed, extras = self.parse_known_args(args, namespace)
        if extras:
            self.command_parser(getattr(parsed, "command", None)).error(
                f"unrecognized arguments: {' '.join(extras)}"
            )
        return parsed

    def command_parser(self, command: str | None) -> argparse.ArgumentParser:
        """The parser of subcommand ``command`` (this parser when there is none)."""
        for action in self._actions:
            if isinstance(action, argparse._SubParsersAction) and command in action.choices:
                return action.choices[command]
        return self


def number(text: str) -> float:
    """Parse a real number; ``inf`` is accepted (the options say where), ``nan`` is not."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("expected a number, got nan")
    return value


def integer(text: str) -> int:
    """Parse an integer, written as one or as a whole number (``1e3``, ``10.0``), as the Python
    API accepts it."""
    try:
        return int(text)
    except ValueError:
        pass
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not value.is_integer():
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}")
    return int(value)


PARSERS: dict[type, Any] = {int: integer, float: number, str: str, Path: Path}
"""How one command-line word becomes a value of each field type."""


def flag_name(name: str) -> str:
    """The flag of option ``name``: ``N_test`` -> ``--N-test``."""
    return "--" + name.replace("_", "-")


def _deprecated(action_class: type[argparse.Action], flag: str) -> type[argparse.Action]:
    """``action_class`` that prints a one-line notice when reached through an old flag name."""

    class Deprecated(action_class):  # type: ignore[misc, valid-type]
        def __call__(self, parser, namespace, values, option_string=None):  # noqa: ANN001
            if option_string is not None and option_string != flag:
                print(
                    f"{parser.prog}: note: {option_string} is now {flag}; the old name will be "
                    "removed in the next release",
                    file=sys.stderr,
                )
            super().__call__(parser, namespace, values, option_string)

    return Deprecated


class ArgumentKeywords(typing.TypedDict, total=False):
    """The keywords of ``add_argument`` a flag is given."""

    action: str | type[argparse.Action]
    type: Callable[[str], Any]
    nargs: str
    choices: tuple[str, ...]
    help: str
    metavar: str


def _argument(
    annotation: Any, default: Any, choices: tuple[str, ...] | None, parse: Any
) -> ArgumentKeywords:
    """``add_argument`` keywords for a field of type ``annotation``."""
    arguments = typing.get_args(annotation)
    if isinstance(annotation, types.UnionType) and type(None) in arguments:
        annotation = next(a for a in arguments if a is not type(None))
        arguments = typing.get_args(annotation)
    if annotation is bool:
        if default is None or default:  # None: the value comes from elsewhere unless given
            return {"action": argparse.BooleanOptionalAction}
        return {"action": "store_true"}
    nargs = None
    if typing.get_origin(annotation) is tuple:
        nargs, annotation = "+", arguments[0]
    keywords = ArgumentKeywords(action="store", type=parse or PARSERS[annotation])
    if nargs:
        keywords["nargs"] = nargs
    if choices is not None:
        keywords["choices"] = choices
    return keywords


def add_option_flags(parser: argparse.ArgumentParser, options_type: type[Options]) -> dict:
    """Add one flag per command-line option of ``options_type``; return ``{name: flag}``."""
    types_ = options_type.field_types()
    flags = {}
    for field in options_type.option_fields():
        spec = option_spec(field)
        if not spec.cli:
            continue
        flag = spec.flag or flag_name(field.name)
        keywords = _argument(types_[field.name], field.default, spec.choice_names(), spec.parse)
        action = keywords.pop("action")
        action_class = parser._registry_get("action", action, action)
        shown = spec.stated_default(field.default)
        keywords["help"] = f"{spec.help_text()} (default: {shown})".replace("%", "%%")
        if isinstance(field.default, bool) and not field.default:
            keywords["help"] = spec.help_text().replace("%", "%%")
        if spec.metavar is not None:
            keywords["metavar"] = spec.metavar
        parser.add_argument(
            flag,
            *spec.aliases,
            dest=field.name,
            default=argparse.SUPPRESS,
            action=_deprecated(action_class, flag) if spec.aliases else action_class,
            **keywords,
        )
        flags[field.name] = flag
    return flags


def given_options(namespace: argparse.Namespace, flags: dict[str, str]) -> dict[str, Any]:
    """The options typed on the command line (lists as tuples), by field name."""
    given = {}
    for name in flags:
        if hasattr(namespace, name):
            value = getattr(namespace, name)
            given[name] = tuple(value) if isinstance(value, list) else value
    return given
