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
# # The Bayes-optimal error where it is subtle: free entropy, thresholds, phase diagram
#
# Spiked SLR, `nu = 2`, `L = 3` (docs/theory.md parts B, D and E). The state evolution has a
# least fixed point (reached from the uninformative start: AMP's) and a greatest one (from the
# teacher); where they differ, the Bayes-optimal one is the maximiser of the replica free entropy
# `Phi`. With `Delta = 0` exact recovery of `v` is possible (and Bayes-optimal) as soon as
# `alpha > 1`, while AMP reaches it only above `alpha_alg = 1.24096`: a hard phase.
#
# 1. The phase diagram over `Delta` (`bayes_slr.phase`): the hard phase `alpha_IT < alpha <
#    alpha_alg` closes between `Delta = 0.002` and `0.003`, and `alpha_IT -> 1` as `Delta -> 0`.
# 2. AMP's error against the Bayes-optimal one along `alpha` through the hard phase
#    (`bayes_slr.theory(..., bayes=True)`), and the free entropy and mutual information around
#    `alpha_IT` at `Delta = 0.001`.
# 3. GAMP at finite `D` from random and informed starts across `alpha_alg`, and at small `alpha`
#    (`bayes_slr.amp`).
# 4. Gibbs chains in a hard phase and the posterior's start check (`bayes_slr.posterior`).
# 5. Read from a committed file: the finite-`D` mutual information by annealed importance
#    sampling against the replica formula, and the max-SLR (`nu = inf`, `L = 2`) Monte Carlo
#    solver's error against the quadrature. Both need the package's internals and live in the
#    script `docs/results/phase/compute_evidence.py`, which wrote
#    `docs/results/phase/evidence.json`; this notebook only reads and plots it.
#
# Everything else goes through the public API only (`import bayes_slr`).
#
# **Size.** CI runs this at a small size (each computation on one or two points, under a minute).
# The committed outputs are the full size, `BAYES_SLR_FULL=1 jupyter execute --inplace
# notebooks/phase_diagram.ipynb` from the repository root, which also writes
# `docs/figures/phase_diagram.png`: 16 minutes on 2 cores shared with other jobs (load about 11),
# 12 of them GAMP at `D = 2000` (the run time is printed at the end).

# %%
import json
import math
import os
import time
import warnings
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import bayes_slr

# Each result's warnings are printed beside its table below; Python's copy would repeat them.
warnings.simplefilter("ignore", bayes_slr.BayesSLRWarning)
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
ROOT = Path("..") if Path.cwd().name == "notebooks" else Path(".")
TASK = dict(variant="spiked", nu=2.0, L=3)
started = time.time()
print("size:", "full" if FULL else "CI (small)")

# %% [markdown]
# ## 1. The phase diagram over `Delta`
#
# `bayes_slr.phase` locates the thresholds on the fixed-point curve `alpha(q_v)`: its local maximum
# `alpha_alg` (AMP's branch ends) and minimum `alpha_sp` (the informed branch appears) by
# golden-section search, `alpha_IT` (the Bayes error jumps) by Brent's method on the free-entropy
# difference. At `Delta = 0`, `alpha_sp = alpha_IT = alpha_PR = 1` exactly. The hard phase shrinks
# with the noise and closes between `Delta = 0.002` and `0.003`; as `Delta -> 0`, `alpha_IT -> 1`
# slowly: the informed branch's free-entropy advantage grows like `(alpha - 1) / 2 log(1/Delta)`.
# The full size is docs/theory.md part D's table (`tol = 1e-5`, 33-point scan).

