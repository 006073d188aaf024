"""What a posterior netCDF file fixes, as the posterior study writes and reads it.

Besides the groups of :mod:`bayes_slr.inference.posterior_io` (draws, data, teacher), the file
holds the settings it was sampled with (in the ``posterior`` group's record), the draws of the
start check (group :data:`CHECK_GROUP`) and the ERM comparison (group :data:`ERM_GROUP`: each
activation's fitted ``k, v, c`` and its reported numbers), so ``posterior --from`` re-summarises
it with the same settings and without training ERM again. Reading needs xarray, not JAX.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import xarray as xr

from bayes_slr.errors import ConfigError
from bayes_slr.models.data_task import GivenTask, refuse_conflict
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.numerics.record import JsonObject
from bayes_slr.records import as_json_values, json_text, read_json
from bayes_slr.studies.posterior_records import (
    DataRun,
    ERMComparison,
    GivenSampling,
    PosteriorRun,
    SamplingSettings,
)

CHECK_GROUP = "check_start_posterior"
"""Group of the draws of the start-check chains (the other start, same data)."""
ERM_GROUP = "erm"
"""Group of the ERM comparison: ``{activation}_k``, ``{activation}_v`` (``dim``),
``{activation}_c`` and the record (attribute ``bayes_slr``) of its settings and numbers."""
_ATTRIBUTE = "bayes_slr"
PARAMETERS = ("k", "v", "c")
"""The fitted parameters of an attention estimator stored per activation (``c``: erf offset)."""


@dataclasses.dataclass(frozen=True)
class StoredERM:
    """The ERM comparison stored in a posterior file.

    Attributes
    ----------
    lam : the ``lam`` option it ran with (a number or ``"auto"``).
    N_test : the fresh test sequences it was scored on.
    seed : the seed of its starts and test set.
    rows : the reported numbers per activation.
    fits : the fitted ``(k, v, c)`` per activation.
    """

    lam: float | str
    N_test: int
    seed: int
    rows: dict[str, ERMComparison]
    fits: dict[str, tuple[np.ndarray, np.ndarray, np.ndarray]]


@dataclasses.dataclass(frozen=True)
class StoredPosterior:
    """The settings a posterior file was sampled and summarised with (what ``--from`` keeps).

    ``sampler`` is the option it was sampled with (``auto``...), ``kernel`` the sampler that ran.
    Settings an older file does not record are ``None`` (they are then not checked).
    """

    path: Path
    config: SLRConfig
    seed: int
    alpha: float
    sampler: str | None
    kernel: str
    chains: int
    samples: int
    warmup: int | None
    init: str | None
    exact_teacher: bool | None
    check_start: bool
    N_test: int | None
    max_draws: int | None
    erm: StoredERM | None
    data: DataRun | None

    def run(self, given_settings: Mapping[str, object], given: GivenSampling) -> PosteriorRun:
        """The run that re-summarises this file: its task, ``alpha``, seed, chains, draws,
        warm-up, start, teacher and start check, each refused where ``given_settings`` (the task
        settings and ``alpha`` given, ``None``: not given) or ``given`` contradicts it, naming
        both; the sampler, test sets and ERM it recorded where not given."""
        origin = f"the posterior file {self.path}"
        task = GivenTask.of(self.config)
        stored = {**dataclasses.asdict(task), "alpha": self.alpha}
        for name, value in given_settings.items():
            if stored[name] is not None:
                refuse_conflict(name, value, stored[name], origin)
        fixed = GivenSampling(
            seed=self.seed,
            chains=self.chains,
            samples=self.samples,
            warmup=self.warmup,
            init=self.init,
            exact_teacher=self.exact_teacher,
            check_start=self.check_start,
        )
        sampling = given.kept(fixed, origin)
        if given.sampler not in (None, self.kernel):  # the kernel that ran, or the option given
            refuse_conflict("sampler", given.sampler, self.sampler, origin)
        recorded = GivenSampling(
            sampler=self.sampler,
            N_test=self.N_test,
            max_draws=self.max_draws,
            erm=self.erm is not None,
            lam=None if self.erm is None else self.erm.lam,
        )
        alpha = given_settings["alpha"] if self.alpha is None else self.alpha
        return PosteriorRun(task, self.config, True, sampling.over(recorded), alpha=alpha)


def stored_posterior(path: str | os.PathLike) -> StoredPosterior:
    """Read the settings of the posterior file ``path`` (``ConfigError`` on a missing, corrupt or
    foreign file: :func:`~bayes_slr.inference.posterior_io.load_posterior`)."""
    from bayes_slr.inference import posterior_io

    tree = posterior_io.load_posterior(path)
    record = posterior_io.record_of(tree)
    settings = record["config"]
    data = settings.get("data")
    try:
        data_run = None if not data or "source" not in data else DataRun.from_dict(data)
    except ConfigError:
        data_run = None  # a record from before typed data records: not reproduced
    return StoredPosterior(
        path=Path(path),
        config=posterior_io.config_of(tree),
        seed=int(record["seed"] or 0),
        alpha=float(settings["alpha"]),
        sampler=settings.get("sampler_option", settings["sampler"]),
        kernel=settings["sampler"],
        chains=int(tree.posterior.sizes["chain"]),
        samples=int(tree.posterior.sizes["draw"]),
        warmup=settings.get("warmup"),
        init=settings.get("init"),
        exact_teacher=settings.get("exact_teacher"),
        check_start=CHECK_GROUP in tree.children,
        N_test=settings.get("N_test"),
        max_draws=settings.get("max_draws"),
        erm=stored_erm(tree),
        data=data_run,
    )


def stored_erm(tree: xr.DataTree) -> StoredERM | None:
    """The ERM comparison stored in ``tree`` (``None`` when the file has none)."""
    if ERM_GROUP not in tree.children:
        return None
    group = tree[ERM_GROUP]
    record = read_json(group.attrs[_ATTRIBUTE])
    rows = {name: ERMComparison.from_dict(row) for name, row in record["rows"].items()}
    fits = {
        name: tuple(np.asarray(group[f"{name}_{p}"].values) for p in PARAMETERS) for name in rows
    }
    return StoredERM(record["lam"], int(record["N_test"]), int(record["seed"]), rows, fits)


def _parameter_dims(parameter: str, ndim: int) -> tuple[str, ...]:
    """The dimensions of a stored ERM parameter: ``k``, ``v`` a vector (``dim``), the offset
    ``c`` a number, each with a ``head`` axis first for an ``H``-head student."""
    vector = ("dim",) if parameter != "c" else ()
    return ("head",) * (ndim - len(vector)) + vector


def store_erm(tree: xr.DataTree, erm: StoredERM) -> None:
    """Add the ERM comparison ``erm`` to ``tree`` (replacing one stored before)."""
    variables = {
        f"{name}_{p}": (_parameter_dims(p, np.ndim(value)), np.asarray(value))
        for name, fit in erm.fits.items()
        for p, value in zip(PARAMETERS, fit, strict=True)
    }
    record = {
        "lam": erm.lam,
        "N_test": erm.N_test,
        "seed": erm.seed,
        "rows": {name: row.to_dict() for name, row in erm.rows.items()},
    }
    tree[ERM_GROUP] = xr.DataTree(
        xr.Dataset(variables, attrs={_ATTRIBUTE: json_text(record, indent=None)})
    )


def settings_record(settings: SamplingSettings, N: int, sampler: str) -> JsonObject:
    """The settings a posterior file records beside its task (``sampler``: the kernel that
    ran)."""
    return {
        "alpha": settings.alpha,
        "N": N,
        "sampler": sampler,
        "sampler_option": settings.sampler,
        "chains": settings.chains,
        "warmup": settings.warmup,
        "samples": settings.samples,
        "init": settings.init,
        "exact_teacher": settings.exact_teacher,
        "check_start": settings.check_start,
        "N_test": settings.N_test,
        "max_draws": settings.max_draws,
    }


def sampled_with(
    tree: xr.DataTree, config: SLRConfig, settings: SamplingSettings, seed: int
) -> bool:
    """Whether the posterior ``tree`` was sampled for ``config`` at ``settings.alpha`` with the
    sampling settings ``settings`` and ``seed`` (its evaluation settings may differ: they are
    applied when it is summarised)."""
    from bayes_slr.inference.posterior_io import record_of

    record = record_of(tree)
    expected = as_json_values(
        {
            **config.to_dict(),
            **settings_record(settings, training_size(settings.alpha, config.D), ""),
        }
    )
    evaluation = ("sampler", "N_test", "max_draws")
    return record.get("seed") == seed and all(
        record["config"].get(name) == value
        for name, value in expected.items()
        if name not in evaluation
    )
