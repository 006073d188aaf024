"""``amp``: Bayes-optimal GAMP at finite ``D``, scored on fresh data, beside the state evolution
(docs/theory.md, part C).

:func:`bayes_slr.studies.amp.amp_point` is the unit of work (one training set, one GAMP run, one
test set); the experiment runs it at every ``alpha`` and teacher seed, resumably.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence
from typing import Any, ClassVar

import numpy as np

from bayes_slr.errors import Integer, Number
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    flatten,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import alpha_axis, mark_unconverged, new_axes
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    OneTask,
    describe_nu,
    seed_option,
    task_option,
)
from bayes_slr.inference.amp_settings import (
    DEFAULT_DAMPING,
    DTYPES,
    SE_DRAWS_MIN,
    damping_accepted,
    dtype_accepted,
)
from bayes_slr.models.spec import INITS
from bayes_slr.numerics.rounding import matched_digits
from bayes_slr.studies.amp_records import (
    AMPRow,
    AMPSettings,
    StateEvolution,
    check_memory,
    training_ratio,
)

DEFAULT_ALPHAS = (0.5, 1.0, 2.0, 4.0, 16.0)
AMP_D = 1000
"""AMP's default dimension: it is a large-D algorithm (at D = 100 its finite-size deviation from
the state evolution is several times the test-set error)."""


@dataclasses.dataclass(frozen=True)
class AMPOptions(OneTask, Options):
    """Settings of ``amp``: one task at dimension ``D``, the sample ratios, the teachers, GAMP."""

    variant: str = task_option("variant")
    nu: float | None = task_option("nu")
    L: int = task_option("L")
    variable_length: bool = task_option("variable_length")
    Delta: float = task_option("Delta")
    D: int = task_option(
        "D",
        default=AMP_D,
        help="token dimension, >= 2 (AMP is a large-D algorithm)",
        accepts=Integer(2),
    )
    alpha: tuple[float, ...] = option(
        DEFAULT_ALPHAS, "sample ratios N/D, each > 0", accepts=Number(0.0, strict=True)
    )
    seeds: int = option(1, "teachers (and data sets) per alpha, >= 1", accepts=Integer(1))
    seed: int = seed_option("seed of the first teacher; teacher i uses seed + i")
    init: str = option("random", "GAMP start", choices=INITS)
    damping: float = option(
        DEFAULT_DAMPING, "weight of the new iterate, in (0, 1]", accepts=damping_accepted
    )
    max_iter: int = option(300, "largest number of iterations, >= 1", accepts=Integer(1))
    tol: float = option(1e-6, "residual at which GAMP stops, > 0", accepts=Number(0.0, strict=True))
    dtype: str = option(
        "float64", "precision of tokens and messages", choices=DTYPES, accepts=dtype_accepted
    )
    N_test: int = option(
        20_000, "fresh test sequences per point, >= 2", aliases=("--n-test",), accepts=Integer(2)
    )
    se_draws: int = option(
        16_384,
        f"state-evolution channel draws, >= {SE_DRAWS_MIN} (8 batches of 2 for its standard error)",
        aliases=("--mc-samples", "--se-samples"),
        accepts=Integer(SE_DRAWS_MIN),
    )
    state_evolution: bool = option(True, "solve the state evolution at each point")
    history: bool = option(True, "keep the per-iteration overlaps", cli=False)
    memory_limit: int | None = option(None, "bytes a point may use", cli=False, accepts=Integer(1))

    def validate(self) -> None:
        """Refuse bad settings, then a point that does not fit in memory (this last check
        imports JAX to ask the device)."""
        config = self.config()
        settings = self.settings()
        for alpha in self.alpha:
            training_ratio(config, alpha)
        from bayes_slr.inference.amp import check_amp_config

        check_amp_config(config)
        for alpha in self.alpha:
            check_memory(config, alpha, settings)

    def settings(self, alpha: float | None = None) -> AMPSettings:
        """The settings of the point at ``alpha`` (the algorithm's: those of every point)."""
        return AMPSettings(
            alpha=alpha,
            init=self.init,
            damping=self.damping,
            tol=self.tol,
            max_iter=self.max_iter,
            dtype=self.dtype,
            N_test=self.N_test,
            mc_samples=self.se_draws,
            state_evolution=self.state_evolution,
            history=self.history,
            memory_limit=self.memory_limit,
        )


@dataclasses.dataclass(frozen=True)
class AMPPoint(Record):
    """One ``alpha`` and teacher seed."""

    alpha: float
    seed: int


TABLE_COLUMNS = [
    "alpha",
    "seed",
    "test_error",
    "stderr",
    "st.ev. error",
    "st.ev. stderr",
    "m_k",
    "q_k",
    "m_v",
    "q_v",
    "st.ev. q_k",
    "st.ev. q_v",
    "iterations",
    "converged",
    "residual",
]


def _theory_cells(theory: StateEvolution) -> tuple[Any, Any]:
    """The state evolution's error and its standard error, to the decimal of the error's second
    significant digit (as logged where the error is not positive)."""
    matched = matched_digits(theory.test_error, theory.test_error_stderr)
    return matched if matched is not None else (theory.test_error, theory.test_error_stderr)


@dataclasses.dataclass(frozen=True, repr=False)
class AMPResult(Result[AMPOptions, AMPRow]):
    """The GAMP runs of ``amp``, one row per (alpha, seed)."""

    def rows_table(self) -> str:
        """One line per run, beside the state evolution."""
        lines = []
        for r in self.rows:
            se = r.state_evolution
            o = r.overlaps
            lines.append(
                [
                    r.alpha,
                    r.seed,
                    r.test_error,
                    r.stderr,
                    *(_theory_cells(se) if se else ("", "")),
                    o["m_k"],
                    o["q_k"],
                    o["m_v"],
                    o["q_v"],
                    se.q_k if se else "",
                    se.q_v if se else "",
                    r.iterations,
                    r.converged,
                    r.residual,
                ]
            )
        return format_table(TABLE_COLUMNS, lines)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One flat row per run (the per-iteration histories left out: see ``rows``)."""
        tidy = []
        for row in self.rows:
            data = row.to_dict()
            data.pop("history")
            if data["state_evolution"] is not None:
                data["state_evolution"].pop("iterates")
            else:
                data.pop("state_evolution")
            tidy.append(flatten(data))
        return tidy

    def plot(self, ax: Any = None) -> Any:
        """AMP test error against alpha (mean over seeds, bars: the spread of the mean, or the
        test-set error with one seed) with the state evolution's Bayes error; unconverged runs
        hollow."""
        ax = new_axes(ax)
        alphas = sorted({r.alpha for r in self.rows})
        means, errors = [], []
        for alpha in alphas:
            runs = [r for r in self.rows if r.alpha == alpha]
            values = np.array([r.test_error for r in runs])
            means.append(values.mean())
            spread = values.std(ddof=1) / math.sqrt(values.size) if values.size > 1 else None
            errors.append(spread if spread is not None else runs[0].stderr)
        ax.errorbar(
            alphas,
            means,
            errors,
            fmt="s",
            mfc="none",
            capsize=2,
            label=f"AMP, D = {self.options.D}",
        )
        mark_unconverged(ax, self.rows, "C3", "not converged")
        theory = {r.alpha: r.state_evolution.test_error for r in self.rows if r.state_evolution}
        if theory:
            ax.plot(
                sorted(theory),
                [theory[a] for a in sorted(theory)],
                "k-",
                lw=1,
                label="state evolution",
            )
        config = self.options.config()
        alpha_axis(ax, alphas)
        ax.set(
            ylabel="excess test error",
            title=f"{config.variant} nu={describe_nu(config.nu)}, {config.length.describe()}, "
            f"Delta={config.Delta:g}, D={config.D}, {self.options.seeds} seed(s), "
            f"init {self.options.init}",
        )
        ax.title.set_fontsize(9)
        ax.legend(fontsize=8)
        return ax


class AMP(Experiment[AMPOptions, AMPPoint, AMPRow, AMPResult]):
    """GAMP at finite D against the state evolution."""

    name: ClassVar[str] = "amp"
    summary: ClassVar[str] = "Bayes-optimal GAMP at finite D against the state evolution"
    description: ClassVar[str] = (
        "Runs a Bayes-optimal GAMP for SLR at dimension D on N = alpha D sequences of exact "
        "teachers and reports each point's error, overlaps and iterations beside the state "
        "evolution at the same point (docs/theory.md part C)."
    )
    options_type = AMPOptions
    point_type = AMPPoint
    solved_type = AMPRow
    result_type = AMPResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("alpha", "seeds")

    def points(self, options: AMPOptions) -> list[AMPPoint]:
        """Every ``alpha`` and teacher seed, in that order."""
        return [
            AMPPoint(alpha, options.seed + index)
            for alpha in options.alpha
            for index in range(options.seeds)
        ]

    def solve(self, options: AMPOptions, point: AMPPoint) -> AMPRow:
        """One GAMP run (with a bar over its iterations when running in this process)."""
        from bayes_slr.studies.amp import amp_point

        return amp_point(
            options.config(), options.settings(point.alpha), point.seed, progress=inner_progress()
        )

    def collect(
        self,
        options: AMPOptions,
        solved: Sequence[tuple[AMPPoint, AMPRow]],
        provenance: Provenance,
    ) -> AMPResult:
        """The rows in the order of the points; a warning per unconverged run."""
        rows = tuple(row for _, row in solved)
        warnings = tuple(
            f"alpha={r.alpha:g} seed {r.seed}: GAMP did not converge (last residual "
            f"{r.residual:.3g}); do not read its error"
            for r in rows
            if not r.converged
        )
        return AMPResult(options, rows, provenance, warnings=warnings)


AMP_EXPERIMENT = register_experiment(AMP())
