"""Argument parsing and output helpers shared by the ``bayes-slr`` subcommands."""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any, NoReturn

from bayes_slr.errors import ConfigError, check_int
from bayes_slr.models.dataset import (
    DEFAULT_HOLDOUT,
    Dataset,
    held_out_count,
    load_dataset,
)
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.models.variants import variant_names
from bayes_slr.records import (
    SweepLog,
    atomic_write,
    check_output_file,
    json_ready,
    open_sweep_log,
)


class SomePointsFailed(Exception):
    """A sweep finished with failed points (the finished ones are logged); exit code 3."""


def number(text: str) -> float:
    """Parse a real number; ``inf`` is accepted, ``nan`` is not."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if math.isnan(value):
        raise argparse.ArgumentTypeError("expected a number, got nan")
    return value


def integer(text: str) -> int:
    """Parse an integer."""
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected an integer, got {text!r}") from None


class OneLineErrorParser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command (exit 2), not the usage
    block.
    """

    def error(self, message: str) -> NoReturn:
        """Print ``<prog>: error: <message>`` and a pointer to ``--help``, then exit 2."""
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def default_text(value: Any) -> str:
    """How a default value is written in ``--help`` (lists space-separated, as they are typed)."""
    if isinstance(value, (list, tuple)):
        return " ".join(default_text(item) for item in value)
    if isinstance(value, float):
        return "inf" if math.isinf(value) else f"{value:g}"
    return str(value)


class DefaultsHelpFormatter(argparse.RawDescriptionHelpFormatter):
    """Help that states every option's default from the parser itself, so help and behaviour cannot
    differ.
    """

    def _get_help_string(self, action: argparse.Action) -> str | None:
        text = action.help or ""
        default = action.default
        flag = isinstance(action, (argparse._StoreTrueAction, argparse._StoreFalseAction))
        if not action.option_strings or flag or default is None or default is argparse.SUPPRESS:
            return text
        return f"{text} (default: {default_text(default).replace('%', '%%')})".lstrip()


def ridge(text: str) -> float | str:
    """``--lam``: ``auto`` or a number (validated later: ``>= 0``)."""
    if text == "auto":
        return "auto"
    try:
        return number(text)
    except argparse.ArgumentTypeError:
        raise argparse.ArgumentTypeError(
            f"expected a number >= 0 or 'auto', got {text!r}"
        ) from None


def add_task_arguments(
    parser: argparse.ArgumentParser, *, several: bool = False, with_D: bool = True
) -> None:
    """Add ``--variant --L --variable-length --nu --Delta`` (and ``--D``).

    With ``several``, ``--L`` and ``--nu`` take one or more values.
    """
    nargs = "+" if several else None
    parser.add_argument("--variant", choices=variant_names(), default="spiked", help="token law")
    if with_D:
        parser.add_argument("--D", type=integer, default=64, help="token dimension, >= 1")
    parser.add_argument(
        "--L",
        type=integer,
        nargs=nargs,
        default=[3] if several else 3,
        help="sequence length(s), >= 1; Lbar of the uniform law with --variable-length",
    )
    parser.add_argument("--variable-length", action="store_true", help="length uniform on {1..L}")
    parser.add_argument(
        "--nu",
        type=number,
        nargs=nargs,
        default=[1.0] if several else 1.0,
        help="signal strength(s), >= 0 ('inf' for max only)",
    )
    parser.add_argument("--Delta", type=number, default=0.0, help="noise variance of y, >= 0")


def make_config(args: argparse.Namespace, *, L: int, nu: float, D: int | None = None) -> SLRConfig:
    """Build a validated :class:`SLRConfig` from parsed arguments and one ``(L, nu)``."""
    length = LengthLaw.uniform(L) if args.variable_length else LengthLaw.fixed(L)
    return SLRConfig(
        args.variant, D if D is not None else getattr(args, "D", 1), length, nu, args.Delta
    )


