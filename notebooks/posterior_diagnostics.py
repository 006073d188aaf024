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
# # Finite-alpha posterior of single-location regression: sampling and diagnostics
#
# We simulate a spiked-SLR training set, sample the posterior of `(k*, v*)` with the
# exact blocked Gibbs sampler (NUTS on the summed-out model gives the same posterior:
# `tests/inference/test_samplers.py` checks it), diagnose it with ArviZ, look at the location
# posteriors of training sequences, run a posterior predictive check, and show a
# regime where chains from random and informed starts disagree.
#
# Sizes are small so that CI runs this notebook in well under a minute.

# %%
import os

import arviz as az
import jax
import jax.numpy as jnp
import matplotlib.pyplot as plt
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.predictive import location_probabilities, posterior_errors
from bayes_slr.inference.samplers import run_gibbs, sample_posterior
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.replica_bayes import bayes_replica_point

FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"  # full size (the CI size runs in about a minute)

enable_compilation_cache()
config = SLRConfig("spiked", D=10, length=LengthLaw.fixed(3), nu=4.0, Delta=0.1)
alpha = 8
key_teacher, key_data, key_sampler, key_test = jax.random.split(jax.random.PRNGKey(0), 4)
teacher = draw_teacher(key_teacher, config.D)
batch = simulate(key_data, config, teacher, alpha * config.D)

# %% [markdown]
# ## Sampling and convergence diagnostics
# Four chains from independent prior draws. `r_hat` near 1 and bulk/tail ESS in the
# hundreds mean the chains agree.

# %%
draws = run_gibbs(key_sampler, config, batch, chains=4, warmup=200, samples=500, init="random")
tree = posterior_io.to_datatree(draws, config, batch, teacher, seed=0, settings={"alpha": alpha})
table = diagnostics.diagnostics_table(tree)
print(diagnostics.convergence_summary(table))
for name in posterior_io.OVERLAPS:
    row = table[name]
    print(
        f"{name}: {row['mean']:.4f} +- {row['sd']:.4f} (mcse {row['mcse_mean']:.4f}, r_hat "
        f"{row['r_hat']:.3f})"
    )

# %%
figure = diagnostics.plot_diagnostics(tree)

# %% [markdown]
# ## Bayes-optimal test error at this alpha
# Between the known-direction limit (alpha -> inf) and the prior-predictive error 1
# (alpha -> 0). The teacher is a prior draw, so its own known-direction error differs
# from the population value by O(1/sqrt(D)). The Bayes-optimal predictor weights each
# draw by the likelihood of the test sequence, `p(X | k)`; the plain average over draws
# (the training-set posterior mean of `f`) is printed beside it. Both errors come from
# four disjoint groups of draws (cross products: no finite-draw bias) and their
# standard errors include the draw-to-draw noise.

# %%
errors = posterior_errors(key_test, config, teacher, draws.k, draws.v, N_test=10_000, max_draws=200)
print(
    f"Bayes-optimal excess error {errors.bayes.value:.4f} +- {errors.bayes.stderr:.4f}; plain "
    f"posterior mean "
    f"of f {errors.plain.value:.4f} +- {errors.plain.stderr:.4f}; population Bayes error "
    f"{bayes_error_exact(config).value:.4f}; importance ESS {errors.importance_ess}"
)

# %% [markdown]
# ## Location posteriors of training sequences against the truth
# Bars: posterior probability of each token (mean over chains, error bars: spread
# across chains); the red outline marks the true location.

# %%
probs = tree.location_posterior["probs"]
fig, axes = plt.subplots(1, 6, figsize=(13, 2.4), sharey=True)
for mu, ax in enumerate(axes):
    mean = probs.isel(sequence=mu).mean("chain").values
    spread = probs.isel(sequence=mu).std("chain").values
    colours = [
        "tab:red" if token == int(batch.eps[mu]) else "tab:blue" for token in range(config.Lbar)
    ]
    ax.bar(np.arange(config.Lbar), mean, yerr=spread, color=colours)
    ax.set_title(f"sequence {mu}, true {int(batch.eps[mu])}")
    ax.set_xlabel("token")
