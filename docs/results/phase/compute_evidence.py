"""Checks of docs/theory.md parts D and E that need the package's internals (no public entry):
writes ``docs/results/phase/evidence.json``, which ``notebooks/phase_diagram.ipynb`` reads.

1. **Finite-``D`` mutual information** of spiked SLR (``nu = 2``, ``L = 3``, ``Delta = 0.001``)
   against the replica formula, on both sides of ``alpha_IT = 1.226``: ``alpha = 1`` (one branch,
   AMP's) and ``alpha = 1.5`` (one branch, the informed one). ``I = E[log p(data | teacher)] -
   E[log p(data)]``, teachers drawn from the prior, ``log p(data)`` by annealed importance sampling
   with the exact Gibbs sampler at every temperature (``bayes_slr.inference.evidence``). Reverse
   AIS (from the teacher, an exact posterior draw) bounds ``I / D`` from below, forward AIS (from
   the prior) from above. Per teacher, ``|v*|^2 / D - 1`` and ``|k*|^2 / D - 1`` are stored so that
   the reader can apply a control variate; the means are extrapolated linearly in ``1 / D``.
2. **Max-SLR, ``nu = inf``, ``L = 2``, ``Delta = 0.1``**: the quadrature state evolution against
   the former Monte Carlo solver (``bayes_replica_point``, 16384 draws, seed 0) and the Monte Carlo
   channel with the error it propagates to the fixed point (``alpha = 4``).

Run from the repository root::

    python docs/results/phase/compute_evidence.py            # the committed size
    python docs/results/phase/compute_evidence.py --small    # a smoke test (seconds), not written

(the public API has the replica side: ``bayes_slr.theory(..., bayes=True)`` prints ``I/D``.)
"""

from __future__ import annotations

import argparse
import math
import time
from pathlib import Path

from bayes_slr.jax_setup import enable_compilation_cache

enable_compilation_cache()

import jax  # noqa: E402
import numpy as np  # noqa: E402

from bayes_slr.formulas.bayes_channel import BayesChannel  # noqa: E402
from bayes_slr.formulas.phase import bayes_branches, bayes_error  # noqa: E402
from bayes_slr.formulas.replica_bayes import bayes_replica_point  # noqa: E402
from bayes_slr.formulas.state_evolution import state_evolution  # noqa: E402
from bayes_slr.inference.evidence import (  # noqa: E402
    annealed_log_evidence,
    teacher_log_likelihood,
)
from bayes_slr.models.simulate import draw_teacher, simulate  # noqa: E402
from bayes_slr.models.spec import LengthLaw, SLRConfig  # noqa: E402
from bayes_slr.records import json_text, provenance  # noqa: E402

OUTPUT = Path(__file__).with_name("evidence.json")
SMALL_NOISE = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.001)
MAX2 = SLRConfig("max", 1, LengthLaw.fixed(2), math.inf, 0.1)
SIZES = {
    "committed": dict(
        dimensions=[10, 20, 40],
        teachers=6,
        alphas=[1.0, 1.5],
        per_dimension=20,
        chains=4,
        max_alphas=[1.0, 4.0],
        mc_draws=16384,
    ),
    "small": dict(
        dimensions=[8],
        teachers=2,
        alphas=[1.0],
        per_dimension=10,
        chains=2,
        max_alphas=[4.0],
        mc_draws=1024,
    ),
}


