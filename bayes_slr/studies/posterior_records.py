"""The settings of one posterior, its typed summary (a row of ``posterior`` and of
``posterior-sweep``) and the warnings its numbers call for. Plain records: importable without JAX.

Every error is the excess test error ``E[(y - f(X))^2] - Delta`` (docs/model.md section 2).
"""

from __future__ import annotations

import dataclasses
import math
from typing import Any

from bayes_slr.attention.erm_settings import lam_accepted
from bayes_slr.errors import Accepts, ConfigError, Integer, OrNone, validate_fields
from bayes_slr.memory import check_fits
from bayes_slr.models.data_task import GivenTask, refuse_conflict
from bayes_slr.models.dataset import DataSource
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.numerics.record import Record

RHAT_WARNING = 1.01
"""Warn when the largest ``r_hat`` of the diagnostics table is above this."""
ESS_WARNING = 400.0
"""Warn when the smallest bulk ESS of the diagnostics table is below this."""
IMPORTANCE_ESS_WARNING = 100.0
"""Warn when the 5% quantile over test sequences of the importance ESS is below this many draws."""
START_AGREEMENT_WARNING = 3.0
"""Starts disagree when their errors differ by more than this many combined standard errors."""
OVERLAP_AGREEMENT_WARNING = 4.0
"""Starts disagree when an overlap's means differ by more than this many combined MCSE."""

ERM_ACTIVATIONS = ("softmax", "linear")
"""The activations of the ERM comparison beside the posterior."""
TEST_SET_FRESH = "fresh sequences from the teacher"
TEST_SET_HELD_OUT = "held-out sequences of the data"


@dataclasses.dataclass(frozen=True)
class SamplingSettings(Record):
    """The resolved settings of one posterior: its sampler, its evaluation and its ERM comparison
    (built by the experiments from their options).

    Attributes
    ----------
    sampler : the sampler option (``"auto"`` or a registered name).
    chains, warmup, samples : chains, warm-up steps and kept draws per chain.
    init : ``"random"`` or ``"informed"`` (at the teacher).
    exact_teacher : a teacher with ``|k*|^2 = |v*|^2 = D``, ``k*`` orthogonal to ``v*``.
    check_start : also sample from the other start and compare.
    N_test : fresh test sequences of the teacher (``None`` without a teacher).
    max_draws : draws forming the posterior predictors.
    erm : compare with ERM (softmax, linear) on the same data.
    lam : the ridge of that comparison (a number or ``"auto"``).
    alpha : samples per dimension of the training set, ``N = round(alpha D)`` (given data: its
        ``N / D``); ``None`` where no training set is drawn (re-summarising a posterior file).
    """

    sampler: str
    chains: int
    warmup: int
    samples: int
    init: str
    exact_teacher: bool
    check_start: bool
    N_test: int | None
    max_draws: int
    erm: bool
    lam: float | str
    alpha: float | None = None


@dataclasses.dataclass(frozen=True)
class GivenSampling:
    """The sampling, evaluation and ERM settings of a posterior and its seed (``None``: not
    given), as the options give them or a posterior file fixes them."""

    sampler: str | None = None
    chains: int | None = None
    warmup: int | None = None
    samples: int | None = None
    init: str | None = None
    check_start: bool | None = None
    exact_teacher: bool | None = None
    N_test: int | None = None
    max_draws: int | None = None
    erm: bool | None = None
    lam: float | str | None = None
    seed: int | None = None

    @classmethod
    def of(cls, options: object) -> GivenSampling:
        """The settings ``options`` (an object with these attributes) give."""
        return cls(**{name: getattr(options, name) for name in GIVEN_SAMPLING})

    def over(self, lower: GivenSampling) -> GivenSampling:
        """These settings, each not given taken from ``lower``."""
        return dataclasses.replace(
            self,
            **{
                name: getattr(lower, name) for name in GIVEN_SAMPLING if getattr(self, name) is None
            },
        )

    def kept(self, fixed: GivenSampling, origin: str) -> GivenSampling:
        """The settings ``fixed`` by ``origin`` (a file) over these, refusing a given one that
        differs; one the file does not record (``None``) stays as given."""
        for name in GIVEN_SAMPLING:
            value = getattr(fixed, name)
            if value is not None:
                refuse_conflict(name, getattr(self, name), value, origin)
        return fixed.over(self)

    def settings(self, alpha: float | None = None) -> SamplingSettings:
        """The :class:`SamplingSettings` of these settings (every one filled in) at ``alpha``."""
        return SamplingSettings(
            alpha=alpha,
            **{
                field.name: getattr(self, field.name)
                for field in dataclasses.fields(SamplingSettings)
                if field.name != "alpha"
            },
        )


