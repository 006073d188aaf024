"""Where the time of one ERM point goes: compilation, L-BFGS iterations and gradient evaluations
per ridge value and start, time per evaluation, validation and scoring, in one process.

A point is what ``bayes-slr gap --alpha 16`` runs per activation and task: ``erm_study`` at
``D = 100``, ``alpha = 16``, ``Delta = 0.1``, 4 seeds, the default starts (random ones plus the
informed one) and ``lam = "auto"`` (the held-out validation path, then the refit from every start),
test errors on 20 000 fresh sequences per seed. Points: the README's (spiked ``nu = 2``,
``L = 3``, softmax) and max-SLR ``nu = inf``, ``L = 30``, linear.

Each point runs three times:

1. **cold** (a fresh persistent compilation cache and JAX's in-memory caches cleared): the stages'
   times include tracing and compilation;
2. **warm**: the same call again; ``cold - warm`` per stage is its compilation;
3. **counted** (caches cleared, the training objective, full or profiled over ``v``
   (``attention/projection.py``), wrapped in a ``jax.debug.callback`` that counts its
   evaluations): the objective's evaluations on every call of the L-BFGS trainer, per
   ridge value of the validation path and for the refit. The trainer now solves each problem (seed
   x ridge value x start) on its own; the code this profile was first run on used one vectorised
   loop, which runs until its slowest member stops, so that its cost was its batched evaluations
   (callbacks / members), not each start's own (docs/performance.md).

The stages are the experiment's own functions, timed by wrapping them (nothing is re-implemented
here): ``data`` (the training sets and starts), ``path`` (the L-BFGS trainer's calls on the
validation path, one per ridge value, with the iterations of every seed and start),
``validation`` (the held-out scores of each ridge value), ``refit`` (the trainer on the whole
training sets at the chosen ridge), ``scoring`` (each seed: every start, the zero predictor and
the oracle on the test sequences) and ``other`` (the rest of the call). One
evaluation's time is a jitted, vectorised ``value_and_grad`` of the objective at the trainer's
shapes (all seeds and starts at once), best of 20. The overhead is the warm trainer time over
(batched evaluations x one evaluation's time), and the point's time over the same.

Run: ``.venv/bin/python benchmarks/erm_profile.py [--points readme max30] [--json out.json]``.
"""

from __future__ import annotations

import argparse
import json
import math
import tempfile
import time
from collections import defaultdict
from unittest import mock

import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention import projection, training
from bayes_slr.attention.erm_settings import DEFAULT_N_TEST, DEFAULT_STARTS, ERMSettings
from bayes_slr.experiments.gap_records import DEFAULT_SEEDS
from bayes_slr.experiments.task import DEFAULT_D, DEFAULT_DELTA
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import package_versions
from bayes_slr.studies import erm as erm_module  # the study profiled (one import)

POINTS = {
    "readme": (SLRConfig("spiked", DEFAULT_D, LengthLaw.fixed(3), 2.0, DEFAULT_DELTA), "softmax"),
    "max30": (
        SLRConfig("max", DEFAULT_D, LengthLaw.fixed(30), math.inf, DEFAULT_DELTA),
        "linear",
    ),
    "max100": (
        SLRConfig("max", DEFAULT_D, LengthLaw.fixed(100), math.inf, DEFAULT_DELTA),
        "linear",
    ),
}
ALPHA = 16.0


