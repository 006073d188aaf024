"""Finite-``D`` posterior errors against the state evolution as ``D`` grows
(``benchmarks/posterior_state_evolution.py``, docs/posterior.md "Against the state evolution").

:func:`teacher_errors` samples the posterior of one teacher and scores, on one fresh test set,
the Bayes-optimal (weighted) and plain predictors and the teacher's own known-direction (oracle)
predictor, with the paired difference ``bayes - oracle``; :func:`amp_teacher_errors` does the
same with GAMP's posterior (its Bayes-optimal and training-set posterior-mean predictors) in
place of the sampler's, at the sizes a sampler cannot reach. :func:`state_evolution_gap`
averages them over teachers at each ``D`` and fits the gap to the theory against ``1/D``
(:func:`fit_against_inverse_D`):

- ``bayes`` and ``plain`` against the state evolution's ``test_error`` and
  ``posterior_mean_f_error``;
- ``bayes - oracle`` against the state evolution minus the population Bayes error (exact
  quadrature). Subtracting each teacher's own oracle on the same test sequences removes the
  teacher's luck (a prior-drawn teacher's norms move its oracle by ``O(1/sqrt(D))``) and most of
  the test-set noise.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import jax
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.inference.amp import amp_data, amp_predictor, check_amp_config
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import scored_posterior_errors
from bayes_slr.inference.samplers import sample_posterior
from bayes_slr.models.scoring import difference_name, fresh_sample_scorer
from bayes_slr.models.simulate import chunk_sequences, draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.numerics.record import Record
from bayes_slr.studies.amp import timed_run
from bayes_slr.studies.amp_records import AMPSettings, check_memory

ESTIMATORS = ("bayes", "plain", "bayes - oracle")
"""What is compared with the theory at each ``D`` (module docstring)."""


@dataclasses.dataclass(frozen=True)
class ScalingSampling(Record):
    """How each teacher's posterior is sampled and scored (``sampler="auto"``, random starts).

    With GAMP in place of the sampler (:func:`amp_teacher_errors`) only ``N_test`` and
    ``exact_teacher`` are read.
    """

    chains: int = 4
    warmup: int = 300
    samples: int = 300
    N_test: int = 10_000
    max_draws: int = 200
    exact_teacher: bool = True


@dataclasses.dataclass(frozen=True)
class ScalingSettings(Record):
    """What :func:`state_evolution_gap` runs: ``teachers`` teachers at each ``D`` of ``sizes`` at
    ``alpha``, each posterior sampled and scored as ``sampling`` says (with ``amp``, GAMP's
    posterior in place of the sampler's), against the theory from ``theory_samples`` channel
    draws for each of ``theory_seeds`` seeds (:func:`theory_targets`)."""

    alpha: float
    sizes: tuple[int, ...]
    teachers: int
    sampling: ScalingSampling = dataclasses.field(default_factory=ScalingSampling)
    theory_samples: int = 16384
    theory_seeds: int = 4
    amp: AMPSettings | None = None


@dataclasses.dataclass(frozen=True)
class TeacherErrors(Record):
    """One teacher's posterior, scored on one fresh test set of that teacher.

    Attributes
    ----------
    seed : seeds the teacher, the training set, the chains and the test set.
    bayes, plain : excess errors of the weighted and plain posterior predictors.
    oracle : of the teacher's known-direction predictor, on the same sequences.
    bayes_minus_oracle, bayes_minus_oracle_stderr : their paired difference and its standard
        error (test set and draws).
    converged : for GAMP, whether it reached its tolerance (a sampler's teacher: always ``True``;
        its chains are judged by the posterior's diagnostics, not here).
    """

    seed: int
    bayes: float
    plain: float
    oracle: float
    bayes_minus_oracle: float
    bayes_minus_oracle_stderr: float
    converged: bool = True

    def value(self, estimator: str) -> float:
        """The error of ``estimator`` (one of :data:`ESTIMATORS`)."""
        return (
            self.bayes_minus_oracle if estimator == "bayes - oracle" else getattr(self, estimator)
        )


@dataclasses.dataclass(frozen=True)
class GapAtD(Record):
    """The mean over teachers of one estimator at one ``D``, against its theory."""

    D: int
    teachers: int
    estimator: str
    measured: float
    theory: float
    gap: float
    stderr: float


@dataclasses.dataclass(frozen=True)
class InverseDFit(Record):
    """``gap = intercept + slope / D`` by weighted least squares, with standard errors."""

    intercept: float
    intercept_stderr: float
    slope: float
    slope_stderr: float


@dataclasses.dataclass(frozen=True)
class ScalingStudy(Record):
    """Posterior errors against the state evolution along ``D`` at one ``alpha``; ``amp``: the
    GAMP settings when GAMP's posterior replaced the sampler's (``None``: the sampler)."""

    config: SLRConfig
    alpha: float
    sampling: ScalingSampling
    teachers: dict[int, tuple[TeacherErrors, ...]]
    rows: tuple[GapAtD, ...]
    fits: dict[str, InverseDFit]
    amp: AMPSettings | None = None


def teacher_errors(
    config: SLRConfig, alpha: float, seed: int, sampling: ScalingSampling
) -> TeacherErrors:
    """One teacher (prior draw, or exact with ``sampling.exact_teacher``), its training set at
    ``alpha`` and posterior, scored on ``sampling.N_test`` fresh sequences of the teacher."""
    key_teacher, key_data, key_sampler, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=sampling.exact_teacher)
    batch = simulate(key_data, config, teacher, training_size(alpha, config.D))
    draws = sample_posterior(
        key_sampler,
        config,
        batch,
        chains=sampling.chains,
        warmup=sampling.warmup,
        samples=sampling.samples,
    )
    score = fresh_sample_scorer(key_test, config, teacher, sampling.N_test, 10_000)
    pair = ("bayes", "oracle")
    errors = scored_posterior_errors(
        score,
        config,
        draws.k,
        draws.v,
        max_draws=sampling.max_draws,
        others={"oracle": known_directions_predictor(config, teacher)},
        pairs=(pair,),
    )
    difference = errors.others[difference_name(*pair)]
    return TeacherErrors(
        seed=seed,
        bayes=errors.bayes.value,
        plain=errors.plain.value,
        oracle=errors.others["oracle"].value,
        bayes_minus_oracle=difference.value,
        bayes_minus_oracle_stderr=difference.stderr,
    )


def amp_teacher_errors(
    config: SLRConfig, alpha: float, seed: int, sampling: ScalingSampling, amp: AMPSettings
) -> TeacherErrors:
    """:func:`teacher_errors` with GAMP (random start, ``amp``'s algorithm settings and dtype) in
    place of the sampler: ``bayes`` is GAMP's Bayes-optimal predictor, ``plain`` its training-set
    posterior mean of ``f`` (what a sampler's plain average estimates), both scored with the
    teacher's oracle on ``sampling.N_test`` fresh sequences of the teacher."""
    config = check_amp_config(config)
    check_memory(config, alpha, amp)
    key_teacher, key_data, key_start, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=sampling.exact_teacher)
    data = amp_data(key_data, config, teacher, training_size(alpha, config.D), dtype=amp.dtype)
    result, _ = timed_run(key_start, data, config, teacher, amp, progress=False)
    del data  # the tokens are not needed for scoring
    predictors = {
        "bayes": amp_predictor(config, result.state),
        "plain": amp_predictor(config, result.state, own_tilt=False),
        "oracle": known_directions_predictor(config, teacher),
    }
    score = fresh_sample_scorer(key_test, config, teacher, sampling.N_test, chunk_sequences(config))
    pair = ("bayes", "oracle")
    errors = score(
        lambda X, lengths: {name: predict(X, lengths) for name, predict in predictors.items()},
        pairs=(pair,),
    )
    difference = errors[difference_name(*pair)]
    return TeacherErrors(
        seed=seed,
        bayes=errors["bayes"].value,
        plain=errors["plain"].value,
        oracle=errors["oracle"].value,
        bayes_minus_oracle=difference.value,
        bayes_minus_oracle_stderr=difference.stderr,
        converged=bool(result.converged),
    )


def fit_against_inverse_D(
    sizes: Sequence[int], gaps: Sequence[float], stderrs: Sequence[float]
) -> InverseDFit:
    """Weighted least squares ``gap = a + b / D``; ``a`` is the residual at ``D -> inf``.

    The standard errors come from the stated standard errors of the gaps; with two sizes the fit
    is exact and the errors are propagated the same way.
    """
    D = np.asarray(sizes, float)
    design = np.stack([np.ones_like(D), 1.0 / D], axis=1)
    weights = 1.0 / np.asarray(stderrs, float) ** 2
    covariance = np.linalg.inv(design.T @ (weights[:, None] * design))
    a, b = covariance @ design.T @ (weights * np.asarray(gaps, float))
    return InverseDFit(
        intercept=float(a),
        intercept_stderr=float(np.sqrt(covariance[0, 0])),
        slope=float(b),
        slope_stderr=float(np.sqrt(covariance[1, 1])),
    )


def theory_targets(
    config: SLRConfig, alpha: float, samples: int, seeds: int
) -> dict[str, tuple[float, float]]:
    """Each estimator's ``D -> inf`` value and its Monte Carlo standard error: the state
    evolution's errors (mean over ``seeds`` sets of ``samples`` channel draws; a quadrature
    channel gives the same value at every seed and a standard error 0) and, for
    ``bayes - oracle``, the state evolution minus the population Bayes error."""
    from bayes_slr.formulas.bayes import bayes_error_exact
    from bayes_slr.formulas.replica_bayes import bayes_replica_point

    points = [
        bayes_replica_point(config, alpha=alpha, mc_samples=samples, seed=seed)
        for seed in range(seeds)
    ]
    values = {
        "bayes": [p.test_error for p in points],
        "plain": [p.diagnostics.posterior_mean_f_error for p in points],
    }
    population = bayes_error_exact(config).value
    values["bayes - oracle"] = [v - population for v in values["bayes"]]
    return {
        name: (float(np.mean(v)), float(np.std(v, ddof=1) / np.sqrt(len(v))) if seeds > 1 else 0.0)
        for name, v in values.items()
    }


def state_evolution_gap(config: SLRConfig, settings: ScalingSettings, seed: int) -> ScalingStudy:
    """Sampler errors minus the theory's, averaged over ``settings.teachers`` teachers (seeds
    ``seed``, ``seed + 1``, ...: the same teachers' seeds at every ``D``) at each ``D`` of
    ``settings.sizes``, fitted against ``1/D`` (with two sizes or more). Standard errors: over
    teachers, combined with the theory's own (:func:`theory_targets`). With ``settings.amp``,
    GAMP's posterior replaces the sampler's (:func:`amp_teacher_errors`)."""
    alpha, sampling, amp = settings.alpha, settings.sampling, settings.amp
    theory = theory_targets(config, alpha, settings.theory_samples, settings.theory_seeds)

    def errors_of(D: int, teacher_seed: int) -> TeacherErrors:
        task = config.replace(D=D)
        if amp is None:
            return teacher_errors(task, alpha, teacher_seed, sampling)
        return amp_teacher_errors(task, alpha, teacher_seed, sampling, amp)

    measured = {
        D: tuple(errors_of(D, seed + i) for i in range(settings.teachers)) for D in settings.sizes
    }
    return _study(config, alpha, sampling, measured, theory, amp)


def merge_studies(
    studies: Sequence[ScalingStudy], *, theory_samples: int = 16384, theory_seeds: int = 4
) -> ScalingStudy:
    """One study from several of the same task, ``alpha`` and settings run apart (other sizes,
    or other teachers at the same size: their seeds must differ): the teachers of each ``D``
    pooled, the rows and fits recomputed (the theory anew, from ``theory_samples`` and
    ``theory_seeds``)."""
    first = studies[0]
    for other in studies[1:]:
        if (other.config.replace(D=first.config.D), other.alpha, other.sampling, other.amp) != (
            first.config,
            first.alpha,
            first.sampling,
            first.amp,
        ):
            raise ConfigError("studies to merge must share the task, alpha and settings")
    measured: dict[int, tuple[TeacherErrors, ...]] = {}
    for study in studies:
        for D, errors in study.teachers.items():
            measured[D] = measured.get(D, ()) + tuple(errors)
    for D, errors in measured.items():
        if len({e.seed for e in errors}) != len(errors):
            raise ConfigError(f"studies to merge repeat a teacher's seed at D = {D}")
    theory = theory_targets(first.config, first.alpha, theory_samples, theory_seeds)
    return _study(
        first.config, first.alpha, first.sampling, dict(sorted(measured.items())), theory, first.amp
    )


def _study(
    config: SLRConfig,
    alpha: float,
    sampling: ScalingSampling,
    measured: dict[int, tuple[TeacherErrors, ...]],
    theory: dict[str, tuple[float, float]],
    amp: AMPSettings | None,
) -> ScalingStudy:
    """The rows and fits of the teachers ``measured`` at each ``D``."""
    sizes = list(measured)
    rows = tuple(
        _gap_at_D(D, estimator, measured[D], theory[estimator])
        for D in sizes
        for estimator in ESTIMATORS
    )
    fits = {
        estimator: fit_against_inverse_D(
            [r.D for r in rows if r.estimator == estimator],
            [r.gap for r in rows if r.estimator == estimator],
            [r.stderr for r in rows if r.estimator == estimator],
        )
        for estimator in ESTIMATORS
        if len(sizes) >= 2
    }
    return ScalingStudy(config, alpha, sampling, measured, rows, fits, amp)


def _gap_at_D(
    D: int, estimator: str, errors: Sequence[TeacherErrors], theory: tuple[float, float]
) -> GapAtD:
    values = np.array([e.value(estimator) for e in errors])
    over_teachers = values.std(ddof=1) / np.sqrt(values.size)
    return GapAtD(
        D=D,
        teachers=values.size,
        estimator=estimator,
        measured=float(values.mean()),
        theory=theory[0],
        gap=float(values.mean()) - theory[0],
        stderr=float(np.hypot(over_teachers, theory[1])),
    )
