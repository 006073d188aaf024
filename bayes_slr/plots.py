"""Figures written by the command line (Matplotlib, headless)."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import matplotlib
import numpy as np

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

from bayes_slr.models.spec import SLRConfig  # noqa: E402


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


ORACLE_LABEL = "known-direction (oracle) error of this teacher"


def posterior_sweep_figure(
    rows: list[dict[str, Any]], config: SLRConfig, erm_activations: tuple[str, ...]
) -> plt.Figure:
    """Bayes-optimal test error against alpha with ERM, the teacher's known-direction (oracle) error
    (its
    ``alpha -> inf`` limit at this ``D``, with a standard-error band) and the two population-level
    limits
    (population Bayes, prior predictive)."""
    alphas = np.array([row["alpha"] for row in rows], dtype=float)
    figure, ax = plt.subplots(figsize=(6, 4))
    ax.errorbar(
        alphas,
        [row["bayes_test_error"] for row in rows],
        yerr=[row["stderr"] for row in rows],
        fmt="o-",
        color="k",
        capsize=2,
        label="Bayes-optimal (posterior mean)",
    )
    if all(row["erm"] for row in rows):
        for activation in erm_activations:
            ax.errorbar(
                alphas,
                [row["erm"][activation]["test_error"] for row in rows],
                yerr=[row["erm"][activation]["stderr"] for row in rows],
                fmt="s--",
                mfc="none",
                capsize=2,
                label=f"ERM {activation}",
            )
    oracle = [row["oracle_error"] for row in rows if "oracle_error" in row]
    if (
        oracle
    ):  # one teacher (the seed's) and one test set for every alpha: the same value in every row
        value, stderr = (
            float(np.mean([o["value"] for o in oracle])),
            float(np.mean([o["stderr"] for o in oracle])),
        )
        ax.axhline(value, color="C3", ls="-.", label=ORACLE_LABEL)
        ax.axhspan(value - stderr, value + stderr, color="C3", alpha=0.15, lw=0)
    ax.axhline(
        rows[0]["population_bayes_error"],
        color="k",
        ls=":",
        label="population Bayes (alpha -> inf)",
    )
    ax.axhline(
        float(np.mean([row["prior_predictive_error"]["value"] for row in rows])),
        color="grey",
        ls=":",
        label="prior predictive (alpha -> 0)",
    )
    ax.set_xscale("log")
    ax.set_xlabel("alpha = N / D")
    ax.set_ylabel("excess test error")
    nu = "inf" if math.isinf(config.nu) else f"{config.nu:g}"
    ax.set_title(
        f"{config.variant}, D={config.D}, {config.length.describe()}, nu={nu}, "
        f"Delta={config.Delta:g}"
    )
    ax.legend(fontsize=8)
    figure.tight_layout()
    return figure


def plot_posterior_sweep(
    rows: list[dict[str, Any]], config: SLRConfig, path: Path, erm_activations: tuple[str, ...]
) -> None:
    """Write :func:`posterior_sweep_figure` as PNG."""
    figure = posterior_sweep_figure(rows, config, erm_activations)
    figure.savefig(path, format="png")
    plt.close(figure)


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
