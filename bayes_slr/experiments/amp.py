"""``amp``: Bayes-optimal GAMP at finite ``D``, scored on fresh data, beside the state evolution
(docs/theory.md, part C).

:func:`amp_point` is the unit of work (one training set, one GAMP run, one test set); the
experiment runs it at every ``alpha`` and teacher seed, resumably.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable, Sequence
from typing import Any, ClassVar

import numpy as np

from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.figures import alpha_axis, new_axes
from bayes_slr.experiments.runner import inner_progress
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    D_option,
    Delta_option,
    L_option,
    describe_nu,
    nu_option,
    seed_option,
    task_config,
    variable_length_option,
    variant_option,
)
from bayes_slr.inference.amp_settings import DEFAULT_DAMPING, DTYPES, VARIANCES, check_amp_options
from bayes_slr.memory import check_fits
from bayes_slr.models.spec import INITS, SLRConfig

DEFAULT_ALPHAS = (0.5, 1.0, 2.0, 4.0, 16.0)
AMP_D = 1000
"""AMP's default dimension: it is a large-D algorithm (at D = 100 its finite-size deviation from
the state evolution is several times the test-set error)."""


@dataclasses.dataclass(frozen=True)
class AMPSettings(Record):
    """The algorithm settings of one GAMP point.

    Attributes
    ----------
    init : ``"random"`` or ``"informed"`` (at the teacher).
    damping, tol, max_iter, coupled, variance, adaptive : of
        :func:`~bayes_slr.inference.amp.run_amp`.
    dtype : working precision of the tokens and messages, ``"float64"`` or ``"float32"``.
    N_test : fresh test sequences for the error, ``>= 2``.
    mc_samples : channel draws of the state evolution, ``>= 2``.
    se_seed : seed of the state evolution's draws.
    state_evolution : whether to solve the state evolution at the same point.
    history : whether to return the per-iteration overlaps (AMP and state-evolution iterates).
    memory_limit : bytes allowed (default: :data:`bayes_slr.memory.MEMORY_FRACTION` of what is
        available).
    """

    init: str = "random"
    damping: float = DEFAULT_DAMPING
    tol: float = 1e-6
    max_iter: int = 300
    coupled: bool = False
    variance: str = "hessian"
    adaptive: bool = True
    dtype: str = "float64"
    N_test: int = 20_000
    mc_samples: int = 16_384
    se_seed: int = 0
    state_evolution: bool = True
    history: bool = True
    memory_limit: int | None = None

    def __post_init__(self) -> None:
        init, damping, tol, max_iter, dtype = check_amp_options(
            init=self.init,
            damping=self.damping,
            tol=self.tol,
            max_iter=self.max_iter,
            dtype=self.dtype,
        )
        for name, value in (
            ("init", init),
            ("damping", damping),
            ("tol", tol),
            ("max_iter", max_iter),
            ("dtype", dtype),
            ("variance", check_choice("variance", self.variance, VARIANCES)),
            ("N_test", check_int("N_test", self.N_test, 2)),
            ("mc_samples", check_int("mc_samples", self.mc_samples, 2)),
        ):
            object.__setattr__(self, name, value)
        if self.memory_limit is not None:
            object.__setattr__(
                self, "memory_limit", check_int("memory_limit", self.memory_limit, 1)
            )


@dataclasses.dataclass(frozen=True)
class AMPOptions(Options):
    """Settings of ``amp``: one task at dimension ``D``, the sample ratios, the teachers, GAMP."""

    variant: str = variant_option()
    nu: float | None = nu_option()
    L: int = L_option()
    variable_length: bool = variable_length_option()
    Delta: float = Delta_option()
    D: int = D_option(AMP_D, "token dimension, >= 2 (AMP is a large-D algorithm)")
    alpha: tuple[float, ...] = option(DEFAULT_ALPHAS, "sample ratios N/D, each > 0")
    seeds: int = option(1, "teachers (and data sets) per alpha, >= 1")
    seed: int = seed_option("seed of the first teacher; teacher i uses seed + i")
    init: str = option("random", "GAMP start", choices=INITS)
    damping: float = option(DEFAULT_DAMPING, "weight of the new iterate, in (0, 1]")
    max_iter: int = option(300, "largest number of iterations, >= 1")
    tol: float = option(1e-6, "residual at which GAMP stops, > 0")
    dtype: str = option("float64", "precision of tokens and messages", choices=DTYPES)
    N_test: int = option(20_000, "fresh test sequences per point, >= 2", aliases=("--n-test",))
    mc_samples: int = option(
        16_384, "state-evolution channel draws, >= 2", aliases=("--se-samples",)
    )
    state_evolution: bool = option(True, "solve the state evolution at each point")
    history: bool = option(True, "keep the per-iteration overlaps", cli=False)
    memory_limit: int | None = option(None, "bytes a point may use", cli=False)

    def validate(self) -> None:
        """Refuse bad settings, then a point that does not fit in memory (this last check
        imports JAX to ask the device)."""
        config = self.config()
        self._set("nu", config.nu)  # the variant's default made explicit: the record is complete
        settings = self.settings()
        check_int("seeds", self.seeds, 1)
        check_int("seed", self.seed, 0)
        if not self.alpha:
            raise ConfigError("alpha: give at least one value > 0")
        for alpha in self.alpha:
            training_ratio(config, alpha)
        from bayes_slr.inference.amp import check_amp_config

        check_amp_config(config)
        for alpha in self.alpha:
            check_memory(config, alpha, settings)

    def config(self) -> SLRConfig:
        """The task at dimension ``D``."""
        return task_config(self.variant, self.L, self.variable_length, self.nu, self.Delta, self.D)

    def settings(self) -> AMPSettings:
        """The algorithm settings of every point."""
        return AMPSettings(
            init=self.init,
            damping=self.damping,
            tol=self.tol,
            max_iter=self.max_iter,
            dtype=self.dtype,
            N_test=self.N_test,
            mc_samples=self.mc_samples,
            state_evolution=self.state_evolution,
            history=self.history,
            memory_limit=self.memory_limit,
        )


def training_ratio(config: SLRConfig, alpha: object) -> tuple[float, int]:
    """``(alpha, N)`` after checking ``D >= 2``, ``alpha > 0`` and ``N = round(alpha D) >= 1``."""
    check_int("D", config.D, 2)
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    N = round(alpha * config.D)
    if N < 1:
        raise ConfigError(
            f"alpha must give N = round(alpha D) >= 1 sequences, got alpha = {alpha:g} at D = "
            f"{config.D}"
        )
    return alpha, N


def check_memory(config: SLRConfig, alpha: float, settings: AMPSettings) -> None:
    """Refuse a point whose estimated peak memory exceeds the limit (the estimate reported)."""
    from bayes_slr.inference.amp import memory_bytes

    alpha, N = training_ratio(config, alpha)
    check_fits(
        f"D = {config.D}, alpha = {alpha:g}",
        memory_bytes(config, N, settings.dtype),
        f"N L D = {N * config.Lbar * config.D:.3g} token entries in {settings.dtype}",
        "use a smaller D or alpha, or --dtype float32",
        limit=settings.memory_limit,
    )


@dataclasses.dataclass(frozen=True)
class StateEvolution(Record):
    """The Bayes-optimal state evolution at a point's ``alpha`` and start (``D`` ignored).

    ``iterates``: its ``(q_k, q_v)`` from the same start and damping, as many as AMP took (with
    ``history``).
    """

    test_error: float
    test_error_stderr: float
    posterior_mean_f_error: float
    q_k: float
    q_v: float
    converged: bool
    iterations: int
    iterates: tuple[tuple[float, float], ...] = ()


@dataclasses.dataclass(frozen=True)
class AMPPoint(Record):
    """One ``alpha`` and teacher seed."""

    alpha: float
    seed: int


@dataclasses.dataclass(frozen=True)
class AMPRow(Record):
    """One GAMP run, scored.

    Attributes
    ----------
    alpha, D, N, seed, init : the point.
    test_error, stderr : excess test error of the AMP predictor on ``N_test`` fresh sequences.
    posterior_mean_f_error, posterior_mean_f_stderr : of the training-set posterior mean of
        ``f`` (what samplers estimate; equal to the former for max-SLR).
    overlaps : ``m_k, q_k, m_v, q_v`` at the last iterate.
    iterations, converged, residual, final_damping : of the run.
    seconds : the GAMP loop, compilation included (``benchmarks/amp_scaling.py`` times
        iterations alone).
    history : per-iteration ``(m_k, q_k, m_v, q_v)`` (with ``history``).
    state_evolution : the theory at the same point (with ``state_evolution``).
    """

    alpha: float
    D: int
    N: int
    seed: int
    init: str
    test_error: float
    stderr: float
    posterior_mean_f_error: float
    posterior_mean_f_stderr: float
    overlaps: dict[str, float]
    iterations: int
    converged: bool
    residual: float
    final_damping: float
    seconds: float
    history: tuple[tuple[float, float, float, float], ...] = ()
    state_evolution: StateEvolution | None = None


@functools.lru_cache(maxsize=64)
def state_evolution_point(
    config: SLRConfig, alpha: float, init: str, samples: int, seed: int
) -> StateEvolution:
    """The Bayes-optimal state evolution's fixed point at ``alpha`` (``D`` ignored)."""
    from bayes_slr.formulas.replica_bayes import bayes_replica_point

    point = bayes_replica_point(
        config.replace(D=1), alpha=alpha, init=init, mc_samples=samples, seed=seed
    )
    return StateEvolution(
        test_error=point.test_error,
        test_error_stderr=point.diagnostics["test_error_stderr"],
        posterior_mean_f_error=point.diagnostics["posterior_mean_f_error"],
        q_k=point.overlaps["q_k"],
        q_v=point.overlaps["q_v"],
        converged=point.converged,
        iterations=point.diagnostics["iterations"],
    )


