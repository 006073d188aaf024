"""The ERM points of ``bayes-slr gap``, old code against new, in one process.

The old code is this repository's ERM modules at a git revision (``--old``, default ``main``):
``models/simulate.py``, ``models/scoring.py``, ``attention/erm_settings.py``,
``attention/training.py``, ``studies/erm.py`` and the others of :data:`ERM_MODULES` are read
with ``git show`` and loaded as separate modules (each importing the other old ones; everything
else is shared), so both run on the same machine, under the same load, in the same process. A
point is what ``gap --alpha 16`` runs per task and activation: ``erm_study`` at ``D = 100``,
``Delta = 0.1``, 4 seeds, 4 random starts and the informed one, ``lam = "auto"``, 20 000 test
sequences a seed, ``predict_population=False`` (``GapOptions.erm_settings``).

Each code runs the points twice: **cold** (JAX's caches cleared and a fresh persistent
compilation cache, so that every program is compiled) and **warm** (the same calls again, right
after its own cold run: another code's cold run clears the caches). The order is old cold, old
warm, new cold, new warm, and reversed in every other round (``--rounds``, default 2: the load
of a shared machine drifts, and the first run of a process pays its start); printed per point:
the four times (means over the rounds) and the ratios old / new (and at the end of the CPU
seconds too, less moved by other jobs on a shared machine), the L-BFGS iterations of all
the problems each code trained (validation path and refit, the last warm run); the results side
by side:
the test errors with their standard errors and
their difference in combined standard errors, the chosen ridge of every seed (and whether each
is the same or a neighbouring grid value), the reported fits' training objectives (largest
relative difference over seeds, and at how many seeds the same start was selected), and whether
the notes (the warnings) are the same. With ``--evaluations`` the objective's evaluations inside
the L-BFGS loops are counted too, float64 and float32 apart, in one more (untimed) run of each
code.
Each run also prints its compilations: the programs XLA compiled (count and seconds) and the
compiled shapes of the single-problem L-BFGS trainer.

A sweep over lengths as ``gap --alpha 16 --L 2 3 5 10 --variant spiked --activations softmax``
runs it is ``--variant spiked --activations softmax --L 2 3 5 10`` (instead of ``--points``;
``nu = 2`` spiked, ``inf`` max, as ``gap``).

With ``--fresh N`` the points are instead timed as a user's command meets them, each in a
fresh process with the persistent compilation cache warm (the project's cache folder): every
program is traced, lowered and read back from the cache, none compiled. For each code, ``N``
processes in turn (old, new, old, new, ...; one more per code first, untimed, fills the cache),
each running one point and then the population optimum of the same setting
(``studies.gap.population_point``, which ``gap`` runs beside it); printed: the programs the
point loaded, its wall and CPU seconds, and its ratio to the population point's, means over the
processes.

Run: ``.venv/bin/python benchmarks/erm_speed.py [--old REV] [--points readme ...]``.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib.util
import inspect
import json
import math
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import jax
import numpy as np

import bayes_slr  # noqa: F401  (float64)
from bayes_slr.attention.erm_settings import DEFAULT_LAM_GRID
from bayes_slr.experiments.gap_records import DEFAULT_SEEDS
from bayes_slr.experiments.task import DEFAULT_D, DEFAULT_DELTA
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies import erm as new_erm

ROOT = Path(__file__).resolve().parent.parent
ERM_MODULES = (
    "models.simulate",
    "models.scoring",
    "attention.optimizers",
    "attention.erm_settings",
    "attention.projection",
    "attention.training",
    "attention.span",
    "studies.erm",
)
"""The modules loaded at the old revision, in import order (``bayes_slr.`` omitted: the draw
and scoring of test sequences, then the optimisers, which the settings of some revisions
import); one the revision does not have is the current one."""
ALPHA = 16.0
POINTS = {
    "readme": ("spiked", 3, 2.0, "softmax"),
    "spiked5erf": ("spiked", 5, 2.0, "erf"),
    "max10linear": ("max", 10, math.inf, "linear"),
    "max3softplus": ("max", 3, math.inf, "softplus"),
    "max30linear": ("max", 30, math.inf, "linear"),
    "spiked30softmax": ("spiked", 30, 2.0, "softmax"),
    "max100linear": ("max", 100, math.inf, "linear"),
    "spiked100softmax": ("spiked", 100, 2.0, "softmax"),
}
"""Name: (variant, L, nu, activation)."""
GAP_NU = {"spiked": 2.0, "max": math.inf}
"""The ``nu`` of each variant in ``gap``'s default settings."""
COMPILE_EVENT = "/jax/core/compile/backend_compile_duration"
_compilations: list[float] = []
jax.monitoring.register_event_duration_secs_listener(
    lambda event, seconds, **_: _compilations.append(seconds) if event == COMPILE_EVENT else None
)


