"""``bayes-slr posterior`` and ``bayes-slr posterior-sweep``: Bayes-optimal inference at finite
alpha.

``posterior`` draws a teacher and ``N = round(alpha D)`` training sequences, samples the
posterior of ``(k*, v*)`` (``--sampler auto``: exact Gibbs or Gibbs-HMC; or NUTS), writes the draws
as netCDF, and
prints convergence diagnostics, posterior overlaps, the unbiased test errors of the
Bayes-optimal predictor (draws weighted by ``p(X | k)``) and of the plain posterior mean
of ``f``, a start check (``--check-start``), warnings, and ERM (softmax, linear) test
errors on the same data.
``--from FILE`` re-summarises a netCDF written before instead of sampling; ``--data FILE.npz``
samples the posterior of a given data set (with its teacher: the same report; without: errors on
held-out sequences, no oracle, no overlaps).
``posterior-sweep`` does the same across alpha, resumable from ``--out``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

from bayes_slr.cli.common import (
    add_data_arguments,
    add_executor_arguments,
    add_task_arguments,
    describe_sources,
    format_table,
    integer,
    load_data_task,
    make_config,
    number,
    print_json,
    raise_if_points_failed,
    ridge,
    sweep_executor,
    sweep_outputs,
    warning_lines,
    write_sweep_record,
)
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.posterior import (
    ERM_ACTIVATIONS,
    PAIRED_DIFFERENCES,
    PosteriorOptions,
    posterior_on_data,
    posterior_sweep,
    sample_point,
    summarise,
)
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.sampler_registry import sampler_choices, sampler_help
from bayes_slr.models.scoring import difference_name
from bayes_slr.models.spec import INITS, SLRConfig, training_size
from bayes_slr.plots import plot_posterior_sweep
from bayes_slr.records import (
    atomic_write,
    check_output_file,
    json_ready,
    provenance,
)

LABELS = {
    "bayes": "Bayes-optimal",
    "erm_softmax": "ERM softmax",
    "erm_linear": "ERM linear",
    "zero": "zero",
}
"""How the predictors of the paired differences are named in the text report."""


def _add_sampling_arguments(parser: argparse.ArgumentParser) -> None:
    add_task_arguments(parser)
    parser.set_defaults(D=50, Delta=0.1, nu=2.0)
    parser.add_argument("--chains", type=integer, default=4, help="chains, >= 1")
    parser.add_argument("--warmup", type=integer, default=500, help="warm-up steps per chain, >= 0")
    parser.add_argument("--samples", type=integer, default=500, help="kept draws per chain, >= 1")
    parser.add_argument("--sampler", choices=sampler_choices(), default="auto", help=sampler_help())
    parser.add_argument(
        "--init",
        choices=INITS,
        default="random",
        help="start of the chains: random (prior draws, default) or informed (teacher)",
    )
    parser.add_argument(
        "--N-test", dest="N_test", type=integer, default=100_000, help="fresh test sequences, >= 2"
    )
    parser.add_argument(
        "--max-draws",
        type=integer,
        default=1_000,
        help="draws (evenly thinned, split in 4 groups for the unbiased error) forming the "
        "posterior predictors, >= 1",
    )
    parser.add_argument(
        "--lam",
        type=ridge,
        default="auto",
        help="ridge of the ERM comparison: >= 0, or auto (chosen by held-out validation, as in "
        "gap)",
    )
    parser.add_argument(
        "--no-erm", dest="erm", action="store_false", help="skip the ERM comparison"
    )
    parser.add_argument(
        "--exact-teacher", action="store_true", help="|k*|^2 = |v*|^2 = D, k* orthogonal to v*"
    )
    parser.add_argument(
        "--seed", type=integer, default=0, help="seed of the teacher, data, chains and test set"
    )
    parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    parser.add_argument("--json", action="store_true", help="print one JSON object")


def _options(args: argparse.Namespace) -> PosteriorOptions:
    return PosteriorOptions(
        sampler=args.sampler,
        chains=args.chains,
        warmup=args.warmup,
        samples=args.samples,
        init=args.init,
        N_test=args.N_test,
        max_draws=args.max_draws,
        erm=args.erm,
        lam=args.lam,
        exact_teacher=args.exact_teacher,
        check_start=args.check_start,
    )


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``posterior`` and ``posterior-sweep`` subcommands."""
    single = subparsers.add_parser(
        "posterior", help="sample the finite-alpha posterior; Bayes-optimal test error"
    )
    _add_sampling_arguments(single)
    single.add_argument("--alpha", type=number, default=4.0, help="N / D, > 0")
    single.add_argument("--out", type=Path, help="netCDF file of the posterior (ArviZ DataTree)")
    single.add_argument(
        "--from",
        dest="source",
        type=Path,
        help="summarise this netCDF (written by bayes-slr posterior) instead of sampling",
    )
    single.add_argument("--plot", type=Path, help="PNG: trace and rank plots of the overlaps")
    single.add_argument(
        "--check-start",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="also run chains from the other start (informed if --init random) and report "
        "start_agreement and multimodal (not possible with --data without a teacher)",
    )
    add_data_arguments(single)
    single.set_defaults(run=run)

    sweep = subparsers.add_parser(
        "posterior-sweep", help="Bayes-optimal test error against alpha (resumable)"
    )
    _add_sampling_arguments(sweep)
    sweep.add_argument(
        "--alpha", type=number, nargs="+", required=True, help="values of N / D, > 0"
    )
    sweep.add_argument(
        "--out",
        type=Path,
        help="folder: posterior_sweep.jsonl (finished points), one netCDF per alpha, "
        "posterior_sweep.json",
    )
    sweep.add_argument(
        "--plot", type=Path, help="PNG: error against alpha with the population Bayes error"
    )
    sweep.add_argument(
        "--check-start",
        action=argparse.BooleanOptionalAction,
        default=False,
        help="also run chains from the other start at every alpha",
    )
    add_executor_arguments(sweep)
    sweep.set_defaults(run=run_sweep)


