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
# # Population-level gap between attention activations and the Bayes error
#
# Exact integrals of `bayes_slr.theory` (docs/model.md sections 2 and 4): the Bayes error
# and the best population error of softmax, linear, erf and softplus attention, each
# optimised over its overlaps, as functions of the sequence length `L` (fixed, and
# uniform on `{1..Lbar}`) and of the signal strength `nu`.
#
# What to look for: softmax equals Bayes; linear falls short, and on max-SLR with
# `nu = inf` its error tends to 1 as `L` grows; erf and softplus sit in between;
# variable length hurts linear and erf but not softmax.
#
# On max-SLR with `nu = inf` softmax and softplus have no finite optimum: their value is
# the limit `|k| -> inf` (softmax: the Bayes error 0; softplus: normalised ReLU weights).
#
# CI runs a small size (two lengths, no `nu` sweep). Full size, after `make test` made the
# virtual environment (one variable, `BAYES_SLR_FULL`, for every notebook):
# `BAYES_SLR_FULL=1 .venv/bin/jupyter execute --inplace notebooks/population_gap.ipynb`

# %%
import math
import os

import matplotlib.pyplot as plt

from bayes_slr.attention.activations import activation_names
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.optimum import optimal_population_error

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
LENGTHS = (2, 3, 5, 10, 30, 100) if FULL else (2, 5)
NUS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0)
TASKS = {"spiked, nu = 2": ("spiked", 2.0), "max, nu = inf": ("max", math.inf)}


def curves(variant: str, nu: float, laws: list[LengthLaw]) -> dict[str, list[float]]:
    """Bayes error and each activation's population optimum for each length law."""
    out: dict[str, list[float]] = {"Bayes": []}
    for law in laws:
        config = SLRConfig(variant, 1, law, nu)
        out["Bayes"].append(bayes_error_exact(config).value)
        for name in activation_names():
            out.setdefault(name, []).append(optimal_population_error(name, config).error)
    return out


# %% [markdown]
# ## Error against `L`, fixed and variable length

# %%
fig, axes = plt.subplots(2, 2, figsize=(10, 7), sharex=True)
for row, (title, (variant, nu)) in enumerate(TASKS.items()):
    for col, (kind, make_law) in enumerate(
        (("fixed L", LengthLaw.fixed), ("L ~ U{1..Lbar}", LengthLaw.uniform))
    ):
        if kind != "fixed L" and variant == "max" and not FULL:
            axes[row, col].set_visible(False)
            continue
        results = curves(variant, nu, [make_law(L) for L in LENGTHS])
        print(
            title, kind, {name: [round(v, 4) for v in values] for name, values in results.items()}
        )
        for name, values in results.items():
            axes[row, col].plot(LENGTHS, values, "k--" if name == "Bayes" else "o-", label=name)
        axes[row, col].set(
            xscale="log", title=f"{title}, {kind}", xlabel="L (or Lbar)", ylabel="excess test error"
        )
axes[0, 0].legend()
fig.tight_layout()

# %% [markdown]
# ## Error against `nu` (spiked SLR, `L = 3`; full size only)

# %%
if FULL:
    by_nu: dict[str, list[float]] = {}
    for nu in NUS:
        for name, values in curves("spiked", nu, [LengthLaw.fixed(3)]).items():
            by_nu.setdefault(name, []).extend(values)
    print({name: [round(v, 4) for v in values] for name, values in by_nu.items()})
    fig, ax = plt.subplots(figsize=(5, 3.5))
    for name, values in by_nu.items():
        ax.plot(NUS, values, "k--" if name == "Bayes" else "o-", label=name)
    ax.set(xscale="log", xlabel="nu", ylabel="excess test error", title="spiked SLR, L = 3")
    ax.legend()
    fig.tight_layout()