def mutual_information(size: dict) -> dict:
    """Per ``(alpha, D)`` and teacher: reverse and forward ``I / D`` and the teacher's norms."""
    channel = BayesChannel(SMALL_NOISE)
    replica = {
        alpha: bayes_branches(SMALL_NOISE, alpha, channel=channel).mutual_information
        for alpha in size["alphas"]
    }
    points = []
    for alpha in size["alphas"]:
        for D in size["dimensions"]:
            config = SMALL_NOISE.replace(D=D)
            started = time.time()
            teachers = []
            for seed in range(size["teachers"]):
                key_teacher, key_data, key_ais = jax.random.split(
                    jax.random.PRNGKey(1000 * D + seed), 3
                )
                teacher = draw_teacher(key_teacher, D)
                batch = simulate(key_data, config, teacher, round(alpha * D))
                own = teacher_log_likelihood(config, batch, teacher)
                options = dict(temperatures=size["per_dimension"] * D, chains=size["chains"])
                reverse = annealed_log_evidence(
                    key_ais, config, batch, direction="reverse", teacher=teacher, **options
                )
                forward = annealed_log_evidence(key_ais, config, batch, **options)
                teachers.append(
                    {
                        "seed": seed,
                        "reverse": (own - reverse.log_evidence) / D,
                        "forward": (own - forward.log_evidence) / D,
                        "v_norm": float(np.sum(np.asarray(teacher.v_star) ** 2)) / D - 1.0,
                        "k_norm": float(np.sum(np.asarray(teacher.k_star) ** 2)) / D - 1.0,
                    }
                )
            points.append(
                {
                    "alpha": alpha,
                    "D": D,
                    "N": round(alpha * D),
                    "teachers": teachers,
                    "seconds": round(time.time() - started, 1),
                }
            )
            print(f"I/D at alpha = {alpha}, D = {D}: {time.time() - started:.0f} s", flush=True)
    return {
        "config": SMALL_NOISE.to_dict(),
        "temperatures_per_dimension": size["per_dimension"],
        "chains": size["chains"],
        "seeds": "teacher s at dimension D: jax.random.PRNGKey(1000 D + s), split in 3",
        "replica": [{"alpha": a, "mutual_information": replica[a]} for a in size["alphas"]],
        "points": points,
    }


def max_slr(size: dict) -> dict:
    """Quadrature state evolution against the Monte Carlo solver and the Monte Carlo channel."""
    exact = BayesChannel(MAX2)
    rows = []
    for alpha in size["max_alphas"]:
        point = state_evolution(MAX2, alpha, channel=exact)
        previous = bayes_replica_point(MAX2, alpha=alpha, mc_samples=size["mc_draws"], seed=0)
        d = previous.diagnostics
        rows.append(
            {
                "alpha": alpha,
                "quadrature": {
                    "q_k": point.q_k,
                    "q_v": point.q_v,
                    "test_error": bayes_error(exact, point)[0],
                },
                "monte_carlo_solver": {
                    "q_k": previous.overlaps["q_k"],
                    "q_v": previous.overlaps["q_v"],
                    "closed_form_error": previous.test_error,
                    "monte_carlo_error": d.monte_carlo_error,
                    "monte_carlo_stderr": d.monte_carlo_stderr,
                },
            }
        )
        print(f"max-SLR alpha = {alpha} done", flush=True)
    sampled = BayesChannel(MAX2, mc_samples=size["mc_draws"], seed=0, monte_carlo=True)
    point = state_evolution(MAX2, 4.0, channel=sampled)
    error, stderr = bayes_error(sampled, point)
    return {
        "config": MAX2.to_dict(),
        "mc_draws": size["mc_draws"],
        "seed": 0,
        "rows": rows,
        "monte_carlo_channel_at_alpha_4": {
            "q_k": point.q_k,
            "q_k_stderr": point.q_stderr[0],
            "test_error": error,
            "test_error_stderr": stderr,
        },
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--small", action="store_true", help="smoke test, nothing written")
    small = parser.parse_args().small
    size = SIZES["small" if small else "committed"]
    started = time.time()
    result = {"mutual_information": mutual_information(size), "max_slr": max_slr(size)}
    seconds = round(time.time() - started)
    record = {
        **provenance({"script": "docs/results/phase/compute_evidence.py", **size}, seed=None),
        "seconds": seconds,
        **result,
    }
    print(f"done in {seconds} s")
    if small:
        print(json_text(record, indent=None)[:2000])
    else:
        OUTPUT.write_text(json_text(record, indent=1) + "\n")
        print(f"wrote {OUTPUT.name}")


if __name__ == "__main__":
    main()
