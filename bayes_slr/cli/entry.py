"""The ``bayes-slr`` console script: everything, imports included, inside one Ctrl-C handler."""

from __future__ import annotations

import sys


def run() -> None:
    """Run the command line and exit with its code (130 when interrupted, even while starting)."""
    try:
        from bayes_slr.cli.main import main

        code = main()
    except KeyboardInterrupt:
        print("bayes-slr: interrupted; nothing written", file=sys.stderr)
        code = 130
    sys.exit(code)
