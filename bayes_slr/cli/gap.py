"""``bayes-slr gap``: Bayes error vs attention activations across sequence lengths."""

from __future__ import annotations

import argparse
import hashlib
import math
from pathlib import Path
from typing import Any

from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.training import OPTIMIZERS
from bayes_slr.cli.common import (
    add_data_arguments,
    add_executor_arguments,
    describe_sources,
    format_table,
    integer,
    load_data_task,
    number,
    print_json,
    ridge,
    sweep_executor,
    sweep_outputs,
    warning_lines,
    write_sweep_record,
)
from bayes_slr.errors import ConfigError, check_real
from bayes_slr.experiments.erm import DEFAULT_LAM_GRID, VALIDATION_FRACTION
from bayes_slr.experiments.gap import (
    DEFAULT_LENGTHS,
    DEFAULT_SETTINGS,
    ERMOptions,
    gap_sweep,
    validate_sweep,
)
from bayes_slr.models.dataset import held_out_count
from bayes_slr.models.spec import INITS, LengthLaw
from bayes_slr.models.variants import get_variant, variant_names
from bayes_slr.plots import plot_gap
from bayes_slr.records import atomic_write, provenance


def register(subparsers: argparse._SubParsersAction) -> None:
    """Add the ``gap`` subcommand. Every default stated in the help is the parser's own default."""
    erm_defaults = ERMOptions(alpha=1.0)
    grid = (
        f"{min(DEFAULT_LAM_GRID):g}..{max(DEFAULT_LAM_GRID):g}, {len(DEFAULT_LAM_GRID)} "
        f"log-spaced values"
    )
    parser = subparsers.add_parser(
        "gap",
        help="Bayes error and each activation's error across L",
        description="Without --variant: max-SLR nu=inf and spiked nu=2 (the default run). With "
        "--alpha, ERM "
        "test errors: each seed is trained from --starts random starts (k, v ~ N(0, 0.01 I)) "
        "and from the teacher "
        "(a reference); the lowest-training-loss random start is reported, with a warning when "
        "the random starts "
        "disagree.",
    )
    parser.add_argument(
        "--variant", choices=variant_names(), help="token law (default: both default settings)"
    )
    parser.add_argument(
        "--nu", type=number, help="signal strength (default: inf for max, 2 for spiked)"
    )
    parser.add_argument(
        "--L",
        type=integer,
        nargs="+",
        default=list(DEFAULT_LENGTHS),
        help="lengths (Lbar with --variable-length)",
    )
    parser.add_argument("--variable-length", action="store_true", help="length uniform on {1..L}")
    parser.add_argument(
        "--activations",
        nargs="+",
        default=list(activation_names()),
        help=f"subset of {' '.join(activation_names())}",
    )
    parser.add_argument(
        "--alpha", type=number, help="sample ratio N/D: adds ERM test errors (default: none)"
    )
    parser.add_argument(
        "--lam",
        type=ridge,
        default=erm_defaults.lam,
        help=f"ridge of ERM: a number >= 0, or 'auto': chosen per seed by validation on a held-out "
        f"{VALIDATION_FRACTION:g} of the training set over {grid}",
    )
    parser.add_argument("--D", type=integer, default=erm_defaults.D, help="dimension for ERM, >= 1")
    parser.add_argument(
        "--Delta",
        type=number,
        default=erm_defaults.Delta,
        help="label noise variance of the ERM training data, >= 0; errors are the excess over it",
    )
    parser.add_argument(
        "--seeds",
        type=integer,
        default=erm_defaults.seeds,
        help="ERM teachers/data sets, >= 1; with --data only 1 (one data set), which is then "
        "the default",
    )
    parser.add_argument(
        "--starts",
        type=integer,
        default=erm_defaults.starts,
        help="random starts per ERM training set, >= 1",
    )
    parser.add_argument(
        "--init",
        choices=INITS,
        default=erm_defaults.init,
        help="which ERM start is reported: the lowest-training-loss random start, or the informed "
        "start at the teacher (a reference, not an estimator)",
    )
    parser.add_argument(
        "--optimizer",
        choices=OPTIMIZERS,
        default=erm_defaults.optimizer,
        help="L-BFGS to |grad| <= 1e-6, or one pass of SGD",
    )
    parser.add_argument(
        "--seed",
        type=integer,
        default=0,
        help="root seed of the ERM teachers, data, starts and test samples",
    )
    add_data_arguments(parser)
    parser.add_argument(
        "--out", type=Path, help="folder: gap.jsonl (finished points, resumable) and gap.json"
    )
    add_executor_arguments(parser)
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--plot",
        type=Path,
        help="PNG: error against L per activation, with Bayes; with --out it is redrawn from the "
        "log on every run",
    )
    parser.add_argument(
        "--force",
        action="store_true",
        help="overwrite an existing --plot file (not needed with --out)",
    )
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> None:
    """Validate, sweep (resuming from --out), then print and write the results."""
    if args.data is not None:
        settings, lengths, variable_length, erm, about = _data_run(args)
    else:
        settings, lengths, variable_length, about = (
            _settings(args),
            args.L,
            args.variable_length,
            None,
        )
        erm = None
        if args.alpha is not None:
            erm = ERMOptions(
                alpha=args.alpha,
                lam=args.lam,
                D=args.D,
                seeds=args.seeds,
                init=args.init,
                optimizer=args.optimizer,
                Delta=args.Delta,
                starts=args.starts,
            )
        else:
            check_real("Delta", args.Delta, minimum=0.0)
    validate_sweep(settings, lengths, variable_length, args.activations)
    plot, log = sweep_outputs(args, "gap")
    with sweep_executor(args) as executor:
        rows = gap_sweep(
            settings,
            lengths,
            variable_length=variable_length,
            activations=args.activations,
            erm=erm,
            seed=args.seed,
            log=log,
            executor=executor,
            progress=not args.quiet,
        )
    config = {
        "settings": [{"variant": v, "nu": nu} for v, nu in settings],
        "L": lengths,
        "variable_length": variable_length,
        "activations": args.activations,
        "erm": None if erm is None else vars(erm).copy(),
        "data": about,
    }
    notes, warnings = _collected(rows)
    result = {
        "config": config,
        "rows": [_public_row(row) for row in rows],
        "notes": notes,
        "warnings": warnings,
    }
    write_sweep_record(
        args.out,
        "gap",
        {**provenance(config, args.seed), "rows": rows, "notes": notes, "warnings": warnings},
    )
    if plot is not None:
        atomic_write(
            plot, lambda tmp: plot_gap(rows, tmp, erm=None if erm is None else vars(erm).copy())
        )
    if args.json:
        print_json(result)
    else:
        if about is not None:
            print(about["description"])
        print(_table(rows, args.activations, data=about is not None))
        for line in _paired_lines(rows):
            print(line)
        for line in notes:
            print(f"note: {line}")
        if warnings:
            print(warning_lines(warnings))


