"""``bayes-slr amp``: Bayes-optimal GAMP at finite ``D`` beside the state evolution (docs/theory.md,
part C).
"""

from __future__ import annotations

import argparse
from pathlib import Path

from bayes_slr.cli.common import (
    add_executor_arguments,
    add_task_arguments,
    format_table,
    integer,
    make_config,
    number,
    print_json,
    raise_if_points_failed,
    sweep_executor,
    sweep_outputs,
    warning_lines,
    write_sweep_record,
)
from bayes_slr.errors import check_int
from bayes_slr.experiments.amp import AMPOptions, amp_sweep, check_point
from bayes_slr.inference.amp import DEFAULT_DAMPING, DTYPES
from bayes_slr.models.spec import INITS
from bayes_slr.plots import plot_amp_points
from bayes_slr.records import atomic_write, provenance

DEFAULT_ALPHAS = (0.5, 1.0, 2.0, 4.0, 16.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``amp`` subcommand."""
    parser = subparsers.add_parser(
        "amp", help="Bayes-optimal GAMP at finite D against the state evolution"
    )
    add_task_arguments(parser)
    parser.set_defaults(D=1000)
    parser.add_argument(
        "--alpha",
        type=number,
        nargs="+",
        default=list(DEFAULT_ALPHAS),
        help="sample ratios N/D, > 0",
    )
    parser.add_argument(
        "--seeds", type=integer, default=1, help="teachers (and data sets) per alpha, >= 1"
    )
    parser.add_argument("--init", choices=INITS, default="random", help="GAMP start")
    parser.add_argument(
        "--damping",
        type=number,
        default=DEFAULT_DAMPING,
        help="weight of the new iterate, in (0, 1]",
    )
    parser.add_argument(
        "--max-iter", type=integer, default=300, help="largest number of iterations, >= 1"
    )
    parser.add_argument(
        "--tol", type=number, default=1e-6, help="residual at which GAMP stops, > 0"
    )
    parser.add_argument(
        "--dtype", choices=DTYPES, default="float64", help="precision of tokens and messages"
    )
    parser.add_argument(
        "--n-test", type=integer, default=20_000, help="fresh test sequences per point"
    )
    parser.add_argument(
        "--se-samples", type=integer, default=16_384, help="state-evolution channel draws"
    )
    parser.add_argument(
        "--no-state-evolution", action="store_true", help="skip the state evolution"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot", type=Path, help="PNG: test error against alpha with the state evolution"
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing --plot file (with --out the plot is re-derived and updated)",
    )
    parser.add_argument(
        "--out", type=Path, help="folder: amp.jsonl (finished points, resumable) and amp.json"
    )
    add_executor_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Validate everything (memory included) before any work, run the points, then
    print and write.
    """
    config = make_config(args, L=args.L, nu=args.nu, D=args.D)
    options = AMPOptions(
        init=args.init,
        damping=args.damping,
        tol=args.tol,
        max_iter=args.max_iter,
        dtype=args.dtype,
        n_test=args.n_test,
        se_samples=args.se_samples,
        state_evolution=not args.no_state_evolution,
        history=True,
    )
    check_int("--seeds", args.seeds, 1)
    for alpha in args.alpha:
        check_point(config, alpha, options)
    plot, log = sweep_outputs(args, "amp")
    settings = {**config.to_dict(), "options": vars(options)}
    failures: list = []
    with sweep_executor(args) as executor:
        rows = amp_sweep(
            config,
            args.alpha,
            args.seeds,
            options,
            log=log,
            executor=executor,
            progress=not args.quiet,
            failures=failures,
        )
    warnings = [
        f"alpha={r['alpha']:g} seed {r['seed']}: GAMP did not converge (last residual "
        f"{r['residual']:.3g}); "
        "do not read its error"
        for r in rows
        if not r["converged"]
    ]
    write_sweep_record(
        args.out, "amp", {**provenance(settings, None), "rows": rows, "warnings": warnings}
    )
    if plot is not None:
        title = (
            f"{config.variant} nu={config.nu:g}, {config.length.describe()}, "
            f"Delta={config.Delta:g}, "
            f"D={config.D}, {args.seeds} seed(s), init {args.init}"
        )
        atomic_write(plot, lambda tmp: plot_amp_points(rows, tmp, title=title))
    if args.json:
        print_json({"config": settings, "rows": rows, "warnings": warnings})
    else:
        print(_table(rows))
        if warnings:
            print(warning_lines(warnings))
    raise_if_points_failed(failures)


def _table(rows: list[dict]) -> str:
    header = [
        "alpha",
        "seed",
        "test_error",
        "+-",
        "SE error",
        "m_k",
        "q_k",
        "m_v",
        "q_v",
        "SE q_k",
        "SE q_v",
        "iterations",
        "converged",
        "residual",
    ]
    table = []
    for r in rows:
        theory = r.get("state_evolution", {})
        o = r["overlaps"]
        table.append(
            [
                r["alpha"],
                r["seed"],
                r["test_error"],
                r["stderr"],
                theory.get("test_error", ""),
                o["m_k"],
                o["q_k"],
                o["m_v"],
                o["q_v"],
                theory.get("q_k", ""),
                theory.get("q_v", ""),
                r["iterations"],
                r["converged"],
                r["residual"],
            ]
        )
    return format_table(header, table)
