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
# # Training dynamics of attention and their high-dimensional limit (issue 21)
#
# Does gradient training reach the Bayes risk? Four parts (docs/dynamics.md explains the methods
# and states the answers):
#
# 1. the order-parameter ODEs against online SGD at `D = 500, 2000, 8000`: softmax (no saddle)
#    and the predecessor's odd `erf` on the sphere (a saddle at `m = 0`, escape time growing
#    like `log(D) / (2 mu)`);
# 2. population gradient flow from random starts, each activation on spiked `nu = 2, L = 3`
#    and max `nu = inf, L = 3`, with online SGD at `D = 500` over seeds for the fraction that
#    ends elsewhere;
# 3. finite `alpha`: full-batch gradient descent from random starts against multi-start L-BFGS
#    (`experiments/erm.py`) on the same data and the replica theory (`theory/replica_erm.py`),
#    ridge 1 and 0.01;
# 4. the predecessor's closed-form population risk, from the toolkit's integrals.
#
# CI runs this small. Full size (about two hours on 2 busy cores; finished runs are kept as
# JSON in `$BAYES_SLR_DYNAMICS_OUT`, so a rerun only re-plots):
# `BAYES_SLR_FULL=1 BAYES_SLR_DYNAMICS_OUT=$PWD/docs/results/dynamics .venv/bin/jupyter execute
# --inplace notebooks/training_dynamics.ipynb` (from the repository root; the figures go to
# `docs/figures/` at full size).

# %%
import json
import math
import os
from pathlib import Path

import matplotlib.pyplot as plt
import numpy as np

import bayes_slr
from bayes_slr.attention.activations import register_activation, sphere_erf
from bayes_slr.attention.dynamics import TrainingRun, run_keys, train_dynamics
from bayes_slr.attention.trajectory import Checkpoint, Trajectory, first_crossing
from bayes_slr.experiments.erm import erm_experiment
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import provenance
from bayes_slr.theory.bayes import bayes_error_exact
from bayes_slr.theory.flow import (
    FlowRun,
    Overlaps,
    escape_rate,
    matching_flow,
    solve_flow,
)
from bayes_slr.theory.optimum import optimal_population_error
from bayes_slr.theory.population import population_error
from bayes_slr.theory.replica_erm import erm_replica_point

enable_compilation_cache()
FULL = os.environ.get("BAYES_SLR_FULL", "") == "1"
OUT = os.environ.get("BAYES_SLR_DYNAMICS_OUT")
FIGURES = Path(bayes_slr.__file__).resolve().parents[1] / "docs" / "figures"  # the repository's
SPIKED = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0)
MAX = SLRConfig("max", 100, LengthLaw.fixed(3), math.inf)
SETTINGS = {"spiked nu=2": SPIKED, "max nu=inf": MAX} if FULL else {"spiked nu=2": SPIKED}
ACTIVATIONS = ("softmax", "linear", "erf", "softplus") if FULL else ("softmax",)
LAMS = (1.0, 0.01) if FULL else (1.0,)
ERF_SPHERE = register_activation(sphere_erf(0.5)).name
MC = 2**16 if FULL else 2**11


def step_size(activation: str, eta: float) -> float:
    """``eta`` for the normalised activations, ``eta / E[L]`` for linear and erf, whose weights sum
    to ``O(L)`` (the toolkit's SGD convention, ``attention/training.py``)."""
    return eta if activation in ("softmax", "softplus") else eta / 3.0


def stored(name, compute, settings_type=None):
    """``compute()`` (a trajectory of ``settings_type`` runs, or a dict of numbers), kept as JSON
    in ``$BAYES_SLR_DYNAMICS_OUT`` (written whole, so an interrupted run is redone)."""
    path = Path(OUT) / f"{name}.json" if OUT else None
    if path is not None and path.exists():
        record = json.loads(path.read_text())
    else:
        result = compute()
        record = result.to_record() if isinstance(result, Trajectory) else result
        record["provenance"] = provenance({"name": name}, None)  # the settings hold the seed
        if path is not None:
            path.parent.mkdir(parents=True, exist_ok=True)
            path.with_suffix(".tmp").write_text(json.dumps(record))
            path.with_suffix(".tmp").replace(path)
    return record if settings_type is None else Trajectory.from_record(record, settings_type)


