"""The options of ``posterior`` and ``posterior-sweep``: :class:`SamplingOptions` (the settings
both share) and :class:`PosteriorOptions`, below the experiment (:mod:`bayes_slr.experiments.
posterior`) and the computation of a point (:mod:`bayes_slr.experiments._posterior_point`), which
both read them.

Settings a file can fix default to ``None`` ("not given") and are resolved once, into a
:class:`PosteriorRun`: from the file (a given value that contradicts it is refused, naming both),
else from the defaults below; the resolved options are what the result reports. It imports
without JAX.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from bayes_slr.attention.erm_settings import LAM_AUTO
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.base import (
    Options,
    option,
)
from bayes_slr.experiments.task import (
    DEFAULT_D,
    DEFAULT_DELTA,
    DEFAULT_L,
    DEFAULT_SEED,
    DEFAULT_VARIANT,
    GIVEN,
    lam_option,
    options_task,
    seed_option,
    task_option,
)
from bayes_slr.inference.sampler_registry import sampler_help
from bayes_slr.models.data_task import GivenTask, data_task
from bayes_slr.models.dataset import DataSource, holdout_accepted
from bayes_slr.models.spec import INITS, SLRConfig, training_size
from bayes_slr.numerics.record import JsonObject
from bayes_slr.studies.posterior_records import (
    GIVEN_SAMPLING,
    GivenSampling,
    PosteriorRun,
    SamplingSettings,
    check_memory,
)

DEFAULT_ALPHA = 4.0
SAMPLING_DEFAULTS = GivenSampling(
    sampler="auto",
    chains=4,
    warmup=1_000,
    samples=2_000,
    init="random",
    check_start=True,
    exact_teacher=False,
    N_test=100_000,
    max_draws=1_000,
    erm=True,
    lam=LAM_AUTO,
    seed=DEFAULT_SEED,
)
"""The defaults of the sampling and evaluation settings (docs/posterior.md says why), one head or
several: the start check and the ERM comparison cost the same share of the posterior with heads
as without (docs/multihead.md section 8)."""


def values_of(record: object, names: tuple[str, ...]) -> dict[str, object]:
    """``{name: value}`` of the fields ``names`` of ``record`` (the options a resolution fills)."""
    return {name: getattr(record, name) for name in names}


TASK_SETTINGS = ("variant", "nu", "L", "variable_length", "Delta", "D")
FILE_HELP = (
    "With --data or --from, every setting not given is the file's, and one given that "
    "contradicts the file is refused."
)


@dataclasses.dataclass(frozen=True)
class SamplingOptions(Options):
    """The settings of a posterior shared by ``posterior`` and ``posterior-sweep``: the task, the
    sampler, the evaluation and the ERM comparison.

    ``None`` means "not given": :meth:`resolution` resolves every setting once (from a file,
    else from the defaults) into a :class:`PosteriorRun`, :meth:`resolved` holds it, and
    :meth:`task` returns the resolved task.
    """

    variant: str | None = task_option("variant", GIVEN)
    nu: float | None = task_option("nu", GIVEN)
    L: int | None = task_option("L", GIVEN)
    variable_length: bool | None = task_option("variable_length", GIVEN)
    Delta: float | None = task_option("Delta", GIVEN)
    D: int | None = task_option("D", GIVEN)
    heads: int = task_option("heads")
    presence: float = task_option("presence")
    sampler: str | None = option(
        None,
        lambda: f"posterior sampler: {sampler_help()}",
        signature_default=SAMPLING_DEFAULTS.sampler,
    )
    chains: int | None = option(
        None,
        "chains, >= 1 (>= 2 with --check-start)",
        signature_default=SAMPLING_DEFAULTS.chains,
    )
    warmup: int | None = option(
        None, "warm-up steps per chain, >= 0", signature_default=SAMPLING_DEFAULTS.warmup
    )
    samples: int | None = option(
        None, "kept draws per chain, >= 1", signature_default=SAMPLING_DEFAULTS.samples
    )
    init: str | None = option(
        None,
        "start of the chains: random (each its own prior draw) or informed (the teacher)",
        choices=INITS,
        signature_default=SAMPLING_DEFAULTS.init,
    )
    check_start: bool | None = option(
        None,
        "also run chains from the other start (informed if --init random) on the same data and "
        "report whether both find the same posterior (start_agreement, multimodal); needs the "
        "teacher; doubles the sampling time",
        signature_default=SAMPLING_DEFAULTS.check_start,
    )
    exact_teacher: bool | None = option(
        None,
        "teacher with |k*|^2 = |v*|^2 = D, k* orthogonal to v*",
        signature_default=SAMPLING_DEFAULTS.exact_teacher,
    )
    N_test: int | None = option(
        None,
        "fresh test sequences from the teacher, >= 2",
        signature_default=SAMPLING_DEFAULTS.N_test,
    )
    max_draws: int | None = option(
        None,
        "draws (evenly thinned, split in 4 groups for the unbiased error) forming the posterior "
        "predictors, >= 1",
        signature_default=SAMPLING_DEFAULTS.max_draws,
    )
    erm: bool | None = option(
        None,
        "compare with ERM (softmax, linear) trained on the same data as gap trains it (with "
        "--heads: H-head students)",
        signature_default=SAMPLING_DEFAULTS.erm,
    )
    lam: float | str | None = lam_option(
        None,
        "ridge of the ERM comparison: >= 0, or auto (chosen by held-out validation, as in gap)",
        signature_default=SAMPLING_DEFAULTS.lam,
    )
    seed: int | None = seed_option(
        "seed of the teacher, data, chains and test set",
        default=None,
        signature_default=SAMPLING_DEFAULTS.seed,
    )

    def validate(self) -> None:
        """Refuse any value out of range, a setting that contradicts a file, and a posterior
        that does not fit in memory (resolving the settings not given, without keeping them)."""
        self.resolution()

    def filled(self) -> dict[str, object]:
        """The task and every setting not given: the file's, else the defaults."""
        run = self.resolution()
        heads = {"heads": run.config.heads, "presence": run.config.presence}
        return values_of(run.task, TASK_SETTINGS) | heads | values_of(run.sampling, GIVEN_SAMPLING)

    def resolution(self) -> PosteriorRun:
        """Every setting as the run uses it, each checked: the task resolved, the sampling
        settings filled in for it, the memory of the largest training set checked (worked out
        once per options object)."""
        return self._resolution

    @functools.cached_property
    def _resolution(self) -> PosteriorRun:
        run = self.resolve_task(GivenSampling.of(self))
        run = dataclasses.replace(run, sampling=run.filled_sampling(SAMPLING_DEFAULTS))
        settings = run.sampling.settings()
        for alpha in self.simulated_alphas(run):
            check_memory(run.config, alpha, settings)
        return run

    def simulated_alphas(self, run: PosteriorRun) -> tuple[float, ...]:
        """The alphas whose training sets are drawn (none when the data come from a file)."""
        return ()

    def resolve_task(self, given: GivenSampling) -> PosteriorRun:
        """The task (simulated: from the settings given and the defaults), whether a teacher is
        known, and the sampling settings ``given`` (a file may fix some)."""
        task = GivenTask(
            variant=DEFAULT_VARIANT if self.variant is None else self.variant,
            nu=self.nu,
            Delta=DEFAULT_DELTA if self.Delta is None else self.Delta,
            L=DEFAULT_L if self.L is None else self.L,
            variable_length=False if self.variable_length is None else self.variable_length,
            D=DEFAULT_D if self.D is None else self.D,
        )
        config = options_task(self, **values_of(task, TASK_SETTINGS))
        task = dataclasses.replace(task, nu=config.nu, Delta=config.Delta)
        return PosteriorRun(task, config, True, given)

    def task(self) -> SLRConfig:
        """The task the options resolve to (a data or posterior file's heads and presence
        included)."""
        return self._resolution.config

    def settings(self, alpha: float | None = None) -> SamplingSettings:
        """The resolved sampling, evaluation and ERM settings of the posterior study at
        ``alpha``."""
        return self._resolution.sampling.settings(alpha)

    def from_file(self) -> bool:
        """Whether the posterior is read from a file written before (``posterior --from``)."""
        return False


