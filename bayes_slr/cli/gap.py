"""``bayes-slr gap``: Bayes error vs attention activations across sequence lengths."""

from __future__ import annotations

import argparse
import json
import math
from pathlib import Path
from typing import Any

from bayes_slr.attention.activations import activation_names
from bayes_slr.cli.common import format_table, integer, number, print_json
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.gap import DEFAULT_LENGTHS, DEFAULT_SETTINGS, ERMOptions, gap_sweep, validate_sweep
from bayes_slr.models.variants import variant_names
from bayes_slr.plots import plot_gap
from bayes_slr.records import atomic_write, check_writable_output, json_ready, open_sweep_log, provenance

DEFAULT_NU = {"spiked": 2.0, "max": math.inf}


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gap`` subcommand."""
    parser = subparsers.add_parser(
        "gap",
        help="Bayes error and each activation's error across L",
        description="Without --variant: max-SLR nu=inf and spiked nu=2 (the default run).",
    )
    parser.add_argument("--variant", choices=variant_names(), help="token law; default: both default settings")
    parser.add_argument("--nu", type=number, help="signal strength (default: inf for max, 2 for spiked)")
    parser.add_argument("--L", type=integer, nargs="+", default=list(DEFAULT_LENGTHS), help="lengths (Lbar with --variable-length)")
    parser.add_argument("--variable-length", action="store_true", help="length uniform on {1..L}")
    parser.add_argument("--activations", nargs="+", default=list(activation_names()), help=f"subset of {' '.join(activation_names())}")
    parser.add_argument("--alpha", type=number, help="sample ratio N/D: adds ERM test errors")
    parser.add_argument("--lam", type=number, default=1e-3, help="ridge penalty of ERM, >= 0")
    parser.add_argument("--D", type=integer, default=100, help="dimension for ERM, >= 1")
    parser.add_argument("--seeds", type=integer, default=4, help="ERM teachers/data sets, >= 1")
    parser.add_argument("--init", choices=("random", "informed"), default="random", help="start of ERM training")
    parser.add_argument("--optimizer", choices=("lbfgs", "sgd"), default="lbfgs", help="ERM optimiser")
    parser.add_argument("--seed", type=integer, default=0, help="root seed of the ERM teachers, data and starts")
    parser.add_argument("--out", type=Path, help="folder: gap.jsonl (finished points, resumable) and gap.json")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument("--plot", type=Path, help="PNG: error against L per activation, with Bayes")
    parser.add_argument("--force", action="store_true", help="overwrite an existing --plot file")
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Validate, sweep (resuming from --out), then print and write the results."""
    if args.variant is None:
        if args.nu is not None:
            raise ConfigError("--nu needs --variant (without --variant the two default settings run)")
        settings = DEFAULT_SETTINGS
    else:
        settings = ((args.variant, DEFAULT_NU[args.variant] if args.nu is None else args.nu),)
    erm = None
    if args.alpha is not None:
        erm = ERMOptions(alpha=args.alpha, lam=args.lam, D=args.D, seeds=args.seeds, init=args.init, optimizer=args.optimizer)
    validate_sweep(settings, args.L, args.variable_length, args.activations)
    plot = check_writable_output(args.plot, force=args.force, name="--plot") if args.plot is not None else None
    log = open_sweep_log(args.out, "gap.jsonl") if args.out is not None else None
    rows = gap_sweep(
        settings, args.L, variable_length=args.variable_length, activations=args.activations, erm=erm, seed=args.seed, log=log
    )
    config = {
        "settings": [{"variant": v, "nu": nu} for v, nu in settings],
        "L": args.L,
        "variable_length": args.variable_length,
        "activations": args.activations,
        "erm": None if erm is None else vars(erm).copy(),
    }
    result = {"config": config, "rows": [_public_row(row) for row in rows]}
    if args.out is not None:
        record = {**provenance(config, args.seed), "rows": json_ready(rows)}
        atomic_write(args.out / "gap.json", lambda tmp: tmp.write_text(json.dumps(record, indent=1)))
    if plot is not None:
        atomic_write(plot, lambda tmp: plot_gap(rows, tmp))
    if args.json:
        print_json(result)
    else:
        print(_table(rows, args.activations))


def _public_row(row: dict[str, Any]) -> dict[str, Any]:
    keys = ("variant", "nu", "L", "variable_length", "bayes", "population", "gap", "erm")
    return {k: row[k] for k in keys if k in row}


def _table(rows: list[dict[str, Any]], activations: list[str]) -> str:
    header = ["variant", "nu", "L", "bayes"] + [f"{a}" for a in activations] + [f"gap {a}" for a in activations]
    with_erm = any("erm" in row for row in rows)
    if with_erm:
        header += [f"ERM {a}" for a in activations]
    lines = []
    for row in rows:
        line = [row["variant"], row["nu"], ("U1.." if row["variable_length"] else "") + str(row["L"]), row["bayes"]]
        line += [row["population"][a] for a in activations] + [row["gap"][a] for a in activations]
        if with_erm:
            line += [f"{row['erm'][a]['test_error']:.4f}+-{row['erm'][a]['stderr']:.4f}" for a in activations]
        lines.append(line)
    return format_table(header, lines)
