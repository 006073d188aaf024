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
# # A tour of the public API in a notebook
#
# Every public function of `bayes_slr` once, at small sizes (about a minute and a half on 2
# cores), as a notebook shows it: each result renders as a table with its notes and its warnings
# highlighted, progress shows as widgets (and nowhere when nobody watches), NumPy values are
# accepted as arguments, `to_pandas()` gives tidy frames, `plot()` draws the figure, and the
# warnings of a result reach Python's `warnings` under the toolkit's categories
# (`bayes_slr.ConvergenceWarning`, ...). The test suite runs this notebook and checks that it
# writes nothing on stderr.

# %%
import warnings

import matplotlib.pyplot as plt
import numpy as np

import bayes_slr

# %% [markdown]
# **The Bayes error** with known directions (exact quadrature), for a NumPy array of lengths:

# %%
risk = bayes_slr.bayes_risk(L=np.array([2, 3, 5]))
risk

# %%
risk.to_pandas()

# %% [markdown]
# **A simulated data set** (`out=` would write it as `.npz`):

# %%
bayes_slr.simulate(N=200, D=10)

# %% [markdown]
# **The population gap** between softmax and linear attention and the Bayes error:

# %%
gap = bayes_slr.gap(L=(2, 3), activations=("softmax", "linear"))
gap

# %%
gap.to_pandas().head()

# %% [markdown]
# **Every result draws its figure** with `plot()` (on a new figure, or on the axes given as
# `ax=`; `save_plot(path)` writes it): here each activation's population error against `L`,
# beside the Bayes error.

# %%
gap.plot()
plt.show()

# %% [markdown]
# **Replica theory** of ERM along alpha (a NumPy array) and **GAMP** at `D = 200`:

# %%
bayes_slr.theory(alpha=np.linspace(1.0, 2.0, 2), activations=("softmax",), channel_draws=1024)

# %%
bayes_slr.amp(D=200, alpha=2.0, N_test=1000, state_evolution=False)

# %% [markdown]
# **A posterior sampled too briefly on purpose** (two chains of 50 draws): the result says the
# chains have not converged, and so does Python, under `bayes_slr.ConvergenceWarning`, which a
# script can catch, filter or turn into an error (`warnings.simplefilter("error",
# bayes_slr.ConvergenceWarning)`).

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    short = bayes_slr.posterior(
        D=10, alpha=2.0, chains=2, warmup=20, samples=50, N_test=1000, erm=False, check_start=False
    )
categories = sorted({w.category.__name__ for w in caught})
assert "ConvergenceWarning" in categories, categories
print("caught:", ", ".join(categories))
short

# %% [markdown]
# **A posterior sweep**, **the phase diagram** at one noise level and **the population gradient
# flow** of softmax attention (each silent on stderr: no warning to report):

# %%
with warnings.catch_warnings(record=True) as caught:
    warnings.simplefilter("always")
    sweep = bayes_slr.posterior_sweep(
        D=10, alpha=(1.0, 2.0), chains=2, warmup=50, samples=100, N_test=1000, erm=False,
        check_start=False,
    )  # fmt: skip
print(f"{len(caught)} warnings caught, as in the table's warning lines")
sweep

# %%
bayes_slr.phase(Delta=0.001)

# %%
flow = bayes_slr.dynamics(method="flow", activations=("softmax",), t_max=2.0)
flow

# %%
flow.trajectories().tail(3)

# %% [markdown]
# Its figure: the test error along the flow (log time axis), with the Bayes error and the
# population optimum it should reach.

# %%
flow.plot()
plt.show()