# %%
deltas = (0.0, 1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 1.5e-3, 2e-3, 3e-3) if FULL else (0.0, 1e-3)
diagram = bayes_slr.phase(
    variant="spiked",
    nu=(2.0,),
    L=(3,),
    Delta=deltas,
    alpha_min=0.5,
    alpha_max=2.0,
    tol=1e-5 if FULL else 1e-3,
    scan=33 if FULL else 13,
    curves=False,  # the bars of the figure below; the threshold curves: docs/theory.md part D
    progress=False,
)
print(diagram.table())
by_delta = {row.Delta: row for row in diagram.rows}
alpha_alg = by_delta[0.0].alpha_alg
noisy = by_delta[1e-3]
print(f"\nDelta = 0: hard phase [1, {alpha_alg:.5f}]")
print(
    f"Delta = 0.001: alpha_sp {noisy.alpha_sp:.5f}, alpha_IT {noisy.alpha_IT:.5f}, "
    f"alpha_alg {noisy.alpha_alg:.5f}"
)
print("\nalpha_IT - 1, and times log(1/Delta):")
for row in diagram.rows:
    if row.Delta > 0 and math.isfinite(row.alpha_IT):
        gap_it = row.alpha_IT - 1
        print(f"  Delta = {row.Delta:g}: {gap_it:.4f}  {gap_it * math.log(1 / row.Delta):.3f}")

# %% [markdown]
# ## 2. AMP against the Bayes-optimal error along `alpha`
#
# `bayes_slr.theory(..., bayes=True)` gives two rows per `alpha`: `amp`, the fixed point from the
# uninformative start (AMP from a random start), and `bayes`, the fixed point of largest free
# entropy `Phi` (the Bayes-optimal error; its `init` says which start reaches it). At `Delta = 0`
# the exact-recovery branch has `Phi = +inf` for `alpha > 1`, so it is Bayes-optimal wherever it is
# stable, and `I/D` is infinite. In the hard phase the two rows differ, e.g. at `alpha = 1.1` AMP's
# error 0.63141 against the Bayes error 0.42750; above `alpha_alg` they coincide. (Below
# `alpha = 1` the exact-recovery point exists but is unstable, `Phi = -inf`; the result's note
# calls it a metastable informed branch.)

# %%
across = (1.1, 1.2, 1.23, 1.255, 1.3, 2.0) if FULL else (1.1,)  # GAMP's points, section 3
small_alpha = (0.05, 0.1, 0.2) if FULL else ()
grid = (0.5, 0.75, 0.9, 0.97, 1.03, 1.05, 1.15, 1.24, 1.245, 1.5, 2.5) if FULL else (2.0,)
grid = tuple(sorted(set(grid) | set(across) | set(small_alpha)))
noiseless = bayes_slr.theory(
    **TASK, Delta=0.0, activations=(), alpha=grid, bayes=True, progress=False
)
print(noiseless.table())  # ends with its notes and warnings


def curve(result, estimator):
    rows = sorted(
        (r for r in result.rows if r.source == "theory" and r.estimator == estimator),
        key=lambda r: r.alpha,
    )
    return {r.alpha: r for r in rows}


amp_theory, bayes_theory = curve(noiseless, "amp"), curve(noiseless, "bayes")

# %% [markdown]
# ### Free entropy and mutual information around `alpha_IT` (`Delta = 0.001`)
#
# Between `alpha_sp = 1.2048` and `alpha_alg = 1.2525` both branches exist; the `bayes` row is
# AMP's below `alpha_IT = 1.2261` (equal `Phi`, a metastable informed branch in the notes) and the
# informed one above it (larger `Phi`, a hard-phase warning). The mutual information per
# dimension, `I/D = alpha psi(1, 1) - max Phi`, is continuous with a kink there. `alpha = 1` and
# `1.5` are the points of the finite-`D` check in section 5.

# %%
near = (
    tuple(float(a) for a in np.linspace(noisy.alpha_sp + 1e-3, noisy.alpha_alg - 1e-3, 7).round(4))
    + (1.0, 1.5)
    if FULL
    else (1.215, 1.24)
)
small_noise = bayes_slr.theory(
    **TASK, Delta=1e-3, activations=(), alpha=tuple(sorted(near)), bayes=True, progress=False
)
print("alpha    Phi (amp row)  Phi (bayes row)  bayes init  I/D      AMP error  Bayes error")
amp_small, bayes_small = curve(small_noise, "amp"), curve(small_noise, "bayes")
for alpha, b in bayes_small.items():
    a = amp_small[alpha]
    print(
        f"{alpha:.4f}   {a.diagnostics.free_entropy:.6f}     {b.diagnostics.free_entropy:.6f}"
        f"       {b.init:8s}    {b.diagnostics.mutual_information:.5f}  {a.test_error:.4f}"
        f"     {b.test_error:.4f}"
    )