def amp_point(
    config: SLRConfig,
    alpha: float,
    seed: int,
    settings: AMPSettings | None = None,
    *,
    progress: bool = False,
) -> AMPRow:
    """Run GAMP on one training set and score it.

    Parameters
    ----------
    config : SLRConfig
        Task; ``config.D`` is the dimension of the run.
    alpha : samples per dimension, ``N = round(alpha D)``.
    seed : seeds the exact teacher (``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``), the data, the start and
        the test set.
    settings : AMPSettings
    progress : show a transient progress bar of the GAMP iterations (not part of the point's
        configuration: it changes no number).
    """
    import jax

    from bayes_slr.formulas.replica_bayes import bayes_state_evolution_history
    from bayes_slr.inference import amp
    from bayes_slr.models.scoring import fresh_sample_scorer
    from bayes_slr.models.simulate import chunk_sequences, draw_teacher

    settings = settings or AMPSettings()
    seed = check_int("seed", seed, 0)
    config = amp.check_amp_config(config)
    alpha, N = training_ratio(config, alpha)
    check_memory(config, alpha, settings)
    key_teacher, key_data, key_start, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, N, dtype=settings.dtype)
    start = time.perf_counter()
    result = jax.block_until_ready(
        amp.run_amp(
            key_start,
            data,
            config,
            init=settings.init,
            teacher=teacher,
            damping=settings.damping,
            tol=settings.tol,
            max_iter=settings.max_iter,
            coupled=settings.coupled,
            variance=settings.variance,
            adaptive=settings.adaptive,
            progress=progress,
        )
    )
    seconds = time.perf_counter() - start
    del data  # the tokens are not needed for scoring
    iterations = int(result.state.iteration)
    score = fresh_sample_scorer(key_test, config, teacher, settings.N_test, chunk_sequences(config))
    error = score(amp.amp_predictor(config, result.state))
    plain = score(amp.amp_predictor(config, result.state, own_tilt=False))
    final = np.asarray(result.history[iterations])
    theory = None
    if settings.state_evolution:
        theory = state_evolution_point(
            config.replace(D=1), alpha, settings.init, settings.mc_samples, settings.se_seed
        )
        if settings.history:
            start_q = 1.0 - amp.START_OVERLAP if settings.init == "informed" else amp.START_OVERLAP
            iterates = bayes_state_evolution_history(
                config.replace(D=1),
                alpha=alpha,
                start=(start_q, start_q),
                iterations=max(iterations, 1),
                damping=settings.damping,
                mc_samples=settings.mc_samples,
                seed=settings.se_seed,
            )
            theory = dataclasses.replace(theory, iterates=tuple(map(tuple, iterates.tolist())))
    history = np.asarray(result.history[: iterations + 1]).tolist() if settings.history else []
    return AMPRow(
        alpha=alpha,
        D=config.D,
        N=N,
        seed=seed,
        init=settings.init,
        test_error=error.value,
        stderr=error.stderr,
        posterior_mean_f_error=plain.value,
        posterior_mean_f_stderr=plain.stderr,
        overlaps=dict(zip(("m_k", "q_k", "m_v", "q_v"), (float(x) for x in final))),
        iterations=iterations,
        converged=bool(result.converged) and math.isfinite(error.value),
        residual=float(result.state.residual),
        final_damping=float(result.damping),
        seconds=seconds,
        history=tuple(map(tuple, history)),
        state_evolution=theory,
    )


