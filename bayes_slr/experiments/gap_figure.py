"""The figure of ``gap``: error against ``L`` per activation, with the Bayes error and the oracle.

One panel per (variant, ``nu``). Population optima are lines (one marker and dash style per
activation, half transparent so that coinciding curves, softmax on Bayes, stay visible); ERM
test errors are open markers with standard-error bars, shifted slightly along ``L`` per
activation so that they do not hide each other; the oracle is black crosses. A value above the
axis (:data:`YMAX`) is drawn at the top edge with an arrow and its value, and only then does the
panel's title mention arrows. Legends sit below the panels, off the data. Matplotlib is imported
only when a new figure is made.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.experiments.gap_records import GapOptions
from bayes_slr.experiments.task import describe_nu
from bayes_slr.studies.gap_rows import GapRow

YMAX = 1.05
"""Top of the axis: values above it are drawn at the edge with an arrow and their value."""
STYLES = {
    "softmax": ("o", "-"),
    "linear": ("s", "--"),
    "erf": ("^", "-."),
    "softplus": ("D", ":"),
}
"""Marker and line style per activation (others: circles and solid lines)."""
ORACLE_LABEL = "oracle (teachers' own Bayes predictor)"
"""The oracle: each teacher's Bayes predictor with known directions, on the ERM test sequences."""
BAYES_LABEL = "Bayes (population)"
"""The population Bayes error (``D, alpha -> inf``)."""
YMIN = -0.02
"""Bottom of the axis, a little below 0 so that errors of 0 (max-SLR at ``nu = inf``) show."""


def draw_gap(options: GapOptions, rows: Sequence[GapRow], ax: Any = None) -> Any:
    """Draw a result's ``rows`` (see :meth:`~bayes_slr.experiments.gap.GapResult.plot`): on
    ``ax``, one axes per (variant, ``nu``) setting, or on a new figure whose title states the ERM
    settings of ``options``. Returns the axes (an array of them when there are several
    settings)."""
    settings = list(dict.fromkeys((row.variant, row.nu) for row in rows))
    axes = _panels(ax, len(settings))
    for panel, setting in zip(axes, settings):
        _draw_panel(panel, [row for row in rows if (row.variant, row.nu) == setting], options)
    if ax is None and options.runs_erm:
        axes[0].figure.suptitle(erm_settings_line(options), fontsize=8)
    return axes[0] if len(axes) == 1 else np.array(axes)


def _panels(ax: Any, count: int) -> list[Any]:
    """The axes to draw ``count`` panels on: ``ax`` (one or a sequence), or a new figure's."""
    if ax is None:
        import matplotlib.pyplot as plt

        _, axes = plt.subplots(
            1, count, figsize=(5.8 * count, 5.6), squeeze=False, layout="constrained"
        )
        return list(axes[0])
    axes = list(np.ravel(ax))
    if len(axes) != count:
        raise ConfigError(
            f"plot: the result has {count} (variant, nu) setting(s): give as many axes, got "
            f"{len(axes)}"
        )
    return axes


def _draw_panel(ax: Any, rows: list[GapRow], options: GapOptions) -> None:
    """One (variant, ``nu``) panel: every activation, the references, the labels."""
    Ls = np.array([row.L for row in rows], float)
    clipped = False
    for index, activation in enumerate(options.activations):
        shift = 1.0 + 0.02 * (index - (len(options.activations) - 1) / 2)
        clipped |= _draw_activation(ax, Ls, rows, activation, shift, options.runs_erm)
    _draw_references(ax, Ls, rows)
    ax.set_xscale("log")
    ax.set_xticks(Ls, [f"{L:g}" for L in Ls])
    ax.minorticks_off()
    title = f"{rows[0].variant}-SLR, nu = {describe_nu(rows[0].nu)}"
    if clipped:
        title += f"\narrows: values above {YMAX:g}, with their value"
    ax.set(
        xlabel="L ~ U{1..Lbar}" if rows[0].variable_length else "L",
        ylabel="excess test error",
        title=title,
        ylim=(YMIN, YMAX),
    )
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, ncol=2, loc="upper center", bbox_to_anchor=(0.5, -0.15), frameon=False)


def _draw_activation(
    ax: Any, Ls: np.ndarray, rows: list[GapRow], activation: str, shift: float, erm: bool
) -> bool:
    """The population line of ``activation`` and, with ``erm``, its ERM errors (shifted along
    ``L`` by the factor ``shift``); whether a value was above the axis."""
    marker, dash = STYLES.get(activation, ("o", "-"))
    values = np.array([row.population.get(activation, np.nan) for row in rows])
    (line,) = ax.plot(
        Ls,
        np.minimum(values, YMAX),
        marker=marker,
        ls=dash,
        ms=4,
        lw=1.6,
        alpha=0.75,
        label=f"{activation} (population)",
        zorder=3,
    )
    color = line.get_color()
    clipped = _mark_clipped(ax, Ls, values, color)
    if not erm:
        return clipped
    parts = [row.erm_of(activation) for row in rows]
    errors = np.array([np.nan if part is None else part.test_error for part in parts])
    stderrs = np.array([np.nan if part is None else part.stderr for part in parts])
    inside = errors <= YMAX
    ax.errorbar(
        Ls[inside] * shift,
        errors[inside],
        yerr=stderrs[inside],
        fmt=marker,
        mfc="none",
        color=color,
        capsize=2,
        ms=6,
        zorder=4,
        label=f"{activation} ERM",
    )
    return _mark_clipped(ax, Ls * shift, errors, color) or clipped


def _draw_references(ax: Any, Ls: np.ndarray, rows: list[GapRow]) -> None:
    """The population Bayes error (dashed) and, where there is one, the oracle (crosses)."""
    bayes = np.array([np.nan if row.bayes is None else row.bayes for row in rows])
    ax.plot(Ls, bayes, "k--", lw=1.2, label=BAYES_LABEL, zorder=5)
    oracle = [(L, row.oracle) for L, row in zip(Ls, rows) if row.oracle is not None]
    if oracle:
        ax.errorbar(
            [L for L, _ in oracle],
            [estimate.value for _, estimate in oracle],
            yerr=[estimate.stderr for _, estimate in oracle],
            fmt="kx",
            capsize=2,
            ms=6,
            zorder=6,
            label=ORACLE_LABEL,
        )


def _mark_clipped(ax: Any, xs: np.ndarray, values: np.ndarray, color: str) -> bool:
    """An arrow at the top of the axis, labelled with the value, for each value above
    :data:`YMAX`; whether there was one."""
    clipped = False
    for x, value in zip(xs, values):
        if np.isfinite(value) and value > YMAX:
            ax.annotate(
                f"{value:.2f}",
                xy=(x, YMAX),
                xytext=(x, YMAX - 0.12),
                color=color,
                fontsize=7,
                ha="center",
                arrowprops={"arrowstyle": "->", "color": color},
                zorder=6,
            )
            clipped = True
    return clipped


def erm_settings_line(options: GapOptions) -> str:
    """The ERM settings, as the figure's title states them."""
    lam = "auto (held-out validation)" if options.lam == "auto" else f"{options.lam:g}"
    data = "" if options.data is None else f", data {Path(options.data).name}"
    return (
        f"ERM: alpha = {options.training_ratio():g}, D = {options.D}, lam = {lam}, "
        f"Delta = {options.Delta:g}{data},\n{options.seeds} seed{'s' * (options.seeds > 1)} x "
        f"{options.starts} random start{'s' * (options.starts > 1)} (lowest training loss), "
        f"{options.optimizer}"
    )
