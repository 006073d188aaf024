"""Finite-``D`` mutual information of spiked SLR by thermodynamic integration along ``alpha``
(docs/theory.md part E; ``bayes_slr.inference.information_rate``), against the replica ``I / D``.

For each teacher (a prior draw; seed ``s`` -> ``jax.random.PRNGKey(7000 D + s)``, split in four:
teacher, training set, fresh sequences, chains) one training set of ``round(alpha D)``
sequences at the last ``--alphas`` is drawn, and the information rate ``g(n)`` is measured at
``n = round(alpha D)`` for each of ``--alphas``
from the posterior of its first ``n`` sequences (collapsed Gibbs over the locations, chains from
``--init`` starts), on ``--fresh`` fresh sequences of the same teacher. ``I(n) / D`` is the rates
summed along the grid (``integrate_rates``), at every grid point. The replica's ``I / D`` of the
Bayes-optimal branch (quadrature channel) at the same ``alpha``.

Run from the repository root::

    python docs/results/phase/compute_information_rate.py --D 80 --teachers 1 --seed S --json S.json
    python docs/results/phase/compute_information_rate.py --pool 0.json 1.json ... --json ALL.json
"""

from __future__ import annotations

import argparse
import math
import pathlib
import time

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bayes_slr.formulas.bayes_channel import BayesChannel  # noqa: E402
from bayes_slr.formulas.phase import bayes_branches  # noqa: E402
from bayes_slr.inference.information_rate import information_rate, integrate_rates  # noqa: E402
from bayes_slr.models.simulate import draw_teacher, simulate  # noqa: E402
from bayes_slr.models.spec import LengthLaw, SLRConfig  # noqa: E402
from bayes_slr.records import atomic_write, json_text, provenance, read_json  # noqa: E402

SMALL_NOISE = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.001)


def teacher_rates(config: SLRConfig, seed: int, alphas: np.ndarray, args) -> dict:
    """One teacher's rates on the grid and the running integral ``I(n) / D``."""
    D = config.D
    key_teacher, key_data, key_new, key_chains = jax.random.split(
        jax.random.PRNGKey(7000 * D + seed), 4
    )
    teacher = draw_teacher(key_teacher, D)
    batch = simulate(key_data, config, teacher, round(alphas[-1] * D))
    new = simulate(key_new, config, teacher, args.fresh)
    rates = []
    for alpha in alphas:
        rates.append(
            information_rate(
                key_chains,
                config,
                batch,
                round(alpha * D),
                teacher,
                new,
                init=args.init,
                chains=args.chains,
                warmup=args.warmup,
                samples=args.samples,
            )
        )
        print(f"seed {seed} alpha {alpha:g}: {rates[-1]}", flush=True)
    integrals = [integrate_rates(D, rates[: j + 1]) for j in range(1, len(rates))]
    return {
        "seed": seed,
        "rates": [r.to_dict() for r in rates],
        "information": [i.to_dict() for i in integrals],
    }


def report(teachers: list[dict], replica: list[dict]) -> None:
    """Print ``I / D`` at each grid point, mean over teachers +- standard error, beside the
    replica's, and the mean rates with the chains' location match and agreement."""
    for j, point in enumerate(replica):
        values = np.array([t["information"][j]["information"] for t in teachers])
        rates = [t["rates"][j + 1] for t in teachers]
        spread = values.std(ddof=1) / np.sqrt(values.size) if values.size > 1 else math.nan
        print(
            f"alpha {point['alpha']:g}: I/D = {values.mean():.3f} +- {spread:.3f} (replica "
            f"{point['mutual_information']:.3f}); rate {np.mean([r['rate'] for r in rates]):.3f}, "
            f"draw bias {np.mean([r['draw_bias'] for r in rates]):+.4f}, match "
            f"{np.mean([r['match'] for r in rates]):.3f}, agreement "
            f"{np.mean([r['agreement'] for r in rates]):.3f}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--D", type=int, default=80)
    parser.add_argument("--teachers", type=int, default=4)
    parser.add_argument("--seed", type=int, default=0, help="the first teacher's seed")
    parser.add_argument(
        "--alphas", type=float, nargs="+", default=[0, 0.25, 0.5, 0.75, 1, 1.125, 1.25, 1.375, 1.5]
    )
    parser.add_argument("--init", default="informed")
    parser.add_argument("--chains", type=int, default=4)
    parser.add_argument("--warmup", type=int, default=100)
    parser.add_argument("--samples", type=int, default=100)
    parser.add_argument("--fresh", type=int, default=1000)
    parser.add_argument("--json")
    parser.add_argument(
        "--pool", nargs="+", help="the teachers of these outputs pooled (--json: all the runs)"
    )
    args = parser.parse_args()
    if args.pool:
        records = [read_json(pathlib.Path(path).read_text()) for path in args.pool]
        report([t for r in records for t in r["teachers"]], records[0]["replica"])
        if args.json:
            text = json_text({"runs": records}, indent=1) + "\n"
            atomic_write(args.json, lambda tmp: tmp.write_text(text))
        return
    started = time.time()
    config = SMALL_NOISE.replace(D=args.D)
    alphas = np.array(args.alphas)
    if alphas[0] != 0 or np.any(np.diff(alphas) <= 0):
        parser.error("--alphas must increase from 0")
    teachers = [
        teacher_rates(config, seed, alphas, args)
        for seed in range(args.seed, args.seed + args.teachers)
    ]
    channel = BayesChannel(SMALL_NOISE)
    replica = [
        {
            "alpha": float(a),
            "mutual_information": bayes_branches(
                SMALL_NOISE, float(a), channel=channel
            ).mutual_information,
        }
        for a in alphas[1:]
    ]
    report(teachers, replica)
    seconds = round(time.time() - started)
    print(f"done in {seconds} s")
    if args.json:
        record = {
            **provenance({"script": "docs/results/phase/compute_information_rate.py"}, seed=None),
            "arguments": vars(args),
            "seconds": seconds,
            "config": config.to_dict(),
            "replica": replica,
            "teachers": teachers,
        }
        text = json_text(record, indent=1) + "\n"
        atomic_write(args.json, lambda tmp: tmp.write_text(text))


if __name__ == "__main__":
    main()