class Escaped(Exception):
    """Raised from ``on_log`` to stop a run once it has left the saddle far enough."""

    def __init__(self, checkpoint: Checkpoint):
        self.checkpoint = checkpoint


def until_escaped(run: TrainingRun, level: float) -> Trajectory:
    """Train until ``|m_k|`` passes ``level`` (or the run ends): the escape costs what it costs."""

    def stop(checkpoint: Checkpoint) -> None:
        if abs(checkpoint.points[-1].m_k) >= level:
            raise Escaped(checkpoint)

    try:
        return train_dynamics(run, on_log=stop)
    except Escaped as escaped:
        return Trajectory(run, escaped.checkpoint.points, escaped.checkpoint.state)


# %% [markdown]
# ## 1. The ODE against online SGD
#
# ### 1a. Softmax from the small random start: no saddle
#
# Spiked `nu = 2`, `L = 3`, one fresh sequence per step, step `eta = 0.5` (time `eta / D` per
# step). The ODE is the SGD ODE (variance term `eta / B`) started at each run's own first point.
# Softmax weights are `1/L` at `m_k = 0`, so `A != 0` there: `m_v` grows at once and drags
# `m_k`; the time `m_k` reaches 0.5 does not grow with `D`.

# %%
SIZES = (500, 2000, 8000) if FULL else (60,)
SOFTMAX_SEEDS = {500: 4, 2000: 3, 8000: 2} if FULL else {60: 1}
T_SOFTMAX = 10.0 if FULL else 3.0
softmax_runs = {}
for D in SIZES:
    for seed in range(SOFTMAX_SEEDS[D]):
        run = TrainingRun(
            SPIKED.replace(D=D),
            "softmax",
            "sgd",
            eta=0.5,
            steps=round(T_SOFTMAX * D / 0.5),
            seed=seed,
            log_points=60,
            N_test=20_000 if FULL else 2000,
        )
        simulated = stored(
            f"sgd_softmax_D{D}_seed{seed}", lambda run=run: train_dynamics(run), TrainingRun
        )
        ode_run = FlowRun(
            run.config,
            "softmax",
            Overlaps.of_point(simulated.points[0]),
            t_max=T_SOFTMAX,
            method="sgd",
            eta=0.5,
            log_points=200,
            t_min=simulated.points[1].time,
            mc_samples=MC,
        )
        ode = stored(f"ode_softmax_D{D}_seed{seed}", lambda r=ode_run: solve_flow(r), FlowRun)
        softmax_runs[D, seed] = simulated, ode

print(
    "  D seed | max |sim - ODE| sqrt(D) after t = 1: m_k   q_k   m_v   q_v | t(m_k = 0.5) sim ODE"
)
for (D, seed), (simulated, ode) in softmax_runs.items():
    times = simulated.column("time")
    later = times >= 1.0
    gaps = [
        np.max(np.abs(simulated.column(n)[later] - ode.interpolate(n, times[later]))) * math.sqrt(D)
        for n in ("m_k", "q_k", "m_v", "q_v")
    ]
    print(
        f"{D:5d} {seed:3d}  | "
        + " ".join(f"{g:5.2f}" for g in gaps)
        + f" | {simulated.crossing_time('m_k', 0.5):6.3f} {ode.crossing_time('m_k', 0.5):6.3f}"
    )