replica_mi = {alpha: b.diagnostics.mutual_information for alpha, b in bayes_small.items()}

# %% [markdown]
# ## 3. GAMP at finite `D` across `alpha_alg` (`Delta = 0`), and at small `alpha`
#
# `bayes_slr.amp` runs GAMP on exact teachers (`|k*|^2 = |v*|^2 = D`), one teacher per point.
# From a random start it should stay on AMP's branch below `alpha_alg` and reach exact recovery of
# `v` above it; from the informed start it stays at exact recovery for every `alpha > 1` (it
# contracts by `1/alpha` per step, so it does not meet the tolerance in the 300 iterations allowed:
# the run's warnings say it did not converge, and the overlaps are the last iterate's). At small
# `alpha` the overlaps grow from 0 without a threshold (no weak-recovery threshold in SLR): the
# first step from `q = 0` is `q_a = alpha s_a / (1 + alpha s_a)` with `s_k = 2/3`, `s_v = 1/3`.
# Reference: the state evolution of section 2 at the same `alpha` (at the Bayes optimum `m = q`).
#
# What the full size shows (`D = 2000`): the informed start sits at `m_v = 1` and the Bayes error
# (0.424 against 0.4275 at `alpha = 1.1`) throughout the hard phase, the random start well above
# it (0.646 at 1.1, the state evolution's 0.631); both reach the same error above `alpha_alg`
# (`alpha = 1.3`, 2). Near the fold the random start is slow and finite `D` blurs the jump: at
# 1.2 and 1.23 its 300 iterations end a little below AMP's branch (0.543, 0.499 against 0.564,
# 0.531), still drifting (residual 4e-4, 1e-3), and at 1.255, just above `alpha_alg`, it has not
# reached exact recovery yet (`m_v = 0.94`). The state evolution itself slows down without bound
# at the fold: its `amp` row at `alpha = 1.245` did not converge in 5000 iterations (section 2).
# At small `alpha` GAMP's overlaps follow the state evolution within the finite-`D` spread.

# %%
D_amp = 2000 if FULL else 200
gamp_options = dict(
    **TASK,
    Delta=0.0,
    D=D_amp,
    N_test=20000 if FULL else 2000,
    state_evolution=False,
    history=False,
    progress=False,
)
gamp = {
    "random": bayes_slr.amp(**gamp_options, alpha=small_alpha + across, init="random"),
    "informed": bayes_slr.amp(**gamp_options, alpha=across, init="informed"),
}
for init, result in gamp.items():
    print(f"GAMP from a {init} start, D = {D_amp}")
    print(result.table())  # ends with its notes and warnings
amp_ref, bayes_ref = amp_theory, bayes_theory  # section 2 solved these points
runs = {init: {row.alpha: row for row in result.rows} for init, result in gamp.items()}
print(f"\nD = {D_amp}   state evolution: AMP branch      |  GAMP random          | GAMP informed")
print("alpha   q_v     error   Bayes error  | m_v     error         | m_v     error")
for alpha in across:
    r, i = runs["random"][alpha], runs["informed"][alpha]
    print(
        f"{alpha:5.3f}  {amp_ref[alpha].overlaps['q_v']:.4f}  {amp_ref[alpha].test_error:.4f}"
        f"  {bayes_ref[alpha].test_error:.4f}       | {r.overlaps['m_v']:.4f}  "
        f"{r.test_error:.4f}+-{r.stderr:.4f} | {i.overlaps['m_v']:.4f}  "
        f"{i.test_error:.4f}+-{i.stderr:.4f}"
    )
