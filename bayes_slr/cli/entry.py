"""The ``bayes-slr`` console script: everything, imports included, inside one Ctrl-C handler."""

from __future__ import annotations

import sys


def run() -> None:
    """Run the command line and exit with its code (130 when interrupted, even while starting)."""
    from bayes_slr.interrupts import interrupt_guard, raise_if_interrupted

    try:
        with interrupt_guard():  # an interrupt swallowed while importing still counts
            from bayes_slr.cli.main import main

            raise_if_interrupted()
        code = main()
    except KeyboardInterrupt:
        print("bayes-slr: interrupted; nothing written", file=sys.stderr)
        code = 130
    sys.exit(code)