class Recorder:
    """The stages' times and the trainer calls of one run of a point."""

    def __init__(self, count_evaluations: bool):
        self.count_evaluations = count_evaluations
        self.stage = "data"
        self.seconds: dict[str, float] = defaultdict(float)
        self.calls: list[dict] = []
        self.evaluations = 0

    def timed(self, stage: str | None, function):
        """``function`` wrapped: its time (outputs ready) is added to ``stage`` (or the current)."""

        def wrapper(*args, **kwargs):
            start = time.perf_counter()
            result = jax.block_until_ready(function(*args, **kwargs))
            self.seconds[stage or self.stage] += time.perf_counter() - start
            return result

        return wrapper

    def staged(self, stage: str, function):
        """``function`` run as ``stage`` (the trainer calls inside it are counted there)."""

        def wrapper(*args, **kwargs):
            self.stage = stage
            return function(*args, **kwargs)

        return wrapper

    def trainer(self, call):
        """The trainer's ``__call__`` wrapped: time, iterations, evaluations of each call."""

        def wrapper(trainer, starts, batches, lams, active=None):
            self.evaluations = 0
            start = time.perf_counter()
            result = jax.block_until_ready(call(trainer, starts, batches, lams, active))
            seconds = time.perf_counter() - start
            jax.effects_barrier()
            iterations = np.asarray(result[3])  # (seeds, G, S)
            if active is not None:  # the problems trained (coinciding starts leave the path)
                iterations = iterations[np.asarray(active)]
            self.seconds[self.stage] += seconds
            self.calls.append(
                {
                    "stage": self.stage,
                    "lam": float(np.asarray(lams)[0, 0]),
                    "seconds": seconds,
                    "members": int(iterations.size),
                    "iterations_per_start": {
                        "min": int(iterations.min()),
                        "median": float(np.median(iterations)),
                        "max": int(iterations.max()),
                    },
                    "batched_evaluations": self.evaluations / iterations.size
                    if self.count_evaluations
                    else None,
                    "shapes": (
                        starts,
                        batches.batches if isinstance(batches, training.SeedSamples) else batches,
                    ),
                }
            )
            return result

        return wrapper

    def objective(self, original):
        """The objective (full, or profiled over ``v``: its first argument has ``k`` either
        way), counting each (per-member) evaluation."""

        def counted(params, X, lengths, y, activation, lam):
            # an argument batched over every member, so that a vectorised call counts each
            # (an argument shared by the starts is called back once for all of them)
            jax.debug.callback(self._count, params.k[..., 0])
            return original(params, X, lengths, y, activation, lam)

        return counted

    def _count(self, _member) -> None:
        self.evaluations += 1


def run_point(config: SLRConfig, activation: str, recorder: Recorder):
    """One ERM point with its stages recorded; returns the summary and the total seconds."""
    patches = [
        mock.patch.object(
            erm_module, "_training_sets", recorder.timed("data", erm_module._training_sets)
        ),
        mock.patch.object(erm_module, "_starts", recorder.timed("data", erm_module._starts)),
        mock.patch.object(erm_module, "_ridges", recorder.staged("path", erm_module._ridges)),
        mock.patch.object(
            erm_module,
            "_train_every_start",
            recorder.staged("refit", erm_module._train_every_start),
        ),
        mock.patch.object(erm_module, "_scores", recorder.timed("validation", erm_module._scores)),
        mock.patch.object(
            erm_module, "_seed_record", recorder.timed("scoring", erm_module._seed_record)
        ),
        mock.patch.object(
            erm_module._Trainer, "__call__", recorder.trainer(erm_module._Trainer.__call__)
        ),
    ]
    if recorder.count_evaluations:  # the full objective and the profiled one (projection.py)
        patches.append(
            mock.patch.object(training, "objective", recorder.objective(training.objective))
        )
        patches.append(
            mock.patch.object(
                projection,
                "profiled_objective",
                recorder.objective(projection.profiled_objective),
            )
        )
    for patch in patches:
        patch.start()
    try:
        start = time.perf_counter()
        summary = erm_module.erm_study(
            config,
            ERMSettings(
                activation=activation,
                alpha=ALPHA,
                seeds=DEFAULT_SEEDS,
                starts=DEFAULT_STARTS,
                N_test=DEFAULT_N_TEST,
                predict_population=False,
            ),
            0,
        )
        total = time.perf_counter() - start
    finally:
        for patch in reversed(patches):
            patch.stop()
    recorder.seconds["other"] = total - sum(recorder.seconds.values())
    return summary, total


def evaluation_seconds(starts, batches, activation: str, repeats: int = 20) -> float:
    """Best time of one vectorised ``value_and_grad`` of the objective at a trainer call's shapes
    (starts ``(seeds, G, S, ...)``, data ``(seeds, ...)``)."""

    def one(params, X, lengths, y):
        return jax.value_and_grad(training.objective)(params, X, lengths, y, activation, 1e-3)

    over_starts = jax.vmap(one, in_axes=(0, None, None, None))
    over_grid = jax.vmap(over_starts, in_axes=(0, None, None, None))
    evaluate = jax.jit(jax.vmap(over_grid))
    args = (starts, batches.X, batches.lengths, batches.y)
    jax.block_until_ready(evaluate(*args))
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        jax.block_until_ready(evaluate(*args))
        best = min(best, time.perf_counter() - start)
    return best