def old_erm(revision: str):
    """``studies/erm.py`` at ``revision``, with the other ERM modules at that revision."""
    old = {}
    for name in ERM_MODULES:
        path = f"bayes_slr/{name.replace('.', '/')}.py"
        shown = subprocess.run(
            ["git", "show", f"{revision}:{path}"], cwd=ROOT, capture_output=True, text=True
        )
        if shown.returncode != 0:  # not at that revision: the current module serves
            continue
        source = shown.stdout
        spec = importlib.util.spec_from_loader(f"_old_{name.replace('.', '_')}", loader=None)
        module = importlib.util.module_from_spec(spec)
        sys.modules[spec.name] = module  # dataclasses look their module up there
        with _modules_replaced({f"bayes_slr.{n}": m for n, m in old.items()}):
            exec(compile(source, f"{revision}:{path}", "exec"), module.__dict__)  # noqa: S102
        old[name] = module
    return old["studies.erm"]


@contextlib.contextmanager
def _modules_replaced(replacements: dict):
    """``sys.modules`` entries replaced for the duration (so ``from ... import`` sees them)."""
    saved = {name: sys.modules.get(name) for name in replacements}
    sys.modules.update(replacements)
    try:
        yield
    finally:
        for name, module in saved.items():
            if module is None:
                sys.modules.pop(name, None)
            else:
                sys.modules[name] = module


def run_point(erm_module, name: str, seeds: int = DEFAULT_SEEDS):
    """One point with ``erm_module``'s ``erm_study``: ``(summary, seconds, iterations)``, the
    last the L-BFGS iterations of every problem it trained (every call of its
    ``train_problems``: the validation path and the refit)."""
    variant, L, nu, activation = POINTS[name]
    config = SLRConfig(variant, DEFAULT_D, LengthLaw.fixed(L), nu, DEFAULT_DELTA)
    iterations = []
    trainer = erm_module.train_problems

    def counted(*args, **kwargs):
        result = trainer(*args, **kwargs)
        iterations.append(int(np.sum(np.asarray(result[3]))))
        return result

    erm_module.train_problems = counted
    try:
        start = time.perf_counter()
        summary = _study(erm_module, config, activation, seeds)
        seconds = time.perf_counter() - start
    finally:
        erm_module.train_problems = trainer
    return summary, seconds, sum(iterations)


def _study(erm_module, config: SLRConfig, activation: str, seeds: int):
    """``erm_module``'s ERM study of one point, in the call shape of its revision: ``(config,
    settings, seed)`` with the activation and ``alpha`` in the settings, or (before it) the
    activation beside the config and the settings as keywords."""
    common = dict(alpha=ALPHA, seeds=seeds, predict_population=False)
    if "activation" in inspect.signature(erm_module.erm_study).parameters:
        return erm_module.erm_study(config, activation, **common)
    settings = erm_module.erm_study.__globals__["ERMSettings"]
    return erm_module.erm_study(config, settings(activation=activation, **common), 0)


def counted_evaluations(erm_module, name: str, seeds: int = DEFAULT_SEEDS) -> dict:
    """The objective's evaluations inside the compiled L-BFGS loops of one point, by float type
    (``{"float64": n, "float32": n}``): the code's objectives (full and profiled) traced again
    with a ``jax.debug.callback`` (JAX's caches cleared before and after, so the timed programs
    carry none)."""
    training = erm_module.train_problems.__globals__
    projection = training.get("projection")
    counts = {"float64": 0, "float32": 0}

    def tick(value):
        counts[str(np.asarray(value).dtype)] += 1

    def counting(function):
        def wrapped(*args, **kwargs):
            value = function(*args, **kwargs)
            jax.debug.callback(tick, value)
            return value

        return wrapped

    patched = [(training, "objective")]
    if projection is not None:
        patched.append((projection.__dict__, "profiled_objective"))
    saved = [(where, key, where[key]) for where, key in patched]
    jax.clear_caches()
    try:
        for where, key in patched:
            where[key] = counting(where[key])
        run_point(erm_module, name, seeds)
    finally:
        for where, key, function in saved:
            where[key] = function
        jax.clear_caches()
    return counts