def _settings(args: argparse.Namespace) -> tuple[tuple[str, float], ...]:
    """The ``(variant, nu)`` pairs to run: both default settings without ``--variant``."""
    if args.variant is None:
        if args.nu is not None:
            raise ConfigError(
                "--nu needs --variant (without --variant the two default settings run)"
            )
        return DEFAULT_SETTINGS
    return ((args.variant, get_variant(args.variant).default_nu if args.nu is None else args.nu),)


def _data_run(
    args: argparse.Namespace,
) -> tuple[tuple[tuple[str, float]], list[int], bool, ERMOptions, dict]:
    """``--data``: the one task the file implies (settings, ``[Lbar]``, variable length), its ERM
    options, and a
    record of the file and of where each setting came from."""
    variant_nu = (
        None
        if args.variant is None
        else (get_variant(args.variant).default_nu if args.nu is None else args.nu)
    )
    flags = {
        "variant": args.variant,
        "nu": variant_nu,
        "Delta": args.Delta,
        "L": args.L[0] if len(args.L) == 1 else args.L,
        "variable_length": args.variable_length,
        "D": args.D,
    }
    data, config, sources = load_data_task(args, flags, ("alpha",))
    if not (config.length.is_fixed or config.length == LengthLaw.uniform(config.Lbar)):
        raise ConfigError(
            f"--data: gap runs fixed or uniform length laws; the config record has "
            f"{config.length.describe()}"
        )
    n_train = data.N if data.teacher is not None else data.N - held_out_count(args.holdout, data.N)
    erm = ERMOptions(
        alpha=n_train / data.D,
        lam=args.lam,
        D=data.D,
        seeds=args.seeds if "seeds" in getattr(args, "explicit", ()) else 1,
        init=args.init,
        optimizer=args.optimizer,
        Delta=config.Delta,
        starts=args.starts,
        data=str(args.data),
        holdout=args.holdout,
        data_digest=hashlib.sha256(Path(args.data).read_bytes()).hexdigest(),
    )
    about = {
        "path": str(args.data),
        "sources": sources,
        "N": data.N,
        "n_train": n_train,
        "n_held_out": data.N - n_train,
        "teacher": data.teacher is not None,
    }
    about["description"] = describe_sources(config, about) + (
        "; ERM errors on fresh sequences of the file's teacher"
        if data.teacher is not None
        else f"; ERM trained on {n_train} sequences, errors on the {data.N - n_train} held out "
        f"(--holdout, --seed)"
    )
    return ((config.variant, config.nu),), [config.Lbar], not config.length.is_fixed, erm, about


