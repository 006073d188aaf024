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
# Spiked SLR, `nu = 2`, `L = 3` (docs/theory.md parts B and D). The state evolution has a least
# fixed point (reached from the uninformative start: AMP's) and a greatest one (from the teacher);
# where they differ, the Bayes-optimal one is the maximiser of the replica free entropy. With
# `Delta = 0` exact recovery of `v` is possible (and Bayes-optimal) as soon as `alpha > 1`, while
# AMP reaches it only above `alpha_alg`: a hard phase.
#
# 1. The two branches at `Delta = 0`: errors, which one is Bayes-optimal, the thresholds.
# 2. The phase diagram over `Delta` (the hard phase closes near `Delta = 0.002`), and the limit
#    `alpha_IT -> 1` as `Delta -> 0`.
# 3. Free entropy and mutual information around `alpha_IT` at `Delta = 0.001`.
# 4. Independent check: the finite-`D` mutual information by annealed importance sampling with
#    the exact Gibbs sampler, extrapolated in `1/D`, on both sides of `alpha_IT`.
# 5. Independent check: GAMP at `D = 2000` from random and informed starts across `alpha_alg`,
#    and at small `alpha` (no weak-recovery threshold: the overlaps grow from `alpha = 0`).
# 6. Independent check: Gibbs chains from random and informed starts in a hard phase, and the
#    start check of `bayes-slr posterior --check-start`.
# 7. Max-SLR, `nu = inf`, `L = 2`: the quadrature state evolution, the Monte Carlo solver's own
#    error, and an external quadrature.
#
# CI runs this at a small size. Full size (about 90 minutes on 2 busy cores):
# `BAYES_SLR_FULL=1 .venv/bin/jupyter execute --inplace notebooks/phase_diagram.ipynb` (from the
# repository root); it writes `docs/figures/phase_diagram.png`.

# %%
import math
import os
import time
from pathlib import Path

import jax
import matplotlib.pyplot as plt
import numpy as np

from bayes_slr.experiments.amp import AMPOptions, amp_point
from bayes_slr.experiments.posterior import PosteriorOptions, sample_point, summarise
from bayes_slr.inference.evidence import annealed_log_evidence, teacher_log_likelihood
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.theory.bayes_channel import BayesChannel
from bayes_slr.theory.phase import bayes_branches, bayes_error
from bayes_slr.theory.replica_bayes import bayes_replica_point
from bayes_slr.theory.state_evolution import state_evolution
from bayes_slr.theory.thresholds import thresholds

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
NOISELESS = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
SMALL_NOISE = NOISELESS.replace(Delta=0.001)
ALPHA_RANGE = (0.5, 4.0)
started = time.time()


def show(found):
    """One line per threshold."""
    for record in found.all():
        value = record.describe(found.alpha_min, found.alpha_max)
        print(f"  {record.name:9s} {value:22s} {record.note}")


# %% [markdown]
# ## 1. The two branches at `Delta = 0`
#
# `bayes_branches` solves both starts at each `alpha` (to `1e-10`, quadrature channel) and marks
# the Bayes-optimal one. Exact recovery of `v` (`q_v = 1`) is the informed branch for `alpha > 1`;
# its free entropy is `+inf` there, so it is Bayes-optimal wherever it is stable.

# %%
channel = BayesChannel(NOISELESS)
found = thresholds(
    NOISELESS, *ALPHA_RANGE, tol=1e-6 if FULL else 1e-4, channel=channel, scan=33 if FULL else 9
)
print(f"spiked nu = 2, L = 3, Delta = 0, alpha in {ALPHA_RANGE}: {found.evaluations} evaluations")
show(found)
alpha_alg = found.algorithmic.value
grid = (
    np.unique(
        np.concatenate(
            [np.linspace(0.5, 2.5, 41), [1.05, 1.1, 1.2, alpha_alg - 1e-3, alpha_alg + 1e-3]]
        )
    )
    if FULL
    else np.array([0.5, 1.1, 2.0])
)
branches = [bayes_branches(NOISELESS, a, channel=channel) for a in grid]
print("alpha    AMP error   Bayes error  Bayes-optimal  hard phase")
for b in branches:
    print(
        f"{b.alpha:6.4f}   {b.amp.test_error:.6f}    {b.bayes.test_error:.6f}     "
        f"{b.bayes_optimal:13s}  {b.hard_phase}"
    )

