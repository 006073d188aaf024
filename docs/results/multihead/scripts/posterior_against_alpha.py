"""The posterior's Bayes error of two-head SLR against ``alpha``, beside the known-directions
Bayes error and ERM (docs/multihead.md section 8).

Run: ``PYTHONPATH=. .venv/bin/python docs/results/multihead/scripts/posterior_against_alpha.py
[--D 8] [--presence 1 0.5] [--alphas 4 16 64] [--seeds 2] [--sampler nuts]``; prints one
Markdown table per ``rho`` and the wall time.

Task: spiked, ``H = 2``, ``L = 3``, ``nu = 2``, ``Delta = 0.1``, exact teacher. Per seed: a
teacher, ``N = alpha D`` training sequences, 4 chains (``--warmup``, ``--samples``) started at
the teacher, and the excess test error of the Bayes-optimal posterior predictor (each test
sequence conditions the draws on itself, the heads' joint states summed out) on ``--n-test``
fresh sequences (:func:`~bayes_slr.inference.predictive.posterior_errors`) and
its excess over the known-directions Bayes predictor on the same sequences (paired); the means
over seeds with their standard errors, and the worst R-hat of the matched overlaps. ERM:
:func:`~bayes_slr.studies.erm.erm_study` with two student heads (softmax and
Bayes-softmax, ``--starts`` starts, ridge ``--lam``) on its own seeds' teachers and data.
"""

from __future__ import annotations

import argparse
import time

import arviz_stats
import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.formulas.bayes import presence_bayes_error_exact
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import matched_overlaps, posterior_errors
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.models.simulate import draw_task_teacher, simulate
from bayes_slr.models.spec import training_size
from bayes_slr.studies.erm import ERMSettings, erm_study, seed_mean

ACTIVATIONS = ("softmax", "bayes_softmax")


def posterior_seed(config: SLRConfig, alpha: float, seed: int, args):
    """One seed's posterior: its Bayes error and its excess over the known directions (each with
    its standard error), and the worst R-hat."""
    key_teacher, key_data, key_chains, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_task_teacher(key_teacher, config, exact=True)
    batch = simulate(key_data, config, teacher, training_size(alpha, config.D))
    draws = sample_posterior(
        key_chains,
        config,
        batch,
        sampler=args.sampler,
        chains=4,
        warmup=args.warmup,
        samples=args.samples,
        init="informed",
        teacher=teacher,
    )
    rhat = max(
        float(arviz_stats.rhat(x)) for x in matched_overlaps(draws.k, draws.v, teacher).values()
    )
    errors = posterior_errors(
        key_test,
        config,
        teacher,
        draws.k,
        draws.v,
        N_test=args.n_test,
        others={"known": known_directions_predictor(config, teacher)},
        pairs=[("bayes", "known")],
    )
    return (errors.bayes, errors.others["bayes - known"]), rhat


def over_seeds(values: list[tuple[float, float]]) -> str:
    """``mean +- stderr`` over seeds of per-seed ``(value, stderr)`` pairs."""
    mean, stderr = seed_mean(np.array([v[0] for v in values]), np.array([v[1] for v in values]))
    return f"{mean:.4f} +- {stderr:.4f}"


def table(config: SLRConfig, args) -> None:
    """Print the table of one ``rho``."""
    known = presence_bayes_error_exact(config).value
    print(f"\nrho = {config.presence:g}: known-directions Bayes error {known:.4f}\n")
    names = " | ".join(f"{a} ERM" for a in ACTIVATIONS)
    print(
        f"| alpha | posterior Bayes error | excess over known directions | {names} | worst R-hat |"
    )
    print("|---|---|---|" + "---|" * len(ACTIVATIONS) + "---|")
    for alpha in args.alphas:
        seeds = [posterior_seed(config, alpha, seed, args) for seed in range(args.seeds)]
        cells = [
            f"{alpha:g}",
            over_seeds([(e.value, e.stderr) for (e, _), _ in seeds]),
            over_seeds([(d.value, d.stderr) for (_, d), _ in seeds]),
        ]
        for name in ACTIVATIONS:
            settings = ERMSettings(
                lam=args.lam,
                seeds=args.seeds,
                starts=args.starts,
                exact_teacher=True,
                N_test=20_000,
                student_heads=2,
            )
            run = erm_study(config, settings.replace(activation=name, alpha=alpha), 0)
            cells.append(f"{run.test_error:.4f} +- {run.stderr:.4f}")
        cells.append(f"{max(rhat for _, rhat in seeds):.3f}")
        print("| " + " | ".join(cells) + " |", flush=True)


def main() -> None:
    """Print the tables and the time they took."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--D", type=int, default=8)
    parser.add_argument("--presence", type=float, nargs="+", default=[1.0, 0.5])
    parser.add_argument("--alphas", type=float, nargs="+", default=[4.0, 16.0, 64.0])
    parser.add_argument("--seeds", type=int, default=2)
    parser.add_argument("--sampler", default="nuts")
    parser.add_argument("--warmup", type=int, default=200)
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--n-test", type=int, default=20_000)
    parser.add_argument("--starts", type=int, default=4)
    parser.add_argument("--lam", type=float, default=1.0)
    args = parser.parse_args()
    start = time.perf_counter()
    for rho in args.presence:
        config = SLRConfig("spiked", args.D, LengthLaw.fixed(3), 2.0, 0.1, heads=2, presence=rho)
        table(config, args)
    print(f"\nwall time {time.perf_counter() - start:.0f} s")


if __name__ == "__main__":
    main()
