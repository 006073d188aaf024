"""Commands not yet moved onto the experiment objects (transitional: removed once each command is
an experiment in :mod:`bayes_slr.experiments`)."""

from __future__ import annotations

import argparse
import sys

from bayes_slr.cli import gap
from bayes_slr.cli.common import DefaultsHelpFormatter, SomePointsFailed
from bayes_slr.errors import ConfigError

MODULES = (gap,)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the legacy subcommands."""
    before = set(subparsers.choices)
    for module in MODULES:
        module.register(subparsers)
    for name in set(subparsers.choices) - before:
        subparsers.choices[name].formatter_class = DefaultsHelpFormatter


def explicit_options(parser: argparse.ArgumentParser, argv: list[str] | None) -> frozenset[str]:
    """The ``dest`` of every option typed on the command line (parsed again with every default
    suppressed)."""
    subparsers = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    for subparser in subparsers.choices.values():
        subparser._defaults.clear()
        for action in subparser._actions:
            action.default = argparse.SUPPRESS
    return frozenset(vars(parser.parse_args(argv))) - {"command"}


def run(args: argparse.Namespace, explicit: frozenset[str]) -> int:
    """Run a legacy command; its exit code."""
    from bayes_slr.jax_setup import enable_compilation_cache

    args.explicit = explicit
    enable_compilation_cache()
    try:
        args.run(args)
    except ConfigError as exc:
        print(f"bayes-slr {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except SomePointsFailed as exc:
        print(f"bayes-slr {args.command}: {exc}", file=sys.stderr)
        return 3
    return 0
