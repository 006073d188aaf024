"""Entry point of the ``bayes-slr`` command line: one generic runner for every experiment.

For each registered experiment (:data:`~bayes_slr.experiments.base.EXPERIMENTS`) a subcommand is
built from its ``Options`` fields (:mod:`bayes_slr.cli.flags`); running it parses the flags,
builds the options (their validation is the only place a bad value is refused), runs the
experiment through the same runner as the public API, and renders the typed result: its table,
notes and warnings, or ``--json``, and ``--plot``. Nothing is computed here, and JAX is imported
only once the options are valid, so a bad value is refused at once.

Exit codes: 0 success, 2 bad input (one line on stderr, nothing written), 3 a sweep finished with
failed points (the others are kept) or a run stopped (a divergence: one line saying what was kept;
points finished before it stay logged, nothing else written), 4 with ``--strict``: the result has
warnings (its output was written and printed as without ``--strict``; failed points take
precedence: 3), 130 interrupted (finished points of a sweep kept).
"""

from __future__ import annotations

import argparse
import re
import sys
import warnings

from bayes_slr import __version__
from bayes_slr.cli.flags import OneLineErrorParser, add_option_flags, given_options, integer
from bayes_slr.errors import ConfigError, RunStopped
from bayes_slr.experiments import EXPERIMENTS, run_experiment
from bayes_slr.experiments.base import Experiment, Result
from bayes_slr.experiments.figures import check_plot_file
from bayes_slr.interrupts import interrupt_guard, raise_if_interrupted
from bayes_slr.records import check_output_file, json_text
from bayes_slr.warning_categories import BayesSLRWarning

RUN_FLAGS = {
    "out": "--out",
    "force": "--force",
    "workers": "--workers",
    "scheduler": "--scheduler",
    "plot": "--plot",
}
"""Flags of the run itself (the keyword arguments of the API functions besides the options)."""

STRICT_EXIT = 4
"""The exit code of a command run with ``--strict`` whose result has warnings."""


def add_run_flags(parser: argparse.ArgumentParser, experiment: Experiment) -> None:
    """``--out``, ``--force``, ``--plot``, ``--workers``/``--scheduler``, ``--json``, ``--quiet``
    as the experiment supports them."""
    if experiment.output == "folder":
        parser.add_argument(
            "--out",
            metavar="DIR",
            help=f"folder: {experiment.name}.jsonl (every finished point with its configuration, "
            f"seed and versions; running the same command again skips them) and "
            f"{experiment.name}.json (the summary)"
            + (f"; {experiment.output_help}" if experiment.output_help else ""),
        )
        group = parser.add_mutually_exclusive_group()
        group.add_argument(
            "--workers",
            type=integer,
            help="run the points on a local Dask cluster of this many worker processes, >= 1",
        )
        group.add_argument(
            "--scheduler", help="run the points on an existing Dask scheduler (tcp://host:port)"
        )
    elif experiment.output == "file":
        parser.add_argument("--out", metavar="FILE", help=experiment.output_help)
    if experiment.result_type.has_plot():
        parser.add_argument(
            "--plot",
            metavar="PNG",
            help="draw the result to this image file"
            + (
                " (redrawn from the log on every run with --out)"
                if experiment.output == "folder"
                else ""
            ),
        )
    if experiment.output == "file" or experiment.result_type.has_plot():
        parser.add_argument("--force", action="store_true", help="overwrite existing output files")
    parser.add_argument("--json", action="store_true", help="print one JSON object")
    parser.add_argument(
        "--strict",
        action="store_true",
        help=f"exit {STRICT_EXIT} when the result has warnings (after writing and printing it)",
    )
    shown = parser.add_mutually_exclusive_group()
    shown.add_argument("--quiet", action="store_true", help="no progress bar")
    shown.add_argument(
        "--progress",
        action="store_true",
        help="progress bars on stderr even when it is not a terminal (default: only on a terminal)",
    )


