"""``bayes-risk``: the population Bayes error with known directions, exact or by Monte Carlo.

One row per ``(L, nu)``: ``1 - E[sum_l p_l^2]`` (docs/model.md section 2), by quadrature
(``stderr`` is then its error bound) or by Monte Carlo over the law of ``chi*`` (``stderr`` its
standard error; every point uses the same random numbers, so curves in ``nu`` are smooth).
"""

from __future__ import annotations

import dataclasses
import itertools
import math
from collections.abc import Sequence
from typing import Any, ClassVar

from bayes_slr.errors import ConfigError, Integer
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    MANY,
    options_task,
    resolved_nu,
    seed_option,
    task_option,
)
from bayes_slr.models.spec import TASK_ACCEPTS, SLRConfig
from bayes_slr.studies.bayes_risk_records import BayesRiskRow, BayesRiskSettings

METHODS = ("exact", "mc")


MAX_LENGTH = 10**6
"""The longest sequence ``bayes-risk`` computes (the exact quadrature takes about 10 s there)."""


def _length_accepted(name: str, value: object) -> int:
    """A sequence length ``1 .. MAX_LENGTH`` (the task's range, narrower for the cost)."""
    if isinstance(value, (int, float)) and not isinstance(value, bool) and value > MAX_LENGTH:
        raise ConfigError(
            f"{name} must be <= {MAX_LENGTH:.0e} (got {value:.3g}): the quadrature's cost grows "
            "with L (about 10 s at 1e6, 30 s at 1e7), Monte Carlo draws mc_sequences x L scores"
        )
    return TASK_ACCEPTS["L"](name, value)


@dataclasses.dataclass(frozen=True)
class BayesRiskOptions(Options):
    """Settings of ``bayes-risk``: every ``(L, nu)`` of one variant."""

    variant: str = task_option("variant")
    L: tuple[int, ...] = task_option("L", MANY, accepts=_length_accepted)
    variable_length: bool = task_option("variable_length")
    nu: tuple[float, ...] | None = task_option("nu", MANY)
    heads: int = task_option("heads")
    presence: float = task_option("presence")
    method: str = option(
        "exact", "exact quadrature (stderr = its error bound) or Monte Carlo", choices=METHODS
    )
    mc_sequences: int = option(
        100_000,
        "Monte Carlo sequences per point (with --method mc), >= 2",
        aliases=("--mc-samples", "--samples"),
        accepts=Integer(2),
    )
    seed: int = seed_option("seed of the Monte Carlo draws (the same for every point)")

    def validate(self) -> None:
        """Refuse an unknown method, fewer than 2 samples, or any invalid ``(L, nu)``."""
        for L, nu in itertools.product(self.L, self.nus()):
            self.config(L, nu)

    def filled(self) -> dict[str, object]:
        """The variant's default ``nu`` made explicit: the record is complete."""
        return {"nu": self.nus()}

    def config(self, L: int, nu: float) -> SLRConfig:
        """The task of one ``(L, nu)``."""
        return options_task(self, L=L, nu=nu)

    def nus(self) -> tuple[float, ...]:
        """The signal strengths (the variant's default when none were given)."""
        return self.nu if self.nu is not None else (resolved_nu(self.variant, None),)


@dataclasses.dataclass(frozen=True)
class BayesRiskPoint(Record):
    """One ``(L, nu)``."""

    L: int
    nu: float


COLUMNS = ("variant", "L", "variable_length", "nu", "bayes_error", "stderr", "method")
HEAD_COLUMNS = ("heads", "presence")
"""Shown in the table of a multi-head task only (a one-head table is unchanged)."""


@dataclasses.dataclass(frozen=True, repr=False)
class BayesRiskResult(Result[BayesRiskOptions, BayesRiskRow]):
    """The rows of ``bayes-risk``."""

    def rows_table(self) -> str:
        """One line per ``(L, nu)``; the ``stderr`` field is headed ``bound`` for the exact
        method (the quadrature's error bound, not a standard error)."""
        columns = COLUMNS + (HEAD_COLUMNS if self.options.config(1, 0.0).multihead else ())
        header = [self._name(c) for c in columns]
        return format_table(header, [[getattr(r, c) for c in columns] for r in self.rows])

    def tidy_rows(self) -> list[dict[str, Any]]:
        """The rows with the table's names: ``stderr`` is ``bound`` for the exact method."""
        return [
            {self._name(name): value for name, value in row.items()} for row in super().tidy_rows()
        ]

    def _name(self, field: str) -> str:
        """The name the table and ``to_pandas`` give a field of a row."""
        return "bound" if field == "stderr" and self.options.method == "exact" else field

    def plot(self, ax: Any = None) -> Any:
        """Bayes error against ``nu``, one curve per ``L``, with standard-error bars (rows with
        ``nu = inf`` cannot sit on the axis: they are left out and the title says so)."""
        ax = new_axes(ax, size=(5.5, 4))
        for L in dict.fromkeys(row.L for row in self.rows):
            curve = sorted(
                (r for r in self.rows if r.L == L and math.isfinite(r.nu)), key=lambda r: r.nu
            )
            label = f"L ~ U{{1..{L}}}" if self.options.variable_length else f"L = {L}"
            ax.errorbar(
                [r.nu for r in curve],
                [r.bayes_error for r in curve],
                yerr=[r.stderr for r in curve],
                fmt="o-",
                ms=3,
                capsize=2,
                label=label,
            )
        title = f"{self.options.variant}-SLR Bayes error ({self.options.method})"
        if any(math.isinf(row.nu) for row in self.rows):
            title += ", nu = inf not shown"
        ax.set(xlabel="nu", ylabel="Bayes error (excess over noise)", title=title, ylim=(0, 1.05))
        ax.legend()
        return ax


class BayesRisk(Experiment[BayesRiskOptions, BayesRiskPoint, BayesRiskRow, BayesRiskResult]):
    """The population Bayes error per ``(L, nu)``."""

    name: ClassVar[str] = "bayes-risk"
    summary: ClassVar[str] = "population Bayes error 1 - E[sum_l p_l^2] for each (L, nu)"
    description: ClassVar[str] = (
        "Bayes error with known directions (excess error over the noise, docs/model.md section "
        "2), one row per (L, nu), by quadrature or by Monte Carlo over chi*; of multi-head SLR "
        "with --heads and --presence (docs/multihead.md)."
    )
    options_type = BayesRiskOptions
    point_type = BayesRiskPoint
    solved_type = BayesRiskRow
    result_type = BayesRiskResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("L", "nu")

    def points(self, options: BayesRiskOptions) -> list[BayesRiskPoint]:
        """Every ``(L, nu)``, lengths outermost."""
        return [BayesRiskPoint(L, nu) for L, nu in itertools.product(options.L, options.nus())]

    def solve(self, options: BayesRiskOptions, point: BayesRiskPoint) -> BayesRiskRow:
        """The Bayes error of one point, exact or by Monte Carlo."""
        from bayes_slr.studies.bayes_risk import bayes_risk_row

        settings = BayesRiskSettings(options.method, options.mc_sequences, options.variable_length)
        return bayes_risk_row(options.config(point.L, point.nu), settings, options.seed)

    def collect(
        self,
        options: BayesRiskOptions,
        solved: Sequence[tuple[BayesRiskPoint, BayesRiskRow]],
        provenance: Provenance,
    ) -> BayesRiskResult:
        """The rows in the order of the points."""
        return BayesRiskResult(options, tuple(row for _, row in solved), provenance)


BAYES_RISK = register_experiment(BayesRisk())
