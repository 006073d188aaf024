"""``bayes-slr posterior`` and ``bayes-slr posterior-sweep``: Bayes-optimal inference at finite alpha.

``posterior`` draws a teacher and ``N = round(alpha D)`` training sequences, samples the
posterior of ``(k*, v*)`` (NUTS or exact Gibbs), writes the draws as netCDF, and
prints convergence diagnostics, posterior overlaps, the test error of the
posterior-mean predictor, and ERM (softmax, linear) test errors on the same data.
``--from FILE`` re-summarises a netCDF written before instead of sampling.
``posterior-sweep`` does the same across alpha, resumable from ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import Any

import jax
import xarray as xr

from bayes_slr.cli.common import (
    add_task_arguments,
    format_table,
    integer,
    make_config,
    number,
    open_sweep_log,
    print_json,
)
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import bayes_estimator
from bayes_slr.inference.predictive import bayes_test_error, excess_test_error, zero_predictor_error
from bayes_slr.inference.samplers import INITS, SAMPLERS, check_sampling_arguments, sample_posterior
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig
from bayes_slr.plots import plot_posterior_sweep
from bayes_slr.records import atomic_write, check_writable_output, json_ready, provenance
from bayes_slr.theory.bayes import bayes_error_exact

ERM_ACTIVATIONS = ("softmax", "linear")


@dataclasses.dataclass(frozen=True)
class PosteriorOptions:
    """How one posterior point is sampled and evaluated (validated by :meth:`check`)."""

    sampler: str = "nuts"
    chains: int = 4
    warmup: int = 500
    samples: int = 500
    init: str = "random"
    N_test: int = 100_000
    max_draws: int = 1_000
    erm: bool = True
    lam: float = 1e-3
    exact_teacher: bool = False

    def check(self, config: SLRConfig) -> None:
        """Raise ``ConfigError`` on any option out of range for ``config``."""
        check_sampling_arguments(config, sampler=self.sampler, chains=self.chains, warmup=self.warmup,
                                 samples=self.samples, init=self.init)
        self.check_evaluation()
        if self.exact_teacher:
            check_int("D", config.D, 2)

    def check_evaluation(self) -> None:
        """Raise ``ConfigError`` on a bad test-set size, draw count or ERM penalty."""
        check_int("N_test", self.N_test, 2)
        check_int("max_draws", self.max_draws, 1)
        check_real("lam", self.lam, minimum=0.0)


def training_size(config: SLRConfig, alpha: float) -> int:
    """``N = round(alpha D)``; ``ConfigError`` unless ``alpha > 0`` and ``N >= 1``."""
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    N = round(alpha * config.D)
    if N < 1:
        raise ConfigError(f"alpha must give N = round(alpha * D) >= 1 (D = {config.D}), got alpha = {alpha:g}")
    return N


def sample_point(config: SLRConfig, alpha: float, options: PosteriorOptions, seed: int) -> xr.DataTree:
    """Draw the teacher and training set of ``seed``, sample the posterior, return its ArviZ ``DataTree``."""
    N = training_size(config, alpha)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(seed), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=options.exact_teacher)
    batch = simulate(key_data, config, teacher, N)
    draws = sample_posterior(key_sampler, config, batch, sampler=options.sampler, chains=options.chains,
                             warmup=options.warmup, samples=options.samples, init=options.init, teacher=teacher)
    settings = {"alpha": alpha, "N": N, **dataclasses.asdict(options)}
    return posterior_io.to_datatree(draws, config, batch, teacher, seed=seed, settings=settings)


def summarise(tree: xr.DataTree, options: PosteriorOptions) -> dict[str, Any]:
    """Diagnostics, overlaps, Bayes test error and (optionally) ERM errors of one posterior.

    The test set comes from the recorded seed, so a re-summarised file gives the same numbers.
    """
    record = posterior_io.record_of(tree)
    config = posterior_io.config_of(tree)
    teacher, batch = posterior_io.teacher_of(tree), posterior_io.batch_of(tree)
    k, v = posterior_io.draws_of(tree)
    key_test, key_erm = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(record["seed"] or 0), 1))
    table = diagnostics.diagnostics_table(tree)
    bayes = bayes_test_error(key_test, config, teacher, k, v, N_test=options.N_test, max_draws=options.max_draws)
    zero = zero_predictor_error(key_test, config, teacher, N_test=options.N_test)
    oracle = excess_test_error(key_test, config, teacher, lambda X, lengths: bayes_estimator(X, lengths, config, teacher),
                               N_test=options.N_test)
    population = bayes_error_exact(config)
    stats = tree.sample_stats
    summary = {
        "config": record["config"],
        "seed": record["seed"],
        "bayes_test_error": bayes.value,
        "stderr": bayes.stderr,
        "n_test": bayes.n_test,
        "oracle_error": {"value": oracle.value, "stderr": oracle.stderr},
        "population_bayes_error": population.value,
        "prior_predictive_error": {"value": zero.value, "stderr": zero.stderr},
        **diagnostics.convergence_summary(table),
        "divergences": int(stats["diverging"].sum()) if "diverging" in stats else None,
        "overlaps": {name: table[name]["mean"] for name in posterior_io.OVERLAPS},
        "diagnostics": table,
        "erm": _erm_errors(key_erm, key_test, config, teacher, batch, options) if options.erm else None,
    }
    return summary


def _erm_errors(key_fit, key_test, config, teacher, batch, options: PosteriorOptions) -> dict[str, dict[str, Any]]:
    from bayes_slr.attention.erm import fit_erm, test_error

    errors = {}
    for activation in ERM_ACTIVATIONS:
        fit = fit_erm(key_fit, batch, config, activation, lam=options.lam)
        value, stderr = test_error(key_test, fit.params, config, teacher, activation, options.N_test)
        errors[activation] = {"test_error": value, "stderr": stderr, "converged": bool(fit.converged),
                              "lam": options.lam}
    return errors


def _add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    add_task_arguments(parser)
    parser.set_defaults(D=50, Delta=0.1, nu=2.0)
    parser.add_argument("--chains", type=integer, default=4, help="chains, >= 1 (default 4)")
    parser.add_argument("--warmup", type=integer, default=500, help="warm-up steps per chain, >= 0 (default 500)")
    parser.add_argument("--samples", type=integer, default=500, help="kept draws per chain, >= 1 (default 500)")
    parser.add_argument("--sampler", choices=SAMPLERS, default="nuts", help="nuts (any variant) or gibbs (spiked)")
    parser.add_argument("--init", choices=INITS, default="random", help="random (prior draws) or informed (teacher)")
    parser.add_argument("--N-test", dest="N_test", type=integer, default=100_000, help="fresh test sequences, >= 2")
    parser.add_argument("--max-draws", type=integer, default=1_000,
                        help="draws (thinned) forming the posterior-mean predictor, >= 1 (default 1000)")
    parser.add_argument("--lam", type=number, default=1e-3, help="ridge penalty of the ERM comparison (default 1e-3)")
    parser.add_argument("--no-erm", dest="erm", action="store_false", help="skip the ERM comparison")
    parser.add_argument("--exact-teacher", action="store_true", help="|k*|^2 = |v*|^2 = D, k* orthogonal to v*")
    parser.add_argument("--seed", type=integer, default=0)
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _options(args: argparse.Namespace) -> PosteriorOptions:
    return PosteriorOptions(
        sampler=args.sampler, chains=args.chains, warmup=args.warmup, samples=args.samples, init=args.init,
        N_test=args.N_test, max_draws=args.max_draws, erm=args.erm, lam=args.lam, exact_teacher=args.exact_teacher,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``posterior`` and ``posterior-sweep`` subcommands."""
    single = subparsers.add_parser("posterior", help="sample the finite-alpha posterior; Bayes-optimal test error")
    _add_sampling_arguments(single)
    single.add_argument("--alpha", type=number, default=4.0, help="N / D, > 0 (default 4)")
    single.add_argument("--out", type=Path, help="netCDF file of the posterior (ArviZ DataTree)")
    single.add_argument("--from", dest="source", type=Path,
                        help="summarise this netCDF (written by bayes-slr posterior) instead of sampling")
    single.add_argument("--plot", type=Path, help="PNG: trace, density and rank plots of the overlaps")
    single.set_defaults(run=run)

    sweep = subparsers.add_parser("posterior-sweep", help="Bayes-optimal test error against alpha (resumable)")
    _add_sampling_arguments(sweep)
    sweep.add_argument("--alpha", type=number, nargs="+", required=True, help="values of N / D, > 0")
    sweep.add_argument("--out", type=Path,
                       help="folder: posterior_sweep.jsonl (finished points), one netCDF per alpha, posterior_sweep.json")
    sweep.add_argument("--plot", type=Path, help="PNG: error against alpha with the population Bayes error")
    sweep.set_defaults(run=run_sweep)