# %%
fig, axes = plt.subplots(1, 4, figsize=(16, 3.6))
for ax, name in zip(axes, ("m_k", "q_k", "m_v", "q_v")):
    for (D, seed), (simulated, ode) in softmax_runs.items():
        color = f"C{SIZES.index(D)}"
        ax.plot(
            simulated.column("time"),
            simulated.column(name),
            ".",
            ms=3,
            color=color,
            label=f"SGD D={D}" if seed == 0 else None,
        )
        if seed == 0:
            ax.plot(
                ode.column("time"),
                ode.column(name),
                "-",
                color="k",
                lw=0.8,
                label="SGD ODE" if D == SIZES[0] else None,
            )
    ax.set_xscale("symlog", linthresh=0.1)
    ax.set_xlabel("time t")
    ax.set_title(name)
axes[0].legend(fontsize=8)
fig.suptitle("Softmax, spiked nu=2, L=3, online SGD eta=0.5, B=1, from k, v ~ N(0, 0.01 I)")
fig.tight_layout()
if FULL:
    fig.savefig(FIGURES / "dynamics_softmax_sgd_vs_ode.png", dpi=110)

# %% [markdown]
# ### 1b. The predecessor's odd `erf` on the sphere: a saddle at `m = 0`
#
# `erf_sphere` with `lambda = 0.5`, projected SGD (`|k|^2 = |v|^2 = D`), `eta = 0.25`, `B = 1`,
# from uniform points of the sphere. The activation is odd, so `A = 0` at `m_k = 0`:
# `(m_k, m_v) = 0` is a fixed point, unstable with rate `mu` (SGD noise lowers it). From
# `m ~ 1/sqrt(D)` a run escapes after `log(D) / (2 mu) + O(1)`, the `O(1)` random (the start
# and the noise of the plateau, `-log|Z| / mu`): compare medians over seeds. The saddle is also
# unstable along the cross overlaps `(k.v*, v.k*)`, off the manifold the ODE lives on: a run
# escapes when the larger of `|m_k|` and `|k.v*/D|` reaches 0.4, and the way it left is counted.
# `D = 8000` runs stop once `|m_k|` passes 0.6 (the escape is what they measure).

# %%
SADDLE_SEEDS = {500: 16, 2000: 8, 8000: 2} if FULL else {60: 2}
T_SADDLE = 24.0 if FULL else 4.0
saddle = {}
for D in SIZES:
    for seed in range(SADDLE_SEEDS[D]):
        run = TrainingRun(
            SPIKED.replace(D=D),
            ERF_SPHERE,
            "sgd",
            eta=0.25,
            steps=round(T_SADDLE * D / 0.25),
            seed=seed,
            start="sphere",
            sphere=True,
            log_points=150,
            N_test=5000 if FULL else 1000,
        )
        saddle[D, seed] = stored(
            f"sgd_erf_sphere_D{D}_seed{seed}",
            lambda run=run, D=D: until_escaped(run, 0.6 if D > 2000 else math.inf),
            TrainingRun,
        )
mu = escape_rate(
    FlowRun(
        SPIKED,
        ERF_SPHERE,
        Overlaps.typical_start("sphere", 1000, SPIKED),
        t_max=10.0,
        method="sgd",
        eta=0.25,
        sphere=True,
        mc_samples=MC,
    )
)
mu_flow = escape_rate(
    FlowRun(
        SPIKED, ERF_SPHERE, Overlaps.typical_start("sphere", 1000, SPIKED), t_max=10.0, sphere=True
    )
)
print(
    f"escape rate: mu = {mu:.4f} (SGD eta/B = 0.25), {mu_flow:.4f} (flow); "
    f"predicted growth 1/(2 mu) = {1 / (2 * mu):.3f} per unit of log D"
)
medians, sectors = {}, {}


def distance_from_saddle(trajectory):
    """The larger of ``|m_k|`` and ``|k.v*/D|``: an escape along the manifold or the cross
    overlaps."""
    return np.maximum(np.abs(trajectory.column("m_k")), np.abs(trajectory.column("k_vstar")))


