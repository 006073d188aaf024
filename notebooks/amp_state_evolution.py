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
# Then the validation table: AMP minus state evolution (mean over teachers +- its standard error)
# for spiked `nu = 2` (all alphas) and max-SLR `nu = 2`, `nu = inf` (two alphas), random and
# informed
# starts, against `D`, with the `1/sqrt(D)` and `1/D` references; and the noiseless spiked case
# (`Delta = 0`), where a hard phase would show as random and informed starts reaching different
# points.
#
# CI runs this at a small size. Full size (resumable: finished points are kept in
# `$BAYES_SLR_AMP_OUT`, one folder per setting; the stored sweep in `docs/results/amp/full` makes
# this
# a re-plot, an empty folder recomputes everything, about an hour on 2 busy cores):
# `BAYES_SLR_FULL=1 BAYES_SLR_AMP_OUT=$PWD/docs/results/amp/full .venv/bin/jupyter execute --inplace
# notebooks/amp_state_evolution.ipynb`
# (from the repository root).

# %%
import math
import os
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from bayes_slr.experiments.amp import AMPOptions, amp_sweep
from bayes_slr.inference import amp
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import open_sweep_log
from bayes_slr.theory.replica_bayes import bayes_state_evolution_history
from bayes_slr.theory.replica_erm import erm_replica_point

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
OUT = os.environ.get("BAYES_SLR_AMP_OUT")
CONFIG = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.1)
DIMENSIONS = [1000, 2000, 4000] if FULL else [300]
SEEDS = 3 if FULL else 1
SE_SAMPLES = 65536 if FULL else 4096
ERM_SAMPLES = 1024 if FULL else 128
STEPS = 8
# Full size in float32 (8x faster per iteration at D = 4000 on these cores; the fixed point moves by
# about
# 1e-4, docs/theory.md part C), with the residual tolerance at 1e-5, which float32 reaches (1e-6
# need not).
PRECISION = dict(dtype="float32", tol=1e-5) if FULL else dict(dtype="float64", tol=1e-6)
# name: (task, alphas, dimensions, state-evolution draws)
SETTINGS = {
    "spiked_nu2": (CONFIG, [0.5, 1, 2, 4, 16] if FULL else [1, 4], DIMENSIONS, SE_SAMPLES),
    "spiked_nu2_Delta0": (
        CONFIG.replace(Delta=0.0),
        [1, 1.1, 1.2, 2] if FULL else [1.1],
        [2000] if FULL else [300],
        SE_SAMPLES,
    ),
    "max_nu2": (
        SLRConfig("max", 1, LengthLaw.fixed(3), 2.0, 0.1),
        [1, 4] if FULL else [4],
        [1000, 2000] if FULL else [200],
        16384 if FULL else 1024,
    ),
    "max_nuinf": (
        SLRConfig("max", 1, LengthLaw.fixed(3), math.inf, 0.1),
        [1, 4] if FULL else [4],
        [1000, 2000] if FULL else [200],
        16384 if FULL else 1024,
    ),
}
INITS = ("random", "informed")
INFORMED_UP_TO = 2000 if FULL else 300
"""Largest D with an informed start too: it checks for a hard phase, not the finite-size scaling."""

# %% [markdown]
# ## Overlaps against iteration (alpha = 1)

# %%
start = amp.START_OVERLAP
theory = bayes_state_evolution_history(
    CONFIG, alpha=1.0, start=(start, start), iterations=STEPS, damping=1.0, mc_samples=SE_SAMPLES
)
fig, axes = plt.subplots(1, 2, figsize=(10, 3.8), sharey=True)
for column, (ax, name) in enumerate(zip(axes, ("k", "v"))):
    ax.plot(range(STEPS + 1), theory[:, column], "k-", lw=2, label="state evolution")
for D in DIMENSIONS:
    config = CONFIG.replace(D=D)
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, D, exact=True)
    data = amp.amp_data(key_data, config, teacher, D)
    plain = amp.run_amp(
        key_start,
        data,
        config,
        teacher=teacher,
        damping=1.0,
        adaptive=False,
        max_iter=STEPS,
        tol=1e-12,
    )
    damped = amp.run_amp(key_start, data, config, teacher=teacher)
    history = np.asarray(plain.history)
    final = np.asarray(damped.history[int(damped.state.iteration)])
    print(
        f"D = {D}: damped run converged {bool(damped.converged)} in "
        f"{int(damped.state.iteration)} iterations, "
        f"m_k = {final[0]:.4f}, m_v = {final[2]:.4f}"
    )
    for column, ax in enumerate(axes):
        (line,) = ax.plot(
            range(STEPS + 1), history[:, 2 * column], "o--", ms=3, label=f"GAMP m, D = {D}"
        )
        ax.plot([STEPS + 0.5], [final[2 * column]], "o", color=line.get_color())
for ax, name in zip(axes, ("k", "v")):
    ax.set_xlabel("iteration")
    ax.set_title(f"overlap m_{name} (state evolution: q_{name})")
