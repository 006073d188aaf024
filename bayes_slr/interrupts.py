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
import importlib
import signal
import threading
from collections.abc import Iterator
from types import ModuleType


class _State:
    interrupted = False


def _on_sigint(signum: int, frame: object) -> None:
    _State.interrupted = True
    raise KeyboardInterrupt


@contextlib.contextmanager
def interrupt_guard() -> Iterator[None]:
    """Within this block SIGINT sets the interrupted flag before raising ``KeyboardInterrupt``;
    the flag is cleared when the block ends (a sweep run later in the same process, e.g. in a
    notebook after an interrupted command, must not stop on an interrupt already handled).

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
        _State.interrupted = False  # dealt with inside the block; later work must not see it


def import_uninterrupted(name: str) -> ModuleType:
    """Import module ``name`` with SIGINT held back until the import has finished.

    Extension modules must not see an exception while they initialise: a ``KeyboardInterrupt``
    raised inside JAX's nanobind modules aborts the process ("Critical nanobind error", SIGABRT)
    instead of interrupting it. A SIGINT that arrives during the import is handed to the handler
    that was in place (so it interrupts as usual) as soon as the import returns. Outside the main
    thread (where no signal handler can be installed), or where SIGINT is ignored or left to the
    operating system, this is a plain import.

    Parameters
    ----------
    name : str
        The module, e.g. ``"jax"``.

    Returns
    -------
    ModuleType
        The imported module.
    """
    previous = signal.getsignal(signal.SIGINT)
    if threading.current_thread() is not threading.main_thread() or not callable(previous):
        return importlib.import_module(name)
    held: list[object] = []
    signal.signal(signal.SIGINT, lambda signum, frame: held.append(frame))
    try:
        module = importlib.import_module(name)
    finally:
        signal.signal(signal.SIGINT, previous)
    if held:
        previous(signal.SIGINT, held[0])
    return module


def raise_if_interrupted() -> None:
    """Raise ``KeyboardInterrupt`` if SIGINT arrived inside :func:`interrupt_guard`, even if the
    exception it raised then was swallowed."""
    if _State.interrupted:
        raise KeyboardInterrupt
