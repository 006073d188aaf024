"""Progress bars the ecosystem's way: ``tqdm.auto`` (a widget in a notebook, a bar on a terminal).

Every progress bar of the toolkit is made by :func:`progress_bar`. Whether bars are shown is the
run's ``progress`` argument: ``True`` shows them, ``False`` hides them, and ``None`` (the
default) shows them where someone is watching: in a Jupyter kernel (as widgets) and when stderr
is a terminal, and nowhere else (a log file, a pipe, a headless run).
"""

from __future__ import annotations

import sys
from typing import Any


def in_notebook() -> bool:
    """Whether this process is a Jupyter (IPython) kernel."""
    shell = sys.modules.get("IPython")
    if shell is None:
        return False
    ipython = shell.get_ipython()
    return ipython is not None and "IPKernelApp" in getattr(ipython, "config", {})


def show_progress(progress: bool | None) -> bool:
    """Whether to show progress bars: ``progress`` when given, else whether someone watches
    (a notebook kernel, or a terminal on stderr)."""
    if progress is not None:
        return bool(progress)
    return in_notebook() or sys.stderr.isatty()


def progress_bar(
    *, total: int, desc: str, unit: str, show: bool, initial: int = 0, leave: bool = True
) -> Any:
    """A ``tqdm.auto`` bar (a widget in a notebook), disabled unless ``show``; inner bars of a
    point pass ``leave=False`` so that they vanish when done."""
    from tqdm.auto import tqdm

    return tqdm(
        total=total,
        initial=initial,
        desc=desc,
        unit=unit,
        leave=leave,
        disable=not show,
        dynamic_ncols=True,
    )