def run(args: argparse.Namespace) -> None:
    """``posterior``: validate everything, sample (or load), write atomically, print."""
    options = _options(args)
    if args.source is not None:
        tree = posterior_io.load_posterior(args.source)
        config = posterior_io.config_of(tree)
    else:
        config = make_config(args, L=args.L, nu=args.nu, D=args.D)
        options.check(config)
        training_size(config, args.alpha)
    options.check_evaluation()
    out = check_writable_output(args.out, force=args.force) if args.out is not None else None
    plot = check_writable_output(args.plot, force=args.force, name="--plot") if args.plot is not None else None
    if args.source is None:
        tree = sample_point(config, args.alpha, options, args.seed)
    summary = summarise(tree, options)
    if out is not None:
        posterior_io.save_posterior(tree, out, force=True)
    if plot is not None:
        diagnostics.plot_diagnostics(tree, plot)
    summary["out"] = None if out is None else str(out)
    if args.json:
        print_json(summary)
    else:
        print(_report(summary))


def _report(summary: dict[str, Any]) -> str:
    rows = [[name, row["mean"], row["sd"], row["mcse_mean"], row["r_hat"], row["ess_bulk"], row["ess_tail"]]
            for name, row in summary["diagnostics"].items()]
    lines = [
        f"config: {json.dumps(json_ready(summary['config']))}",
        format_table(["quantity", "mean", "sd", "mcse", "r_hat", "ess_bulk", "ess_tail"], rows),
        f"r_hat max {summary['rhat_max']:.4f}, ESS bulk min {summary['ess_bulk_min']:.0f}, "
        f"divergences {summary['divergences']}",
        f"Bayes-optimal test error (excess over Delta): {summary['bayes_test_error']:.5f} +- {summary['stderr']:.5f}",
        f"known-direction (oracle) error of this teacher: {summary['oracle_error']['value']:.5f} "
        f"+- {summary['oracle_error']['stderr']:.5f}",
        f"population Bayes error (alpha -> inf, D -> inf): {summary['population_bayes_error']:.5f}",
        f"prior-predictive error (alpha -> 0): {summary['prior_predictive_error']['value']:.5f} "
        f"+- {summary['prior_predictive_error']['stderr']:.5f}",
    ]
    for activation, erm in (summary["erm"] or {}).items():
        lines.append(f"ERM {activation} test error: {erm['test_error']:.5f} +- {erm['stderr']:.5f}"
                     + ("" if erm["converged"] else " (not converged)"))
    if summary.get("out"):
        lines.append(f"posterior written to {summary['out']}")
    return "\n".join(lines)


