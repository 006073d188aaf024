"""``bayes-slr theory``: replica-symmetric test-error curves against alpha (docs/theory.md)."""

from __future__ import annotations

import argparse
from pathlib import Path

from bayes_slr.attention.activations import activation_names
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
from bayes_slr.experiments.theory_curve import (
    SimulationOptions,
    curve_warnings,
    theory_curve,
    validate_curve,
)
from bayes_slr.models.spec import INITS
from bayes_slr.plots import plot_theory_curves
from bayes_slr.records import atomic_write, provenance

DEFAULT_ALPHAS = (0.25, 0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 64.0)


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``theory`` subcommand."""
    parser = subparsers.add_parser(
        "theory", help="high-dimensional (replica) test error against alpha"
    )
    add_task_arguments(parser, with_D=False)
    parser.add_argument(
        "--activation",
        nargs="*",
        default=["softmax", "linear"],
        help=f"ERM activations among {' '.join(activation_names())}",
    )
    parser.add_argument(
        "--alpha",
        type=number,
        nargs="+",
        default=list(DEFAULT_ALPHAS),
        help="sample ratios N/D, > 0",
    )
    parser.add_argument(
        "--lam",
        type=number,
        default=1.0,
        help="ridge strength of ERM, >= 0 (below about 0.1 linear attention's RS solution is "
        "unstable)",
    )
    parser.add_argument(
        "--bayes",
        action="store_true",
        help="add the Bayes-optimal curve (informed and random starts)",
    )
    parser.add_argument(
        "--erm-init",
        choices=INITS,
        default="random",
        help="start of the ERM state evolution: random (uninformed) or informed",
    )
    parser.add_argument("--mc-samples", type=integer, default=4096, help="channel draws, >= 2")
    parser.add_argument("--seed", type=integer, default=0, help="seed of the channel draws")
    parser.add_argument(
        "--simulate",
        type=integer,
        metavar="SIZE",
        help="also train each ERM point by L-BFGS at sqrt(N D) = SIZE (D = SIZE / sqrt(alpha)), "
        "exact teachers |k*|^2 = |v*|^2 = D as the theory assumes",
    )
    parser.add_argument(
        "--seeds", type=integer, default=5, help="teachers per simulated point, >= 2"
    )
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plot", type=Path, help="PNG: test error against alpha")
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing --plot file (with --out the plot is re-derived and updated)",
    )
    parser.add_argument(
        "--out", type=Path, help="folder: theory.jsonl (finished points, resumable) and theory.json"
    )
    add_executor_arguments(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Validate everything, solve the curve (resuming from --out), then print and write."""
    config = make_config(args, L=args.L, nu=args.nu)
    validate_curve(config, args.activation, args.alpha, args.lam, args.bayes, args.mc_samples)
    simulation = SimulationOptions(args.simulate, args.seeds) if args.simulate is not None else None
    plot, log = sweep_outputs(args, "theory")
    failures: list = []
    with sweep_executor(args) as executor:
        rows = theory_curve(
            config,
            args.activation,
            args.alpha,
            lam=args.lam,
            bayes=args.bayes,
            erm_init=args.erm_init,
            mc_samples=args.mc_samples,
            seed=args.seed,
            simulation=simulation,
            log=log,
            executor=executor,
            progress=not args.quiet,
            failures=failures,
        )
    settings = {
        **config.to_dict(),
        "lam": args.lam,
        "mc_samples": args.mc_samples,
        "simulation": vars(simulation) if simulation is not None else None,
    }
    settings.pop("D")
    warnings = curve_warnings(rows)
    write_sweep_record(
        args.out, "theory", {**provenance(settings, args.seed), "rows": rows, "warnings": warnings}
    )
    if plot is not None:
        title = (
            f"{config.variant} nu={config.nu:g}, {config.length.describe()}, "
            f"Delta={config.Delta:g}, "
            f"lam={args.lam:g}, {args.mc_samples} draws"
        )
        if simulation is not None:
            title += f"\nL-BFGS at sqrt(ND)={simulation.size}, {simulation.seeds} exact teachers"
        atomic_write(plot, lambda tmp: plot_theory_curves(rows, tmp, title=title))
    if args.json:
        print_json({"config": settings, "rows": rows, "warnings": warnings})
    else:
        print(
            format_table(
                [
                    "source",
                    "alpha",
                    "estimator",
                    "init",
                    "test_error",
                    "+-",
                    "converged",
                    "rs_stable",
                    "iterations",
                ],
                [
                    [
                        r["source"],
                        r["alpha"],
                        r["estimator"],
                        r["init"],
                        r["test_error"],
                        r["diagnostics"].get("stderr", ""),
                        r["converged"],
                        r["diagnostics"].get("rs_stable", ""),
                        r["diagnostics"]["iterations"],
                    ]
                    for r in rows
                ],
            )
        )
        if warnings:
            print(warning_lines(warnings))
    raise_if_points_failed(failures)