GIVEN_SAMPLING = tuple(field.name for field in dataclasses.fields(GivenSampling))
SAMPLING_ACCEPTS: dict[str, Accepts] = {
    "seed": Integer(0),
    "N_test": OrNone(Integer(2)),
    "max_draws": Integer(1),
    "lam": lam_accepted,
}
"""The accepted range of the sampling settings besides the sampler's (which
:func:`~bayes_slr.inference.sampler_registry.check_sampling_arguments` checks for the task), once
every one is filled in."""


@dataclasses.dataclass(frozen=True)
class PosteriorRun:
    """Every setting of a posterior as it runs, resolved once from the options of ``posterior``
    or ``posterior-sweep`` (and a file).

    Attributes
    ----------
    task : the task settings (``L`` and ``variable_length`` as given or their defaults, the
        others as the task resolves them).
    config : the task.
    teacher : whether a teacher is known (for the start check and fresh test sets).
    sampling : the sampling, evaluation and ERM settings and the seed (each filled in once
        resolved).
    alpha, holdout, data_record : those of ``posterior`` (``None`` for ``posterior-sweep``).
    """

    task: GivenTask
    config: SLRConfig
    teacher: bool
    sampling: GivenSampling
    alpha: float | None = None
    holdout: float | None = None
    data_record: DataSource | None = None

    def filled_sampling(self, defaults: GivenSampling) -> GivenSampling:
        """The sampling and evaluation settings of this run, each not given taken from
        ``defaults`` and checked for its task (without a teacher: no fresh test sets)."""
        from bayes_slr.inference.sampler_registry import check_sampling_arguments

        if not self.teacher:
            defaults = dataclasses.replace(defaults, N_test=None)
        sampling = self.sampling.over(defaults)
        validate_fields(sampling, SAMPLING_ACCEPTS)
        check_sampling_arguments(
            self.config,
            **{name: getattr(sampling, name) for name in SAMPLER_ARGUMENTS},
        )
        if sampling.check_start and sampling.chains < 2:
            raise ConfigError(
                "chains must be >= 2 with `check_start` (r_hat needs two chains per start), "
                f"got {sampling.chains}"
            )
        if sampling.exact_teacher and self.config.D < 2 * self.config.heads:
            raise ConfigError(
                f"D must be an integer >= {2 * self.config.heads}, got {self.config.D}"
            )
        return sampling


SAMPLER_ARGUMENTS = ("sampler", "chains", "warmup", "samples", "init")
"""The settings the sampler registry checks for a task."""

TOKEN_COPIES = 3
"""Copies of the training tokens a posterior holds at its peak (drawn, on the devices, in its
tree)."""


def check_memory(config: SLRConfig, alpha: float, settings: SamplingSettings) -> None:
    """Refuse, before anything is allocated, a posterior whose training set and draws would not
    fit in memory (:func:`~bayes_slr.memory.check_fits`)."""
    N = training_size(alpha, config.D)
    tokens = N * config.Lbar * config.D
    starts = 2 if settings.check_start else 1
    coordinates = 2 * config.heads * config.D  # k and v of every head
    draws = starts * settings.chains * (settings.warmup + settings.samples) * coordinates
    check_fits(
        f"D = {config.D}, alpha = {alpha:g}",
        8 * (TOKEN_COPIES * tokens + draws),
        f"N L D = {tokens:.3g} token entries and {draws:.3g} drawn coordinates in float64",
        "use a smaller D, alpha, chains or samples",
        ask_device=False,
    )


@dataclasses.dataclass(frozen=True)
class Estimate(Record):
    """A Monte Carlo estimate and its standard error."""

    value: float
    stderr: float


@dataclasses.dataclass(frozen=True)
class PredictorError(Record):
    """The excess test error of a predictor (or a paired difference of two) with its standard
    error; for the posterior predictors ``stderr`` combines the test-set part ``stderr_test`` and
    the draw-to-draw part ``stderr_draws`` (a jackknife over draw groups)."""

    value: float
    stderr: float
    stderr_test: float | None = None
    stderr_draws: float | None = None


@dataclasses.dataclass(frozen=True)
class ImportanceESS(Record):
    """Effective number of draws of the weighted predictor per test sequence: median, 5% quantile,
    and the number of draws used."""

    median: float
    q05: float
    draws: int


@dataclasses.dataclass(frozen=True)
class Diagnostic(Record):
    """ArviZ's summary of one quantity over the draws (``r_hat`` is NaN with one chain)."""

    mean: float
    sd: float
    mcse_mean: float
    r_hat: float
    ess_bulk: float
    ess_tail: float