def run(args: argparse.Namespace) -> None:
    """``posterior``: validate everything, sample (or load), write atomically, print."""
    options = _options(args)
    data = None
    if args.source is not None:
        if args.data is not None:
            raise ConfigError(
                "--from and --data exclude each other (--from re-summarises a posterior file)"
            )
        tree = posterior_io.load_posterior(args.source)
        config = posterior_io.config_of(tree)
    elif args.data is not None:
        flags = {
            name: getattr(args, name)
            for name in ("variant", "nu", "Delta", "L", "variable_length", "D")
        }
        data, config, sources = load_data_task(args, flags, ("alpha", "exact_teacher"))
        options.check(config)
    else:
        config = make_config(args, L=args.L, nu=args.nu, D=args.D)
        options.check(config)
        training_size(args.alpha, config.D)
    options.check_evaluation()
    if data is not None and data.teacher is None and "N_test" in args.explicit:
        raise ConfigError(
            "--N-test needs a teacher in the --data file: without one the errors are measured "
            "on the "
            "held-out sequences (set their share with --holdout)"
        )
    if args.out is not None and data is not None and data.teacher is None:
        raise ConfigError(
            "--out needs a teacher in the --data file: without one the held-out split is not "
            "stored, "
            "so the file could not be re-summarised by --from"
        )
    out = check_output_file(args.out, force=args.force) if args.out is not None else None
    plot = (
        check_output_file(args.plot, force=args.force, name="plot")
        if args.plot is not None
        else None
    )
    if data is not None:
        tree, summary = posterior_on_data(
            config,
            data,
            options,
            args.seed,
            holdout=args.holdout,
            about={"path": str(args.data), "sources": sources},
        )
    else:
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
        print(_report(summary, config))


