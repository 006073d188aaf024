"""Figures written by the command line (Matplotlib, headless)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402


def plot_gap(rows: list[dict[str, Any]], path: Path) -> None:
    """Error against ``L`` (log axis) per activation with the Bayes curve, one panel per (variant, nu).

    ERM test errors, when present, are drawn as markers with standard-error bars.
    """
    settings = list(dict.fromkeys((row["variant"], row["nu"]) for row in rows))
    fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4), squeeze=False)
    for ax, (variant, nu) in zip(axes[0], settings):
        panel = [row for row in rows if (row["variant"], row["nu"]) == (variant, nu)]
        Ls = [row["L"] for row in panel]
        ax.plot(Ls, [row["bayes"] for row in panel], "k--", lw=1.5, label="Bayes", zorder=5)
        for activation in panel[0]["population"]:
            line, = ax.plot(Ls, [row["population"][activation] for row in panel], "o-", ms=3, label=activation)
            if "erm" in panel[0]:
                ax.errorbar(
                    Ls,
                    [row["erm"][activation]["test_error"] for row in panel],
                    yerr=[row["erm"][activation]["stderr"] for row in panel],
                    fmt="s",
                    mfc="none",
                    color=line.get_color(),
                    capsize=2,
                )
        ax.set_xscale("log")
        length = "L ~ U{1..Lbar}" if panel[0]["variable_length"] else "L"
        nu_text = "inf" if math.isinf(nu) else f"{nu:g}"
        ax.set(xlabel=length, ylabel="excess test error", title=f"{variant}-SLR, nu = {nu_text}", ylim=(0, 1.05))
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)


def plot_bayes_risk(rows: list[dict[str, Any]], path: Path) -> None:
    """Bayes error against ``nu``, one curve per ``L``, with standard-error bars (``bayes-slr bayes-risk``).

    Rows with ``nu = inf`` cannot sit on the axis; they are left out and the title says so.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for L in dict.fromkeys(row["L"] for row in rows):
        curve = sorted((row for row in rows if row["L"] == L and math.isfinite(row["nu"])), key=lambda r: r["nu"])
        label = f"L ~ U{{1..{L}}}" if curve and curve[0]["variable_length"] else f"L = {L}"
        ax.errorbar([r["nu"] for r in curve], [r["bayes_error"] for r in curve],
                    yerr=[r["stderr"] for r in curve], fmt="o-", ms=3, capsize=2, label=label)
    title = f"{rows[0]['variant']}-SLR Bayes error ({rows[0]['method']})"
    if any(math.isinf(row["nu"]) for row in rows):
        title += ", nu = inf not shown"
    ax.set(xlabel="nu", ylabel="Bayes error (excess over noise)", title=title, ylim=(0, 1.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)
