"""Entry point of the ``bayes-slr`` command line."""

from __future__ import annotations

import argparse
import sys

from bayes_slr.cli import amp, bayes_risk, gap, posterior, simulate, theory
from bayes_slr.errors import ConfigError
from bayes_slr.jax_setup import enable_compilation_cache

SUBCOMMANDS = (simulate, bayes_risk, gap, posterior, theory, amp)


def build_parser() -> argparse.ArgumentParser:
    """The top-level parser with every subcommand registered."""
    parser = argparse.ArgumentParser(
        prog="bayes-slr", description="Bayes-optimality checks for attention on single-location regression."
    )
    subparsers = parser.add_subparsers(dest="command", required=True)
    for module in SUBCOMMANDS:
        module.register(subparsers)
    return parser


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv``, run the subcommand; bad input exits 2 with one message on stderr."""
    parser = build_parser()
    args = parser.parse_args(argv)
    enable_compilation_cache()
    try:
        args.run(args)
    except ConfigError as exc:
        print(f"bayes-slr {args.command}: error: {exc}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