if small_alpha:
    print("\nsmall alpha, random start: GAMP m_k, m_v | state evolution q_k, q_v | first step")
for alpha in small_alpha:
    r, theory_row = runs["random"][alpha], amp_ref[alpha]
    first = [alpha * s / (1 + alpha * s) for s in (2 / 3, 1 / 3)]
    print(
        f"alpha = {alpha}: {r.overlaps['m_k']:.4f} {r.overlaps['m_v']:.4f} | "
        f"{theory_row.overlaps['q_k']:.4f} {theory_row.overlaps['q_v']:.4f} | "
        f"{first[0]:.4f} {first[1]:.4f}"
    )

# %% [markdown]
# ## 4. Gibbs chains in a hard phase, and the start check
#
# The exact Gibbs sampler needs `Delta > 0`. Spiked `nu = 1`, `L = 10`, `Delta = 0.01` has a hard
# phase wider than `nu = 2`, `L = 3` at small noise; at `alpha = 3.35` (between `alpha_IT` and
# `alpha_alg`) the Bayes-optimal branch is the informed one. `bayes_slr.posterior` with
# `check_start=True` (the default, as `bayes-slr posterior --check-start`) runs chains from the
# other start (the teacher) on the same data and must flag the disagreement: `multimodal` true and
# a warning that the errors are not trustworthy. Full size (`D = 50`, 4 chains of 1000 + 500
# steps per start): the thresholds of this task are `alpha_IT = 3.2373`, `alpha_alg = 3.4095`;
# chains from a random start stay near AMP's branch (error 0.98, `m_v = 0.13`, `r_hat` 3.2), chains
# from the teacher near the informed one (0.832 +- 0.004, the state evolution's Bayes error
# 0.8331), and the start check flags the posterior as multimodal.

# %%
HARD = dict(variant="spiked", nu=1.0, L=10, Delta=0.01)
hard_alpha = 3.35
if FULL:
    print(
        bayes_slr.phase(
            variant="spiked",
            nu=(1.0,),
            L=(10,),
            Delta=(0.01,),
            alpha_min=2.5,
            alpha_max=4.0,
            tol=1e-4,
            progress=False,
        ).table()
    )
hard = bayes_slr.theory(**HARD, activations=(), alpha=(hard_alpha,), bayes=True, progress=False)
hard_amp, hard_bayes = curve(hard, "amp")[hard_alpha], curve(hard, "bayes")[hard_alpha]
print(
    f"state evolution at alpha = {hard_alpha}: AMP branch error {hard_amp.test_error:.4f} "
    f"(q_v {hard_amp.overlaps['q_v']:.3f}), Bayes-optimal {hard_bayes.test_error:.4f} "
    f"(q_v {hard_bayes.overlaps['q_v']:.3f}, {hard_bayes.init} start), "
    f"hard phase {hard_bayes.diagnostics.hard_phase}"
)
D_gibbs = 50 if FULL else 12
chains = bayes_slr.posterior(
    **HARD,
    D=D_gibbs,
    alpha=hard_alpha,
    chains=4,
    warmup=1000 if FULL else 50,
    samples=500 if FULL else 50,
    N_test=20000 if FULL else 1000,
    erm=False,
    exact_teacher=True,
    check_start=True,
    progress=False,
)
summary, check = chains.summary, chains.summary.start_check
print(
    f"\nD = {D_gibbs}: random-start chains {summary.bayes_error.value:.4f} +- "
    f"{summary.bayes_error.stderr:.4f} (m_v {summary.overlaps['m_v']:.3f}, r_hat "
    f"{summary.rhat_max:.2f}); informed chains {check.bayes_error.value:.4f} +- "
    f"{check.bayes_error.stderr:.4f} (m_v {check.overlaps['m_v']:.3f}, r_hat "
    f"{check.rhat_max:.2f}); multimodal {check.multimodal}"
)
print("the run's own verdict:")
print(*(f"  {line}" for line in chains.warnings), sep="\n")

