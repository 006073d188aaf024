"""Cost of ``H`` heads against one head, in one process (docs/performance.md, "Multi-head cost").

For ``H = 1, 2, 4`` teacher heads (spiked, ``L = 3``, ``nu = 2``, ``rho = 1`` and ``0.5``) it
times

- ``bayes``: the population Bayes error by quadrature
  (:func:`~bayes_slr.formulas.bayes.presence_bayes_error_exact`);
- ``aligned``: the population error of ``H`` aligned softmax heads by quadrature
  (:func:`~bayes_slr.formulas.population.population_error`);
- ``student_heads``: the same heads as ``H`` :class:`StudentHead` records
  (:func:`~bayes_slr.formulas.optimum.student_heads_error`);
- ``aligned_mc``: the same heads by Monte Carlo
  (:func:`~bayes_slr.formulas.population_mc.population_error_mc`, ``--mc-samples``);
- ``erm``: ERM with ``H_s = H`` softmax heads (:func:`~bayes_slr.studies.erm.erm_study`
  with ``student_heads``, ``lam = 1e-3``) at ``--D``, ``--alpha``, ``--seeds`` teachers of
  ``--starts`` starts, L-BFGS capped at ``--iterations`` iterations with tolerance 0 (no fit
  stops on its gradient), so that every ``H`` takes about the same number of steps.

- ``sampler``: the exact multi-head Gibbs kernel (``multihead-gibbs``, every head's state then
  ``k``, ``v``) at ``--sampler-D``, ``--sampler-alpha``, ``Delta = 0.1``, ``--chains`` chains of
  ``--sweeps`` sweeps started at the (exact) teacher, against the one-head Gibbs kernel
  (``gibbs``) on the one-head task: seconds per sweep and per effective draw (the smallest bulk
  ESS of the label-free overlaps ``m_k``, ``m_v``, ``q_k``, ``q_v``); the ratio is against the
  one-head kernel at ``rho = 1`` and against the multi-head kernel at ``H = 1`` otherwise.

Each computation is first called once per ``H`` (``cold``: compilation included, in this
process's caches), then ``--repeats`` rounds time every ``H`` in turn (warm). The figure is
``time(H) / (H time(1))`` within a round (target: at most 1), reported as the median over the
rounds with its smallest and largest value; a warm time is the mean of as many calls in a row as
one head needs to take ``--least`` seconds (the quadratures take milliseconds).

Run: ``.venv/bin/python benchmarks/multihead_cost.py [--repeats 5] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import time
from collections.abc import Callable

import arviz_stats
import jax
import jax.numpy as jnp
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.formulas.optimum import student_heads_error
from bayes_slr.formulas.optimum_record import StudentHead
from bayes_slr.formulas.population import population_error
from bayes_slr.formulas.population_mc import population_error_mc
from bayes_slr.inference.kernels import gibbs, multihead_gibbs, run_chains
from bayes_slr.inference.kernels.base import SamplerData
from bayes_slr.inference.predictive import matched_overlaps
from bayes_slr.models.batch import Teacher
from bayes_slr.models.simulate import draw_task_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions
from bayes_slr.studies.erm import ERMSettings, erm_study

HEADS = (1, 2, 4)
OVERLAPS = (1.2, 1.44, 0.8, 0.64)
"""``(m_k, q_k, m_v, q_v)`` of every aligned head (on the overlap manifold, no residual)."""


def computations(args: argparse.Namespace) -> dict[str, Callable[[SLRConfig], object]]:
    """The timed computations, each a function of the task (``heads``, ``presence`` set)."""
    m_k, q_k, m_v, q_v = OVERLAPS

    def student(config: SLRConfig) -> object:
        heads = tuple(StudentHead(h, m_k, q_k, m_v, q_v) for h in range(config.heads))
        return student_heads_error("softmax", config, heads)

    def erm(config: SLRConfig) -> object:
        settings = ERMSettings(
            lam=1e-3,
            seeds=args.seeds,
            starts=args.starts,
            tol=1e-300,
            max_iter=args.iterations,
            N_test=args.test,
            exact_teacher=True,
            student_heads=config.heads,
        )
        return erm_study(config, settings.replace(activation="softmax", alpha=args.alpha), 0)

    table: dict[str, Callable[[SLRConfig], object]] = {
        "bayes": presence_bayes_error_exact,
        "aligned": lambda config: population_error("softmax", config, *OVERLAPS),
        "student_heads": student,
        "aligned_mc": lambda config: population_error_mc(
            "softmax", config, *OVERLAPS, samples=args.mc_samples
        ),
        "erm": erm,
    }
    return {name: table[name] for name in args.parts if name in table}


def seconds(call: Callable[[], object], calls: int = 1) -> float:
    """Mean wall time of ``calls`` calls in a row."""
    start = time.perf_counter()
    for _ in range(calls):
        call()
    return (time.perf_counter() - start) / calls


def measure(
    call: Callable[[SLRConfig], object],
    configs: dict[int, SLRConfig],
    repeats: int,
    least: float,
) -> dict:
    """Cold and warm times of ``call`` per ``H`` and the ratios ``time(H) / (H time(1))``; a warm
    time is the mean of as many calls as one head needs to take ``least`` seconds."""
    cold = {H: seconds(lambda H=H: call(configs[H])) for H in configs}
    calls = max(1, math.ceil(least / seconds(lambda: call(configs[1]))))
    rounds = [
        {H: seconds(lambda H=H: call(configs[H]), calls) for H in configs} for _ in range(repeats)
    ]
    ratios = {H: [warm[H] / (H * warm[1]) for warm in rounds] for H in configs if H != 1}
    return {
        "calls_per_timing": calls,
        "cold_seconds": cold,
        "warm_seconds_median": {H: statistics.median(r[H] for r in rounds) for H in configs},
        "cold_ratio": {H: cold[H] / (H * cold[1]) for H in configs if H != 1},
        "ratio_median": {H: statistics.median(values) for H, values in ratios.items()},
        "ratio_min": {H: min(values) for H, values in ratios.items()},
        "ratio_max": {H: max(values) for H, values in ratios.items()},
    }


def sampler_run(config: SLRConfig, args: argparse.Namespace, one_head: bool) -> Callable[[], dict]:
    """A timed call of ``--chains`` Gibbs chains on one training set of ``config``, started at its
    teacher: the one-head kernel (``one_head``) or the multi-head one; it returns the seconds per
    sweep and per effective draw."""
    teacher = draw_task_teacher(jax.random.PRNGKey(10), config, exact=True)
    batch = simulate(jax.random.PRNGKey(11), config, teacher, round(args.sampler_alpha * config.D))
    kernel = (gibbs if one_head else multihead_gibbs).make_kernel(config)
    shape = (args.chains, config.D) if one_head else (args.chains, config.heads, config.D)
    starts = tuple(jnp.broadcast_to(jnp.asarray(x), shape) for x in teacher)
    heads = Teacher(*(jnp.reshape(x, (-1, config.D)) for x in teacher))

    def run() -> dict:
        start = time.perf_counter()
        positions, _ = run_chains(
            jax.random.PRNGKey(12),
            kernel,
            SamplerData.of(batch),
            starts,
            warmup=0,
            samples=args.sweeps,
        )
        elapsed = time.perf_counter() - start
        if one_head:  # a head axis of length 1
            positions = {name: positions[name][..., None, :] for name in "kv"}
        overlaps = matched_overlaps(positions["k"], positions["v"], heads)
        ess = min(float(arviz_stats.ess(np.asarray(x))) for x in overlaps.values())
        return {"per_sweep": elapsed / args.sweeps, "per_effective_draw": elapsed / ess}

    return run


def sampler_rows(args: argparse.Namespace, rho: float) -> dict:
    """Seconds per sweep and per effective draw of the Gibbs kernels at ``H = 1, 2, 4`` (and the
    one-head kernel at ``rho = 1``), cold then warm over ``--repeats`` rounds, and the ratios
    ``time(H) / (H time(baseline))``."""
    task = SLRConfig("spiked", args.sampler_D, LengthLaw.fixed(3), 2.0, 0.1, presence=rho)
    runs = {H: sampler_run(task.replace(heads=H), args, one_head=False) for H in HEADS}
    if rho == 1.0:
        runs["one-head"] = sampler_run(task, args, one_head=True)
    cold = {name: run() for name, run in runs.items()}
    rounds = [{name: run() for name, run in runs.items()} for _ in range(args.repeats)]
    baseline = "one-head" if rho == 1.0 else 1
    row: dict = {"cold": cold, "baseline": str(baseline)}
    for figure in ("per_sweep", "per_effective_draw"):
        row[f"{figure}_median"] = {
            str(name): statistics.median(r[name][figure] for r in rounds) for name in runs
        }
        ratios = {H: [r[H][figure] / (H * r[baseline][figure]) for r in rounds] for H in HEADS}
        row[f"{figure}_ratio_median"] = {H: statistics.median(x) for H, x in ratios.items()}
        row[f"{figure}_ratio_min"] = {H: min(x) for H, x in ratios.items()}
        row[f"{figure}_ratio_max"] = {H: max(x) for H, x in ratios.items()}
    return row


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5, help="warm rounds (default 5)")
    parser.add_argument(
        "--least", type=float, default=0.5, help="seconds of one head per warm timing (0.5)"
    )
    parser.add_argument("--presence", type=float, nargs="+", default=[1.0, 0.5])
    parser.add_argument(
        "--parts",
        nargs="+",
        default=["bayes", "aligned", "student_heads", "aligned_mc", "erm", "sampler"],
        choices=["bayes", "aligned", "student_heads", "aligned_mc", "erm", "sampler"],
    )
    parser.add_argument("--mc-samples", type=int, default=40_000)
    parser.add_argument("--D", type=int, default=8, help="ERM dimension (default 8)")
    parser.add_argument("--alpha", type=float, default=32.0, help="ERM alpha (default 32)")
    parser.add_argument("--seeds", type=int, default=2, help="ERM teachers (default 2)")
    parser.add_argument("--starts", type=int, default=2, help="ERM starts per seed (default 2)")
    parser.add_argument("--iterations", type=int, default=30, help="L-BFGS iterations (30)")
    parser.add_argument("--test", type=int, default=4000, help="ERM test sequences per seed")
    parser.add_argument("--sampler-D", type=int, default=32, help="sampler dimension (32)")
    parser.add_argument("--sampler-alpha", type=float, default=8.0, help="sampler alpha (8)")
    parser.add_argument("--chains", type=int, default=2, help="Gibbs chains (default 2)")
    parser.add_argument("--sweeps", type=int, default=1000, help="Gibbs sweeps per chain (1000)")
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    start = time.perf_counter()
    figures: dict[str, dict] = {}
    for rho in args.presence:
        configs = {
            H: SLRConfig("spiked", args.D, LengthLaw.fixed(3), 2.0, heads=H, presence=rho)
            for H in HEADS
        }
        for name, call in computations(args).items():
            row = measure(call, configs, args.repeats, args.least)
            figures[f"{name} rho={rho:g}"] = row
            print(
                f"{name:14s} rho={rho:<4g} warm median s "
                + ", ".join(f"H={H}: {s:.4g}" for H, s in row["warm_seconds_median"].items())
                + " | time(H)/(H time(1)) median [min, max] "
                + ", ".join(
                    f"H={H}: {row['ratio_median'][H]:.2f} [{row['ratio_min'][H]:.2f}, "
                    f"{row['ratio_max'][H]:.2f}]"
                    for H in row["ratio_median"]
                )
                + " | cold "
                + ", ".join(f"H={H}: {r:.2f}" for H, r in row["cold_ratio"].items()),
                flush=True,
            )
        if "sampler" in args.parts:
            row = sampler_rows(args, rho)
            figures[f"sampler rho={rho:g}"] = row
            for figure in ("per_sweep", "per_effective_draw"):
                print(
                    f"sampler {figure:18s} rho={rho:<4g} warm median s "
                    + ", ".join(f"{n}: {x:.3g}" for n, x in row[f"{figure}_median"].items())
                    + f" | time(H)/(H time({row['baseline']})) median [min, max] "
                    + ", ".join(
                        f"H={H}: {row[f'{figure}_ratio_median'][H]:.2f} "
                        f"[{row[f'{figure}_ratio_min'][H]:.2f}, "
                        f"{row[f'{figure}_ratio_max'][H]:.2f}]"
                        for H in HEADS
                    ),
                    flush=True,
                )
    total = time.perf_counter() - start
    print(f"total {total:.0f} s")
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"settings": vars(args), "figures": figures, "seconds": total}
                | {"versions": package_versions()},
                handle,
                indent=2,
            )


if __name__ == "__main__":
    main()