def add_data_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--data FILE.npz`` (bring-your-own data) and ``--holdout``."""
    parser.add_argument(
        "--data",
        type=Path,
        help="run on this .npz data set (X, y; optional lengths, eps, k_star and v_star, config: "
        "the format simulate writes, see the README) instead of simulated data; D, N and Lbar come "
        "from the arrays, variant, nu, Delta and the length law from its config record if it "
        "has one",
    )
    parser.add_argument(
        "--holdout",
        type=number,
        default=DEFAULT_HOLDOUT,
        help="with --data without a teacher (k_star, v_star): share of the sequences held out as "
        "the test set, chosen by --seed, in (0, 1)",
    )


def load_data_task(
    args: argparse.Namespace, flags: dict[str, Any], not_with_data: tuple[str, ...]
) -> tuple[Dataset, SLRConfig, dict[str, str]]:
    """Read ``--data`` and the task it implies (transitional: the experiments' options do this).

    ``flags``: the command's task flags; ``not_with_data``: options that --data sets or makes
    meaningless (an explicit one is refused). Without a teacher ``--holdout`` is checked here.
    """
    from bayes_slr.experiments.data import data_task

    explicit = getattr(args, "explicit", frozenset())
    for name in not_with_data:
        if name in explicit:
            raise ConfigError(
                f"--{name.replace('_', '-')} does not apply with --data (the data set fixes it)"
            )
    given = {name: (value if name in explicit else None) for name, value in flags.items()}
    config, source = data_task(args.data, given)
    data = load_dataset(args.data)
    if data.teacher is None:
        held_out_count(args.holdout, data.N)
    return data, config, source.sources


def describe_sources(config: SLRConfig, data: dict[str, Any]) -> str:
    """One line: each task setting of a ``--data`` run and where it came from."""
    sources = data["sources"]
    nu = "inf" if math.isinf(config.nu) else f"{config.nu:g}"
    values = {
        "variant": config.variant,
        "nu": nu,
        "Delta": f"{config.Delta:g}",
        "length": config.length.describe(),
        "D": config.D,
        "N": data["N"],
        "Lbar": config.Lbar,
    }
    return f"data {data['path']}: " + ", ".join(
        f"{name} {values[name]} ({sources[name]})" for name in values
    )


def sweep_outputs(args: argparse.Namespace, name: str) -> tuple[Path | None, SweepLog | None]:
    """Check ``--plot`` and open the resumable log ``--out/name.jsonl``, before any point runs.

    With ``--out`` the plot is a view of the log, so an existing plot is replaced (a re-run
    redraws it); without, an existing plot needs ``--force``.
    """
    derived = args.force or args.out is not None
    plot = (
        check_output_file(args.plot, force=derived, name="plot") if args.plot is not None else None
    )
    log = open_sweep_log(args.out, f"{name}.jsonl") if args.out is not None else None
    return plot, log


def write_sweep_record(out: Path | None, name: str, record: dict[str, Any]) -> None:
    """Write a sweep's summary ``record`` (provenance, rows, notes...) to ``out/name.json``
    atomically, if ``--out``.

    Every value goes through :func:`~bayes_slr.records.json_ready`, so ``inf`` (max-SLR's ``nu``) is
    the string ``"inf"`` rather than JSON's non-standard ``Infinity``.
    """
    if out is not None:
        atomic_write(
            out / f"{name}.json",
            lambda tmp: tmp.write_text(json.dumps(json_ready(record), indent=1)),
        )


def print_json(obj: Any) -> None:
    """Print one JSON object on stdout (``inf`` as the string ``"inf"``)."""
    json.dump(json_ready(obj), sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")


def add_executor_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--workers N`` / ``--scheduler ADDRESS`` (run the sweep's points on Dask) and
    ``--quiet``.
    """
    group = parser.add_mutually_exclusive_group()
    group.add_argument(
        "--workers",
        type=integer,
        help="run the points on a local Dask cluster of this many worker processes, >= 1",
    )
    group.add_argument(
        "--scheduler", help="run the points on an existing Dask scheduler (tcp://host:port)"
    )
    parser.add_argument("--quiet", action="store_true", help="no progress bar")


@contextlib.contextmanager
def sweep_executor(args: argparse.Namespace) -> Iterator[Any]:
    """The executor the arguments ask for (a ``DaskExecutor``, closed on exit), or None for
    in-process.
    """
    if args.workers is None and args.scheduler is None:
        yield None
        return
    from bayes_slr.distributed import DaskExecutor

    if args.workers is not None:
        check_int("workers", args.workers, 1)
    with DaskExecutor(workers=args.workers, scheduler=args.scheduler) as executor:
        yield executor


def raise_if_points_failed(failures: list[tuple[dict[str, Any], str]]) -> None:
    """List the failed sweep points on stderr (they are not logged: a re-run tries them again) and
    end with exit 3.
    """
    if not failures:
        return
    for point, message in failures:
        print(
            f"failed: {json.dumps(json_ready(point), sort_keys=True)}: {message}", file=sys.stderr
        )
    raise SomePointsFailed(
        f"{len(failures)} point(s) failed (not logged); re-run the same command to retry them"
    )


def warning_lines(warnings: list[str]) -> str:
    """The warnings printed under a table, one line each (empty when there are none)."""
    return "\n".join(f"warning: {text}" for text in warnings)


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    """Aligned plain-text table; floats with 6 significant digits."""

    def cell(value: Any) -> str:
        if isinstance(value, float):
            return "inf" if math.isinf(value) else f"{value:.6g}"
        return str(value)

    cells = [header] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