# %% [markdown]
# ## 5. Read from `docs/results/phase/evidence.json`: two checks that need the internals
#
# `python docs/results/phase/compute_evidence.py` (from the repository root; its size, seeds,
# package versions and run time are in the file) computed them once; the CI-size version of the
# first check is `tests/inference/test_evidence.py`.
#
# **Finite-`D` mutual information against the replica formula** (`Delta = 0.001`, both sides of
# `alpha_IT`: `alpha = 1`, AMP's branch the only one, and `alpha = 1.5`, the informed one).
# `I = E[log p(data | teacher)] - E[log p(data)]`, teachers drawn from the prior, `log p(data)` by
# annealed importance sampling along a likelihood temperature with the exact Gibbs sampler at
# every temperature. Reverse AIS, from the teacher (an exact posterior draw), bounds `I` from
# below; forward AIS, from the prior, from above. The teachers' norms make `I / D` fluctuate by
# `O(1/sqrt(D))`: below, each teacher's value is corrected by a control variate in `|v*|^2 / D - 1`
# and `|k*|^2 / D - 1` (known mean 0; coefficients fitted on all teachers of a point), the means
# are extrapolated linearly in `1 / D` and set against the replica `I/D` (section 2's `bayes` rows,
# stored in the file too).

# %%
evidence = json.loads((ROOT / "docs" / "results" / "phase" / "evidence.json").read_text())
mi = evidence["mutual_information"]
print(
    f"computed {evidence['created']} in {evidence['seconds']} s; per point "
    f"{evidence['config']['teachers']} teachers, {mi['chains']} chains, "
    f"{mi['temperatures_per_dimension']} D temperatures"
)
stored_replica = {r["alpha"]: r["mutual_information"] for r in mi["replica"]}


def corrected_mean(values, norms):
    """Mean with the control variate of the teachers' norms (least-squares coefficients)."""
    design = np.column_stack([np.ones(len(values)), norms])
    coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
    residual = values - design @ coefficients
    dof = max(len(values) - design.shape[1], 1)
    return coefficients[0], math.sqrt(np.sum(residual**2) / dof / len(values))


summary_mi = {}
print("alpha   D   I/D reverse AIS (lower)   I/D forward AIS (upper)   replica")
for point in mi["points"]:
    alpha, D, teachers = point["alpha"], point["D"], point["teachers"]
    norms = np.array([[t["v_norm"], t["k_norm"]] for t in teachers])
    sides = [
        corrected_mean(np.array([t[side] for t in teachers]), norms)
        for side in ("reverse", "forward")
    ]
    summary_mi[alpha, D] = sides
    print(
        f"{alpha:4.2f}  {D:3d}   {sides[0][0]:.4f} +- {sides[0][1]:.4f}         "
        f"{sides[1][0]:.4f} +- {sides[1][1]:.4f}         {stored_replica[alpha]:.4f}"
    )
extrapolated, fits = {}, {}
for alpha in stored_replica:
    dims = sorted(D for a, D in summary_mi if a == alpha)
    x = np.array([1.0 / D for D in dims])
    for side, name in enumerate(("reverse (lower)", "forward (upper)")):
        y = np.array([summary_mi[alpha, D][side][0] for D in dims])
        e = np.array([summary_mi[alpha, D][side][1] for D in dims])
        if len(dims) > 1:  # weighted least squares, linear in 1 / D
            w = 1.0 / e**2
            design = np.column_stack([np.ones_like(x), x])
            covariance = np.linalg.inv(design.T @ (design * w[:, None]))
            fits[alpha, name] = covariance @ design.T @ (w * y)
            extrapolated[alpha, name] = (fits[alpha, name][0], math.sqrt(covariance[0, 0]))
for (alpha, name), (value, error) in extrapolated.items():
    print(
        f"alpha = {alpha}: {name} extrapolated to 1/D = 0: {value:.4f} +- {error:.4f} "
        f"(replica {stored_replica[alpha]:.4f})"
    )
