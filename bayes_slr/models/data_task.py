"""The task a user's data file implies, reconciled with the settings given beside it.

``D``, ``N`` and ``Lbar`` come from the arrays; the model settings (variant, ``nu``, ``Delta``,
the length law) from the file's ``config`` record when it has one (the record
``bayes-slr simulate`` writes), else from the settings given (or their defaults). A setting given
that contradicts the arrays or the record is refused, naming both values. Reading and checking
the file needs NumPy only, so a bad file is refused before JAX is imported.
"""

from __future__ import annotations

import dataclasses
import hashlib
import math
from pathlib import Path
from typing import Any

import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.models.dataset import Dataset, DataSource, load_dataset
from bayes_slr.models.spec import SLRConfig, task_config

RECORD = "the data file's config record"
MODEL_SETTINGS = ("variant", "nu", "Delta")


@dataclasses.dataclass(frozen=True)
class GivenTask:
    """The task settings given beside a data file (``None``: not given)."""

    variant: str | None = None
    nu: float | None = None
    Delta: float | None = None
    L: int | tuple[int, ...] | None = None
    variable_length: bool | None = None
    D: int | None = None
    heads: int | None = None
    presence: float | None = None

    @classmethod
    def of(cls, config: SLRConfig) -> GivenTask:
        """The task settings of ``config`` (``L`` its ``Lbar``)."""
        return cls(
            variant=config.variant,
            nu=config.nu,
            Delta=config.Delta,
            L=config.Lbar,
            variable_length=not config.length.is_fixed,
            D=config.D,
        )


def _recorded_config(data: Dataset) -> SLRConfig | None:
    """The task of the ``config`` record, checked against the arrays; ``None`` without one."""
    if not data.provenance:
        return None
    settings = data.provenance.get("config", data.provenance)
    if not isinstance(settings, dict):
        raise ConfigError("`data`: array config: its 'config' entry must be a JSON object")
    try:
        config = SLRConfig.from_dict(settings)
    except ConfigError as exc:
        raise ConfigError(f"`data`: array config does not describe an SLR task: {exc}") from exc
    for name, recorded, actual in (
        ("D", config.D, data.D),
        ("Lbar", config.Lbar, data.Lbar),
        ("N", settings.get("N", data.N), data.N),
    ):
        if recorded != actual:
            raise ConfigError(
                f"`data`: array config records {name} = {recorded} but the arrays have "
                f"{name} = {actual}"
            )
    return config


def refuse_conflict(name: str, given: Any, actual: Any, origin: str) -> None:
    """Refuse a setting given (not ``None``) that differs from the value ``origin`` fixes."""
    same = given == actual or (
        isinstance(given, float) and isinstance(actual, float) and math.isnan(given + actual)
    )
    if given is not None and not same:
        raise ConfigError(
            f"{name} = {given} (given) conflicts with {name} = {actual} from {origin}: leave it out"
        )


def data_task(
    path: str | Path, given: GivenTask, default_Delta: float, heads: bool = False
) -> tuple[SLRConfig, DataSource]:
    """The task of the data file ``path`` and where each setting came from.

    Parameters
    ----------
    path : a ``.npz`` data file (:mod:`bayes_slr.models.dataset`).
    given : the settings given beside it (those the experiment has).
    default_Delta : ``Delta`` of a file without a config record when none is given.
    heads : whether multi-head data are read (their heads and presence from the record), else
        refused.

    Raises
    ------
    ConfigError
        A bad file (one line naming the array), a given setting that contradicts the arrays or
        the record, a fixed length law with sequences shorter than ``Lbar``.
    """
    data = load_dataset(path, heads)
    refuse_conflict("D", given.D, data.D, "array X's last axis")
    refuse_conflict("L", given.L, data.Lbar, "array X's token axis")
    sources = {"D": "array X", "N": "array y", "Lbar": "array X"}
    recorded = _recorded_config(data)
    if recorded is not None:
        refuse_conflict("variant", given.variant, recorded.variant, RECORD)
        refuse_conflict("nu", given.nu, recorded.nu, RECORD)
        refuse_conflict("Delta", given.Delta, recorded.Delta, RECORD)
        refuse_conflict(
            "variable_length", given.variable_length, not recorded.length.is_fixed, RECORD
        )
        refuse_conflict("heads", given.heads, recorded.heads, RECORD)
        refuse_conflict("presence", given.presence, recorded.presence, RECORD)
        config = recorded
        sources.update(dict.fromkeys((*MODEL_SETTINGS, "length"), RECORD))
    else:
        variant = given.variant
        if variant is None:
            raise ConfigError(
                "`data`: the file has no config record, so `variant` (and `nu`) must be given"
            )
        Delta = default_Delta if given.Delta is None else given.Delta
        variable = bool(given.variable_length)
        if not variable and np.any(data.lengths != data.Lbar):
            raise ConfigError(
                f"`data`: array lengths has values {int(data.lengths.min())}.."
                f"{int(data.lengths.max())} but the length law is fixed at Lbar = {data.Lbar}: "
                "give `variable_length`"
            )
        config = task_config(variant, data.Lbar, variable, given.nu, Delta, data.D)
        for name in MODEL_SETTINGS:
            sources[name] = "given" if getattr(given, name) is not None else "default"
        sources["length"] = "uniform on 1..Lbar (given)" if variable else "fixed at Lbar"
    digest = hashlib.sha256(Path(path).read_bytes()).hexdigest()
    source = DataSource(
        str(path), digest, data.N, data.D, data.Lbar, data.teacher is not None, sources
    )
    return config, source