axes[0].set_ylabel("P(eps = l | data)")
fig.tight_layout()
print(
    "posterior probability of the true location, mean over training sequences:",
    float(probs.mean("chain").values[np.arange(batch.y.shape[0]), np.asarray(batch.eps)].mean()),
)

# %% [markdown]
# ## Posterior predictive check
# Replicated outputs for the training inputs: for each posterior draw, draw a location
# from `P(eps | X, k)` (not conditioned on `y`) and `y_rep = z_eps + sqrt(Delta) xi`.
# The observed `y` should look like a typical replicate.


# %%
def replicate(key, k, v):
    key_eps, key_noise = jax.random.split(key)
    p = location_probabilities(config, batch.X, batch.lengths, k)
    eps = jax.random.categorical(key_eps, jnp.log(p), axis=-1)
    z = batch.X @ v / jnp.sqrt(config.D)
    return z[jnp.arange(z.shape[0]), eps] + jnp.sqrt(config.Delta) * jax.random.normal(
        key_noise, eps.shape
    )


k_flat, v_flat = draws.k.reshape(-1, config.D)[::10], draws.v.reshape(-1, config.D)[::10]
y_rep = np.asarray(
    jax.vmap(replicate)(jax.random.split(jax.random.PRNGKey(1), k_flat.shape[0]), k_flat, v_flat)
)
observed_sd = float(np.std(batch.y))
replicated_sd = y_rep.std(axis=1)
print(
    f"sd(y) = {observed_sd:.3f}; posterior predictive p-value of sd: "
    f"{np.mean(replicated_sd >= observed_sd):.2f}"
)
fig, ax = plt.subplots(figsize=(5, 3))
ax.hist(y_rep.ravel(), bins=40, density=True, alpha=0.5, label="replicated y")
ax.hist(np.asarray(batch.y), bins=20, density=True, histtype="step", color="k", label="observed y")
ax.legend()

# %% [markdown]
# ## Where random and informed starts disagree
# With long sequences (`L = 16`) and few samples per dimension (`alpha = 2`), the
# posterior has a poorly aligned mode besides the informed one. Some chains from
# random starts stay there for the whole run while all chains started at the teacher
# agree: `r_hat` across the random chains flags it. Such a run is not converged, and
# its pooled draws do not give the Bayes-optimal predictor; run longer or compare
# with `--init informed`.

# %%
hard = SLRConfig("spiked", D=20, length=LengthLaw.fixed(16), nu=4.0, Delta=0.1)
hard_teacher = draw_teacher(jax.random.PRNGKey(3), hard.D)
hard_batch = simulate(jax.random.PRNGKey(4), hard, hard_teacher, 2 * hard.D)
fig, ax = plt.subplots(figsize=(7, 3))
for init, style in (("random", "-"), ("informed", ":")):
    hard_draws = run_gibbs(
        jax.random.PRNGKey(5),
        hard,
        hard_batch,
        chains=4,
        warmup=200,
        samples=300,
        init=init,
        teacher=hard_teacher,
    )
    m_k = posterior_io.overlaps(hard_draws.k, hard_draws.v, hard_teacher)["m_k"]
    print(
        f"{init:>8} starts: m_k per chain {np.round(m_k.mean(axis=1), 3)}, r_hat(m_k) "
        f"{float(az.rhat(m_k)):.2f}"
    )
    for chain in m_k:
        ax.plot(chain, style, lw=0.7)
ax.set_xlabel("draw")
ax.set_ylabel("m_k")
ax.set_title("solid: random starts, dotted: informed starts")

