"""``simulate``: draw a teacher and an SLR data set; save it as ``.npz`` (the format ``--data``
reads, :mod:`bayes_slr.models.dataset`)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

import numpy as np

from bayes_slr.errors import Integer, check_int
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.task import OneTask, seed_option, task_option
from bayes_slr.memory import check_fits
from bayes_slr.numerics.record import JsonObject
from bayes_slr.records import json_text
from bayes_slr.studies.simulate_records import DataSummary, SimulatedData, SimulateSettings


@dataclasses.dataclass(frozen=True)
class SimulateOptions(OneTask, Options):
    """Settings of ``simulate``: one task, ``N`` sequences, the teacher."""

    variant: str = task_option("variant")
    nu: float | None = task_option("nu")
    L: int = task_option("L")
    variable_length: bool = task_option("variable_length")
    Delta: float = task_option("Delta")
    heads: int = task_option("heads")
    presence: float = task_option("presence")
    D: int = task_option("D")
    N: int = option(1000, "number of sequences, >= 1", accepts=Integer(1))
    seed: int = seed_option("seed of the teacher and the data")
    exact_teacher: bool = option(
        False, "teacher with |k*|^2 = |v*|^2 = D and k* orthogonal to v* (default: prior draw)"
    )

    def validate(self) -> None:
        """Refuse an invalid task, ``N < 1``, a negative seed, an exact teacher with ``D < 2``
        (``D < 2 heads`` for several heads)."""
        if self.exact_teacher:
            check_int("D", self.D, 2 * self.config().heads)
        config = self.config()
        tokens = self.N * config.Lbar * config.D
        check_fits(
            f"N = {self.N}, L = {config.Lbar}, D = {config.D}",
            COPIES * 8 * tokens,
            f"N L D = {tokens:.3g} token entries in float64, {COPIES} copies: drawn, on the host, "
            "written",
            "use a smaller N, L or D",
            ask_device=False,
        )


COPIES = 3
"""How many copies of the tokens a data set holds at its peak (drawn, copied to the host,
written)."""


@dataclasses.dataclass(frozen=True)
class SimulatePoint(Record):
    """The one data set."""

    seed: int


@dataclasses.dataclass(frozen=True, repr=False)
class SimulateResult(Result[SimulateOptions, DataSummary]):
    """The data set of ``simulate``: one summary row, and the arrays (``arrays``)."""

    arrays: dict[str, np.ndarray] = dataclasses.field(default_factory=dict, repr=False)

    def rows_table(self) -> str:
        """The summary, one line per quantity."""
        return "\n".join(f"{name}: {value}" for name, value in self.rows[0].to_dict().items())

    def record(self) -> JsonObject:
        """The ``config`` record stored in the file: the task, ``N``, the teacher law and the
        provenance (what ``--data`` reads back)."""
        options = self.options
        config = {
            **options.config().to_dict(),
            "N": options.N,
            "exact_teacher": options.exact_teacher,
        }
        return {"config": config, **self.provenance.to_dict()}

    def save(self, path: Path) -> None:
        """Write the arrays and the record as ``.npz``."""
        with open(path, "wb") as handle:
            np.savez(
                handle, **self.arrays, config=np.asarray(json_text(self.record(), indent=None))
            )


class Simulate(Experiment[SimulateOptions, SimulatePoint, SimulatedData, SimulateResult]):
    """Draw a teacher and ``N`` sequences."""

    name: ClassVar[str] = "simulate"
    summary: ClassVar[str] = "simulate an SLR data set (.npz)"
    description: ClassVar[str] = (
        "Draws a teacher (k*, v*) and N sequences of the task; with --out writes them as .npz "
        "(X, lengths, y, eps, chi_star, z_star, k_star, v_star and the config record): the "
        "format --data reads. With --heads or --presence (docs/multihead.md) eps, chi_star, "
        "z_star, k_star and v_star gain a head axis and present holds the heads' presences; "
        "gap --data reads them, the other commands one-head data only."
    )
    options_type = SimulateOptions
    point_type = SimulatePoint
    solved_type = SimulatedData
    result_type = SimulateResult
    output: ClassVar[str | None] = "file"
    output_help: ClassVar[str] = "the .npz file to write"
    output_suffixes: ClassVar[tuple[str, ...]] = (".npz",)

    def points(self, options: SimulateOptions) -> list[SimulatePoint]:
        """One data set."""
        return [SimulatePoint(options.seed)]

    def solve(self, options: SimulateOptions, point: SimulatePoint) -> SimulatedData:
        """Draw the teacher and the sequences; summarise them."""
        from bayes_slr.studies.simulate import simulate_data

        settings = SimulateSettings(options.N, options.exact_teacher)
        return simulate_data(options.config(), settings, point.seed)

    def collect(
        self,
        options: SimulateOptions,
        solved: Sequence[tuple[SimulatePoint, SimulatedData]],
        provenance: Provenance,
    ) -> SimulateResult:
        """The summary row and the arrays."""
        ((_, data),) = solved
        return SimulateResult(options, (data.summary,), provenance, arrays=data.arrays)


SIMULATE = register_experiment(Simulate())