axes[0].legend(fontsize=7)
fig.tight_layout()

# %% [markdown]
# ## The validation sweep
# Every point: one exact teacher (seed), GAMP from the given start to its residual tolerance
# (adaptive damping),
# 20000 fresh test sequences, the state evolution at the same alpha and start. Points already in
# `$BAYES_SLR_AMP_OUT/<setting>/amp.jsonl` are read back (each line carries its configuration, seed
# and
# package versions).

# %%
rows = []
for name, (task, alphas, dimensions, se_samples) in SETTINGS.items():
    log = open_sweep_log(Path(OUT) / name, "amp.jsonl") if OUT else None
    for D in dimensions:
        for init in INITS if D <= INFORMED_UP_TO else INITS[:1]:
            options = AMPOptions(init=init, se_samples=se_samples, history=False, **PRECISION)
            for row in amp_sweep(task.replace(D=D), alphas, SEEDS, options, log=log):
                rows.append({**row, "setting": name})
print(f"{len(rows)} points, {sum(not r['converged'] for r in rows)} not converged")

# %% [markdown]
# ## AMP minus state evolution
# Mean over teachers +- its standard error (the spread over teachers, test-set error included);
# for the overlaps the state evolution's value is `q` for both `m` and `q` (Nishimori). `sd x
# sqrt(D)`:
# the spread of the test-error difference over teachers times `sqrt(D)` (constant if it falls like
# `1/sqrt(D)`).

# %%
QUANTITIES = (
    ("test_error", "test_error"),
    ("m_k", "q_k"),
    ("q_k", "q_k"),
    ("m_v", "q_v"),
    ("q_v", "q_v"),
)


def difference(row, quantity, reference):
    value = row["test_error"] if quantity == "test_error" else row["overlaps"][quantity]
    return value - row["state_evolution"][reference]


def summary(group):
    """Mean and standard error over the teachers of each AMP-minus-theory difference."""
    out = {}
    for quantity, reference in QUANTITIES:
        values = np.array([difference(r, quantity, reference) for r in group])
        out[quantity] = (
            values.mean(),
            values.std(ddof=1) / math.sqrt(len(values)) if len(values) > 1 else math.nan,
        )
    return out


groups = {}
for r in rows:
    groups.setdefault((r["setting"], r["init"], r["alpha"], r["D"]), []).append(r)
print(
    "| setting | init | alpha | D | teachers | test error (AMP - SE) | m_k | q_k | m_v | q_v | "
    "sd x sqrt(D) | SE error |"
    " iterations |"
)
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for (name, init, alpha, D), group in sorted(groups.items()):
    s = summary(group)
    spread = (
        np.std([difference(r, "test_error", "test_error") for r in group], ddof=1) * math.sqrt(D)
        if len(group) > 1
        else math.nan
    )
    cells = " | ".join(f"{s[q][0]:+.4f} +- {s[q][1]:.4f}" for q, _ in QUANTITIES)
    print(
        f"| {name} | {init} | {alpha:g} | {D} | {len(group)} | {cells} | {spread:.2f} | "
        f"{group[0]['state_evolution']['test_error']:.4f} | "
        f"{np.mean([r['iterations'] for r in group]):.0f} |"
    )

# %% [markdown]
# Three teachers give a poor estimate of their own spread (the sample standard deviation of three
# values is often far too small). The spread scales like `1/sqrt(D)`, so the per-teacher standard
# deviation times `sqrt(D)` is pooled over the `D` of each setting, start and alpha, and each mean
# difference is divided by its pooled standard error `s / sqrt(D n)`: `z` below, for the test error
# and `q_k`, `q_v`.

# %%
print(
    "| setting | init | alpha | pooled sd x sqrt(D): error, q_k, q_v | z(error), z(q_k), "
    "z(q_v) at each D |"
)
print("|---|---|---|---|---|")
for name, init, alpha in sorted({key[:3] for key in groups}):
    dims = sorted(D for (n, i, a, D) in groups if (n, i, a) == (name, init, alpha))
    pooled, z = {}, {D: [] for D in dims}
    for quantity, reference in (("test_error", "test_error"), ("q_k", "q_k"), ("q_v", "q_v")):
        residuals, dof = [], 0
        for D in dims:
            values = np.array(
                [difference(r, quantity, reference) for r in groups[(name, init, alpha, D)]]
            ) * math.sqrt(D)
            residuals.extend(values - values.mean())
            dof += len(values) - 1
        pooled[quantity] = math.sqrt(np.sum(np.square(residuals)) / dof) if dof else math.nan
        for D in dims:
            group = groups[(name, init, alpha, D)]
            mean = np.mean([difference(r, quantity, reference) for r in group])
            z[D].append(mean / (pooled[quantity] / math.sqrt(D * len(group))))
    cells = ", ".join(f"D={D}: " + "/".join(f"{v:+.1f}" for v in z[D]) for D in dims)
    print(
        f"| {name} | {init} | {alpha:g} | {pooled['test_error']:.2f}, {pooled['q_k']:.2f}, "
        f"{pooled['q_v']:.2f} | {cells} |"
    )