for alpha in stored_replica:
    if alpha in replica_mi:
        print(
            f"replica I/D at alpha = {alpha}: this notebook's theory {replica_mi[alpha]:.6f}, "
            f"the file's {stored_replica[alpha]:.6f}"
        )

# %% [markdown]
# What the file shows (`D` = 10, 20, 40; 6 teachers per point; `20 D` temperatures, 4 chains):
# at `alpha = 1` the two bounds bracket the replica `I/D` = 3.169 at every `D` and extrapolate to
# 3.06 +- 0.10 (lower) and 3.29 +- 0.13 (upper). At `alpha = 1.5` reverse AIS, from the teacher,
# extrapolates to 3.98 +- 0.08 against the replica 4.079 (1.2 standard errors low), while forward
# AIS, from the prior, does not equilibrate at this number of temperatures: its bound, far above,
# says nothing there (annealing from the prior has to cross into the informed branch, the
# metastability of section 2 at finite `D`). A tighter check needs more temperatures and teachers;
# it was not run.

# %% [markdown]
# **Max-SLR, `nu = inf`, `L = 2`, `Delta = 0.1`: the Monte Carlo state evolution's error.** An
# external quadrature state evolution gives `q_k = 0.7689` and error `0.2509` at `alpha = 4`,
# where the former Monte Carlo route of `bayes-slr theory --bayes` printed `q_k = 0.7659` and
# `0.241 +- 0.006`. With two tokens the channel is a quadrature too; `bayes_slr.theory(...,
# bayes=True)` uses it now (full size: computed here as well). The file holds, per `alpha`, the
# quadrature fixed point, the former Monte Carlo solver's (`bayes_replica_point`, 16384 draws,
# seed 0): its overlaps, the error in closed form at its fixed point (`1 - q_v (1/2 +
# arcsin(q_k) / pi)`) and the Monte Carlo error it printed; and the Monte Carlo channel at
# `alpha = 4` with the error it propagates to the fixed point.

# %%
maxslr = evidence["max_slr"]
print("alpha   quadrature q_k, error   | Monte Carlo solver: q_k, closed-form error, MC error")
for row in maxslr["rows"]:
    quad, mc = row["quadrature"], row["monte_carlo_solver"]
    print(
        f"{row['alpha']:5.2f}   {quad['q_k']:.5f}  {quad['test_error']:.5f}     | "
        f"{mc['q_k']:.5f}  {mc['closed_form_error']:.5f}  "
        f"{mc['monte_carlo_error']:.5f} +- {mc['monte_carlo_stderr']:.5f}"
    )
sampled = maxslr["monte_carlo_channel_at_alpha_4"]
print(
    f"alpha = 4, Monte Carlo channel ({maxslr['mc_draws']} draws, seed 0) with propagated "
    f"errors: q_k {sampled['q_k']:.4f} +- {sampled['q_k_stderr']:.4f}, error "
    f"{sampled['test_error']:.4f} +- {sampled['test_error_stderr']:.4f}"
)
if FULL:
    alphas_max = tuple(row["alpha"] for row in maxslr["rows"])
    public = bayes_slr.theory(
        variant="max", L=2, Delta=0.1, activations=(), alpha=alphas_max, bayes=True, progress=False
    )
    print("bayes_slr.theory(variant='max', L=2, Delta=0.1, bayes=True):")
    for alpha, r in curve(public, "bayes").items():
        print(
            f"  alpha = {alpha:g}: q_k {r.overlaps['q_k']:.6f}, q_v {r.overlaps['q_v']:.6f}, "
            f"error {r.test_error:.6f}"
        )

# %% [markdown]
# ## The figure
#
# Top: the phase diagram of section 1 as bars (`diagram.plot()`: impossible, hard, easy) and the
# thresholds against `Delta`. Bottom left: sections 2 and 3 at `Delta = 0`, the state evolution's
# AMP and Bayes-optimal errors with GAMP at finite `D` (the informed runs did not meet the
# tolerance: their last iterate). Bottom right: section 5's finite-`D` mutual information, reverse
# AIS (lower bound) and forward AIS (upper bound) against `1 / D`, the replica `I/D` at `1/D = 0`.