# %%
fig, axes = plt.subplots(1, 2, figsize=(11, 4))
ax = axes[0]
ax.plot(grid, [b.amp.test_error for b in branches], "C0-", lw=2, label="AMP (uninformative start)")
ax.plot(grid, [b.bayes.test_error for b in branches], "k--", lw=1.5, label="Bayes-optimal")
ax.axvspan(1.0, alpha_alg, color="C3", alpha=0.12, label="hard phase")
ax.axvline(1.0, color="C3", lw=0.8)
ax.axvline(alpha_alg, color="C3", lw=0.8)
ax.set_xlabel("alpha = N / D")
ax.set_ylabel("excess test error")
ax.set_title("spiked nu = 2, L = 3, Delta = 0")
ax.legend(fontsize=8)

# %% [markdown]
# ## 2. The phase diagram over `Delta`
#
# Thresholds from the fixed-point curve `alpha(q_v)` (golden-section search of its local maximum,
# `alpha_alg`, and minimum, `alpha_sp`; Brent's method on the free-entropy difference for
# `alpha_IT`). The hard phase (`alpha_IT < alpha < alpha_alg`) shrinks with the noise and closes
# between `Delta = 0.002` and `0.003`. As `Delta -> 0`, `alpha_IT -> 1` slowly: the informed
# branch's free-entropy advantage grows like `(alpha - 1) / 2 log(1 / Delta)`.

# %%
deltas = [1e-6, 1e-5, 1e-4, 3e-4, 1e-3, 1.5e-3, 2e-3, 3e-3] if FULL else []
diagram = {}
for Delta in deltas:
    diagram[Delta] = thresholds(
        NOISELESS.replace(Delta=Delta),
        *ALPHA_RANGE,
        tol=1e-5 if FULL else 1e-4,
        scan=33 if FULL else 17,
    )
    print(f"Delta = {Delta:g} ({diagram[Delta].evaluations} channel evaluations)")
    show(diagram[Delta])


def located(record):
    return record.value if record.status in ("located", "exact") else math.nan


ax = axes[1]
rows = [(0.0, found)] + list(diagram.items())
for attribute, style, label in [
    ("spinodal", "C2^-", "alpha_sp (informed branch appears)"),
    ("information_theoretic", "ko-", "alpha_IT (Bayes error jumps)"),
    ("algorithmic", "C3v-", "alpha_alg (AMP jumps)"),
]:
    ax.plot(
        [located(getattr(t, attribute)) for _, t in rows[1:]],
        [Delta for Delta, _ in rows[1:]],
        style,
        label=label,
    )
ax.set_yscale("log")
ax.set_xlabel("alpha = N / D")
ax.set_ylabel("Delta")
ax.set_xlim(0.95, 1.35)
ax.set_title(f"hard phase: alpha_IT to alpha_alg (Delta = 0: [1, {alpha_alg:.4f}])")
ax.legend(fontsize=8)
fig.tight_layout()
if FULL:
    fig.savefig(
        Path("..") / "docs" / "figures" / "phase_diagram.png"
        if Path.cwd().name == "notebooks"
        else Path("docs") / "figures" / "phase_diagram.png",
        dpi=110,
    )
if FULL:
    print("alpha_IT - 1 against 1 / log(1/Delta):")
    for Delta, t in diagram.items():
        it = located(t.information_theoretic)
        print(
            f"  Delta = {Delta:g}: alpha_IT - 1 = {it - 1:.4f}, "
            f"times log(1/Delta) = {(it - 1) * math.log(1 / Delta):.3f}"
        )

# %% [markdown]
# ## 3. Free entropy and mutual information around `alpha_IT` (`Delta = 0.001`)
#
# Both branches' free entropy `Phi` (docs/theory.md part B) cross at `alpha_IT`; the
# mutual information per dimension is `alpha psi(1, 1) - max Phi`, continuous with a kink there.

# %%
if FULL:
    small = diagram[SMALL_NOISE.Delta]
    sp, alg = located(small.spinodal), located(small.algorithmic)
    near = np.linspace(sp + 1e-3, alg - 1e-3, 9)
else:  # CI: two points inside the coexistence interval [1.2048, 1.2525]
    near = np.array([1.215, 1.24])