for D in SIZES:
    times, way = [], []
    for seed in range(SADDLE_SEEDS[D]):
        trajectory = saddle[D, seed]
        times.append(
            first_crossing(trajectory.column("time"), distance_from_saddle(trajectory), 0.4)
        )
        way.append(
            "manifold"
            if abs(trajectory.last.m_k) >= 0.4
            else "cross"
            if abs(trajectory.last.k_vstar) >= 0.4
            else "saddle"
        )
    medians[D] = float(np.median(np.where(np.isnan(times), np.inf, times)))
    sectors[D] = way
    print(
        f"D={D:5d}: escape times {np.round(times, 2)}, median {medians[D]:.2f} "
        f"(median - log(D)/(2 mu) = {medians[D] - math.log(D) / (2 * mu):.2f}); left along the "
        f"manifold {way.count('manifold')}, the cross overlaps {way.count('cross')}, "
        f"still at the saddle at the end {way.count('saddle')}"
    )
    for sector in ("manifold", "cross"):
        chosen = [t for t, w in zip(times, way) if w == sector]
        if chosen:
            print(f"         escape times along the {sector}: median {np.median(chosen):.2f}")
if len(SIZES) > 1:
    slope, intercept = np.polyfit(np.log(SIZES), [medians[D] for D in SIZES], 1)
    print(
        f"fitted growth of the median escape time: {slope:.3f} per unit of log D "
        f"(predicted 1/(2 mu) = {1 / (2 * mu):.3f}); a median over n seeds has standard error "
        f"1.166/(mu sqrt(n)) = "
        + ", ".join(f"{1.166 / (mu * math.sqrt(SADDLE_SEEDS[D])):.2f}" for D in SIZES)
    )

# %% [markdown]
# Per seed, against the ODE started at the seed's own first point (runs that left along the
# manifold): the offset `t(sim) - t(ODE)` carries the noise of the plateau, the same in law at
# every `D`, while both times grow with `D`. A drift of the mean offset with `D` would say the
# simulations grow otherwise than the ODE's `log(D) / (2 mu)`.

# %%
offsets = {}
for (D, seed), trajectory in saddle.items():
    if abs(trajectory.last.m_k) < 0.4:
        continue
    ode = stored(
        f"ode_start_erf_sphere_D{D}_seed{seed}",
        lambda t=trajectory: solve_flow(matching_flow(t, mc_samples=MC, log_points=300)),
        FlowRun,
    )
    offsets.setdefault(D, []).append(
        (
            trajectory.crossing_time("m_k", 0.4, magnitude=True),
            ode.crossing_time("m_k", 0.4, magnitude=True),
        )
    )
for D, pairs in offsets.items():
    sim_times, ode_times = np.array(pairs).T
    gap = sim_times - ode_times
    error = gap.std(ddof=1) / math.sqrt(gap.size) if gap.size > 1 else math.nan
    print(
        f"D={D:5d}: {gap.size} seeds; ODE escape times {np.round(ode_times, 2)} (mean "
        f"{ode_times.mean():.2f}); offset sim - ODE {gap.mean():+.2f} +- {error:.2f}"
    )

# %% [markdown]
# After the escape a run follows the ODE restarted at its first point with `|m_k| >= 0.4`:

# %%
print("  D seed | max |sim - ODE| sqrt(D) after the escape: m_k  m_v  (cross overlaps at the end)")
restarted = {}
for (D, seed), trajectory in saddle.items():
    escaped = np.abs(trajectory.column("m_k")) >= 0.4
    if not escaped.any() or seed > 1:
        continue
    start = int(np.argmax(escaped))
    ode_run = matching_flow(trajectory, start=start, mc_samples=MC)
    ode = stored(f"ode_erf_sphere_D{D}_seed{seed}", lambda r=ode_run: solve_flow(r), FlowRun)
    restarted[D, seed] = start, ode
    times = trajectory.column("time")[start:]
    gaps = [
        np.max(np.abs(trajectory.column(n)[start:] - ode.interpolate(n, times - times[0])))
        * math.sqrt(D)
        for n in ("m_k", "m_v")
    ]
    print(
        f"{D:5d} {seed:3d}  | {gaps[0]:5.2f} {gaps[1]:5.2f}   "
        f"({trajectory.last.k_vstar:+.3f}, {trajectory.last.v_kstar:+.3f})"
    )

