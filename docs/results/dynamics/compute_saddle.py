"""Recompute the stored saddle-escape results of the predecessor's erf on the sphere.

The files ``sgd_erf_sphere_D{D}_seed{s}.json`` (projected online SGD, logged trajectories) and
``ode_erf_sphere_D{D}_seed{s}.json`` (the SGD ODE restarted at a run's first point with
``|m_k| >= 0.4``) in this folder were written by section 1b of ``notebooks/training_dynamics.py``
as committed in f42c4f4 (``BAYES_SLR_FULL=1 BAYES_SLR_DYNAMICS_OUT=docs/results/dynamics``).
This script is that code on its own. It uses package internals, which the public
``bayes_slr.dynamics`` does not need for the toolkit's activations but does for this one: the
activation ``erf_sphere_0.5`` is not registered by default (``register_activation``), and the
escape rate at the saddle (``theory.flow.escape_rate``) has no public function.

Full size (``--full``: ``D = 500, 2000, 8000`` with 16, 8 and 2 seeds to ``t = 24``) takes hours
on a shared 2-core machine; existing files are kept (delete one to recompute it). Without
``--full`` it runs one seed at ``D = 60`` into ``--out`` (a check that the code runs)::

    .venv/bin/python docs/results/dynamics/compute_saddle.py --out /tmp/saddle
    .venv/bin/python docs/results/dynamics/compute_saddle.py --full   # writes here
"""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path

import numpy as np

from bayes_slr.attention.activations import register_activation, sphere_erf
from bayes_slr.attention.dynamics import TrainingRun, train_dynamics
from bayes_slr.attention.trajectory import Checkpoint, Trajectory
from bayes_slr.formulas.flow import FlowRun, Overlaps, escape_rate, matching_flow, solve_flow
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import json_text, provenance

SPIKED = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0)
ETA = 0.25
"""Projected online SGD, batch 1: ``eta / B = 0.25``."""


class Escaped(Exception):
    """Raised from ``on_log`` to stop a run once it has left the saddle far enough."""

    def __init__(self, checkpoint: Checkpoint):
        self.checkpoint = checkpoint


def until_escaped(run: TrainingRun, level: float) -> Trajectory:
    """Train until ``|m_k|`` passes ``level`` (or the run ends)."""

    def stop(checkpoint: Checkpoint) -> None:
        if abs(checkpoint.points[-1].m_k) >= level:
            raise Escaped(checkpoint)

    try:
        return train_dynamics(run, on_log=stop)
    except Escaped as escaped:
        return Trajectory(run, escaped.checkpoint.points, escaped.checkpoint.state)


def stored(out: Path, name: str, compute, settings_type) -> Trajectory:
    """``compute()``, kept as ``out/name.json`` (an existing file is read, not recomputed)."""
    path = out / f"{name}.json"
    if path.exists():
        return Trajectory.from_dict(json.loads(path.read_text()), settings_type)
    trajectory = compute()
    record = trajectory.to_dict()
    record["provenance"] = provenance({"name": name}, None)
    out.mkdir(parents=True, exist_ok=True)
    path.with_suffix(".tmp").write_text(json_text(record, indent=None))
    path.with_suffix(".tmp").replace(path)
    return trajectory


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--full", action="store_true", help="the stored size (hours)")
    parser.add_argument("--out", type=Path, default=Path(__file__).resolve().parent)
    args = parser.parse_args()
    seeds = {500: 16, 2000: 8, 8000: 2} if args.full else {60: 1}
    t_max = 24.0 if args.full else 4.0
    mc = 2**16 if args.full else 2**11
    activation = register_activation(sphere_erf(0.5)).name

    start = Overlaps.typical_start("sphere", 1000, SPIKED)
    mu = escape_rate(
        FlowRun(
            SPIKED,
            activation,
            start,
            t_max=10.0,
            method="sgd",
            eta=ETA,
            sphere=True,
            mc_samples=mc,
        )
    )
    mu_flow = escape_rate(FlowRun(SPIKED, activation, start, t_max=10.0, sphere=True))
    print(f"escape rate mu = {mu:.4f} (SGD eta/B = {ETA}), {mu_flow:.4f} (flow)")

    for D, count in seeds.items():
        for seed in range(count):
            run = TrainingRun(
                SPIKED.replace(D=D),
                activation,
                "sgd",
                eta=ETA,
                steps=round(t_max * D / ETA),
                seed=seed,
                start="sphere",
                sphere=True,
                log_points=150,
                N_test=5000 if args.full else 1000,
            )
            trajectory = stored(
                args.out,
                f"sgd_erf_sphere_D{D}_seed{seed}",
                lambda run=run, D=D: until_escaped(run, 0.6 if D > 2000 else math.inf),
                TrainingRun,
            )
            escaped = np.abs(trajectory.column("m_k")) >= 0.4
            if seed > 1 or not escaped.any():
                continue
            restart = matching_flow(trajectory, start=int(np.argmax(escaped)), mc_samples=mc)
            ode = stored(
                args.out,
                f"ode_erf_sphere_D{D}_seed{seed}",
                lambda r=restart: solve_flow(r),
                FlowRun,
            )
            print(
                f"D = {D}, seed {seed}: |m_k| reaches 0.4 at t = "
                f"{trajectory.crossing_time('m_k', 0.4, magnitude=True):.2f}; error at the end "
                f"{trajectory.last.test_error:.3f}, restarted SGD ODE {ode.last.test_error:.3f}"
            )


if __name__ == "__main__":
    main()
