"""The options of ``posterior`` and ``posterior-sweep``: :class:`SamplingOptions` (the settings
both share) and :class:`PosteriorOptions`, below the experiment (:mod:`bayes_slr.experiments.
posterior`) and the computation of a point (:mod:`bayes_slr.experiments._posterior_point`), which
both read them.

Settings a file can fix default to ``None`` ("not given") and are resolved once, in ``validate``:
from the file (a given value that contradicts it is refused, naming both), else from the defaults
below; the resolved options are what the result reports. It imports without JAX.
"""

from __future__ import annotations

import dataclasses
import functools
from pathlib import Path
from typing import Any

from bayes_slr.attention.erm_settings import LAM_AUTO, check_lam
from bayes_slr.errors import ConfigError, check_int
from bayes_slr.experiments.base import (
    Options,
    option,
)
from bayes_slr.experiments.multihead_posterior_options import resolve_multihead
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
from bayes_slr.models.data_task import GivenTask, data_task, refuse_conflict
from bayes_slr.models.dataset import DataSource
from bayes_slr.models.spec import INITS, SLRConfig, training_size
from bayes_slr.studies.posterior_records import SamplingSettings, check_memory

DEFAULT_ALPHA = 4.0
SAMPLING_DEFAULTS: dict[str, Any] = {
    "sampler": "auto",
    "chains": 4,
    "warmup": 1_000,
    "samples": 2_000,
    "init": "random",
    "check_start": True,
    "exact_teacher": False,
    "N_test": 100_000,
    "max_draws": 1_000,
    "erm": True,
    "lam": LAM_AUTO,
    "seed": DEFAULT_SEED,
}
"""The defaults of the sampling and evaluation settings (docs/posterior.md says why)."""
TASK_SETTINGS = ("variant", "nu", "L", "variable_length", "Delta", "D")
FILE_HELP = (
    "With --data or --from, every setting not given is the file's, and one given that "
    "contradicts the file is refused."
)