# %% [markdown]
# The diagnostics that reveal it: `r_hat` of the random-start chains, and the
# start check of `bayes-slr posterior` (on by default), which compares the test errors
# of the two sets of chains in standard errors (`start_agreement`) and their overlaps in
# Monte Carlo standard errors. Here the random chains disagree with each other so much
# that the error's standard error (which includes the chain-to-chain spread through the
# jackknife over draw groups) is large and the errors alone do not separate the starts;
# `r_hat` and the overlap comparison (`m_k` differs by many MCSE) do, and the command then
# reports `multimodal: true` with warnings.

# %%
hard_errors = {}
for init in ("random", "informed"):
    hard_draws = run_gibbs(
        jax.random.PRNGKey(5),
        hard,
        hard_batch,
        chains=4,
        warmup=200,
        samples=300,
        init=init,
        teacher=hard_teacher,
    )
    hard_errors[init] = posterior_errors(
        jax.random.PRNGKey(6),
        hard,
        hard_teacher,
        hard_draws.k,
        hard_draws.v,
        N_test=4_000,
        max_draws=400,
    ).bayes
difference = hard_errors["random"].value - hard_errors["informed"].value
print(
    {init: f"{e.value:.4f} +- {e.stderr:.4f}" for init, e in hard_errors.items()},
    f"start_agreement "
    f"{difference / np.hypot(hard_errors['random'].stderr, hard_errors['informed'].stderr):+.1f}"
    " SE",
)

# %% [markdown]
# ## The two predictors against alpha, with the state evolution
# Exact teachers (`|k*|^2 = |v*|^2 = D`), default samplers (exact Gibbs for spiked,
# Gibbs-HMC for max), random starts. Markers: finite-`D` errors with standard errors
# (test set and draws); lines: the state evolution (`D -> inf`) of the Bayes-optimal error
# (`test_error`) and of the plain posterior mean of `f`. For max-SLR the two predictors
# coincide (`p(X | k)` does not depend on `k`); its state evolution costs about a minute
# per point, so at CI size only the spiked curves are drawn (`BAYES_SLR_FULL=1` for both).

# %%
curve_D = 50 if FULL else 16
alphas = [0.5, 1.0, 2.0, 4.0, 8.0] if FULL else [1.0, 4.0]
fig, axes = plt.subplots(1, 2, figsize=(11, 3.6))
for ax, variant in zip(axes, ("spiked", "max")):
    task = SLRConfig(variant, D=curve_D, length=LengthLaw.fixed(3), nu=2.0, Delta=0.1)
    rows = []
    for alpha_i in alphas:
        keys = jax.random.split(jax.random.PRNGKey(int(100 * alpha_i)), 4)
        exact = draw_teacher(keys[0], task.D, exact=True)
        train = simulate(keys[1], task, exact, round(alpha_i * task.D))
        post = sample_posterior(keys[2], task, train, chains=4, warmup=200, samples=300)
        rows.append(
            posterior_errors(keys[3], task, exact, post.k, post.v, N_test=4_000, max_draws=400)
        )
    if FULL or variant == "spiked":
        theory = [
            bayes_replica_point(task, alpha=a, mc_samples=16384 if FULL else 4096, seed=0)
            for a in alphas
        ]
        ax.plot(
            alphas, [p.test_error for p in theory], "k-", label="state evolution: Bayes-optimal"
        )
        ax.plot(
            alphas,
            [p.diagnostics["posterior_mean_f_error"] for p in theory],
            "k:",
            label="state evolution: plain mean of f",
        )
    ax.errorbar(
        alphas,
        [r.bayes.value for r in rows],
        yerr=[r.bayes.stderr for r in rows],
        fmt="o",
        label=f"sampler, weighted (D = {curve_D})",
    )
    ax.errorbar(
        [a * 1.04 for a in alphas],
        [r.plain.value for r in rows],
        yerr=[r.plain.stderr for r in rows],
        fmt="s",
        mfc="none",
        label="sampler, plain mean of f",
    )
    ax.set_xscale("log")
    ax.set_xlabel("alpha")
    ax.set_ylabel("excess test error")
    ax.set_title(f"{variant}, nu = 2, L = 3, Delta = 0.1")
    ax.legend(fontsize=7)
fig.tight_layout()