@dataclasses.dataclass(frozen=True)
class PosteriorOptions(SamplingOptions):
    """Settings of ``posterior``: one posterior, of simulated data, of a data file (``data``), or
    read from a posterior file written before (``source``)."""

    alpha: float | None = option(None, "N / D, > 0", signature_default=DEFAULT_ALPHA)
    source: Path | None = option(
        None,
        "re-summarise this posterior netCDF (written with --out) instead of sampling: the task, "
        "seed and sampling settings are the file's (one given must agree); its ERM fits are "
        "reused",
        flag="--from",
        metavar="POSTERIOR.nc",
    )
    data: Path | None = option(
        None,
        "run on this .npz data set (X, y; optional lengths, eps, k_star and v_star, config: the "
        "format simulate writes, docs/data.md) instead of simulated data; D, N and Lbar come "
        "from the arrays, variant, nu, Delta and the length law from its config record if it has "
        "one",
        metavar="FILE.npz",
    )
    holdout: float | None = option(
        None,
        "with --data without a teacher (k_star, v_star): share of the sequences held out as the "
        "test set, chosen by --seed, in (0, 1)",
        default_text="0.2",
        accepts=holdout_accepted,
    )
    data_record: DataSource | None = dataclasses.field(default=None, repr=False, compare=False)
    """The ``data`` file and where each setting came from, as given (filled in; not in the JSON)."""

    def to_dict(self) -> JsonObject:
        """The options as JSON-ready values, without :attr:`data_record`."""
        data = super().to_dict()
        del data["data_record"]
        return data

    def filled(self) -> dict[str, object]:
        """Those of :class:`SamplingOptions`, the alpha, the held-out share and the data file."""
        return super().filled() | values_of(self.resolution(), ("alpha", "holdout", "data_record"))

    def simulated_alphas(self, run: PosteriorRun) -> tuple[float, ...]:
        """The alpha of a simulated training set (none for a data or posterior file)."""
        return () if self.source is not None or self.data is not None else (run.alpha,)

    def resolve_task(self, given: GivenSampling) -> PosteriorRun:
        """The task of the posterior file, of the data file, or of the settings given."""
        if self.source is not None:
            return self._file_task(given)
        if self.holdout is not None and self.data is None:
            raise ConfigError("`holdout` applies only with `data`")
        if self.data is not None:
            return self._data_task(given)
        run = super().resolve_task(given)
        alpha = DEFAULT_ALPHA if self.alpha is None else self.alpha
        training_size(alpha, run.config.D)
        return dataclasses.replace(run, alpha=float(alpha), data_record=self.data_record)

    def _file_task(self, given: GivenSampling) -> PosteriorRun:
        if self.data is not None:
            raise ConfigError(
                "`source` and `data` exclude each other (`source` re-summarises a posterior file)"
            )
        if self.holdout is not None:
            raise ConfigError("`holdout` does not apply with `source` (the file fixes the split)")
        given_settings = values_of(self, (*TASK_SETTINGS, "alpha"))
        run = self.stored().run(given_settings, given)
        heads = (run.config.heads, run.config.presence)
        if (self.heads, self.presence) not in ((1, 1.0), heads):
            raise ConfigError(
                f"`heads`, `presence`: {self.heads}, {self.presence:g} contradict the file's "
                f"{heads[0]}, {heads[1]:g} (the file records its task: give neither)"
            )
        return dataclasses.replace(run, data_record=self.data_record)

    def _data_task(self, given: GivenSampling) -> PosteriorRun:
        from bayes_slr.models.dataset import DEFAULT_HOLDOUT, held_out_count

        for name, value in (
            ("alpha", self.alpha is not None),
            ("exact_teacher", self.exact_teacher),
        ):
            if value:  # exact_teacher False (resolved options) asks for nothing
                raise ConfigError(f"`{name}` does not apply with `data` (the data set fixes it)")
        given_task = GivenTask(**values_of(self, TASK_SETTINGS))
        config, source = data_task(self.data, given_task, DEFAULT_DELTA, heads=True)
        record = self.data_record or source  # where each setting came from, as given
        run = PosteriorRun(GivenTask.of(config), config, True, given, data_record=record)
        if source.teacher:  # every sequence trains, fresh sequences of the teacher test
            return run
        if self.N_test is not None:
            raise ConfigError(
                "`N_test` needs a teacher in the `data` file: without one the errors are "
                "measured on the held-out sequences (set their share with `holdout`)"
            )
        if self.init == "informed":
            raise ConfigError(
                "init must be random for data without a teacher (the informed start is the teacher)"
            )
        if self.check_start:
            raise ConfigError(
                "`check_start` needs a teacher in the `data` file (its other start is the teacher)"
            )
        holdout = DEFAULT_HOLDOUT if self.holdout is None else self.holdout
        held_out_count(holdout, source.N)
        sampling = given.over(GivenSampling(check_start=False))
        return dataclasses.replace(run, teacher=False, sampling=sampling, holdout=holdout)

    def data_source(self) -> DataSource | None:
        """The data file and where each setting came from (``None`` without ``data``)."""
        return self._resolution.data_record

    def stored(self) -> Any:
        """The settings of the ``source`` file
        (:class:`~bayes_slr.studies.posterior_file.StoredPosterior`; ``None`` without one)."""
        from bayes_slr.studies.posterior_file import stored_posterior

        return None if self.source is None else stored_posterior(self.source)

    def from_file(self) -> bool:
        """Whether the posterior is read from ``source``."""
        return self.source is not None
