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
    if code == 130:  # the interrupt was handled, wherever it came
        _forget_unhandled_keyboard_interrupt()
    sys.exit(code)


def _forget_unhandled_keyboard_interrupt() -> None:
    """Clear CPython's record of an interrupt that left a string ``exec``, once it is handled.

    When a ``KeyboardInterrupt`` ends code run by ``exec`` or ``eval`` of a string (the
    ``PyRun_String`` path, which ``dataclasses`` and other libraries use to build functions while
    importing), CPython sets a runtime flag as if the interrupt were unhandled, even though a
    caller catches it. Under ``python -m`` the interpreter checks that flag at exit and kills
    itself with SIGINT, so the exit code 130 would be lost (the parent sees -2). Every string
    ``exec`` clears the flag when it starts, so a harmless one clears it here.
    """
    exec("pass", {})