def _report(summary: dict[str, Any], config: SLRConfig) -> str:
    rows = [
        [
            name,
            row["mean"],
            row["sd"],
            row["mcse_mean"],
            row["r_hat"],
            row["ess_bulk"],
            row["ess_tail"],
        ]
        for name, row in summary["diagnostics"].items()
    ]
    held_out = summary["test_set"] != "fresh sequences from the teacher"
    lines = [f"config: {json.dumps(json_ready(summary['config']))}"]
    if summary.get("data"):
        lines.append(describe_sources(config, summary["data"]))
    lines += [
        format_table(["quantity", "mean", "sd", "mcse", "r_hat", "ess_bulk", "ess_tail"], rows),
        f"r_hat max {summary['rhat_max']:.4f}, ESS bulk min {summary['ess_bulk_min']:.0f}, "
        f"divergences {summary['divergences']}",
        f"sampler {summary['sampler']}; errors on {summary['n_test']} {summary['test_set']}",
        f"Bayes-optimal test error (excess over Delta): {summary['bayes_test_error']:.5f} +- "
        f"{summary['stderr']:.5f}"
        f" (importance ESS median {summary['importance_ess']['median']:.0f}, 5% quantile "
        f"{summary['importance_ess']['q05']:.0f} of {summary['importance_ess']['draws']} draws)",
        f"posterior mean of f (plain average) test error: "
        f"{summary['posterior_mean_f_error']['value']:.5f} "
        f"+- {summary['posterior_mean_f_error']['stderr']:.5f}",
    ]
    if "oracle_error" in summary:
        lines.append(
            f"known-direction (oracle) error of this teacher: "
            f"{summary['oracle_error']['value']:.5f} "
            f"+- {summary['oracle_error']['stderr']:.5f}"
        )
    lines += [
        f"population Bayes error (alpha -> inf, D -> inf): {summary['population_bayes_error']:.5f}",
        f"prior-predictive error (alpha -> 0){' (zero predictor, held out)' if held_out else ''}: "
        f"{summary['prior_predictive_error']['value']:.5f} +- "
        f"{summary['prior_predictive_error']['stderr']:.5f}",
    ]
    if summary.get("start_check"):
        check = summary["start_check"]
        lines.append(
            f"{check['init']} start: Bayes-optimal error {check['bayes_test_error']['value']:.5f} "
            f"+- {check['bayes_test_error']['stderr']:.5f}; start_agreement "
            f"{summary['start_agreement']:+.2f} SE, multimodal: "
            f"{str(summary['multimodal']).lower()}"
        )
    for activation, erm in (summary["erm"] or {}).items():
        lines.append(
            f"ERM {activation} test error: {erm['test_error']:.5f} +- {erm['stderr']:.5f}"
            + ("" if erm["converged"] else " (not converged)")
        )
    if summary.get("paired_differences"):
        lines.append(
            f"paired differences on the same {summary['n_test']} held-out sequences (mean of the "
            "per-sequence difference of the errors +- its stderr):"
        )
        lines += [
            f"  {' - '.join(LABELS[name] for name in (a, b))}: "
            f"{summary['paired_differences'][difference_name(a, b)]['value']:+.5f} "
            f"+- {summary['paired_differences'][difference_name(a, b)]['stderr']:.5f}"
            for a, b in PAIRED_DIFFERENCES
            if difference_name(a, b) in summary["paired_differences"]
        ]
    if summary.get("out"):
        lines.append(f"posterior written to {summary['out']}")
    lines += [f"note: {note}" for note in summary.get("notes", [])]
    if summary.get("warnings"):
        lines.append(warning_lines(summary["warnings"]))
    return "\n".join(lines)


def run_sweep(args: argparse.Namespace) -> None:
    """``posterior-sweep``: one posterior per alpha, skipping points finished in ``--out``."""
    options = _options(args)
    config = make_config(args, L=args.L, nu=args.nu, D=args.D)
    options.check(config)
    for alpha in args.alpha:
        training_size(alpha, config.D)
    plot, log = sweep_outputs(args, "posterior_sweep")
    failures: list = []
    with sweep_executor(args) as executor:
        rows = posterior_sweep(
            config,
            args.alpha,
            options,
            args.seed,
            out=args.out,
            log=log,
            executor=executor,
            progress=not args.quiet,
            failures=failures,
        )
    write_sweep_record(
        args.out,
        "posterior_sweep",
        {
            **provenance(config.to_dict(), args.seed),
            "options": dataclasses.asdict(options),
            "rows": rows,
        },
    )
    if plot is not None:
        atomic_write(plot, lambda tmp: plot_posterior_sweep(rows, config, tmp, ERM_ACTIVATIONS))
    if args.json:
        print_json(
            {"config": config.to_dict(), "options": dataclasses.asdict(options), "rows": rows}
        )
    else:
        print(_sweep_table(rows))
    raise_if_points_failed(failures)


def _sweep_table(rows: list[dict[str, Any]]) -> str:
    header = ["alpha", "bayes", "stderr", "plain mean f", "r_hat max", "ESS bulk min", "m_k", "m_v"]
    with_erm = any(row["erm"] for row in rows)
    if with_erm:
        header += [f"ERM {a}" for a in ERM_ACTIVATIONS]
    lines = []
    for row in rows:
        line = [
            row["alpha"],
            row["bayes_test_error"],
            row["stderr"],
            row["posterior_mean_f_error"]["value"],
            row["rhat_max"],
            row["ess_bulk_min"],
            row["overlaps"]["m_k"],
            row["overlaps"]["m_v"],
        ]
        if with_erm:
            line += [
                f"{row['erm'][a]['test_error']:.4f}+-{row['erm'][a]['stderr']:.4f}"
                for a in ERM_ACTIVATIONS
            ]
        lines.append(line)
    warnings = [
        f"alpha {row['alpha']:g}: {warning}" for row in rows for warning in row.get("warnings", [])
    ]
    return "\n".join(
        [format_table(header, lines), *([warning_lines(warnings)] if warnings else [])]
    )