def run_all(
    erm_module, points, cache_root: str | None, label: str, seeds: int = DEFAULT_SEEDS
) -> dict:
    """Every point, cold when ``cache_root`` is given (caches cleared, a fresh persistent one);
    each point's time is printed as it ends (``label``: the code and the run)."""
    if cache_root is not None:
        jax.clear_caches()
        enable_compilation_cache(tempfile.mkdtemp(dir=cache_root))
    out = {}
    _compilations.clear()
    for name in points:
        cpu = time.process_time()
        out[name] = (*run_point(erm_module, name, seeds), time.process_time() - cpu)
        print(
            f"  {label} {name}: {out[name][1]:.1f} s ({out[name][3]:.1f} s CPU), "
            f"{out[name][2]} iterations",
            flush=True,
        )
    trainer = erm_module.train_problems.__globals__["train_jit"]
    print(
        f"  {label}: {len(_compilations)} programs compiled in {sum(_compilations):.1f} s; "
        f"the L-BFGS trainer compiled for {trainer._cache_size()} shapes",
        flush=True,
    )
    return out


def fresh_child(erm_module, name: str, seeds: int) -> None:
    """One point, then the population optimum of its setting, in this (fresh) process with the
    project's persistent compilation cache; prints one JSON line (:func:`fresh`)."""
    from bayes_slr.studies.gap import population_point

    enable_compilation_cache()
    lowered = []
    jax.monitoring.register_event_duration_secs_listener(
        lambda event, seconds, **_: (
            lowered.append(seconds)
            if event == "/jax/core/compile/jaxpr_to_mlir_module_duration"
            else None
        )
    )
    wall, cpu = time.perf_counter(), time.process_time()
    summary, _, _ = run_point(erm_module, name, seeds)
    out = {"erm": time.perf_counter() - wall, "erm_cpu": time.process_time() - cpu}
    out["programs"] = len(lowered)
    variant, L, nu, activation = POINTS[name]
    config = SLRConfig(variant, DEFAULT_D, LengthLaw.fixed(L), nu, DEFAULT_DELTA)
    wall, cpu = time.perf_counter(), time.process_time()
    population_point(config, activation)
    out |= {"population": time.perf_counter() - wall, "population_cpu": time.process_time() - cpu}
    out |= {"test_error": summary.test_error, "lam": list(summary.lam)}
    print(json.dumps(out), flush=True)


def fresh(args) -> None:
    """Each code's points in fresh processes, alternately (module docstring, ``--fresh``)."""
    for name in args.points:
        runs: dict[str, list[dict]] = {"old": [], "new": []}
        for repeat in range(args.fresh + 1):
            for code in runs:
                command = [sys.executable, __file__, "--child", code, "--old", args.old]
                command += ["--points", name, "--seeds", str(args.seeds)]
                shown = subprocess.run(command, capture_output=True, text=True, check=True)
                if repeat:  # the first fills the cache
                    runs[code].append(json.loads(shown.stdout.strip().splitlines()[-1]))
        for code, every in runs.items():
            mean = {k: float(np.mean([r[k] for r in every])) for k in every[0] if k != "lam"}
            print(
                f"{name} {code}: {mean['programs']:.0f} programs; point {mean['erm']:.2f} s wall "
                f"({mean['erm_cpu']:.2f} s CPU), population point {mean['population']:.2f} s "
                f"({mean['population_cpu']:.2f} s CPU): ratio "
                f"{mean['erm'] / mean['population']:.2f} wall, "
                f"{mean['erm_cpu'] / mean['population_cpu']:.2f} CPU; test error "
                f"{mean['test_error']:.6f}, lam {every[0]['lam']}",
                flush=True,
            )
        old, new = (np.mean([r["erm_cpu"] for r in runs[c]]) for c in ("old", "new"))
        print(f"{name}: point CPU old / new x{old / new:.2f}", flush=True)


def grid_steps(old_lam: float, new_lam: float) -> int:
    """How many grid values apart two chosen ridges are."""
    grid = list(DEFAULT_LAM_GRID)
    return abs(grid.index(old_lam) - grid.index(new_lam))


def objective_differences(old, new) -> str:
    """The reported fits' training objectives, old against new: the largest relative difference
    over seeds, and at how many seeds the same start was selected."""
    pairs = list(zip(old.per_seed, new.per_seed, strict=True))
    relative = max(abs(a.train_loss - b.train_loss) / abs(a.train_loss) for a, b in pairs)
    same = sum(a.selected_start == b.selected_start for a, b in pairs)
    return (
        f"reported objective largest relative difference {relative:.1e}; the same start "
        f"selected at {same} of {len(pairs)} seeds"
    )


