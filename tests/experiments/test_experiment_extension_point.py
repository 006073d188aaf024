"""A new measurement is one module: a toy experiment defined in this file alone becomes a
command (flags, validation, ``--json``, a resumable ``--out`` folder) and a public function,
with no change to ``cli/`` or the runner (docs/architecture.md, "To add a measurement")."""

from __future__ import annotations

import dataclasses
import json
import math
from collections.abc import Sequence
from typing import ClassVar

import pytest

from bayes_slr.api import api_function
from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError, check_int
from bayes_slr.experiments.base import (
    EXPERIMENTS,
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
)
from bayes_slr.experiments.tables import format_table

CALLS: list[int] = []


@dataclasses.dataclass(frozen=True)
class SquaresOptions(Options):
    n: tuple[int, ...] = option((1, 2, 3), "integers to square, each >= 0")

    def validate(self) -> None:
        for value in self.n:
            check_int("n", value, 0)


@dataclasses.dataclass(frozen=True)
class SquaresPoint(Record):
    n: int


@dataclasses.dataclass(frozen=True)
class SquaresRow(Record):
    n: int
    square: float


@dataclasses.dataclass(frozen=True)
class SquaresResult(Result[SquaresOptions, SquaresRow]):
    def rows_table(self) -> str:
        return format_table(["n", "square"], [[row.n, row.square] for row in self.rows])


class Squares(Experiment[SquaresOptions, SquaresPoint, SquaresRow, SquaresResult]):
    name: ClassVar[str] = "toy-squares"
    summary: ClassVar[str] = "squares of integers (a toy experiment of the test suite)"
    options_type = SquaresOptions
    point_type = SquaresPoint
    solved_type = SquaresRow
    result_type = SquaresResult
    sweep_axes = ("n",)

    def points(self, options: SquaresOptions) -> list[SquaresPoint]:
        return [SquaresPoint(n) for n in options.n]

    def solve(self, options: SquaresOptions, point: SquaresPoint) -> SquaresRow:
        CALLS.append(point.n)
        return SquaresRow(point.n, math.pow(point.n, 2))

    def collect(
        self,
        options: SquaresOptions,
        solved: Sequence[tuple[SquaresPoint, SquaresRow]],
        provenance: Provenance,
    ) -> SquaresResult:
        return SquaresResult(options, tuple(row for _, row in solved), provenance)


@pytest.fixture
def squares():
    experiment = EXPERIMENTS.register(Squares())
    CALLS.clear()
    yield experiment
    EXPERIMENTS.unregister(experiment.name)


def test_a_toy_experiment_is_a_command_and_a_function(squares, tmp_path, capsys):
    out = tmp_path / "runs"
    assert main(["toy-squares", "--n", "2", "5", "--out", str(out), "--json", "--quiet"]) == 0
    printed = json.loads(capsys.readouterr().out)
    assert [row["square"] for row in printed["rows"]] == [4, 25]
    assert printed["config"] == {"n": [2, 5]}
    assert CALLS == [2, 5]
    # the function has the command's options; the folder is resumed: only 7 is computed
    result = api_function(squares)(n=(2, 5, 7), out=out, progress=False)
    assert [row.square for row in result.rows] == [4, 25, 49]
    assert CALLS == [2, 5, 7]
    assert result.to_pandas().square.tolist() == [4, 25, 49]


def test_a_toy_experiments_bad_value_is_refused_in_one_line(squares, capsys):
    assert main(["toy-squares", "--n", "-1"]) == 2
    assert (
        capsys.readouterr().err
        == "bayes-slr toy-squares: error: n must be an integer >= 0, got -1\n"
    )
    with pytest.raises(ConfigError, match="n must be"):
        api_function(squares)(n=(-1,))
