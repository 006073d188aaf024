"""Shared figure helpers: one new figure per plot, written atomically as an image.

Matplotlib is imported inside these functions (with the non-interactive Agg backend when no
backend was chosen), so experiment modules import without it.
"""

from __future__ import annotations

import math
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from bayes_slr.records import atomic_write, check_suffix


def new_axes(ax: Any = None, *, size: tuple[float, float] = (6.4, 4.4)) -> Any:
    """``ax`` if given, else the axes of a new figure of ``size`` inches."""
    if ax is not None:
        return ax
    import matplotlib.pyplot as plt

    _, ax = plt.subplots(figsize=size, constrained_layout=True)
    return ax


def plot_formats() -> tuple[str, ...]:
    """The suffixes of the image formats matplotlib writes (``.png`` first)."""
    from matplotlib.backend_bases import FigureCanvasBase

    formats = FigureCanvasBase.get_supported_filetypes()
    return (".png", *(f".{name}" for name in formats if name != "png"))


def check_plot_file(path: str | Path, name: str = "plot") -> None:
    """Refuse (``ConfigError`` naming ``name``) an image path whose suffix is not a format
    matplotlib writes: called before any work."""
    check_suffix(path, plot_formats(), "matplotlib writes", name=name)


def save_figure(draw: Callable[[Any], Any], path: str | Path) -> Path:
    """Call ``draw(None)`` (which makes a new figure and returns its axes, or an array of them),
    write the figure to ``path`` (format from the suffix) atomically, and close it (a suffix
    that is not an image format is refused before drawing: :func:`check_plot_file`)."""
    check_plot_file(path, "path")
    import matplotlib

    if "matplotlib.pyplot" not in sys.modules:
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    ax = draw(None)
    figure = ax.figure if hasattr(ax, "figure") else ax.flat[0].figure  # one axes or an array
    try:
        atomic_write(path, lambda tmp: figure.savefig(tmp, dpi=120, format=Path(path).suffix[1:]))
    finally:
        plt.close(figure)
    return Path(path)


def alpha_axis(ax: Any, alphas: Any) -> None:
    """A log ``alpha = N / D`` axis spanning ``alphas``, ticked at those values with plain
    numbers (no overlapping minor labels)."""
    from matplotlib.ticker import FixedLocator, FormatStrFormatter, NullFormatter

    values = sorted({float(a) for a in alphas})
    ax.set_xscale("log")
    ax.set_xlim(values[0] / 1.5, values[-1] * 1.5)
    ticks = [values[0]]
    for value in values[1:]:  # labels closer than a tenth of a decade would overlap
        if math.log10(value / ticks[-1]) >= 0.1:
            ticks.append(value)
    ax.xaxis.set_major_locator(FixedLocator(ticks))
    ax.xaxis.set_major_formatter(FormatStrFormatter("%g"))
    ax.xaxis.set_minor_formatter(NullFormatter())
    ax.set_xlabel("alpha = N / D")


def mark_unconverged(ax: Any, rows: Any, colour: str, label: str) -> None:
    """Hollow markers at ``(alpha, test_error)`` of the rows that did not converge (each row has
    ``alpha``, ``test_error`` and ``converged``); nothing when all converged."""
    bad = [r for r in rows if not r.converged]
    if bad:
        ax.plot(
            [r.alpha for r in bad],
            [r.test_error for r in bad],
            "o",
            mfc="white",
            color=colour,
            label=label,
        )