def run_sweep(args: argparse.Namespace) -> None:
    """``posterior-sweep``: one posterior per alpha, skipping points finished in ``--out``."""
    from tqdm import tqdm

    options = _options(args)
    config = make_config(args, L=args.L, nu=args.nu, D=args.D)
    options.check(config)
    for alpha in args.alpha:
        training_size(config, alpha)
    plot = check_writable_output(args.plot, force=args.force, name="--plot") if args.plot is not None else None
    log = None if args.out is None else open_sweep_log(args.out, "posterior_sweep.jsonl")
    rows = []
    for alpha in tqdm(args.alpha, desc="posterior-sweep", file=sys.stderr, disable=None):
        point = {**config.to_dict(), "alpha": alpha, "seed": args.seed, **dataclasses.asdict(options)}
        result = None if log is None else log.result(point)
        if result is None:
            tree = sample_point(config, alpha, options, args.seed)
            result = json_ready({key: value for key, value in summarise(tree, options).items()
                                 if key not in ("config", "diagnostics")})
            if args.out is not None:
                posterior_io.save_posterior(tree, args.out / f"posterior_alpha{alpha:g}.nc", force=True)
                log.append(point, result, args.seed)
        rows.append({"alpha": alpha, **result})
    record = {**provenance(config.to_dict(), args.seed), "options": dataclasses.asdict(options), "rows": rows}
    if args.out is not None:
        atomic_write(args.out / "posterior_sweep.json", lambda tmp: tmp.write_text(json.dumps(json_ready(record), indent=1)))
    if plot is not None:
        atomic_write(plot, lambda tmp: plot_posterior_sweep(rows, config, tmp, ERM_ACTIVATIONS))
    if args.json:
        print_json({"config": config.to_dict(), "options": dataclasses.asdict(options), "rows": rows})
    else:
        print(_sweep_table(rows))


def _sweep_table(rows: list[dict[str, Any]]) -> str:
    header = ["alpha", "bayes", "stderr", "r_hat max", "ESS bulk min", "m_k", "m_v"]
    with_erm = any(row["erm"] for row in rows)
    if with_erm:
        header += [f"ERM {a}" for a in ERM_ACTIVATIONS]
    lines = []
    for row in rows:
        line = [row["alpha"], row["bayes_test_error"], row["stderr"], row["rhat_max"], row["ess_bulk_min"],
                row["overlaps"]["m_k"], row["overlaps"]["m_v"]]
        if with_erm:
            line += [f"{row['erm'][a]['test_error']:.4f}+-{row['erm'][a]['stderr']:.4f}" for a in ERM_ACTIVATIONS]
        lines.append(line)
    return format_table(header, lines)
