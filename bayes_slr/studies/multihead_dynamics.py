"""When ``H_s`` student heads specialise under online SGD, against ``D`` (docs/multihead.md,
"Dynamics").

Each run (:func:`~bayes_slr.attention.multihead_sgd.train_heads_sgd`: its own teacher, small random
start and stream of batches) is read through the cosines of the student keys with the teacher
keys: the time each cosine first reaches the level (0.5: from the small start every head first
turns towards the sum of the teacher keys, whose cosine with each is ``1/sqrt(H)``, so this
marks leaving the start), the teacher head each student head ends matched with, and the time
each head specialises (its cosine with that teacher head exceeds its cosine with every other by
the level). The plateau is the time between leaving the start and the last head's
specialisation; a run whose heads are not all specialised at ``t_max`` has stalled.
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
from scipy.optimize import linear_sum_assignment

from bayes_slr.attention.multihead_sgd import HeadsSGDRun, train_heads_sgd
from bayes_slr.attention.multihead_trajectory import HeadsTrajectory, as_matrix
from bayes_slr.attention.trajectory import first_crossing
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.multihead_dynamics_records import (
    SpecialisationRun,
    SpecialisationStudy,
    SpecialisationSummary,
)


def matched_heads(trajectory: HeadsTrajectory) -> tuple[int | None, ...]:
    """Per student head, the teacher head it ends matched with: the assignment of distinct
    teacher heads maximising the final ``|cos_k| + |cos_v|`` (``None`` for an extra head)."""
    last = trajectory.last
    score = np.abs(last.cosines("k")) + np.abs(last.cosines("v"))
    permutation: list[int | None] = [None] * score.shape[0]
    for row, col in zip(*linear_sum_assignment(score, maximize=True), strict=True):
        permutation[int(row)] = int(col)
    return tuple(permutation)


def specialisation_gaps(
    trajectory: HeadsTrajectory, permutation: Sequence[int | None]
) -> np.ndarray:
    """``(T, H_s)``: each matched head's key cosine with its teacher head minus its largest key
    cosine with the other teacher heads (the cosine itself with one teacher head; ``nan`` for an
    extra head)."""
    cosines = trajectory.cosines("k")
    gaps = np.full(cosines.shape[:2], np.nan)
    for j, teacher in enumerate(permutation):
        if teacher is None:
            continue
        others = np.delete(cosines[:, j, :], teacher, axis=1)
        rival = others.max(axis=1) if others.shape[1] else 0.0
        gaps[:, j] = cosines[:, j, teacher] - rival
    return gaps


def read_specialisation(
    trajectory: HeadsTrajectory, D: int, seed: int, level: float = 0.5
) -> SpecialisationRun:
    """The specialisation record of one run's trajectory (module docstring)."""
    crossings = trajectory.crossing_times(level, "k")
    permutation = matched_heads(trajectory)
    gaps = specialisation_gaps(trajectory, permutation)
    times = trajectory.times()
    matched = [j for j, teacher in enumerate(permutation) if teacher is not None]
    head_times = tuple(
        first_crossing(times, gaps[:, j], level) if j in matched else math.nan
        for j in range(gaps.shape[1])
    )
    specialised = bool(np.all(gaps[-1, matched] >= level))
    end = max(head_times[j] for j in matched) if specialised else math.nan
    escape = float(np.nanmin(crossings)) if np.any(np.isfinite(crossings)) else math.nan
    return SpecialisationRun(
        D=D,
        seed=seed,
        crossing_times=as_matrix(crossings),
        escape_time=escape,
        permutation=permutation,
        head_times=head_times,
        specialised=specialised,
        specialisation_time=end,
        plateau=end - escape,
        final_error=trajectory.last.test_error,
        final_stderr=trajectory.last.test_stderr,
        cross_overlap=trajectory.last.largest_cross_overlap,
        trajectory=trajectory,
    )


def _mean(values: Sequence[float]) -> tuple[float, float]:
    """Mean and standard error of the finite ``values`` (``nan`` error with fewer than two)."""
    finite = np.asarray([v for v in values if math.isfinite(v)], dtype=float)
    if finite.size == 0:
        return math.nan, math.nan
    stderr = float(np.std(finite, ddof=1) / math.sqrt(finite.size)) if finite.size > 1 else math.nan
    return float(np.mean(finite)), stderr


def summarise(D: int, runs: Sequence[SpecialisationRun]) -> SpecialisationSummary:
    """The summary of the runs of one dimension (:class:`SpecialisationSummary`)."""
    done = [run for run in runs if run.specialised]
    return SpecialisationSummary(
        D,
        len(runs),
        len(done),
        *_mean([run.escape_time for run in runs]),
        *_mean([run.specialisation_time for run in done]),
        *_mean([run.plateau for run in done]),
        *_mean([run.final_error for run in runs]),
    )


def specialisation_study(
    config: SLRConfig,
    activation: str = "softmax",
    student_heads: int | None = None,
    *,
    sizes: Sequence[int] = (50, 100, 200),
    seeds: int = 8,
    eta: float = 1.0,
    batch: int = 32,
    t_max: float = 150.0,
    level: float = 0.5,
    log_points: int = 96,
    N_test: int = 4000,
) -> SpecialisationStudy:
    """Online SGD of ``H_s`` heads from small random starts at several ``D``, read for
    specialisation (module docstring).

    Parameters
    ----------
    config : SLRConfig
        The task (``heads``, ``presence``, token law, ``Delta``); its ``D`` is replaced by each of
        ``sizes``.
    activation : str
        Any activation (registered, or ``softmax1``, ``bayes_softmax``).
    student_heads : int, optional
        ``H_s >= 1``; the teacher's ``H`` by default.
    sizes : dimensions, each ``>= 2 H`` (exact teacher).
    seeds : runs per dimension (seeds ``0 .. seeds - 1``).
    eta, batch : the step per sequence and the batch of online SGD (time ``eta / D`` per step).
    t_max : the time every run ends at (``round(t_max D / eta)`` steps).
    level : the cosine level, in ``(0, 1)``.
    log_points : logged steps per run (the resolution of the times read).
    N_test : fresh test sequences per run.

    Returns
    -------
    SpecialisationStudy
        A summary per dimension and every run.
    """
    if not isinstance(config, SLRConfig):
        raise ConfigError(f"config must be an SLRConfig, got {type(config).__name__}")
    heads = config.heads if student_heads is None else check_int("student_heads", student_heads, 1)
    level = check_real("level", level, minimum=0.0, strict=True)
    if level >= 1.0:
        raise ConfigError(f"level must be in (0, 1), got {level!r}")
    eta = check_real("eta", eta, minimum=0.0, strict=True)
    t_max = check_real("t_max", t_max, minimum=0.0, strict=True)
    runs, summaries = [], []
    for D in sizes:
        D = check_int("D", D, 2 * config.heads)
        per_seed = []
        for seed in range(check_int("seeds", seeds, 1)):
            run = HeadsSGDRun(
                config.replace(D=D),
                activation,
                heads,
                eta,
                max(1, round(t_max * D / eta)),
                batch,
                seed,
                log_points=log_points,
                N_test=N_test,
            )
            per_seed.append(read_specialisation(train_heads_sgd(run), D, seed, level))
        runs.extend(per_seed)
        summaries.append(summarise(D, per_seed))
    return SpecialisationStudy(
        activation, heads, eta, batch, t_max, level, tuple(summaries), tuple(runs)
    )