@dataclasses.dataclass(frozen=True)
class SamplingOptions(Options):
    """The settings of a posterior shared by ``posterior`` and ``posterior-sweep``: the task, the
    sampler, the evaluation and the ERM comparison.

    ``None`` means "not given": :meth:`validate` fills it in (from a file, else from the
    defaults) and :meth:`task` returns the resolved task.
    """

    variant: str | None = task_option("variant", GIVEN)
    nu: float | None = task_option("nu", GIVEN)
    L: int | None = task_option("L", GIVEN)
    variable_length: bool | None = task_option("variable_length", GIVEN)
    Delta: float | None = task_option("Delta", GIVEN)
    D: int | None = task_option("D", GIVEN)
    sampler: str | None = option(
        None,
        lambda: f"posterior sampler: {sampler_help()}",
        signature_default=SAMPLING_DEFAULTS["sampler"],
    )
    chains: int | None = option(
        None,
        "chains, >= 1 (>= 2 with --check-start)",
        signature_default=SAMPLING_DEFAULTS["chains"],
    )
    warmup: int | None = option(
        None, "warm-up steps per chain, >= 0", signature_default=SAMPLING_DEFAULTS["warmup"]
    )
    samples: int | None = option(
        None, "kept draws per chain, >= 1", signature_default=SAMPLING_DEFAULTS["samples"]
    )
    init: str | None = option(
        None,
        "start of the chains: random (each its own prior draw) or informed (the teacher)",
        choices=INITS,
        signature_default=SAMPLING_DEFAULTS["init"],
    )
    check_start: bool | None = option(
        None,
        "also run chains from the other start (informed if --init random) on the same data and "
        "report whether both find the same posterior (start_agreement, multimodal); needs the "
        "teacher; doubles the sampling time",
        signature_default=SAMPLING_DEFAULTS["check_start"],
    )
    exact_teacher: bool | None = option(
        None,
        "teacher with |k*|^2 = |v*|^2 = D, k* orthogonal to v*",
        signature_default=SAMPLING_DEFAULTS["exact_teacher"],
    )
    N_test: int | None = option(
        None,
        "fresh test sequences from the teacher, >= 2",
        signature_default=SAMPLING_DEFAULTS["N_test"],
    )
    max_draws: int | None = option(
        None,
        "draws (evenly thinned, split in 4 groups for the unbiased error) forming the posterior "
        "predictors, >= 1",
        signature_default=SAMPLING_DEFAULTS["max_draws"],
    )
    erm: bool | None = option(
        None,
        "compare with ERM (softmax, linear) trained on the same data as gap trains it",
        signature_default=SAMPLING_DEFAULTS["erm"],
    )
    lam: float | str | None = lam_option(
        None,
        "ridge of the ERM comparison: >= 0, or auto (chosen by held-out validation, as in gap)",
        signature_default=SAMPLING_DEFAULTS["lam"],
    )
    seed: int | None = seed_option(
        "seed of the teacher, data, chains and test set",
        default=None,
        signature_default=SAMPLING_DEFAULTS["seed"],
    )

    def validate(self) -> None:
        """Refuse any value out of range, a setting that contradicts a file, and a posterior
        that does not fit in memory (resolving the settings not given, without keeping them)."""
        self.resolution()

    def filled(self) -> dict[str, object]:
        """The task and every setting not given: the file's, else the defaults."""
        run = self.resolution()
        return {name: value for name, value in run.items() if value is not getattr(self, name)}

    def resolution(self) -> dict[str, Any]:
        """Every setting as the run uses it (``{name: value}``), each checked: the task
        resolved, the sampling settings filled in for it, the memory of the largest training
        set checked (worked out once per options object)."""
        return dict(self._resolution)

    @functools.cached_property
    def _resolution(self) -> dict[str, Any]:
        run = {field.name: getattr(self, field.name) for field in dataclasses.fields(self)}
        config, teacher = self.resolve_task(run)
        self.resolve_sampling(run, config, teacher)
        settings = sampling_settings(run)
        for alpha in self.simulated_alphas(run):
            check_memory(config, alpha, settings)
        return run

    def simulated_alphas(self, run: dict[str, Any]) -> tuple[float, ...]:
        """The alphas whose training sets are drawn (none when the data come from a file)."""
        return ()

    def resolve_task(self, run: dict[str, Any]) -> tuple[SLRConfig, bool]:
        """Fill in ``run`` the task (simulated: from the settings given and the defaults);
        return it and whether a teacher is known."""
        fill(
            run,
            {
                "variant": DEFAULT_VARIANT,
                "L": DEFAULT_L,
                "variable_length": False,
                "Delta": DEFAULT_DELTA,
                "D": DEFAULT_D,
            },
        )
        config = options_task(self, **run)
        run |= {"nu": config.nu, "Delta": config.Delta}
        return config, True

    def resolve_sampling(self, run: dict[str, Any], config: SLRConfig, teacher: bool) -> None:
        """Fill in ``run`` the sampling and evaluation settings not given and check them for
        ``config`` (``teacher``: whether a teacher is known, for the start check and fresh test
        sets)."""
        from bayes_slr.inference.samplers import check_sampling_arguments

        fill(run, {name: v for name, v in SAMPLING_DEFAULTS.items() if teacher or name != "N_test"})
        check_int("seed", run["seed"], 0)
        check_sampling_arguments(
            config,
            **{name: run[name] for name in ("sampler", "chains", "warmup", "samples", "init")},
        )
        if run["check_start"] and run["chains"] < 2:
            raise ConfigError(
                "chains must be >= 2 with `check_start` (r_hat needs two chains per start), "
                f"got {run['chains']}"
            )
        if run["N_test"] is not None:
            check_int("N_test", run["N_test"], 2)
        check_int("max_draws", run["max_draws"], 1)
        check_lam(run["lam"])
        if run["exact_teacher"]:
            check_int("D", config.D, 2 * config.heads)

    def task(self) -> SLRConfig:
        """The task the options resolve to."""
        return options_task(self, **self._resolution)

    def settings(self) -> SamplingSettings:
        """The resolved sampling, evaluation and ERM settings of the posterior study."""
        return sampling_settings(dataclasses.asdict(self))

    def from_file(self) -> bool:
        """Whether the posterior is read from a file written before (``posterior --from``)."""
        return False


def sampling_settings(values: dict[str, Any]) -> SamplingSettings:
    """The :class:`SamplingSettings` of resolved settings ``values`` (name -> value)."""
    return SamplingSettings(
        **{f.name: values[f.name] for f in dataclasses.fields(SamplingSettings)}
    )


def fill(run: dict[str, Any], defaults: dict[str, Any]) -> None:
    """Set in ``run`` each setting of ``defaults`` that was not given."""
    for name, value in defaults.items():
        if run[name] is None:
            run[name] = value


def keep(run: dict[str, Any], fixed: dict[str, Any], origin: str) -> None:
    """Set in ``run`` the settings ``origin`` (a file) fixes, refusing a given one that differs;
    a ``None`` in ``fixed`` (a setting the file does not record) is left as given."""
    for name, value in fixed.items():
        if value is not None:
            refuse_conflict(name, run[name], value, origin)
            run[name] = value


