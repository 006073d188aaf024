# ---
# jupyter:
#   jupytext:
#     formats: ipynb,py:percent
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Bayes-optimal GAMP at finite D against its state evolution
#
# Spiked SLR, `nu = 2`, `L = 3`, `Delta = 0.1` (docs/theory.md, part C). Top: the overlaps of
# plain GAMP (damping 1, random start) against iteration, at several `D`, beside the state
# evolution's iterates from the same start (`q = 1e-3`); plain GAMP leaves the state evolution
# after about six steps (an oscillating finite-size mode), the damped, adaptive run converges to
# the fixed point (dots at the right). Bottom: test error against alpha, AMP (mean and spread
# over teachers) against the Bayes-optimal state evolution and the replica theory of ERM
# (softmax and linear attention, ridge `lam = 1`).
#
# CI runs this at a small size; full size (about an hour on 2 busy cores):
# `BAYES_SLR_FULL=1 .venv/bin/jupyter execute --inplace notebooks/amp_state_evolution.ipynb`.

# %%
import os

import jax
import matplotlib.pyplot as plt
import numpy as np

from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.inference import amp
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.theory.replica_bayes import bayes_state_evolution_history
from bayes_slr.theory.replica_erm import erm_replica_point

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
CONFIG = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
DIMENSIONS = [1000, 2000, 4000] if FULL else [300]
ALPHAS = [0.5, 1, 2, 4, 16] if FULL else [1, 4]
SEEDS = 3 if FULL else 1
SE_SAMPLES = 65536 if FULL else 4096
ERM_SAMPLES = 2048 if FULL else 128
STEPS = 8

# %% [markdown]
# ## Overlaps against iteration (alpha = 1)

# %%
start = amp.START_OVERLAP
theory = bayes_state_evolution_history(CONFIG, alpha=1.0, start=(start, start), iterations=STEPS, damping=1.0,
                                       mc_samples=SE_SAMPLES)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for column, (ax, name) in enumerate(zip(axes, ("k", "v"))):
    ax.plot(range(STEPS + 1), theory[:, column], "k-", lw=2, label="state evolution")
for D in DIMENSIONS:
    config = CONFIG.replace(D=D)
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, D, exact=True)
    data = amp.amp_data(key_data, config, teacher, D)
    plain = amp.run_amp(key_start, data, config, teacher=teacher, damping=1.0, adaptive=False, max_iter=STEPS, tol=1e-12)
    damped = amp.run_amp(key_start, data, config, teacher=teacher)
    history = np.asarray(plain.history)
    final = np.asarray(damped.history[int(damped.state.iteration)])
    print(f"D = {D}: damped run converged {bool(damped.converged)} in {int(damped.state.iteration)} iterations, "
          f"m_k = {final[0]:.4f}, m_v = {final[2]:.4f}")
    for column, ax in enumerate(axes):
        line, = ax.plot(range(STEPS + 1), history[:, 2 * column], "o--", ms=3, label=f"GAMP m, D = {D}")
        ax.plot([STEPS + 0.5], [final[2 * column]], "o", color=line.get_color())
for ax, name in zip(axes, ("k", "v")):
    ax.set_xlabel("iteration")
    ax.set_title(f"overlap m_{name} (state evolution: q_{name})")
axes[0].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## Test error against alpha

# %%
rows = {D: [amp_point(CONFIG.replace(D=D), alpha, seed, AMPOptions(se_samples=SE_SAMPLES, history=False))
            for alpha in ALPHAS for seed in range(SEEDS)] for D in DIMENSIONS[-1:]}
erm = {activation: [erm_replica_point(CONFIG, activation, alpha=alpha, lam=1.0, mc_samples=ERM_SAMPLES).test_error
                    for alpha in ALPHAS] for activation in ("softmax", "linear")}
fig, ax = plt.subplots(figsize=(6, 4))
for D, points in rows.items():
    errors = np.array([[r["test_error"] for r in points if r["alpha"] == alpha] for alpha in ALPHAS])
    spread = errors.std(axis=1, ddof=1) / np.sqrt(SEEDS) if SEEDS > 1 else [
        next(r["stderr"] for r in points if r["alpha"] == alpha) for alpha in ALPHAS]
    ax.errorbar(ALPHAS, errors.mean(axis=1), spread, fmt="s", mfc="none", capsize=2, label=f"GAMP, D = {D}")
    print("alpha, AMP error, state evolution:",
          [(r["alpha"], round(r["test_error"], 4), round(r["state_evolution"]["test_error"], 4)) for r in points])
theory_error = [next(r for r in rows[DIMENSIONS[-1]] if r["alpha"] == alpha)["state_evolution"]["test_error"]
                for alpha in ALPHAS]
ax.plot(ALPHAS, theory_error, "k-", label="Bayes (state evolution)")
for activation, values in erm.items():
    ax.plot(ALPHAS, values, "--", label=f"ERM {activation}, lam = 1 (theory)")
ax.set_xscale("log")
ax.set_xlabel("alpha = N / D")
ax.set_ylabel("excess test error")
ax.legend(fontsize=7)
fig.tight_layout()
