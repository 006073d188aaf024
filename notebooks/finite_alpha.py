# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#       format_version: '1.3'
#       jupytext_version: 1.19.6
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Test error against alpha in the high-dimensional limit (replica theory vs simulation)
#
# `L = 3`; spiked `nu = 1`, spiked `nu = 2`, max `nu = inf`. Lines: the Bayes-optimal
# state evolution (docs/theory.md, part B) from an informed and an uninformed start, and
# the replica-symmetric ERM equations (part A) for softmax and linear attention with
# ridge `lam = 1`. Markers: L-BFGS ERM from random starts at fixed `sqrt(N D)`
# (`D = size / sqrt(alpha)`), mean and standard error over independent teachers.
# Thin horizontal lines: population values (docs/model.md sections 2 and 4), the
# `alpha -> inf` limits.
#
# Why `lam = 1`: at `lam = 0.1` and below, the RS fixed point of linear attention is
# replica-symmetry broken (replicon > 1) and its numbers depend on the Monte Carlo draws;
# see docs/theory.md, "What is verified". Every ERM theory point reports `rs_stable`.
#
# CI runs this at a small size. Full size (about 40 minutes on 2 busy cores; resumable: finished
# points are kept in `$BAYES_SLR_FINITE_ALPHA_OUT`, one folder per setting):
# `BAYES_SLR_FULL=1 BAYES_SLR_FINITE_ALPHA_OUT=$PWD/docs/results/finite_alpha .venv/bin/jupyter
# execute --inplace notebooks/finite_alpha.ipynb`
# (from the repository root; the stored sweep in `docs/results/finite_alpha` makes this a
# re-plot in seconds, an empty folder recomputes everything).

# %%
import math
import os
from pathlib import Path

import matplotlib.pyplot as plt
from bayes_slr.experiments.theory_curve import SimulationOptions, theory_curve

from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import open_sweep_log
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.optimum import optimal_population_error

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
OUT = os.environ.get("BAYES_SLR_FINITE_ALPHA_OUT")
SETTINGS = {
    "spiked nu=1": SLRConfig("spiked", 1, LengthLaw.fixed(3), 1.0),
    "spiked nu=2": SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0),
    "max nu=inf": SLRConfig("max", 1, LengthLaw.fixed(3), math.inf),
}
ACTIVATIONS = ("softmax", "linear")
LAM = 1.0
ALPHAS = [0.25, 0.5, 1, 2, 4, 8, 16, 64] if FULL else [4]
MC = 2048 if FULL else 128
SIMULATION = (
    SimulationOptions(size=1000, seeds=5)
    if FULL
    else SimulationOptions(size=40, seeds=2, N_test=2000)
)

# %%
rows = {}
for name, config in SETTINGS.items():
    log = (
        open_sweep_log(Path(OUT) / name.replace(" ", "_").replace("=", ""), "theory.jsonl")
        if OUT
        else None
    )
    rows[name] = theory_curve(
        config,
        ACTIVATIONS,
        ALPHAS,
        lam=LAM,
        bayes=True,
        mc_samples=MC,
        simulation=SIMULATION,
        log=log,
        progress=False,
    )


def pick(name, source, estimator, init=None):
    """Rows of one curve, sorted by alpha."""
    chosen = [
        r
        for r in rows[name]
        if r["source"] == source
        and r["estimator"] == estimator
        and (init is None or r["init"] == init)
    ]
    return sorted(chosen, key=lambda r: r["alpha"])


# %% [markdown]
# ## Table: theory and simulation side by side
# `z` is (simulation - theory) / simulation standard error; `rs` is the RS stability of
# the ERM theory point (replicon < 1); `conv` whether every solver converged.

