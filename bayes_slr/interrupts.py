"""Ctrl-C that is never lost.

Python raises ``KeyboardInterrupt`` wherever the interpreter happens to be when SIGINT arrives;
when that is inside a callback whose exceptions Python ignores (JAX's garbage-collection
callback is one), the exception is printed as "Exception ignored in ..." and dropped, and the
run would go on and write its outputs as if nothing happened. Inside :func:`interrupt_guard` the
signal also sets a flag, and :func:`raise_if_interrupted` (called between sweep points and
before any output is written) raises the interrupt again.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator


class _State:
    interrupted = False


def _on_sigint(signum: int, frame: object) -> None:
    _State.interrupted = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_guard() -> Iterator[None]:
    """Within this block SIGINT sets the interrupted flag before raising ``KeyboardInterrupt``.

    Only the main thread can install a signal handler; elsewhere the block changes nothing.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, _on_sigint)
    _State.interrupted = False
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if SIGINT arrived inside :func:`interrupt_guard`, even if the
    exception it raised then was swallowed."""
    if _State.interrupted:
        raise KeyboardInterrupt