small_channel = BayesChannel(SMALL_NOISE)
around = [bayes_branches(SMALL_NOISE, a, channel=small_channel) for a in near]
print("alpha    Phi(AMP)     Phi(informed)  I/D (Bayes)  AMP error  Bayes error")
for b in around:
    print(
        f"{b.alpha:.4f}  {b.uninformative.free_entropy.value:.6f}  "
        f"{b.informed.free_entropy.value:.6f}"
        f"    {b.mutual_information:.5f}     {b.amp.test_error:.4f}     {b.bayes.test_error:.4f}"
    )

# %% [markdown]
# ## 4. Finite-`D` mutual information against the replica formula
#
# `I = E[log p(data | teacher)] - E[log p(data)]` at `D` = 20, 40, 80 (full size), teachers drawn
# from the prior, `log p(data)` by annealed importance sampling along a likelihood temperature with
# the exact Gibbs sampler at every temperature (`bayes_slr.inference.evidence`). Reverse AIS, from
# the teacher (an exact posterior draw), bounds `log Z` from above, i.e. `I` from below; forward
# AIS, from the prior, bounds `I` from above. The teachers' norms make `I / D` fluctuate by
# `O(1/sqrt(D))`: each teacher's value is corrected by a control variate in `|v*|^2 / D - 1` and
# `|k*|^2 / D - 1` (known mean 0; coefficients fitted on all teachers), then averaged, and the
# averages are extrapolated linearly in `1/D`. Both sides of `alpha_IT` (`Delta = 0.001`):
# `alpha = 1` (one branch, AMP's) and `alpha = 1.5` (one branch, the informed one).

# %%
dimensions = [20, 40, 80] if FULL else [10]
teachers = 8 if FULL else 2
alphas_mi = [1.0, 1.5] if FULL else [1.0]
replica_mi = {
    a: bayes_branches(SMALL_NOISE, a, channel=small_channel).mutual_information for a in alphas_mi
}
finite = {}
for alpha in alphas_mi:
    for D in dimensions:
        config = SMALL_NOISE.replace(D=D)
        rows_mi = []
        for seed in range(teachers):
            key_teacher, key_data, key_ais = jax.random.split(
                jax.random.PRNGKey(1000 * D + seed), 3
            )
            teacher = draw_teacher(key_teacher, D)
            batch = simulate(key_data, config, teacher, round(alpha * D))
            own = teacher_log_likelihood(config, batch, teacher)
            options = dict(temperatures=(40 if FULL else 20) * D, chains=8 if FULL else 4)
            reverse = annealed_log_evidence(
                key_ais, config, batch, direction="reverse", teacher=teacher, **options
            )
            forward = annealed_log_evidence(key_ais, config, batch, **options)
            norms = [
                float(np.sum(np.asarray(x) ** 2)) / D - 1.0
                for x in (teacher.v_star, teacher.k_star)
            ]
            rows_mi.append(
                [(own - reverse.log_evidence) / D, (own - forward.log_evidence) / D, *norms]
            )
        finite[alpha, D] = np.array(rows_mi)


def corrected_mean(values, norms):
    """Mean with the control variate of the teachers' norms (least-squares coefficients)."""
    design = np.column_stack([np.ones(len(values)), norms])
    coefficients, *_ = np.linalg.lstsq(design, values, rcond=None)
    residual = values - design @ coefficients
    dof = max(len(values) - design.shape[1], 1)
    return coefficients[0], math.sqrt(np.sum(residual**2) / dof / len(values))


print("alpha   D   I/D reverse AIS (lower bound)   I/D forward AIS (upper bound)   replica")
summary_mi = {}
for (alpha, D), data in finite.items():
    lower, upper = (
        corrected_mean(data[:, side], data[:, 2:])
        if len(data) > 3
        else (data[:, side].mean(), data[:, side].std() / math.sqrt(len(data)))
        for side in (0, 1)
    )
    summary_mi[alpha, D] = (lower, upper)
    print(
        f"{alpha:4.2f}  {D:3d}   {lower[0]:.4f} +- {lower[1]:.4f}              "
        f"{upper[0]:.4f} +- {upper[1]:.4f}              {replica_mi[alpha]:.4f}"
    )
