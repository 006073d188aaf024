"""One AMP measurement: train by GAMP at finite ``D``, score on fresh data, set beside the state
evolution.

:func:`amp_point` is the unit of ``bayes-slr amp``, of the notebook
``notebooks/amp_state_evolution``
and of the tests (docs/theory.md, part C).
"""

from __future__ import annotations

import dataclasses
import functools
import math
import os
import time
from collections.abc import Callable
from typing import Any

import jax
import numpy as np

from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.inference import amp
from bayes_slr.models.scoring import fresh_sample_scorer
from bayes_slr.models.simulate import chunk_sequences, draw_teacher
from bayes_slr.models.spec import SLRConfig
from bayes_slr.records import Executor, SweepLog, run_sweep
from bayes_slr.theory.replica_bayes import bayes_replica_point, bayes_state_evolution_history

MEMORY_FRACTION = 0.8
"""A point whose estimated peak memory exceeds this fraction of the available memory is refused."""


@dataclasses.dataclass(frozen=True)
class AMPOptions:
    """Options of one AMP point.

    Attributes
    ----------
    init : ``"random"`` or ``"informed"`` (at the teacher).
    damping, tol, max_iter, coupled, variance, adaptive : of
    :func:`~bayes_slr.inference.amp.run_amp`.
    dtype : working precision of the tokens and messages, ``"float64"`` or ``"float32"``.
    n_test : fresh test sequences for the error, ``>= 2``.
    se_samples : channel draws of the state evolution, ``>= 2``.
    se_seed : seed of the state evolution's draws.
    state_evolution : whether to solve the state evolution at the same point.
    history : whether to return the per-iteration overlaps (AMP and state-evolution iterates).
    memory_limit : bytes allowed (default: :data:`MEMORY_FRACTION` of what is available).
    """

    init: str = "random"
    damping: float = amp.DEFAULT_DAMPING
    tol: float = 1e-6
    max_iter: int = 300
    coupled: bool = False
    variance: str = "hessian"
    adaptive: bool = True
    dtype: str = "float64"
    n_test: int = 20_000
    se_samples: int = 16_384
    se_seed: int = 0
    state_evolution: bool = True
    history: bool = True
    memory_limit: int | None = None

    def __post_init__(self) -> None:
        init, damping, tol, max_iter, dtype = amp.check_amp_options(
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
        ):
            object.__setattr__(self, name, value)
        object.__setattr__(self, "variance", check_choice("variance", self.variance, amp.VARIANCES))
        object.__setattr__(self, "n_test", check_int("n_test", self.n_test, 2))
        object.__setattr__(self, "se_samples", check_int("se_samples", self.se_samples, 2))
        if self.memory_limit is not None:
            object.__setattr__(
                self, "memory_limit", check_int("memory_limit", self.memory_limit, 1)
            )


def available_memory() -> int:
    """Bytes available to one run: the accelerator's limit, or the host's ``MemAvailable``."""
    device = jax.devices()[0]
    if device.platform != "cpu":
        stats = device.memory_stats() or {}
        if "bytes_limit" in stats:
            return int(stats["bytes_limit"])
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def check_point(config: SLRConfig, alpha: object, options: AMPOptions) -> tuple[float, int]:
    """Validate one point before any work; return ``(alpha, N)``.

    Raises
    ------
    ConfigError
        ``D < 2``; ``alpha <= 0``; ``N = round(alpha D) < 1``; max-SLR ``nu`` not covered; the
        estimated memory (reported) above the limit.
    """
    config = amp.check_amp_config(config)
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    N = round(alpha * config.D)
    if N < 1:
        raise ConfigError(
            f"alpha must give N = round(alpha D) >= 1 sequences, got alpha = {alpha:g} at D = "
            f"{config.D}"
        )
    needed = amp.memory_bytes(config, N, options.dtype)
    limit = (
        options.memory_limit
        if options.memory_limit is not None
        else int(MEMORY_FRACTION * available_memory())
    )
    if needed > limit:
        raise ConfigError(
            f"D = {config.D}, alpha = {alpha:g}: the point needs about {needed / 2**30:.2f} GiB "
            f"(N L D = {N * config.Lbar * config.D:.3g} tokens entries in {options.dtype}) but "
            f"{limit / 2**30:.2f} GiB are allowed; use a smaller D or alpha, or --dtype float32"
        )
    return alpha, N


@functools.lru_cache(maxsize=64)
def state_evolution_point(
    config: SLRConfig, alpha: float, init: str, samples: int, seed: int
) -> dict[str, Any]:
    """The Bayes-optimal state evolution's fixed point at ``alpha`` (``D`` ignored), as a JSON-ready
    dict.
    """
    point = bayes_replica_point(
        config.replace(D=1), alpha=alpha, init=init, mc_samples=samples, seed=seed
    )
    return {
        "test_error": point.test_error,
        "test_error_stderr": point.diagnostics["test_error_stderr"],
        "posterior_mean_f_error": point.diagnostics["posterior_mean_f_error"],
        "q_k": point.overlaps["q_k"],
        "q_v": point.overlaps["q_v"],
        "converged": point.converged,
        "iterations": point.diagnostics["iterations"],
    }