# %%
for name, config in SETTINGS.items():
    print(
        f"{name}, L=3: population Bayes {bayes_error_exact(config).value:.4f}, "
        + ", ".join(
            f"{a} optimum {optimal_population_error(a, config).error:.4f}" for a in ACTIVATIONS
        )
    )
    bayes = {init: pick(name, "theory", "bayes", init) for init in ("random", "informed")}
    print(
        "  alpha   Bayes(unin) Bayes(inf) | "
        + " | ".join(f"{a:>7s} theory   sim +- se    z  rs" for a in ACTIVATIONS)
    )
    for i, alpha in enumerate(ALPHAS):
        cells = [
            f"{alpha:6g}  {bayes['random'][i]['test_error']:10.4f} "
            f"{bayes['informed'][i]['test_error']:10.4f}"
        ]
        for a in ACTIVATIONS:
            th, sim = pick(name, "theory", a)[i], pick(name, "simulation", a)[i]
            z = (sim["test_error"] - th["test_error"]) / sim["diagnostics"]["stderr"]
            cells.append(
                f"{th['test_error']:14.4f} {sim['test_error']:6.3f} +- "
                f"{sim['diagnostics']['stderr']:.3f} "
                f"{z:+5.1f} {'y' if th['diagnostics']['rs_stable'] else 'N'}"
            )
        print(" | ".join(cells))
    unconverged = [
        (r["source"], r["estimator"], r["alpha"]) for r in rows[name] if not r["converged"]
    ]
    print("  not converged:", unconverged or "none")

# %% [markdown]
# ## Softmax below linear, and the large-alpha limits

# %%
for name, config in SETTINGS.items():
    for source in ("theory", "simulation"):
        soft, lin = pick(name, source, "softmax"), pick(name, source, "linear")
        below = [s["test_error"] < li["test_error"] for s, li in zip(soft, lin)]
        print(f"{name:12s} {source:10s} softmax below linear at every alpha: {all(below)} {below}")
    last = {a: pick(name, "theory", a)[-1]["test_error"] for a in ACTIVATIONS}
    print(
        f"{name:12s} theory at alpha={ALPHAS[-1]:g}: "
        + ", ".join(
            f"{a} {last[a]:.4f} (population {optimal_population_error(a, config).error:.4f})"
            for a in ACTIVATIONS
        )
        + f", Bayes {pick(name, 'theory', 'bayes', 'random')[-1]['test_error']:.4f} "
        f"(population {bayes_error_exact(config).value:.4f})"
    )

# %%
fig, axes = plt.subplots(1, 3, figsize=(14, 4.2), sharey=True)
for ax, (name, config) in zip(axes, SETTINGS.items()):
    for init, style in (("random", "-"), ("informed", ":")):
        ax.plot(
            ALPHAS,
            [r["test_error"] for r in pick(name, "theory", "bayes", init)],
            style,
            color="k",
            label=f"Bayes theory ({init})",
        )
    ax.axhline(bayes_error_exact(config).value, color="k", lw=0.5)
    for activation, color in (("softmax", "C0"), ("linear", "C1")):
        ax.axhline(optimal_population_error(activation, config).error, color=color, lw=0.5)
        theory = pick(name, "theory", activation)
        ax.plot(
            ALPHAS,
            [r["test_error"] for r in theory],
            "-",
            color=color,
            label=f"{activation} RS theory",
        )
        unstable = [r for r in theory if not r["diagnostics"]["rs_stable"]]
        ax.plot(
            [r["alpha"] for r in unstable],
            [r["test_error"] for r in unstable],
            "x",
            color=color,
            ms=9,
        )
        sims = pick(name, "simulation", activation)
        ax.errorbar(
            ALPHAS,
            [r["test_error"] for r in sims],
            [r["diagnostics"]["stderr"] for r in sims],
            fmt="o",
            mfc="none",
            capsize=2,
            color=color,
            label=f"{activation} L-BFGS, sqrt(ND)={SIMULATION.size}",
        )
    ax.set_xscale("log")
    ax.set_title(f"{name}, L=3, lam={LAM:g}")
    ax.set_xlabel("alpha = N / D")
axes[0].set_ylabel("excess test error")
axes[0].set_ylim(-0.02, 1.15)
axes[0].legend(fontsize=7)
fig.tight_layout()
if FULL:
    fig.savefig(
        Path("..") / "docs" / "figures" / "finite_alpha.png"
        if Path.cwd().name == "notebooks"
        else Path("docs") / "figures" / "finite_alpha.png",
        dpi=110,
    )

# %% [markdown]
# Crosses mark ERM theory points whose RS fixed point is unstable (replicon >= 1): there
# the theory is not expected to describe ERM. The Bayes curves from the two starts
# coincide in all three settings (no hard phase found at `L = 3`).
