"""Figures written by the command line (Matplotlib, headless)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

GAP_YMAX = 1.05
GAP_STYLES = {
    "softmax": ("o", "-"),
    "linear": ("s", "--"),
    "erf": ("^", "-."),
    "softplus": ("D", ":"),
}


def _erm_settings(erm: dict[str, Any] | None) -> str:
    """One line stating the ERM settings of a gap plot."""
    if not erm:
        return ""
    lam = erm.get("lam")
    lam_text = "auto (held-out validation)" if lam == "auto" else f"{lam:g}"
    return (
        f"ERM: alpha = {erm['alpha']:g}, D = {erm['D']}, lam = {lam_text}, Delta = "
        f"{erm.get('Delta', 0.0):g},\n"
        f"{erm['seeds']} seeds x {erm.get('starts', 1)} random starts (lowest training loss), "
        f"{erm.get('optimizer', 'lbfgs')}"
    )


def plot_gap(rows: list[dict[str, Any]], path: Path, *, erm: dict[str, Any] | None = None) -> None:
    """Error against ``L`` (log axis) per activation with the Bayes curve, one panel per (variant,
    nu).

    Population optima are lines (one marker and dash style per activation, drawn half
    transparent so that coinciding curves, softmax on Bayes, stay visible); ERM test errors,
    when present, are open markers with standard-error bars, shifted slightly along ``L``
    per activation so that they do not hide each other. Values above the axis (``1.05``)
    are drawn as an arrow at the top edge with their value: clipped, not hidden. The
    title states the ERM settings (``erm``: the options of the run).
    """
    settings = list(dict.fromkeys((row["variant"], row["nu"]) for row in rows))
    fig, axes = plt.subplots(1, len(settings), figsize=(5.5 * len(settings), 4.4), squeeze=False)
    for ax, (variant, nu) in zip(axes[0], settings):
        panel = [row for row in rows if (row["variant"], row["nu"]) == (variant, nu)]
        Ls = np.array([row["L"] for row in panel], float)
        activations = list(panel[0]["population"])
        for index, activation in enumerate(activations):
            marker, dash = GAP_STYLES.get(activation, ("o", "-"))
            values = np.array([row["population"][activation] for row in panel])
            (line,) = ax.plot(
                Ls,
                np.minimum(values, GAP_YMAX),
                marker=marker,
                ls=dash,
                ms=4,
                lw=1.6,
                alpha=0.75,
                label=activation,
                zorder=3,
            )
            color = line.get_color()
            _mark_clipped(ax, Ls, values, color)
            if "erm" in panel[0]:
                shift = 1.0 + 0.02 * (index - (len(activations) - 1) / 2)
                errors = np.array([row["erm"][activation]["test_error"] for row in panel])
                stderrs = np.array([row["erm"][activation]["stderr"] for row in panel])
                inside = errors <= GAP_YMAX
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
                _mark_clipped(ax, Ls * shift, errors, color)
        ax.plot(Ls, [row["bayes"] for row in panel], "k--", lw=1.2, label="Bayes", zorder=5)
        ax.set_xscale("log")
        ax.set_xticks(Ls, [f"{L:g}" for L in Ls])
        ax.minorticks_off()
        length = "L ~ U{1..Lbar}" if panel[0]["variable_length"] else "L"
        nu_text = "inf" if math.isinf(nu) else f"{nu:g}"
        ax.set(
            xlabel=length,
            ylabel="excess test error",
            title=f"{variant}-SLR, nu = {nu_text}",
            ylim=(0, GAP_YMAX),
        )
        ax.grid(alpha=0.3)
        ax.legend(fontsize=7, ncol=2)
    settings_line = _erm_settings(erm)
    if settings_line:
        fig.suptitle(settings_line + "; arrows: values above the axis", fontsize=8)
    fig.tight_layout(rect=(0, 0, 1, 0.92) if settings_line else None)
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)


def _mark_clipped(ax, xs: np.ndarray, values: np.ndarray, color: str) -> None:
    """An arrow at the top of the axis, labelled with the value, for each value above
    ``GAP_YMAX``.
    """
    for x, value in zip(xs, values):
        if np.isfinite(value) and value > GAP_YMAX:
            ax.annotate(
                f"{value:.2f}",
                xy=(x, GAP_YMAX),
                xytext=(x, GAP_YMAX - 0.12),
                color=color,
                fontsize=7,
                ha="center",
                arrowprops={"arrowstyle": "->", "color": color},
                zorder=6,
            )


def plot_bayes_risk(rows: list[dict[str, Any]], path: Path) -> None:
    """Bayes error against ``nu``, one curve per ``L``, with standard-error bars (``bayes-slr
    bayes-risk``).

    Rows with ``nu = inf`` cannot sit on the axis; they are left out and the title says so.
    """
    fig, ax = plt.subplots(figsize=(5.5, 4))
    for L in dict.fromkeys(row["L"] for row in rows):
        curve = sorted(
            (row for row in rows if row["L"] == L and math.isfinite(row["nu"])),
            key=lambda r: r["nu"],
        )
        label = f"L ~ U{{1..{L}}}" if curve and curve[0]["variable_length"] else f"L = {L}"
        ax.errorbar(
            [r["nu"] for r in curve],
            [r["bayes_error"] for r in curve],
            yerr=[r["stderr"] for r in curve],
            fmt="o-",
            ms=3,
            capsize=2,
            label=label,
        )
    title = f"{rows[0]['variant']}-SLR Bayes error ({rows[0]['method']})"
    if any(math.isinf(row["nu"]) for row in rows):
        title += ", nu = inf not shown"
    ax.set(xlabel="nu", ylabel="Bayes error (excess over noise)", title=title, ylim=(0, 1.05))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)


def plot_theory_curves(rows: list[dict[str, Any]], path: Path, *, title: str = "") -> None:
    """Test error against alpha: theory lines per (estimator, init), unconverged points hollow,
    RS-unstable ERM points crossed; simulation rows as error bars in the line's colour."""
    fig, ax = plt.subplots(figsize=(6, 4))
    colours = {}
    theory = [r for r in rows if r["source"] == "theory"]
    simulated = [r for r in rows if r["source"] == "simulation"]
    for name in dict.fromkeys((r["estimator"], r["init"]) for r in theory):
        curve = sorted(
            (r for r in theory if (r["estimator"], r["init"]) == name), key=lambda r: r["alpha"]
        )
        (line,) = ax.plot(
            [r["alpha"] for r in curve],
            [r["test_error"] for r in curve],
            "-o",
            ms=3,
            label=" ".join(name) + " (theory)",
        )
        colours.setdefault(name[0], line.get_color())
        bad = [r for r in curve if not r["converged"]]
        ax.plot(
            [r["alpha"] for r in bad],
            [r["test_error"] for r in bad],
            "o",
            mfc="white",
            color=line.get_color(),
        )
        unstable = [r for r in curve if r["diagnostics"].get("rs_stable") is False]
        ax.plot(
            [r["alpha"] for r in unstable],
            [r["test_error"] for r in unstable],
            "x",
            ms=9,
            color=line.get_color(),
        )
    for estimator in dict.fromkeys(r["estimator"] for r in simulated):
        sims = sorted(
            (r for r in simulated if r["estimator"] == estimator), key=lambda r: r["alpha"]
        )
        ax.errorbar(
            [r["alpha"] for r in sims],
            [r["test_error"] for r in sims],
            [r["diagnostics"]["stderr"] for r in sims],
            fmt="s",
            mfc="none",
            capsize=2,
            color=colours.get(estimator),
            label=f"{estimator} L-BFGS",
        )
    _save_against_alpha(fig, ax, path, title)