# %%
fig, axes = plt.subplots(2, 2, figsize=(12, 8.5))
diagram.plot(ax=axes[0, 0])
axes[0, 0].set_xlim(0.9, 1.4)
ax = axes[0, 1]
positive = [row for row in diagram.rows if row.Delta > 0 and math.isfinite(row.alpha_IT)]
for name, style, label in [
    ("alpha_sp", "C2^-", "alpha_sp (informed branch appears)"),
    ("alpha_IT", "ko-", "alpha_IT (Bayes error jumps)"),
    ("alpha_alg", "C3v-", "alpha_alg (AMP jumps)"),
]:
    ax.plot(
        [row.threshold(name) for row in positive],
        [row.Delta for row in positive],
        style,
        label=label,
    )
ax.axvline(1.0, color="0.5", lw=0.8, ls=":")
ax.set(yscale="log", xlabel="alpha = N / D", ylabel="Delta", xlim=(0.95, 1.35), ylim=(5e-7, 5e-3))
ax.set_title(
    f"the hard phase alpha_IT < alpha < alpha_alg (Delta = 0: [1, {alpha_alg:.4f}])", fontsize=9
)
ax.legend(fontsize=8)
ax = axes[1, 0]
ax.plot(
    list(amp_theory),
    [r.test_error for r in amp_theory.values()],
    "C0-o",
    ms=3,
    lw=2,
    label="AMP, random start (state evolution)",
)
ax.plot(
    list(bayes_theory),
    [r.test_error for r in bayes_theory.values()],
    "k--",
    lw=1.5,
    label="Bayes-optimal (largest free entropy)",
)
ax.axvspan(1.0, alpha_alg, color="C3", alpha=0.12, label="hard phase (Delta = 0)")
ax.set(xlabel="alpha = N / D", ylabel="excess test error")
ax.set_title("spiked nu = 2, L = 3, Delta = 0", fontsize=9)

ax = axes[1, 0]
for init, marker in (("random", "C0s"), ("informed", "C1^")):
    rows = [runs[init][alpha] for alpha in across]
    ax.errorbar(
        [r.alpha for r in rows],
        [r.test_error for r in rows],
        [r.stderr for r in rows],
        fmt=marker,
        mfc="none",
        capsize=2,
        label=f"GAMP, {init} start, D = {D_amp}",
    )
ax.legend(fontsize=8)
ax = axes[1, 1]
for colour, alpha in zip(("C0", "C3"), stored_replica):
    dims = sorted(D for a, D in summary_mi if a == alpha)
    x = np.array([1.0 / D for D in dims])
    for side, (marker, name) in enumerate((("^", "reverse (lower)"), ("v", "forward (upper)"))):
        ax.errorbar(
            x,
            [summary_mi[alpha, D][side][0] for D in dims],
            [summary_mi[alpha, D][side][1] for D in dims],
            fmt=marker,
            color=colour,
            mfc="none",
            capsize=2,
            label=f"alpha = {alpha}: AIS {name}",
        )
        if (alpha, name) in fits:
            grid_x = np.linspace(0, x.max(), 20)
            fit = fits[alpha, name]
            ax.plot(grid_x, fit[0] + fit[1] * grid_x, ":", color=colour, lw=1)
    ax.plot(
        [0],
        [stored_replica[alpha]],
        "*",
        color=colour,
        ms=12,
        label=f"alpha = {alpha}: replica I/D",
    )
ax.set(xlabel="1 / D", ylabel="I / D (nats)", xlim=(-0.005, None))
ax.set_title("finite-D mutual information (AIS, evidence.json), Delta = 0.001", fontsize=9)
ax.legend(fontsize=7, ncol=2)
fig.tight_layout()
if FULL:
    fig.savefig(ROOT / "docs" / "figures" / "phase_diagram.png", dpi=110)
plt.show()
print(f"notebook ran in {time.time() - started:.0f} s")