if len(dimensions) > 1:
    for alpha in alphas_mi:
        x = np.array([1.0 / D for D in dimensions])
        for side, name in ((0, "reverse (lower bound)"), (1, "forward (upper bound)")):
            y = np.array([summary_mi[alpha, D][side][0] for D in dimensions])
            w = 1.0 / np.array([summary_mi[alpha, D][side][1] for D in dimensions]) ** 2
            design = np.column_stack([np.ones_like(x), x])
            covariance = np.linalg.inv(design.T @ (design * w[:, None]))
            intercept = (covariance @ design.T @ (w * y))[0]
            print(
                f"alpha = {alpha}: {name} extrapolated to 1/D = 0: {intercept:.4f} +- "
                f"{math.sqrt(covariance[0, 0]):.4f} (replica {replica_mi[alpha]:.4f})"
            )

# %% [markdown]
# ## 5. GAMP at `D = 2000` across `alpha_alg` (`Delta = 0`), and at small `alpha`
#
# From a random start GAMP should stay on the uninformative branch below `alpha_alg` and reach
# exact recovery of `v` above it; from an informed start it stays at exact recovery for every
# `alpha > 1` (it contracts by `1/alpha` per step, so it does not meet the tolerance in the
# iterations allowed: `converged` is false, the overlaps are those of the last iterate). At small
# `alpha` the overlaps grow from 0 without a threshold, as the state evolution says.

# %%
D_amp = 2000 if FULL else 300
amp_alphas = [1.1, 1.2, 1.23, 1.255, 1.3, 2.0] if FULL else [1.1]
options_amp = {
    init: AMPOptions(init=init, state_evolution=False, n_test=20000 if FULL else 2000, max_iter=300)
    for init in ("random", "informed")
}
print(f"D = {D_amp}      theory (AMP / informed)       GAMP random            GAMP informed")
print("alpha    q_v AMP  q_v inf  err AMP  err Bayes | m_v     error        | m_v     error")
for alpha in amp_alphas:
    b = bayes_branches(NOISELESS, alpha, channel=channel)
    runs = {
        init: amp_point(NOISELESS.replace(D=D_amp), alpha, 0, options)
        for init, options in options_amp.items()
    }
    print(
        f"{alpha:5.3f}   {b.amp.point.q_v:.4f}   {b.informed.point.q_v:.4f}   "
        f"{b.amp.test_error:.4f}   "
        f"{b.bayes.test_error:.4f}   | {runs['random']['overlaps']['m_v']:.4f}  "
        f"{runs['random']['test_error']:.4f}+-{runs['random']['stderr']:.4f} | "
        f"{runs['informed']['overlaps']['m_v']:.4f}  "
        f"{runs['informed']['test_error']:.4f}+-{runs['informed']['stderr']:.4f}"
    )
print(
    "small alpha, random start (Delta = 0): GAMP's m_k, m_v against the state evolution's q_k, q_v"
)
for alpha in [0.05, 0.1, 0.2] if FULL else [0.1]:
    run = amp_point(NOISELESS.replace(D=D_amp), alpha, 0, options_amp["random"])
    theory = state_evolution(NOISELESS, alpha, channel=channel)
    print(
        f"alpha = {alpha}: GAMP {run['overlaps']['m_k']:.4f} {run['overlaps']['m_v']:.4f}   "
        f"state evolution {theory.q_k:.4f} {theory.q_v:.4f}   (first step alpha s / (1 + alpha s): "
        f"{alpha * 2 / 3 / (1 + alpha * 2 / 3):.4f} {alpha / 3 / (1 + alpha / 3):.4f})"
    )

# %% [markdown]
# ## 6. Gibbs chains in a hard phase, and the start check
#
# The exact Gibbs sampler needs `Delta > 0`. Spiked `nu = 1`, `L = 10`, `Delta = 0.01` has a hard
# phase wider than `nu = 2`, `L = 3` at small noise; at `alpha = 3.35` (between `alpha_IT` and
# `alpha_alg`) the Bayes-optimal branch is the informed one. `summarise` with `check_start` runs
# the other start on the same data, as `bayes-slr posterior --check-start` does, and must flag the
# disagreement. GAMP from a random start at the same `D` shows where AMP's branch lies at that
# size.

# %%
HARD = SLRConfig("spiked", 1, LengthLaw.fixed(10), 1.0, 0.01)
if FULL:
    show(thresholds(HARD, 2.5, 4.0, tol=1e-4))
