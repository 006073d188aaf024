"""``bayes-slr bayes-risk``: population Bayes error with known directions, exact or by
Monte Carlo.
"""

from __future__ import annotations

import argparse
import functools
import itertools
from pathlib import Path
from typing import Any

import jax

from bayes_slr.cli.common import add_task_arguments, format_table, integer, make_config, print_json
from bayes_slr.errors import check_choice, check_int
from bayes_slr.inference.bayes_risk import bayes_risk_mc
from bayes_slr.models.spec import SLRConfig
from bayes_slr.plots import plot_bayes_risk
from bayes_slr.records import atomic_write, check_writable_output, provenance
from bayes_slr.theory.bayes import bayes_error_exact

METHODS = ("exact", "mc")
COLUMNS = ["variant", "L", "variable_length", "nu", "bayes_error", "stderr", "method"]


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``bayes-risk`` subcommand."""
    parser = subparsers.add_parser(
        "bayes-risk",
        help="population Bayes error 1 - E[sum_l p_l^2] for each (L, nu)",
        description="Bayes error with known directions (excess error over the noise, "
        "docs/model.md section 2), "
        "one row per (L, nu) pair. --Delta does not change it.",
    )
    add_task_arguments(parser, several=True, with_D=False)
    parser.add_argument(
        "--method",
        choices=METHODS,
        default="exact",
        help="exact quadrature (stderr = its error bound) or Monte Carlo over chi*",
    )
    parser.add_argument(
        "--samples", type=integer, default=100_000, help="Monte Carlo sequences per point, >= 2"
    )
    parser.add_argument(
        "--seed",
        type=integer,
        default=0,
        help="Monte Carlo seed; every point uses the same "
        "random numbers, so curves in nu are smooth",
    )
    parser.add_argument(
        "--json", action="store_true", help="print one JSON object instead of a table"
    )
    parser.add_argument(
        "--plot", type=Path, help="write a PNG of the Bayes error against nu, one curve per L"
    )
    parser.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    parser.set_defaults(run=run)


def bayes_error_row(config: SLRConfig, method: str, samples: int, key: jax.Array) -> dict[str, Any]:
    """One output row: the Bayes error of ``config`` and its stderr (the quadrature bound for
    exact).
    """
    check_choice("method", method, METHODS)
    if method == "exact":
        value, stderr = bayes_error_exact(config)
    else:
        estimate = bayes_risk_mc(config, samples, key).bayes_error
        value, stderr = float(estimate.mean), float(estimate.stderr)
    return {
        "variant": config.variant,
        "L": config.Lbar,
        "variable_length": not config.length.is_fixed,
        "nu": config.nu,
        "bayes_error": float(value),
        "stderr": float(stderr),
        "method": method,
    }


def run(args: argparse.Namespace) -> None:
    """Validate every point and the output path, then compute, print and plot."""
    configs = [make_config(args, L=L, nu=nu) for L, nu in itertools.product(args.L, args.nu)]
    samples = check_int("samples", args.samples, 2)
    plot = (
        check_writable_output(args.plot, force=args.force, name="--plot")
        if args.plot is not None
        else None
    )
    key = jax.random.PRNGKey(args.seed)
    rows = [bayes_error_row(config, args.method, samples, key) for config in configs]
    settings = {
        "variant": args.variant,
        "variable_length": args.variable_length,
        "L": list(args.L),
        "nu": list(args.nu),
        "method": args.method,
        "samples": samples if args.method == "mc" else None,
    }
    if plot is not None:
        atomic_write(plot, functools.partial(plot_bayes_risk, rows))
    if args.json:
        print_json({**provenance(settings, args.seed), "rows": rows})
    else:
        print(format_table(COLUMNS, [[row[name] for name in COLUMNS] for row in rows]))
        if plot is not None:
            print(f"plot: {plot}")
