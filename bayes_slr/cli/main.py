"""Entry point of the ``bayes-slr`` command line."""

from __future__ import annotations

import argparse
import sys

from bayes_slr import __version__
from bayes_slr.cli import amp, bayes_risk, gap, posterior, simulate, theory
from bayes_slr.cli.common import DefaultsHelpFormatter, OneLineErrorParser
from bayes_slr.errors import ConfigError
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.records import PointFailed, SomePointsFailed

SUBCOMMANDS = (simulate, bayes_risk, gap, posterior, theory, amp)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = OneLineErrorParser(
        prog="bayes-slr",
        description="Bayes-optimality checks for attention on single-location regression.",
        formatter_class=DefaultsHelpFormatter,
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.register(subparsers)
    for subparser in subparsers.choices.values():
        subparser.formatter_class = DefaultsHelpFormatter
    return parser


def explicit_options(argv: list[str] | None) -> frozenset[str]:
    """The ``dest`` of every option given on the command line (not filled from a default).

    ``argv`` is parsed again by a parser whose defaults are all suppressed, so whatever it
    returns was typed (abbreviations and ``--opt=value`` included).
    """
    parser = build_parser()
    subparsers = next(
        action for action in parser._actions if isinstance(action, argparse._SubParsersAction)
    )
    for subparser in subparsers.choices.values():
        subparser._defaults.clear()
        for action in subparser._actions:
            action.default = argparse.SUPPRESS
    return frozenset(vars(parser.parse_args(argv))) - {"command"}


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the subcommand.

    Exit codes: 0 success, 2 bad input (one message on stderr, nothing written), 3 a sweep
    finished with failed points (the others are kept), 130 interrupted (finished points kept).
    """
    parser = build_parser()
    args = parser.parse_args(argv)
    args.explicit = explicit_options(argv)
    enable_compilation_cache()
    try:
        args.run(args)
    except ConfigError as exc:
        print(f"bayes-slr {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except (SomePointsFailed, PointFailed) as exc:
        print(f"bayes-slr {args.command}: {exc}", file=sys.stderr)
        return 3
    except KeyboardInterrupt as exc:
        print(
            f"bayes-slr {args.command}: {exc or 'interrupted; no result written'}", file=sys.stderr
        )
        return 130
    return 0


if __name__ == "__main__":
    sys.exit(main())