def compare(
    name: str, times: dict, results: dict, iterations: dict, evaluations: dict | None = None
) -> None:
    """Print one point's times, ratios, iterations, evaluations and results, old against new."""
    old, new = results["old"], results["new"]
    combined = math.hypot(old.stderr, new.stderr)
    steps = [grid_steps(a, b) for a, b in zip(old.lam, new.lam, strict=True)]
    print(
        f"{name}: cold old {times['old cold']:.1f} s new {times['new cold']:.1f} s "
        f"(x{times['old cold'] / times['new cold']:.2f}); warm old {times['old warm']:.1f} s "
        f"new {times['new warm']:.1f} s (x{times['old warm'] / times['new warm']:.2f}); "
        f"L-BFGS iterations old {iterations['old']} new {iterations['new']}\n"
        f"  test error old {old.test_error:.4f} +- {old.stderr:.4f}, new {new.test_error:.4f} +- "
        f"{new.stderr:.4f}: {abs(old.test_error - new.test_error) / combined:.2f} combined "
        f"stderrs\n  lam old {', '.join(f'{x:g}' for x in old.lam)}; new "
        f"{', '.join(f'{x:g}' for x in new.lam)}; grid steps apart {steps}\n"
        f"  {objective_differences(old, new)}\n"
        + (
            ""
            if evaluations is None
            else f"  evaluations old {evaluations['old']} new {evaluations['new']}\n"
        )
        + f"  notes the same: {old.notes == new.notes}"
        + ("" if old.notes == new.notes else f"\n  old {old.notes}\n  new {new.notes}"),
        flush=True,
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--old", default="main", help="git revision of the old code")
    parser.add_argument("--points", nargs="+", choices=sorted(POINTS), default=["readme"])
    parser.add_argument("--variant", choices=sorted(GAP_NU), help="a sweep over --L instead")
    parser.add_argument("--activations", nargs="+", default=["softmax"])
    parser.add_argument("--L", nargs="+", type=int, default=[2, 3, 5, 10, 30, 100])
    parser.add_argument(
        "--rounds", type=int, default=2, help="rounds, the codes' order reversed in every other"
    )
    parser.add_argument(
        "--seeds", type=int, default=DEFAULT_SEEDS, help="teachers a point (a smaller point)"
    )
    parser.add_argument(
        "--evaluations",
        action="store_true",
        help="also count the objective's evaluations (one more, untimed, run of each code)",
    )
    parser.add_argument(
        "--fresh", type=int, default=0, help="time each code in this many fresh processes instead"
    )
    parser.add_argument("--child", choices=["old", "new"], help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child is not None:
        code = old_erm(args.old) if args.child == "old" else new_erm
        return fresh_child(code, args.points[0], args.seeds)
    if args.fresh:
        return fresh(args)
    if args.variant is not None:
        args.points = []
        for activation in args.activations:
            for L in args.L:
                name = f"{args.variant}{L}{activation}"
                POINTS[name] = (args.variant, L, GAP_NU[args.variant], activation)
                args.points.append(name)
    codes = {"old": old_erm(args.old), "new": new_erm}
    rounds: dict[str, list[dict]] = {}
    with tempfile.TemporaryDirectory() as cache_root:
        for round_ in range(args.rounds):
            for code in list(codes)[:: -1 if round_ % 2 else 1]:
                for label, cache in (("cold", cache_root), ("warm", None)):
                    rounds.setdefault(f"{code} {label}", []).append(
                        run_all(codes[code], args.points, cache, f"{code} {label}", args.seeds)
                    )
    runs = {run: every[-1] for run, every in rounds.items()}
    seconds = {
        run: {name: sum(r[name][1] for r in every) / len(every) for name in args.points}
        for run, every in rounds.items()
    }
    total = {run: sum(points.values()) for run, points in seconds.items()}
    cpu = {
        run: sum(r[name][3] for r in every for name in args.points) / len(every)
        for run, every in rounds.items()
    }
    for name in args.points:
        compare(
            name,
            {run: points[name] for run, points in seconds.items()},
            {code: runs[f"{code} warm"][name][0] for code in codes},
            {code: runs[f"{code} warm"][name][2] for code in codes},
            {code: counted_evaluations(codes[code], name, args.seeds) for code in codes}
            if args.evaluations
            else None,
        )
    print(
        f"all points: cold x{total['old cold'] / total['new cold']:.2f} "
        f"({total['old cold']:.1f} s / {total['new cold']:.1f} s), warm "
        f"x{total['old warm'] / total['new warm']:.2f} ({total['old warm']:.1f} s / "
        f"{total['new warm']:.1f} s); CPU warm x{cpu['old warm'] / cpu['new warm']:.2f} "
        f"({cpu['old warm']:.1f} s / {cpu['new warm']:.1f} s), cold "
        f"x{cpu['old cold'] / cpu['new cold']:.2f}",
        flush=True,
    )


if __name__ == "__main__":
    main()