def _save_against_alpha(fig: plt.Figure, ax: plt.Axes, path: Path, title: str) -> None:
    """Finish an error-against-alpha figure (log axis, labels, legend) and write it as PNG."""
    ax.set_xscale("log")
    ax.set_xlabel("alpha = N / D")
    ax.set_ylabel("excess test error")
    ax.set_title(title)
    ax.legend(fontsize=7)
    fig.tight_layout()
    fig.savefig(path, format="png", dpi=120)
    plt.close(fig)


def plot_amp_points(rows: list[dict[str, Any]], path: Path, *, title: str = "") -> None:
    """AMP test error against alpha (mean over seeds, error bars: spread of the mean) with the
    state evolution's Bayes error; unconverged runs drawn hollow."""
    fig, ax = plt.subplots(figsize=(6, 4))
    alphas = sorted({r["alpha"] for r in rows})
    means, errors = [], []
    for alpha in alphas:
        values = np.array([r["test_error"] for r in rows if r["alpha"] == alpha])
        means.append(values.mean())
        errors.append(
            values.std(ddof=1) / math.sqrt(values.size)
            if values.size > 1
            else next(r["stderr"] for r in rows if r["alpha"] == alpha)
        )
    ax.errorbar(
        alphas, means, errors, fmt="s", mfc="none", capsize=2, label=f"AMP, D = {rows[0]['D']}"
    )
    bad = [r for r in rows if not r["converged"]]
    if bad:
        ax.plot(
            [r["alpha"] for r in bad],
            [r["test_error"] for r in bad],
            "o",
            mfc="white",
            color="C3",
            label="not converged",
        )
    theory = {
        r["alpha"]: r["state_evolution"]["test_error"] for r in rows if "state_evolution" in r
    }
    if theory:
        ax.plot(
            sorted(theory), [theory[a] for a in sorted(theory)], "k-", lw=1, label="state evolution"
        )
    _save_against_alpha(fig, ax, path, title)