# %%
fig, axes = plt.subplots(1, 2, figsize=(12, 3.8))
for (D, seed), trajectory in saddle.items():
    color = f"C{SIZES.index(D)}"
    axes[0].plot(
        trajectory.column("time"),
        np.abs(trajectory.column("m_k")),
        "-",
        lw=0.7,
        color=color,
        label=f"D={D}" if seed == 0 else None,
    )
    axes[1].plot(
        trajectory.column("time"),
        np.abs(trajectory.column("k_vstar")),
        "-",
        lw=0.7,
        color=color,
        label=f"D={D}" if seed == 0 else None,
    )
for D in SIZES:
    typical = solve_flow(
        FlowRun(
            SPIKED,
            ERF_SPHERE,
            Overlaps.typical_start("sphere", D, SPIKED),
            t_max=T_SADDLE,
            method="sgd",
            eta=0.25,
            sphere=True,
            log_points=200,
            mc_samples=MC,
        )
    )
    axes[0].plot(typical.column("time"), typical.column("m_k"), "--", color=f"C{SIZES.index(D)}")
axes[0].set(
    xlabel="time t", ylabel="|m_k|", title="escape along (m_k, m_v); dashed: ODE, m = 1/sqrt(D)"
)
axes[1].set(xlabel="time t", ylabel="|k.v*/D|", title="the cross overlap (off the manifold)")
axes[0].legend(fontsize=8)
fig.tight_layout()
if FULL:
    fig.savefig(FIGURES / "dynamics_erf_sphere_saddle.png", dpi=110)

# %% [markdown]
# ## 2. Population gradient flow from random starts
#
# The flow (`D -> inf`, `alpha -> inf`, `eta -> 0`) from the small random start (`q = 0.01`) and
# from the sphere (`q = 1`, unprojected), each activation, to `t = 1000`; the error of the end
# point by quadrature (`population_error`) against the activation's population optimum. Then
# online SGD at `D = 500` (`eta = 0.25`, divided by `L` for linear and erf) over seeds: the
# fraction of seeds whose test error ends more than 0.05 above the SGD ODE's.

# %%
T_FLOW = 1000.0 if FULL else 20.0
flows = {}
for name, config in SETTINGS.items():
    for activation in ACTIVATIONS:
        for start in ("random", "sphere") if FULL else ("random",):
            run = FlowRun(
                config,
                activation,
                Overlaps.typical_start(start, 1000, config),
                t_max=T_FLOW,
                log_points=100,
                mc_samples=MC,
            )
            flows[name, activation, start] = stored(
                f"flow_{name.replace(' ', '_').replace('=', '')}_{activation}_{start}",
                lambda run=run: solve_flow(run),
                FlowRun,
            )


def settle_time(trajectory, fraction=0.01):
    """First time the error is within ``fraction`` of its total decrease from the end value."""
    errors, times = trajectory.column("test_error"), trajectory.column("time")
    band = fraction * (errors[0] - errors[-1])
    return float(times[np.argmax(errors - errors[-1] <= band)])


print(
    "setting      activation start  | end error (quadrature)  optimum   gap     | t to 1%   "
    "m_k     q_k    m_v"
)
for (name, activation, start), trajectory in flows.items():
    config, end = SETTINGS[name], trajectory.last
    exact = population_error(activation, config, end.m_k, end.q_k, end.m_v, end.q_v, c=end.c)
    optimum = optimal_population_error(activation, config).error
    print(
        f"{name:12s} {activation:9s} {start:6s} | {exact:10.4f}  {optimum:14.4f}  "
        f"{exact - optimum:+8.4f} | {settle_time(trajectory):7.1f} {end.m_k:7.3f} "
        f"{end.q_k:7.3f} {end.m_v:6.3f}"
    )

