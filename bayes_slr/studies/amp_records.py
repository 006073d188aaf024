"""The settings and typed records of the AMP study (:func:`bayes_slr.studies.amp.amp_point`), and
the checks of a point (its training size, its memory). They import without JAX."""

from __future__ import annotations

import dataclasses
import math

from bayes_slr.errors import ConfigError, Number, OrNone, validate_fields
from bayes_slr.inference.amp_settings import AMP_ACCEPTS, DEFAULT_DAMPING
from bayes_slr.memory import check_fits
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class AMPSettings(Record):
    """The settings of one GAMP point: its ``alpha`` and the algorithm's.

    Attributes
    ----------
    alpha : samples per dimension ``> 0``, ``N = round(alpha D) >= 1`` (:func:`training_ratio`);
        ``None`` where the caller gives it beside (the posterior-scaling study's points).
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

    alpha: float | None = None
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
        validate_fields(self, {"alpha": OrNone(Number(0.0, strict=True))} | AMP_ACCEPTS)


def training_ratio(config: SLRConfig, alpha: float | None) -> tuple[float, int]:
    """``(alpha, N)`` after checking ``N = round(alpha D) >= 1`` (``alpha > 0`` and ``D >= 2``
    are the settings' and :func:`~bayes_slr.inference.amp.check_amp_config`'s)."""
    if alpha is None:
        raise ConfigError("alpha must be a number > 0 (samples per dimension), got None")
    alpha = float(alpha)
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
    ``history``). The standard errors are the spread of the fixed points of independent batches of
    the channel draws (:func:`~bayes_slr.formulas.replica_bayes.bayes_replica_point`; rows logged
    before: the error's per-draw spread at the point, 0 where it is a quadrature, no overlaps').
    """

    test_error: float
    test_error_stderr: float
    posterior_mean_f_error: float
    q_k: float
    q_v: float
    converged: bool
    iterations: int
    iterates: tuple[tuple[float, float], ...] = ()
    q_k_stderr: float = math.nan
    q_v_stderr: float = math.nan


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
