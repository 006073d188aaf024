"""L-BFGS vs plain full-batch gradient descent to the same training loss (issue 4 item 7).

Task: spiked SLR, ``nu = 2``, ``L = 3``, ``D = 1000``, ``alpha = 4`` (``N = 4000``), ridge
``lam = 0.01``, random start, one training set. L-BFGS (``fit_erm``'s optimiser) runs to
the gradient tolerance; its final loss ``L*`` sets the target ``L* + slack (L0 - L*)``
(``L0`` the loss at the start; ``slack`` 1e-3 by default: 99.9% of the decrease).
Gradient descent (``optax.sgd`` on the full batch, in a jitted ``lax.while_loop``) uses
the step chosen from a grid by a short pilot run, and runs until it reaches the target
or ``--max-steps``. L-BFGS's own time to the target is that of the shortest run, in
8, 16, 32, ... iterations, that reaches it (an over-estimate by up to 2x). All runs are
timed after a warm-up run that compiles, in this process.

Run: ``.venv/bin/python benchmarks/erm_lbfgs_vs_gd.py [--activation softmax] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import functools
import json
import time

import jax
import jax.numpy as jnp
import optax

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.estimators import random_params
from bayes_slr.attention.training import objective, train_jit
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions

D, ALPHA, L, NU, LAM, TOL = 1000, 4, 3, 2.0, 0.01, 1e-6
STEP_GRID = (
    0.25,
    0.5,
    1.0,
    2.0,
    4.0,
)  # times D: the objective's curvature is O(1/D) per coordinate
PILOT_STEPS = 100


@functools.partial(jax.jit, static_argnames=("activation",))
def gradient_descent(params, X, lengths, y, step, target, max_steps, *, activation):
    """Full-batch ``optax.sgd`` until the objective is ``<= target`` or ``max_steps``: ``(params,
    loss, steps)``.
    """
    solver = optax.sgd(step)

    def loss_fn(p):
        return objective(p, X, lengths, y, activation, LAM)

    def body(carry):
        p, state, _, count = carry
        value, grad = jax.value_and_grad(loss_fn)(p)
        updates, state = solver.update(grad, state, p)
        return optax.apply_updates(p, updates), state, value, count + 1

    def keep_going(carry):
        _, _, value, count = carry
        return (count < max_steps) & (value > target) & jnp.isfinite(value)

    start = (params, solver.init(params), loss_fn(params), jnp.zeros((), jnp.int32))
    params, _, _, count = jax.lax.while_loop(keep_going, body, start)
    return params, loss_fn(params), count


def timed(call):
    """``(result, seconds)`` of one call, blocking on its arrays."""
    start = time.perf_counter()
    result = jax.block_until_ready(call())
    return result, time.perf_counter() - start


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--activation", choices=activation_names(), default="softmax")
    parser.add_argument(
        "--max-steps", type=int, default=10_000, help="gradient-descent step cap (default 10000)"
    )
    parser.add_argument(
        "--slack", type=float, default=1e-3, help="target = L* + slack (L0 - L*) (default 1e-3)"
    )
    parser.add_argument("--json", help="also write the figures to this JSON file")
    args = parser.parse_args()

    config = SLRConfig("spiked", D, LengthLaw.fixed(L), NU)
    teacher = draw_teacher(jax.random.PRNGKey(0), D)
    batch = simulate(jax.random.PRNGKey(1), config, teacher, ALPHA * D)
    start = random_params(jax.random.PRNGKey(2), D)
    data = (batch.X, batch.lengths, batch.y)
    start_loss = float(objective(start, *data, args.activation, LAM))

    def run_lbfgs(tol, max_iter=10_000):
        return train_jit(
            start,
            *data,
            activation=args.activation,
            optimizer="lbfgs",
            lam=LAM,
            tol=tol,
            max_iter=max_iter,
        )

    run_lbfgs(TOL)  # compile
    (_, lbfgs_loss, grad_norm, iterations), lbfgs_seconds = timed(lambda: run_lbfgs(TOL))
    target = float(lbfgs_loss) + args.slack * (start_loss - float(lbfgs_loss))
    budget = 8  # L-BFGS to the target alone: the first of 8, 16, 32, ... iterations that gets there
    while True:
        (_, loss, _, _), to_target_seconds = timed(lambda: run_lbfgs(TOL, budget))
        if float(loss) <= target or budget >= int(iterations):
            break
        budget *= 2

    pilot = {}
    for factor in STEP_GRID:
        _, loss, _ = gradient_descent(
            start, *data, factor * D, -jnp.inf, PILOT_STEPS, activation=args.activation
        )
        pilot[factor] = float(loss) if jnp.isfinite(loss) else float("inf")
    best = min(pilot, key=pilot.get)

    def run_gd():
        return gradient_descent(
            start, *data, best * D, target, args.max_steps, activation=args.activation
        )

    (_, gd_loss, steps), gd_seconds = timed(run_gd)  # compiled by the pilot runs
    reached = float(gd_loss) <= target
    figures = {
        "task": {
            "variant": "spiked",
            "nu": NU,
            "L": L,
            "D": D,
            "alpha": ALPHA,
            "lam": LAM,
            "activation": args.activation,
        },
        "device": jax.devices()[0].platform,
        "start_loss": start_loss,
        "slack": args.slack,
        "target_loss": target,
        "lbfgs": {
            "loss": float(lbfgs_loss),
            "grad_norm": float(grad_norm),
            "iterations": int(iterations),
            "seconds": lbfgs_seconds,
            "iterations_to_target": budget,
            "seconds_to_target": to_target_seconds,
        },
        "gd": {
            "step": best * D,
            "pilot_losses": pilot,
            "loss": float(gd_loss),
            "steps": int(steps),
            "reached_target": reached,
            "seconds": gd_seconds,
        },
        "time_ratio_gd_over_lbfgs": gd_seconds / to_target_seconds,
        "time_ratio_gd_over_lbfgs_to_tolerance": gd_seconds / lbfgs_seconds,
    }
    print(
        f"task: spiked nu={NU} L={L} D={D} alpha={ALPHA} lam={LAM} {args.activation}, random "
        f"start, "
        f"device {figures['device']}"
    )
    print(f"start loss {start_loss:.6f}, target {target:.6f}")
    print(
        f"L-BFGS: loss {float(lbfgs_loss):.6f}, |grad| {float(grad_norm):.2e}, "
        f"{int(iterations)} iterations, "
        f"{lbfgs_seconds:.2f} s; to the target: {budget} iterations, {to_target_seconds:.2f} s"
    )
    print(
        f"GD (step {best * D:g}): loss {float(gd_loss):.6f}, {int(steps)} steps, "
        f"{gd_seconds:.2f} s, "
        f"{'reached' if reached else 'did NOT reach'} the target"
    )
    qualifier = "" if reached else " (lower bound: GD stopped at the step cap)"
    print(
        f"time ratio GD / L-BFGS, both to the target: "
        f"{figures['time_ratio_gd_over_lbfgs']:.1f}{qualifier}"
    )
    print(
        f"time ratio GD to the target / L-BFGS to |grad| <= {TOL:g}: "
        f"{figures['time_ratio_gd_over_lbfgs_to_tolerance']:.1f}{qualifier}"
    )
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({**figures, "versions": package_versions()}, handle, indent=2)


if __name__ == "__main__":
    main()