def _collected(rows: list[dict[str, Any]]) -> tuple[list[str], list[str]]:
    """Every row's notes and warnings, each prefixed with its row."""
    notes, warnings = [], []
    for row in rows:
        nu = "inf" if math.isinf(row["nu"]) else f"{row['nu']:g}"
        where = f"{row['variant']} nu={nu} L={'U1..' if row['variable_length'] else ''}{row['L']}"
        notes += [f"{where}: {text}" for text in row.get("notes", [])]
        warnings += [f"{where}: {text}" for text in row.get("warnings", [])]
    return notes, warnings


def _public_row(row: dict[str, Any]) -> dict[str, Any]:
    keys = (
        "variant",
        "nu",
        "L",
        "variable_length",
        "bayes",
        "population",
        "gap",
        "erm",
        "erm_paired_differences",
        "notes",
        "warnings",
    )
    return {k: row[k] for k in keys if k in row}


def _paired_lines(rows: list[dict[str, Any]]) -> list[str]:
    """The paired differences of a ``--data`` row's ERM errors (held-out sequences),
    one line each.
    """
    lines = []
    for row in rows:
        differences = row.get("erm_paired_differences")
        if differences:
            lines.append(
                "ERM paired differences on the same held-out sequences (mean of the per-sequence "
                "difference of the errors +- its stderr):"
            )
            lines += [
                f"  {name}: {d['value']:+.4f} +- {d['stderr']:.4f}"
                for name, d in differences.items()
            ]
    return lines


def _erm_cell(erm: dict[str, Any]) -> str:
    """``error+-stderr``, the ridge when chosen by validation, ``*`` when the random starts
    disagree.
    """
    cell = f"{erm['test_error']:.4f}+-{erm['stderr']:.4f}"
    if erm.get("lam_auto"):
        low, high = min(erm["lam"]), max(erm["lam"])
        cell += f" lam={low:.2g}" + ("" if low == high else f"..{high:.2g}")
    above_zero = erm.get("excess_over_zero", -1.0) > 2.0 * erm.get("excess_over_zero_stderr", 0.0)
    if (
        erm.get("notes")
        or above_zero
        or erm.get("restarts_agree") is False
        or not erm.get("converged", True)
    ):
        cell += " *"
    return cell


def _table(rows: list[dict[str, Any]], activations: list[str], *, data: bool = False) -> str:
    header = (
        ["variant", "nu", "L", "bayes"]
        + [f"{a}" for a in activations]
        + [f"gap {a}" for a in activations]
    )
    with_erm = any("erm" in row for row in rows)
    if with_erm:
        header += [f"ERM {a}" for a in activations]
    lines = []
    for row in rows:
        line = [
            row["variant"],
            row["nu"],
            ("U1.." if row["variable_length"] else "") + str(row["L"]),
            row["bayes"],
        ]
        line += [row["population"][a] for a in activations] + [row["gap"][a] for a in activations]
        if with_erm:
            line += [_erm_cell(row["erm"][a]) for a in activations]
        lines.append(line)
    table = format_table(header, lines)
    if with_erm:
        spread = "over its test sequences (one data set)" if data else "over seeds"
        table += (
            f"\nERM: test error +- stderr {spread}; lam: ridge per seed; * see the warnings below"
        )
    return table