def amp_check_kernel(
    config: SLRConfig, dtype: str, alpha: float = 2.0
) -> Callable[[], tuple[float, float]]:
    """One AMP point of ``benchmarks/gpu_check.py``: GAMP at ``config`` (its ``D``) in ``dtype``,
    scored.

    Returns a zero-argument function that runs :func:`amp_point` (seed 0: the same training and
    test sets on every call and device; no state evolution, no history) on the current default
    device and returns the excess test error with the tolerance of a comparison between two
    devices: 4 of its standard errors.
    """
    settings = AMPSettings(dtype=dtype, N_test=10_000, state_evolution=False, history=False)

    def run() -> tuple[float, float]:
        row = amp_point(config, alpha, 0, settings)
        return row.test_error, 4 * row.stderr

    return run


TABLE_COLUMNS = [
    "alpha",
    "seed",
    "test_error",
    "stderr",
    "st.ev. error",
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
                    se.test_error if se else "",
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
            flat = {
                k: v for k, v in row.to_dict().items() if k not in ("history", "state_evolution")
            }
            flat.update({f"overlaps.{k}": v for k, v in flat.pop("overlaps").items()})
            if row.state_evolution is not None:
                se = row.state_evolution.to_dict()
                se.pop("iterates")
                flat.update({f"state_evolution.{k}": v for k, v in se.items()})
            tidy.append(flat)
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
        bad = [r for r in self.rows if not r.converged]
        if bad:
            ax.plot(
                [r.alpha for r in bad],
                [r.test_error for r in bad],
                "o",
                mfc="white",
                color="C3",
                label="not converged",
            )
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
        return amp_point(
            options.config(), point.alpha, point.seed, options.settings(), progress=inner_progress()
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