hard_alpha = 3.35
hard_theory = bayes_branches(HARD, hard_alpha)
print(
    f"state evolution at alpha = {hard_alpha}: AMP branch error {hard_theory.amp.test_error:.4f} "
    f"(q_v {hard_theory.amp.point.q_v:.3f}), Bayes branch {hard_theory.bayes.test_error:.4f} "
    f"(q_v {hard_theory.bayes.point.q_v:.3f}), hard phase {hard_theory.hard_phase}"
)
for D in [50, 100] if FULL else [30]:
    options_gibbs = PosteriorOptions(
        chains=4,
        warmup=2000 if FULL else 200,
        samples=500 if FULL else 100,
        N_test=20000 if FULL else 2000,
        erm=False,
        exact_teacher=True,
        check_start=True,
    )
    summary = summarise(
        sample_point(HARD.replace(D=D), hard_alpha, options_gibbs, seed=0), options_gibbs
    )
    check = summary["start_check"]
    print(
        f"D = {D}: random chains {summary['bayes_test_error']:.4f} +- {summary['stderr']:.4f} "
        f"(m_v {summary['overlaps']['m_v']:.3f}, r_hat {summary['rhat_max']:.2f}); informed chains "
        f"{check['bayes_test_error']['value']:.4f} +- {check['bayes_test_error']['stderr']:.4f} "
        f"(m_v {check['overlaps']['m_v']:.3f}, r_hat {check['rhat_max']:.2f}); "
        f"multimodal {summary['multimodal']}"
    )
    for line in summary["warnings"]:
        print("   warning:", line)
    gamp = amp_point(HARD.replace(D=D), hard_alpha, 0, options_amp["random"])
    print(
        f"   GAMP from a random start at the same D (another teacher): error "
        f"{gamp['test_error']:.4f} +- {gamp['stderr']:.4f}, m_v {gamp['overlaps']['m_v']:.3f}"
    )

# %% [markdown]
# ## 7. Max-SLR, `nu = inf`, `L = 2`, `Delta = 0.1`: the Monte Carlo state evolution's error
#
# An external quadrature state evolution gives `q_k = 0.7689` and error `0.2509` at `alpha = 4`,
# where `bayes-slr theory --bayes` printed `q_k = 0.7659` and `0.241 +- 0.006`, and every error
# from alpha 0.25 to 8 was 0.004 to 0.010 lower. With two tokens the key fields enter through
# their difference only, and the channel is a quadrature too (`two_token_mixture_channel`). Below:
# the quadrature state evolution; the Monte Carlo solver as `theory --bayes` runs it (16384
# draws, seed 0): its overlaps, the error in closed form at its fixed point (`1 - q_v (1/2 +
# arcsin(q_k) / pi)`) and the Monte Carlo error it printed; and the Monte Carlo channel with the
# error it propagates to the fixed point.

# %%
MAX2 = SLRConfig("max", 1, LengthLaw.fixed(2), math.inf, 0.1)
exact_channel = BayesChannel(MAX2)
mc_draws = 16384 if FULL else 1024
print("alpha   quadrature q_k, error   | Monte Carlo solver: q_k, closed-form error, MC error")
for alpha in [0.25, 0.5, 1.0, 2.0, 4.0, 8.0] if FULL else [4.0]:
    point = state_evolution(MAX2, alpha, channel=exact_channel)
    previous = bayes_replica_point(MAX2, alpha=alpha, mc_samples=mc_draws, seed=0)
    d = previous.diagnostics
    print(
        f"{alpha:5.2f}   {point.q_k:.5f}  {bayes_error(exact_channel, point)[0]:.5f}     | "
        f"{previous.overlaps['q_k']:.5f}  {previous.test_error:.5f}  "
        f"{d['monte_carlo_error']:.5f} +- {d['monte_carlo_stderr']:.5f}"
    )
sampled = BayesChannel(MAX2, mc_samples=mc_draws, seed=0, monte_carlo=True)
point = state_evolution(MAX2, 4.0, channel=sampled)
error, stderr = bayes_error(sampled, point)
print(
    f"alpha = 4, Monte Carlo channel ({mc_draws} draws, seed 0) with propagated errors: "
    f"q_k {point.q_k:.4f} +- {point.q_stderr[0]:.4f}, error {error:.4f} +- {stderr:.4f}"
)
print(f"notebook ran in {time.time() - started:.0f} s")