def profile(name: str) -> dict:
    """The three runs of one point and its profile (module docstring)."""
    config, activation = POINTS[name]
    jax.clear_caches()
    cold = Recorder(count_evaluations=False)
    _, cold_total = run_point(config, activation, cold)
    warm = Recorder(count_evaluations=False)
    summary, warm_total = run_point(config, activation, warm)
    jax.clear_caches()
    counted = Recorder(count_evaluations=True)
    run_point(config, activation, counted)
    per_shape: dict[tuple, float] = {}
    calls = []
    for timed_call, counted_call in zip(warm.calls, counted.calls, strict=True):
        starts, batches = timed_call.pop("shapes")
        counted_call.pop("shapes")
        key = (jax.tree_util.tree_leaves(starts)[0].shape, batches.X.shape)
        if key not in per_shape:
            per_shape[key] = evaluation_seconds(starts, batches, activation)
        evaluations = counted_call["batched_evaluations"]
        calls.append(
            {
                **timed_call,
                "batched_evaluations": evaluations,
                "evaluation_seconds": per_shape[key],
                "overhead": timed_call["seconds"] / (evaluations * per_shape[key]),
            }
        )
    evaluation_time = sum(c["batched_evaluations"] * c["evaluation_seconds"] for c in calls)
    trainer_time = sum(c["seconds"] for c in calls)
    result = {
        "config": config.to_dict(),
        "activation": activation,
        "cold_seconds": cold_total,
        "warm_seconds": warm_total,
        "compile_seconds": cold_total - warm_total,
        "stage_seconds_warm": dict(warm.seconds),
        "stage_compile_seconds": {s: cold.seconds[s] - warm.seconds[s] for s in warm.seconds},
        "trainer_calls": calls,
        "batched_evaluations": sum(c["batched_evaluations"] for c in calls),
        "trainer_overhead": trainer_time / evaluation_time,
        "point_overhead": warm_total / evaluation_time,
        "lam": list(summary.lam),
        "test_error": summary.test_error,
        "stderr": summary.stderr,
    }
    report(name, result)
    return result


def report(name: str, result: dict) -> None:
    """Print one point's profile."""
    print(
        f"{name}: cold {result['cold_seconds']:.1f} s, warm {result['warm_seconds']:.1f} s, "
        f"compilation {result['compile_seconds']:.1f} s; error {result['test_error']:.4f} +- "
        f"{result['stderr']:.4f}, lam {', '.join(f'{x:g}' for x in result['lam'])}",
        flush=True,
    )
    for stage, seconds in result["stage_seconds_warm"].items():
        print(
            f"  {stage:10s} warm {seconds:7.2f} s, compilation "
            f"{result['stage_compile_seconds'][stage]:7.2f} s"
        )
    for call in result["trainer_calls"]:
        its = call["iterations_per_start"]
        print(
            f"  {call['stage']:5s} lam {call['lam']:8.3g}: {call['seconds']:6.2f} s, "
            f"iterations per start {its['min']}/{its['median']:g}/{its['max']} (min/median/max of "
            f"{call['members']}), {call['batched_evaluations']:6.0f} batched evaluations x "
            f"{call['evaluation_seconds'] * 1e3:.2f} ms, overhead {call['overhead']:.2f}"
        )
    print(
        f"  {result['batched_evaluations']:.0f} batched evaluations; trainer time / evaluations' "
        f"time {result['trainer_overhead']:.2f}; point time / evaluations' time "
        f"{result['point_overhead']:.2f}",
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--points", nargs="+", choices=sorted(POINTS), default=sorted(POINTS))
    parser.add_argument("--json", help="also write the profile to this JSON file")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as cache:
        enable_compilation_cache(cache)  # cold means compiled here, not read from the cache
        profiles = {name: profile(name) for name in args.points}
    if args.json:
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump(
                {"points": profiles, "versions": package_versions(), "devices": str(jax.devices())},
                handle,
                indent=1,
            )


if __name__ == "__main__":
    main()