@dataclasses.dataclass(frozen=True)
class PosteriorOptions(SamplingOptions):
    """Settings of ``posterior``: one posterior, of simulated data, of a data file (``data``), or
    read from a posterior file written before (``source``)."""

    alpha: float | None = option(None, "N / D, > 0", signature_default=DEFAULT_ALPHA)
    heads: int = task_option("heads")
    presence: float = task_option("presence")
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
    )
    data_record: DataSource | None = dataclasses.field(default=None, repr=False, compare=False)
    """The ``data`` file and where each setting came from, as given (filled in; not in the JSON)."""

    def to_dict(self) -> dict[str, Any]:
        """The options as JSON-ready values, without :attr:`data_record`."""
        data = super().to_dict()
        del data["data_record"]
        return data

    def simulated_alphas(self, run: dict[str, Any]) -> tuple[float, ...]:
        """The alpha of a simulated training set (none for a data or posterior file)."""
        return () if self.source is not None or self.data is not None else (run["alpha"],)

    def resolve_task(self, run: dict[str, Any]) -> tuple[SLRConfig, bool]:
        """The task of the posterior file, of the data file, or of the settings given."""
        if (self.heads, self.presence) != (1, 1.0):
            resolve_multihead(self, run)
        if self.source is not None:
            return self._file_task(run)
        if self.holdout is not None and self.data is None:
            raise ConfigError("`holdout` applies only with `data`")
        if self.data is not None:
            return self._data_task(run)
        config, teacher = super().resolve_task(run)
        fill(run, {"alpha": DEFAULT_ALPHA})
        training_size(run["alpha"], config.D)
        run["alpha"] = float(run["alpha"])
        return config, teacher

    def _file_task(self, run: dict[str, Any]) -> tuple[SLRConfig, bool]:
        if self.data is not None:
            raise ConfigError(
                "`source` and `data` exclude each other (`source` re-summarises a posterior file)"
            )
        if self.holdout is not None:
            raise ConfigError("`holdout` does not apply with `source` (the file fixes the split)")
        stored = self.stored()
        config = stored.config
        origin = f"the posterior file {self.source}"
        keep(
            run,
            {
                "variant": config.variant,
                "nu": config.nu,
                "L": config.Lbar,
                "variable_length": not config.length.is_fixed,
                "Delta": config.Delta,
                "D": config.D,
                "alpha": stored.alpha,
                "seed": stored.seed,
                "chains": stored.chains,
                "samples": stored.samples,
                "warmup": stored.warmup,
                "init": stored.init,
                "exact_teacher": stored.exact_teacher,
                "check_start": stored.check_start,
            },
            origin,
        )
        if self.sampler not in (None, stored.kernel):  # the kernel that ran, or the option given
            refuse_conflict("sampler", self.sampler, stored.sampler, origin)
        fill(
            run,
            {
                "sampler": stored.sampler,
                "N_test": stored.N_test,
                "max_draws": stored.max_draws,
                "erm": stored.erm is not None,
                "lam": None if stored.erm is None else stored.erm.lam,
            },
        )
        return config, True

    def _data_task(self, run: dict[str, Any]) -> tuple[SLRConfig, bool]:
        from bayes_slr.models.dataset import DEFAULT_HOLDOUT, held_out_count

        for name, given in (
            ("alpha", self.alpha is not None),
            ("exact_teacher", self.exact_teacher),
        ):
            if given:  # exact_teacher False (resolved options) asks for nothing
                raise ConfigError(f"`{name}` does not apply with `data` (the data set fixes it)")
        given = GivenTask(**{name: getattr(self, name) for name in TASK_SETTINGS})
        config, source = data_task(self.data, given, DEFAULT_DELTA)
        run["data_record"] = self.data_record or source  # where each setting came from, as given
        run |= {
            "variant": config.variant,
            "nu": config.nu,
            "L": config.Lbar,
            "variable_length": not config.length.is_fixed,
            "Delta": config.Delta,
            "D": config.D,
        }
        if source.teacher:  # every sequence trains, fresh sequences of the teacher test
            run["holdout"] = None
            return config, True
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
        fill(run, {"holdout": DEFAULT_HOLDOUT, "check_start": False})
        held_out_count(run["holdout"], source.N)
        return config, False

    def data_source(self) -> DataSource | None:
        """The data file and where each setting came from (``None`` without ``data``)."""
        return self._resolution["data_record"]

    def stored(self) -> Any:
        """The settings of the ``source`` file
        (:class:`~bayes_slr.studies.posterior_file.StoredPosterior`; ``None`` without one)."""
        from bayes_slr.studies.posterior_file import stored_posterior

        return None if self.source is None else stored_posterior(self.source)

    def from_file(self) -> bool:
        """Whether the posterior is read from ``source``."""
        return self.source is not None
