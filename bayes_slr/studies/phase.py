"""The thresholds of the Bayes-optimal state evolution of one task (docs/theory.md part D), and
their curves of ``Delta`` up to where they merge: :class:`~bayes_slr.studies.phase_records.
PhaseRow` and :class:`~bayes_slr.studies.phase_records.PhaseCurves`."""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

import numpy as np

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.phase_records import (
    MERGE_TOL,
    THRESHOLDS,
    PhaseCurves,
    PhaseRow,
    PhaseSettings,
    has_hard_phase,
    threshold_value,
)

if TYPE_CHECKING:
    from bayes_slr.formulas.bayes_channel import BayesChannel
    from bayes_slr.formulas.thresholds import Threshold

CURVE_FIELDS = (
    "Delta",
    "alpha_sp",
    "alpha_IT",
    "alpha_alg",
    "tolerance_sp",
    "tolerance_IT",
    "tolerance_alg",
)


def phase_row(config: SLRConfig, settings: PhaseSettings, seed: int) -> PhaseRow:
    """The thresholds of ``config`` on ``[alpha_min, alpha_max]``."""
    from bayes_slr.formulas.bayes_channel import BayesChannel
    from bayes_slr.formulas.thresholds import thresholds

    channel = BayesChannel(config, mc_samples=settings.channel_draws, seed=seed)
    found = thresholds(
        config,
        settings.alpha_min,
        settings.alpha_max,
        settings.tol,
        channel=channel,
        scan=settings.scan,
    )
    records = {record.name: record for record in found.all()}
    stderrs = {} if channel.exact else threshold_stderrs(channel, settings, records)
    values = {
        name: threshold_value(records[name].status, records[name].value) for name in THRESHOLDS
    }
    return PhaseRow(
        variant=config.variant,
        nu=float(config.nu),
        L=config.Lbar,
        variable_length=settings.variable_length,
        Delta=config.Delta,
        **values,
        tolerances={
            name: math.nan if records[name].tolerance is None else records[name].tolerance
            for name in THRESHOLDS
        },
        statuses={name: records[name].status for name in THRESHOLDS},
        notes={name: records[name].note for name in THRESHOLDS},
        hard_phase=has_hard_phase(values["alpha_IT"], values["alpha_alg"]),
        method=found.method,
        mc_samples=channel.mc_samples,
        evaluations=found.evaluations,
        stderrs=stderrs,
    )


BATCHES = 8
"""Independent batches of a Monte Carlo channel's draws whose thresholds' spread gives the
standard errors."""


def threshold_stderrs(
    channel: BayesChannel, settings: PhaseSettings, records: dict[str, Threshold]
) -> dict[str, float]:
    """Each located threshold's standard error on a Monte Carlo ``channel``: the thresholds located
    again on :data:`BATCHES` independent batches of its draws (each search on its own batch, as
    the pooled one), their spread over ``sqrt(BATCHES)`` (to first order the pooled threshold is
    their mean); ``nan`` where a batch does not locate it (``records``: the pooled thresholds by
    name)."""
    from bayes_slr.formulas.thresholds import thresholds

    located = [name for name, record in records.items() if record.status == "located"]
    values: dict[str, list[float]] = {name: [] for name in located}
    for batch in channel.batches(BATCHES):
        found = {
            r.name: r
            for r in thresholds(
                channel.config,
                settings.alpha_min,
                settings.alpha_max,
                settings.tol,
                channel=batch,
                scan=settings.scan,
            ).all()
        }
        for name in located:
            values[name].append(found[name].value if found[name].status == "located" else math.nan)
    return {name: float(np.std(values[name], ddof=1) / math.sqrt(BATCHES)) for name in located}


def phase_curves(config: SLRConfig, settings: PhaseSettings) -> PhaseCurves:
    """The curves of ``alpha_sp``, ``alpha_IT`` and ``alpha_alg`` against ``Delta`` up to their
    merge (``ConfigError`` where they cannot be traced)."""
    from bayes_slr.formulas.threshold_curves import threshold_curves

    found = threshold_curves(config, settings.curve_points, settings.tol, MERGE_TOL)
    return PhaseCurves(
        **{name: tuple(getattr(sample, name) for sample in found.samples) for name in CURVE_FIELDS},
        merge_Delta=found.merge.Delta,
        merge_tolerance=found.merge.tolerance,
        merge_alpha=found.merge.alpha,
        merge_alpha_tolerance=found.merge.alpha_tolerance,
        evaluations=found.evaluations,
    )