def amp_point(
    config: SLRConfig,
    alpha: float,
    seed: int,
    options: AMPOptions | None = None,
    *,
    progress: bool = False,
) -> dict[str, Any]:
    """Run GAMP on one training set and score it.

    Parameters
    ----------
    config : SLRConfig
        Task; ``config.D`` is the dimension of the run.
    alpha : samples per dimension, ``N = round(alpha D)``.
    seed : seeds the exact teacher (``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``), the data, the start and
        the test set.
    options : AMPOptions
    progress : show a transient progress bar of the GAMP iterations (not part of the point's
        configuration: it changes no number).

    Returns
    -------
    dict
        ``alpha, D, N, seed, init, test_error, stderr`` (excess test error of the AMP predictor on
        ``n_test`` fresh sequences and its standard error), ``posterior_mean_f_error`` and
        ``posterior_mean_f_stderr`` (the training-set posterior mean of ``f``, what samplers
        estimate;
        same test set; equal to the former for max-SLR), ``overlaps`` (``m_k, q_k, m_v, q_v`` at the
        last iterate), ``iterations, converged, residual``, ``seconds`` (the GAMP loop, compilation
        included; ``benchmarks/amp_scaling.py`` times iterations alone), ``history`` (per-iteration
        overlaps, with ``history``),
        and ``state_evolution`` (the theory at the same ``alpha`` and start: ``test_error, q_k, q_v,
        converged``, and with ``history`` its iterates ``(q_k, q_v)`` from the same start with the
        same damping, as many as AMP took).
    """
    options = options or AMPOptions()
    seed = check_int("seed", seed, 0)
    alpha, N = check_point(config, alpha, options)
    key_teacher, key_data, key_start, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, N, dtype=options.dtype)
    start = time.perf_counter()
    result = jax.block_until_ready(
        amp.run_amp(
            key_start,
            data,
            config,
            init=options.init,
            teacher=teacher,
            damping=options.damping,
            tol=options.tol,
            max_iter=options.max_iter,
            coupled=options.coupled,
            variance=options.variance,
            adaptive=options.adaptive,
            progress=progress,
        )
    )
    seconds = time.perf_counter() - start
    del data  # the tokens are not needed for scoring
    iterations = int(result.state.iteration)
    score = fresh_sample_scorer(key_test, config, teacher, options.n_test, chunk_sequences(config))
    error = score(amp.amp_predictor(config, result.state))
    plain = score(amp.amp_predictor(config, result.state, own_tilt=False))
    final = np.asarray(result.history[iterations])
    row: dict[str, Any] = {
        "alpha": alpha,
        "D": config.D,
        "N": N,
        "seed": seed,
        "init": options.init,
        "test_error": error.value,
        "stderr": error.stderr,
        "posterior_mean_f_error": plain.value,
        "posterior_mean_f_stderr": plain.stderr,
        "overlaps": dict(zip(("m_k", "q_k", "m_v", "q_v"), (float(x) for x in final))),
        "iterations": iterations,
        "converged": bool(result.converged) and math.isfinite(error.value),
        "residual": float(result.state.residual),
        "final_damping": float(result.damping),
        "seconds": seconds,
    }
    if options.history:
        row["history"] = np.asarray(result.history[: iterations + 1]).tolist()
    if options.state_evolution:
        theory = dict(
            state_evolution_point(
                config.replace(D=1), alpha, options.init, options.se_samples, options.se_seed
            )
        )
        if options.history:
            start_q = 1.0 - amp.START_OVERLAP if options.init == "informed" else amp.START_OVERLAP
            theory["iterates"] = bayes_state_evolution_history(
                config.replace(D=1),
                alpha=alpha,
                start=(start_q, start_q),
                iterations=max(iterations, 1),
                damping=options.damping,
                mc_samples=options.se_samples,
                seed=options.se_seed,
            ).tolist()
        row["state_evolution"] = theory
    return row


def amp_check_kernel(
    config: SLRConfig, dtype: str, alpha: float = 2.0
) -> Callable[[], tuple[float, float]]:
    """One AMP point of ``benchmarks/gpu_check.py``: GAMP at ``config`` (its ``D``) in ``dtype``,
    scored.

    Returns a zero-argument function that runs :func:`amp_point` (seed 0: the same
    training and test sets on every call and device; no state evolution, no history) on
    the current default device and returns the excess test error with the tolerance of
    a comparison between two devices: 4 of its standard errors.
    """
    options = AMPOptions(dtype=dtype, n_test=10_000, state_evolution=False, history=False)

    def run() -> tuple[float, float]:
        row = amp_point(config, alpha, 0, options)
        return row["test_error"], 4 * row["stderr"]

    return run


def amp_sweep(
    config: SLRConfig,
    alphas: list[float],
    seeds: int,
    options: AMPOptions | None = None,
    *,
    log: SweepLog | None = None,
    executor: Executor | None = None,
    progress: bool = False,
    failures: list | None = None,
) -> list[dict[str, Any]]:
    """:func:`amp_point` at every ``alpha`` and seed ``0 .. seeds - 1``, through
    :func:`~bayes_slr.records.run_sweep`.

    Every point is validated first (:func:`check_point`: memory included). Each point's key is its
    full
    configuration (``config``, ``options``, ``alpha``, ``seed``): points finished in ``log`` are
    read back, not
    recomputed. ``progress`` shows a bar over the points and, when they run in this process, a
    transient
    one over the iterations of the running point. ``failures``: as in ``run_sweep``.

    Returns
    -------
    list of dict
        The rows of :func:`amp_point`, in the order alpha, seed.
    """
    options = options or AMPOptions()
    seeds = check_int("seeds", seeds, 1)
    for alpha in alphas:
        check_point(config, alpha, options)
    settings = {**config.to_dict(), "options": vars(options)}
    points = [
        {**settings, "alpha": alpha, "seed": seed} for alpha in alphas for seed in range(seeds)
    ]
    iterations_bar = (
        progress and executor is None
    )  # a bar over one point's iterations, in process only
    done = run_sweep(
        points,
        lambda point: amp_point(
            config, point["alpha"], point["seed"], options, progress=iterations_bar
        ),
        log=log,
        seed_of=lambda point: point["seed"],
        executor=executor,
        progress=progress,
        description="amp points",
        failures=failures,
    )
    return [row for _, row in done]