@dataclasses.dataclass(frozen=True)
class StartCheck(Record):
    """Chains from the other start (informed when the main chains start at random) on the same
    data, against the main chains.

    Attributes
    ----------
    init : the other start.
    bayes_error, posterior_mean_f_error : the two predictors' errors from its draws.
    overlaps : its posterior means of ``m_k, m_v, q_k, q_v``.
    overlap_difference_in_mcse : (main - other) / combined MCSE, per overlap.
    rhat_max : its own largest ``r_hat``.
    agreement : (main - other Bayes-optimal error) / combined standard error.
    multimodal : the errors differ by more than :data:`START_AGREEMENT_WARNING` standard errors
        or an overlap by more than :data:`OVERLAP_AGREEMENT_WARNING` MCSE.
    """

    init: str
    bayes_error: PredictorError
    posterior_mean_f_error: PredictorError
    overlaps: dict[str, float]
    overlap_difference_in_mcse: dict[str, float]
    rhat_max: float
    agreement: float
    multimodal: bool


@dataclasses.dataclass(frozen=True)
class ERMComparison(Record):
    """ERM of one activation on the posterior's training set (as ``gap`` trains it), scored on
    the posterior's kind of test set.

    Attributes
    ----------
    test_error, stderr : its excess test error.
    converged : the selected start reached the gradient tolerance.
    lam : the ridge (given, or chosen by validation).
    restarts_agree : the random starts' test errors agree (``None`` with one start).
    notes : what to read with the number (docs/erm.md).
    """

    test_error: float
    stderr: float
    converged: bool
    lam: float
    restarts_agree: bool | None
    notes: tuple[str, ...] = ()

    @classmethod
    def of(cls, summary: Any) -> ERMComparison:
        """The row of an ERM study on one training set (an
        :class:`~bayes_slr.studies.erm.ERMSummary` of one seed)."""
        selected = summary.per_seed[0]
        return cls(
            test_error=summary.test_error,
            stderr=summary.stderr,
            converged=selected.converged,
            lam=selected.lam,
            restarts_agree=summary.restarts_agree,
            notes=tuple(summary.notes),
        )


@dataclasses.dataclass(frozen=True)
class DataRun(Record):
    """A posterior of a user's data file: the file and how its sequences were used.

    Attributes
    ----------
    source : the file and where each setting came from.
    n_train : sequences the posterior conditions on.
    n_held_out : sequences held out as the test set (0 with a teacher).
    holdout : the share held out (``None`` with a teacher).
    """

    source: DataSource
    n_train: int
    n_held_out: int
    holdout: float | None


@dataclasses.dataclass(frozen=True)
class PosteriorSummary(Record):
    """Everything reported about one posterior.

    Attributes
    ----------
    alpha, N : training sequences per dimension, and their number.
    sampler : the kernel that ran (``auto`` resolved).
    bayes_error : the Bayes-optimal predictor, draws weighted per test sequence by ``p(X | k)``
        (docs/model.md section 5), unbiased (disjoint draw groups).
    posterior_mean_f_error : the plain average of ``f`` over the draws (the training-set
        posterior mean; equal to ``bayes_error`` for max-SLR, worse for spiked).
    importance_ess : effective draws of the weighted predictor.
    n_test, test_set : the number and kind of test sequences (fresh from the teacher, or held
        out of the data).
    oracle_error : the known-direction error of this teacher (``None`` without a teacher).
    population_bayes_error : ``alpha -> inf``, ``D -> inf`` (docs/model.md section 2).
    prior_predictive_error : the zero predictor (the posterior mean at ``alpha -> 0``).
    paired_differences : differences of two predictors' errors on the same test sequences
        (``"bayes - oracle"``, ``"plain - bayes"``, ``"bayes - erm_softmax"``, ...:
        :data:`~bayes_slr.studies.posterior.PAIRED_DIFFERENCES`), each the mean of the
        per-sequence difference with its standard error; ``None`` in records written before a
        teacher's were stored.
    rhat_max, ess_bulk_min, ess_tail_min : worst diagnostics over :attr:`diagnostics`.
    divergences : divergent transitions (NUTS); ``None`` for samplers without the notion
        (Gibbs, Gibbs-HMC).
    diagnostics : ArviZ's summary of ``m_k, m_v, q_k, q_v`` (``q_k, q_v`` without a teacher) and
        ``k[0..2]``, ``v[0..2]``.
    overlaps : posterior means of ``m_k, m_v, q_k, q_v`` (``None`` without a teacher).
    start_check : the other start's chains (``None`` when not run).
    erm : ERM per activation (``None`` without the comparison).
    data : the data file (``None`` for simulated data).
    notes : lines to read with the numbers.
    warnings : reasons not to read the numbers as they stand (:func:`posterior_warnings`).
    heads, presence : the task's ``H`` and ``rho`` (docs/multihead.md section 8; ``1, 1.0`` for
        one-head SLR). With several heads :attr:`diagnostics` and :attr:`overlaps` are the
        matched overlaps (each draw's heads matched to the teacher's by the best permutation,
        then the mean over heads: label-free), the oracle is the teacher's known-directions
        predictor (the heads' joint states summed out) and ``population_bayes_error`` the
        multi-head Bayes error (``alpha -> inf``, any ``D`` for an exact teacher).
    """

    alpha: float
    N: int
    sampler: str
    bayes_error: PredictorError
    posterior_mean_f_error: PredictorError
    importance_ess: ImportanceESS
    n_test: int
    test_set: str
    oracle_error: Estimate | None
    population_bayes_error: float
    prior_predictive_error: Estimate
    paired_differences: dict[str, PredictorError] | None
    rhat_max: float
    ess_bulk_min: float
    ess_tail_min: float
    divergences: int | None
    diagnostics: dict[str, Diagnostic]
    overlaps: dict[str, float] | None
    start_check: StartCheck | None
    erm: dict[str, ERMComparison] | None
    data: DataRun | None
    notes: tuple[str, ...] = ()
    warnings: tuple[str, ...] = ()
    heads: int = 1
    presence: float = 1.0

    @property
    def converged(self) -> bool:
        """Whether the chains pass every convergence check (``r_hat``, bulk ESS, divergences,
        the start check); the importance ESS of the predictor is not a convergence check."""
        return not convergence_warnings(
            self.rhat_max, self.ess_bulk_min, self.divergences, self.start_check
        )

    def __repr__(self) -> str:
        return summary_repr(self)