# %%
fig, axes = plt.subplots(1, len(SETTINGS), figsize=(6.5 * len(SETTINGS), 4), squeeze=False)
for ax, (name, config) in zip(axes[0], SETTINGS.items()):
    for i, activation in enumerate(ACTIVATIONS):
        for start, style in (("random", "-"), ("sphere", ":")):
            if (name, activation, start) not in flows:
                continue
            trajectory = flows[name, activation, start]
            ax.plot(
                trajectory.column("time")[1:],
                trajectory.column("test_error")[1:],
                style,
                color=f"C{i}",
                label=f"{activation} ({start})",
            )
        ax.axhline(optimal_population_error(activation, config).error, color=f"C{i}", lw=0.5)
    ax.axhline(bayes_error_exact(config).value, color="k", lw=1.0, label="Bayes")
    ax.set(
        xscale="log",
        xlabel="time t",
        ylabel="excess test error",
        title=name + ", L=3",
        ylim=(0, 1.6),
    )
axes[0, 0].legend(fontsize=7, ncol=2)
fig.tight_layout()
if FULL:
    fig.savefig(FIGURES / "dynamics_population_flow.png", dpi=110)

# %%
SEEDS_ELSEWHERE = 8 if FULL else 1
D_SEEDS, T_SEEDS = (500, 60.0) if FULL else (60, 2.0)
print(f"online SGD at D = {D_SEEDS} to t = {T_SEEDS:g}: end test errors per seed")
for name, config in SETTINGS.items():
    for activation in ACTIVATIONS:
        ends = []
        for seed in range(SEEDS_ELSEWHERE):
            eta = step_size(activation, 0.25)
            run = TrainingRun(
                config.replace(D=D_SEEDS),
                activation,
                "sgd",
                eta=eta,
                steps=round(T_SEEDS * D_SEEDS / eta),
                seed=seed,
                log_points=12,
                N_test=20_000 if FULL else 1000,
            )
            ends.append(
                stored(
                    f"seeds_{name.replace(' ', '_').replace('=', '')}_{activation}_"
                    f"D{D_SEEDS}_seed{seed}",
                    lambda run=run: train_dynamics(run),
                    TrainingRun,
                ).last
            )
        ode = stored(
            f"seeds_ode_{name.replace(' ', '_').replace('=', '')}_{activation}",
            lambda config=config, activation=activation: solve_flow(
                FlowRun(
                    config,
                    activation,
                    Overlaps.typical_start("random", D_SEEDS, config),
                    t_max=T_SEEDS,
                    method="sgd",
                    eta=step_size(activation, 0.25),
                    mc_samples=MC,
                )
            ),
            FlowRun,
        ).last
        errors = np.array([p.test_error for p in ends])
        elsewhere = int(np.sum(errors > ode.test_error + 0.05))
        print(
            f"{name:12s} {activation:9s}: SGD ODE {ode.test_error:.3f}; seeds "
            f"{np.round(errors, 3)}; ending elsewhere: {elsewhere} of {len(errors)}"
        )

# %% [markdown]
# ## 3. Finite `alpha`: gradient descent, L-BFGS and the replica theory
#
# `D = 100`, `alpha = 4` (`N = 400`), ridge `lam = 1` and `0.01`. Gradient descent (`eta = 0.5`,
# divided by `L` for linear and erf)
# from the small random start, on the same training set as `erm_experiment`'s four random
# L-BFGS starts (plus the informed start, a reference); the replica-symmetric error
# (`rs_stable`: the replicon below 1) for softmax and linear.