# %% [markdown]
# ## Random against informed start (hard phase?)
# The largest difference, over teachers, between the two starts' test errors and overlaps on the
# same
# data; a hard phase would show as a difference far above the finite-size spread.

# %%
by_start = {}
for r in rows:
    by_start.setdefault((r["setting"], r["alpha"], r["D"]), {}).setdefault(r["seed"], {})[
        r["init"]
    ] = r
for (name, alpha, D), teachers in sorted(by_start.items()):
    pairs = [pair for pair in teachers.values() if len(pair) == 2]
    if not pairs:
        continue
    gaps = [
        max(
            abs(p["random"]["test_error"] - p["informed"]["test_error"]),
            *(
                abs(p["random"]["overlaps"][q] - p["informed"]["overlaps"][q])
                for q in ("m_k", "m_v")
            ),
        )
        for p in pairs
    ]
    converged = {init: sum(p[init]["converged"] for p in pairs) for init in INITS}
    theory = {init: pairs[0][init]["state_evolution"]["test_error"] for init in INITS}
    errors = {init: np.mean([p[init]["test_error"] for p in pairs]) for init in INITS}
    print(
        f"{name:18s} alpha {alpha:4g} D {D}: largest |random - informed| {max(gaps):.4f}; test "
        f"error random "
        f"{errors['random']:.4f}, informed {errors['informed']:.4f} (converged "
        f"{converged['random']} and "
        f"{converged['informed']} of {len(pairs)}); state evolution random "
        f"{theory['random']:.4f}, informed "
        f"{theory['informed']:.4f}"
    )

# %% [markdown]
# ## Figures
# Left: the spread over teachers (standard deviation) of AMP's test error minus the state
# evolution's
# against `D` (random start; three teachers, so each point is itself uncertain by about 50%), with
# `1/sqrt(D)` and `1/D` from the smallest `D`; the mean differences are in the tables above (the
# `z`). Right: test error against alpha at
# the largest `D` (mean and standard error over teachers), the state evolution and the replica
# theory of ERM (softmax and linear attention, ridge `lam = 1`).

# %%
fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4))
first = []
for (name, init, alpha), marker in zip(
    sorted({k[:3] for k in groups if k[1] == "random"}), "osd^v<>ph*+x" * 4
):
    dims = sorted(D for (n, i, a, D) in groups if (n, i, a) == (name, init, alpha))
    if len(dims) < 2 or len(groups[(name, init, alpha, dims[0])]) < 2:
        continue
    spread = [
        np.std(
            [difference(r, "test_error", "test_error") for r in groups[(name, init, alpha, D)]],
            ddof=1,
        )
        for D in dims
    ]
    first.append(spread[0] * math.sqrt(dims[0]))
    left.loglog(dims, spread, marker + "-", ms=4, lw=0.8, label=f"{name}, alpha {alpha:g}")
if first:
    dims = np.array(sorted({k[3] for k in groups}), dtype=float)
    scale = np.exp(np.mean(np.log(first)))  # geometric mean of sd x sqrt(D) at the smallest D
    left.loglog(dims, scale / np.sqrt(dims), "k--", lw=1, label="1/sqrt(D)")
    left.loglog(dims, scale / np.sqrt(dims[0]) * dims[0] / dims, "k:", lw=1, label="1/D")
left.set_xlabel("D")
left.set_ylabel("sd over teachers of (AMP - state evolution) error")
left.legend(fontsize=6)
alphas, dimensions = SETTINGS["spiked_nu2"][1], SETTINGS["spiked_nu2"][2]
largest = [groups[("spiked_nu2", "random", alpha, dimensions[-1])] for alpha in alphas]
means = [np.mean([r["test_error"] for r in g]) for g in largest]
spread = [
    np.std([r["test_error"] for r in g], ddof=1) / math.sqrt(len(g))
    if len(g) > 1
    else g[0]["stderr"]
    for g in largest
]
right.errorbar(
    alphas, means, spread, fmt="s", mfc="none", capsize=2, label=f"GAMP, D = {dimensions[-1]}"
)
right.plot(
    alphas,
    [g[0]["state_evolution"]["test_error"] for g in largest],
    "k-",
    label="Bayes (state evolution)",
)
for activation in ("softmax", "linear"):
    right.plot(
        alphas,
        [
            erm_replica_point(
                CONFIG, activation, alpha=alpha, lam=1.0, mc_samples=ERM_SAMPLES
            ).test_error
            for alpha in alphas
        ],
        "--",
        label=f"ERM {activation}, lam = 1 (theory)",
    )
right.set_xscale("log")
right.set_xlabel("alpha = N / D")
right.set_ylabel("excess test error")
right.legend(fontsize=7)
fig.tight_layout()
if FULL:
    fig.savefig(
        Path("..") / "docs" / "figures" / "amp_state_evolution.png"
        if Path.cwd().name == "notebooks"
        else Path("docs") / "figures" / "amp_state_evolution.png",
        dpi=110,
    )
