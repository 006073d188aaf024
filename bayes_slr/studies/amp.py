"""The AMP study: Bayes-optimal GAMP at finite ``D`` on one training set, scored on fresh data,
beside the state evolution at the same point (docs/theory.md, part C).

:func:`amp_point` is the unit of work (one training set, one GAMP run, one test set): a function of
the task, an :class:`~bayes_slr.studies.amp_records.AMPSettings` (the point's ``alpha`` and the
algorithm's settings) and the seed that returns a typed
:class:`~bayes_slr.studies.amp_records.AMPRow`.
"""

from __future__ import annotations

import dataclasses
import functools
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING

import numpy as np

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.amp_records import (
    AMPRow,
    AMPSettings,
    StateEvolution,
    training_ratio,
)

if TYPE_CHECKING:
    import jax

    from bayes_slr.inference.amp import AMPData, AMPResult
    from bayes_slr.models.simulate import Teacher


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
        test_error_stderr=point.diagnostics.test_error_stderr,
        posterior_mean_f_error=point.diagnostics.posterior_mean_f_error,
        q_k=point.overlaps["q_k"],
        q_v=point.overlaps["q_v"],
        converged=point.converged,
        iterations=point.diagnostics.iterations,
        q_k_stderr=point.diagnostics.overlaps_stderr["q_k"],
        q_v_stderr=point.diagnostics.overlaps_stderr["q_v"],
    )


def state_evolution_beside(
    config: SLRConfig, settings: AMPSettings, iterations: int
) -> StateEvolution:
    """The state evolution at a GAMP run's point: its fixed point, and with ``settings.history``
    its first ``iterations`` iterates from GAMP's start and damping."""
    from bayes_slr.formulas.replica_bayes import bayes_state_evolution_history
    from bayes_slr.inference.amp import START_OVERLAP

    theory = state_evolution_point(
        config.replace(D=1), settings.alpha, settings.init, settings.mc_samples, settings.se_seed
    )
    if not settings.history:
        return theory
    start_q = 1.0 - START_OVERLAP if settings.init == "informed" else START_OVERLAP
    iterates = bayes_state_evolution_history(
        config.replace(D=1),
        alpha=settings.alpha,
        start=(start_q, start_q),
        iterations=max(iterations, 1),
        damping=settings.damping,
        mc_samples=settings.mc_samples,
        seed=settings.se_seed,
    )
    return dataclasses.replace(theory, iterates=tuple(map(tuple, iterates.tolist())))


def timed_run(
    key: jax.Array,
    data: AMPData,
    config: SLRConfig,
    teacher: Teacher,
    settings: AMPSettings,
    progress: bool,
) -> tuple[AMPResult, float]:
    """GAMP on ``data`` with ``settings`` (:func:`~bayes_slr.inference.amp.run_amp`) and the
    seconds it took, compilation included."""
    import jax

    from bayes_slr.inference.amp import run_amp

    start = time.perf_counter()
    result = jax.block_until_ready(
        run_amp(
            key,
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
    return result, time.perf_counter() - start


def amp_point(
    config: SLRConfig, settings: AMPSettings, seed: int, *, progress: bool = False
) -> AMPRow:
    """Run GAMP on one training set and score it.

    Parameters
    ----------
    config : SLRConfig
        Task; ``config.D`` is the dimension of the run.
    settings : AMPSettings
        The point's ``alpha`` (samples per dimension, ``N = round(alpha D)``) and the algorithm.
    seed : seeds the exact teacher (``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``), the data, the start and
        the test set.
    progress : show a transient progress bar of the GAMP iterations (not part of the point's
        configuration: it changes no number).
    """
    import jax

    from bayes_slr.inference import amp
    from bayes_slr.models.scoring import fresh_sample_scorer
    from bayes_slr.models.simulate import chunk_sequences, draw_teacher

    alpha, N = training_ratio(config, settings.alpha)
    key_teacher, key_data, key_start, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, N, dtype=settings.dtype)
    result, seconds = timed_run(key_start, data, config, teacher, settings, progress)
    del data  # the tokens are not needed for scoring
    iterations = int(result.state.iteration)
    score = fresh_sample_scorer(key_test, config, teacher, settings.N_test, chunk_sequences(config))
    bayes, posterior_mean_f = (
        amp.amp_predictor(config, result.state, own_tilt=own_tilt) for own_tilt in (True, False)
    )
    scores = score(
        lambda X, lengths: {"bayes": bayes(X, lengths), "plain": posterior_mean_f(X, lengths)}
    )
    error, plain = scores["bayes"], scores["plain"]  # one pass over the test set
    final = np.asarray(result.history[iterations])
    theory = (
        state_evolution_beside(config, settings, iterations) if settings.state_evolution else None
    )
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
    settings = AMPSettings(
        alpha=alpha, dtype=dtype, N_test=10_000, state_evolution=False, history=False
    )

    def run() -> tuple[float, float]:
        row = amp_point(config, settings, 0)
        return row.test_error, 4 * row.stderr

    return run