# %%
D_ALPHA, ALPHA = (100, 4.0) if FULL else (20, 4.0)
GD_STEPS = 100_000 if FULL else 200
finite = {}
for name, config in SETTINGS.items():
    for lam in LAMS:
        for activation in ACTIVATIONS:
            key = f"finite_{name.replace(' ', '_').replace('=', '')}_{activation}_lam{lam:g}"

            def compute(config=config, lam=lam, activation=activation):
                run = TrainingRun(
                    config.replace(D=D_ALPHA),
                    activation,
                    "gd",
                    eta=step_size(activation, 0.5),
                    steps=GD_STEPS,
                    alpha=ALPHA,
                    lam=lam,
                    exact_teacher=False,
                    log_points=30,
                    N_test=20_000 if FULL else 2000,
                )
                keys = run_keys(run.seed)
                teacher = draw_teacher(keys.teacher, run.config.D)
                batch = simulate(keys.data, run.config, teacher, round(ALPHA * run.config.D))
                gd = train_dynamics(run, teacher=teacher, training_set=batch)
                lbfgs = erm_experiment(
                    run.config,
                    activation,
                    alpha=ALPHA,
                    lam=lam,
                    seeds=1,
                    data=(teacher, batch),
                    N_test=run.N_test,
                    predict_population=False,
                )
                seed_row = lbfgs.per_seed[0]
                theory = (
                    erm_replica_point(
                        config, activation, alpha=ALPHA, lam=lam, mc_samples=2048 if FULL else 128
                    )
                    if activation in ("softmax", "linear")
                    else None
                )
                return {
                    "gd_loss": gd.last.loss,
                    "gd_error": gd.last.test_error,
                    "gd_stderr": gd.last.test_stderr,
                    "gd_loss_curve": list(gd.column("loss")),
                    "gd_time": list(gd.column("time")),
                    "lbfgs_loss": seed_row["train_loss"],
                    "lbfgs_error": seed_row["test_error"],
                    "lbfgs_stderr": seed_row["stderr"],
                    "lbfgs_starts": seed_row["starts"]["train_loss"],
                    "informed_loss": seed_row["informed"]["train_loss"],
                    "theory_error": None if theory is None else theory.test_error,
                    "rs_stable": None if theory is None else theory.diagnostics["rs_stable"],
                }

            finite[name, lam, activation] = stored(key, compute)

print(
    "setting       lam   activation | GD loss     L-BFGS best  (starts spread) informed | "
    "GD error       L-BFGS error   | replica (RS stable)"
)
for (name, lam, activation), row in finite.items():
    spread = max(row["lbfgs_starts"]) - min(row["lbfgs_starts"])
    theory = (
        ""
        if row["theory_error"] is None
        else f"{row['theory_error']:.4f} ({'yes' if row['rs_stable'] else 'no'})"
    )
    print(
        f"{name:12s} {lam:5g} {activation:9s} | {row['gd_loss']:.6f}  {row['lbfgs_loss']:.6f}"
        f"  ({spread:.1e})  {row['informed_loss']:.6f} | {row['gd_error']:.3f} +- "
        f"{row['gd_stderr']:.3f}  {row['lbfgs_error']:.3f} +- {row['lbfgs_stderr']:.3f} | "
        f"{theory}"
    )

# %% [markdown]
# ## 4. The predecessor's closed form
#
# Marion et al.'s excess risk on the manifold, `gamma^2 (1 - 2 nu erf(.) + zeta(.)) + (L - 1)
# zeta(0, lambda)`, is the toolkit's population error of `erf_sphere` on spiked SLR with
# `nu = D/2` when `gamma = 1` (tests/theory/test_predecessor.py checks it to 1e-10 against their
# `zeta` by quadrature, and by Monte Carlo of their data law). Along `kappa = k.k*` at `nu = 1`:

# %%
for lam in (0.1, 1.0):
    name = register_activation(sphere_erf(lam)).name
    config = SLRConfig("spiked", 400, LengthLaw.fixed(10), 200.0)
    values = [population_error(name, config, kappa, 1.0, 1.0, 1.0) for kappa in (0, 0.1, 0.5, 1)]
    print(
        f"lambda = {lam}: risk at kappa = 0, 0.1, 0.5, 1 (D = 400, L = 10): "
        + ", ".join(f"{v:.4f}" for v in values)
    )