def build_parser() -> tuple[argparse.ArgumentParser, dict[str, dict[str, str]]]:
    """The top-level parser with one subcommand per experiment, and each command's
    ``{option: flag}``."""
    parser = OneLineErrorParser(
        prog="bayes-slr",
        description="Bayes-optimality checks for attention on single-location regression.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True)
    flags = {}
    for experiment in EXPERIMENTS.items():
        subparser = subparsers.add_parser(
            experiment.name,
            help=experiment.summary,
            description=experiment.description or experiment.summary,
            formatter_class=argparse.RawDescriptionHelpFormatter,
        )
        flags[experiment.name] = add_option_flags(subparser, experiment.options_type)
        add_run_flags(subparser, experiment)
    return parser, flags


def with_flags(message: str, flags: dict[str, str]) -> str:
    """``message`` with each option it names in backquotes (`` `out` ``) written as its flag."""
    return re.sub(r"`(\w+)`", lambda match: flags.get(match[1], match[1]), message)


def render(result: Result, as_json: bool) -> str:
    """What the command prints: the JSON object, or the table with its notes and warnings."""
    if as_json:
        return json_text(result.to_json())
    return result.table()


def interrupt_message(exc: KeyboardInterrupt) -> str:
    """What an interrupted command prints: the sweep's own account of what it kept, else that
    nothing was written (a plain ``KeyboardInterrupt`` has no message)."""
    return str(exc) or "interrupted; nothing written"


def main(argv: list[str] | None = None) -> int:
    """Parse ``argv`` and run one command; return the exit code (module docstring)."""
    with interrupt_guard():
        try:
            parser, flags = build_parser()
            args = parser.parse_args(argv)
            raise_if_interrupted()
        except SystemExit as exc:  # the parser refused a word (its one line is printed): exit 2
            if exc.code in (0, None):  # --help, --version
                raise
            return 2
        except KeyboardInterrupt:
            print("bayes-slr: interrupted; nothing written", file=sys.stderr)
            return 130
        command_flags = {**flags[args.command], **RUN_FLAGS}
        try:
            return _run(args, EXPERIMENTS.get(args.command), flags[args.command])
        except ConfigError as exc:
            print(
                f"bayes-slr {args.command}: error: {with_flags(str(exc), command_flags)}",
                file=sys.stderr,
            )
            return 2
        except RunStopped as exc:
            print(
                f"bayes-slr {args.command}: stopped: {with_flags(str(exc), command_flags)}",
                file=sys.stderr,
            )
            return 3
        except KeyboardInterrupt as exc:
            print(f"bayes-slr {args.command}: {interrupt_message(exc)}", file=sys.stderr)
            return 130


def _run(args: argparse.Namespace, experiment: Experiment, flags: dict[str, str]) -> int:
    """Build the options (``flags``: the command's ``{option: flag}``), check the outputs, run,
    render; the exit code."""
    options = experiment.options_type(**given_options(args, flags))
    out = getattr(args, "out", None)
    plot = getattr(args, "plot", None)
    if plot is not None:
        check_plot_file(plot)
        redrawn = args.force or (experiment.output == "folder" and out is not None)
        check_output_file(plot, force=redrawn, name="plot")
    with warnings.catch_warnings():  # printed after the table: not a second time by Python
        warnings.simplefilter("ignore", BayesSLRWarning)
        result = run_experiment(
            experiment,
            options,
            out=out,
            force=getattr(args, "force", False),
            workers=getattr(args, "workers", None),
            scheduler=getattr(args, "scheduler", None),
            progress=False if args.quiet else (True if args.progress else None),
        )
    raise_if_interrupted()
    if plot is not None:
        written = result.save_plot(plot)
        try:
            raise_if_interrupted()
        except KeyboardInterrupt:  # came while the figure was drawn: nothing is kept
            written.unlink(missing_ok=True)
            raise
    print(render(result, args.json))
    if out is not None and not args.json:
        print(f"written: {out}")
    for failure in result.failures:
        print(
            f"failed: {json_text(failure.point, indent=None)}: {failure.message}", file=sys.stderr
        )
    if result.failures:
        print(
            f"bayes-slr {args.command}: {len(result.failures)} point(s) failed (not logged); "
            "run the same command again to retry them",
            file=sys.stderr,
        )
        return 3
    if args.strict and result.warnings:
        print(
            f"bayes-slr {args.command}: {len(result.warnings)} warning(s) with --strict "
            f"(output written): exit {STRICT_EXIT}",
            file=sys.stderr,
        )
        return STRICT_EXIT
    return 0


if __name__ == "__main__":
    sys.exit(main())