def summary_repr(summary: Record) -> str:
    """A posterior summary in one line: the run, the Bayes error with its standard error, the
    worst diagnostics, how many notes and warnings (every field: ``to_dict()``)."""
    error = summary.bayes_error
    return (
        f"{type(summary).__name__}(alpha={summary.alpha:g}, sampler={summary.sampler}, "
        f"n_test={summary.n_test}, bayes_error={error.value:.4g} +- {error.stderr:.2g}, "
        f"rhat_max={summary.rhat_max:.3g}, ess_bulk_min={summary.ess_bulk_min:.0f}, "
        f"{len(summary.notes)} notes, {len(summary.warnings)} warnings; every field: .to_dict())"
    )


def convergence_warnings(
    rhat_max: float, ess_bulk_min: float, divergences: int | None, start_check: StartCheck | None
) -> list[str]:
    """One line per reason to doubt that the chains sampled the posterior (empty when none)."""
    out = []
    if not math.isfinite(rhat_max) or rhat_max > RHAT_WARNING:
        out.append(
            f"r_hat max {rhat_max:.3f} > {RHAT_WARNING}: chains have not converged "
            "(or one chain only); the errors are not trustworthy"
        )
    if not ess_bulk_min >= ESS_WARNING:  # NaN (a chain that never moved) warns too
        out.append(f"ESS bulk min {ess_bulk_min:.0f} < {ESS_WARNING:.0f}: too few effective draws")
    if divergences:
        out.append(f"{divergences} divergent transitions: the sampler missed part of the posterior")
    if start_check is not None and start_check.multimodal:
        name, z = max(start_check.overlap_difference_in_mcse.items(), key=lambda kv: abs(kv[1]))
        out.append(
            f"starts disagree (errors differ by {start_check.agreement:+.1f} SE, {name} by "
            f"{z:+.1f} MCSE): multimodal posterior or chains stuck; the errors are not trustworthy"
        )
    return out


def posterior_warnings(
    rhat_max: float,
    ess_bulk_min: float,
    divergences: int | None,
    start_check: StartCheck | None,
    importance_ess: ImportanceESS,
) -> list[str]:
    """One line per reason not to read a posterior's numbers as they stand (empty when none):
    :func:`convergence_warnings` and a low importance ESS of the weighted predictor."""
    out = convergence_warnings(rhat_max, ess_bulk_min, divergences, start_check)
    if importance_ess.q05 < IMPORTANCE_ESS_WARNING:
        out.append(
            f"importance ESS 5% quantile {importance_ess.q05:.0f} < {IMPORTANCE_ESS_WARNING:.0f} "
            "draws: the Bayes-optimal predictor rests on few draws for some test sequences"
        )
    return out
