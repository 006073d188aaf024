"""Theory curves: ERM per activation and Bayes-optimal points over ``alpha``, resumable."""

from __future__ import annotations

import sys
from typing import Any, Sequence

from tqdm import tqdm

from bayes_slr.attention.activations import check_activation
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.models.spec import SLRConfig
from bayes_slr.records import SweepLog
from bayes_slr.theory.replica_bayes import bayes_replica_point, check_bayes_config
from bayes_slr.theory.replica_erm import erm_replica_point
from bayes_slr.theory.result import INITS


def validate_curve(
    config: SLRConfig, activations: Sequence[str], alphas: Sequence[float], lam: float, bayes: bool, mc_samples: int
) -> None:
    """Raise ``ConfigError`` before any computation on an unknown activation, ``alpha <= 0`` or ``lam < 0``."""
    for activation in activations:
        check_activation(activation)
    if not alphas:
        raise ConfigError("alpha: give at least one value > 0")
    for alpha in alphas:
        check_real("alpha", alpha, minimum=0.0, strict=True)
    check_real("lam", lam, minimum=0.0)
    check_int("mc_samples", mc_samples, 2)
    if bayes:
        check_bayes_config(config)
    if not activations and not bayes:
        raise ConfigError("activation: give at least one activation, or --bayes")


def theory_curve(
    config: SLRConfig,
    activations: Sequence[str],
    alphas: Sequence[float],
    *,
    lam: float,
    bayes: bool = False,
    erm_init: str = "uninformed",
    mc_samples: int = 4096,
    seed: int = 0,
    log: SweepLog | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """Solve every point of the curve (each ``alpha`` x activation, plus Bayes from both starts).

    Parameters
    ----------
    config : SLRConfig
    activations : ERM activations.
    alphas : sample ratios, each ``> 0``.
    lam : ridge strength of ERM, ``>= 0``.
    bayes : also solve the Bayes-optimal state evolution from the informed and the
        uninformed start (both rows are returned, so a hard phase shows as a difference).
    erm_init : start of the ERM iteration.
    mc_samples, seed : channel draws.
    log : finished points are read from / appended to it (resumable).
    progress : tqdm bar on stderr.

    Returns
    -------
    list of dict
        One row per point, as :meth:`TheoryPoint.to_row`.
    """
    validate_curve(config, activations, alphas, lam, bayes, mc_samples)
    jobs = [(alpha, activation, erm_init) for alpha in alphas for activation in activations]
    if bayes:
        jobs += [(alpha, "bayes", init) for alpha in alphas for init in INITS]
    rows = []
    for alpha, estimator, init in tqdm(jobs, disable=not progress, file=sys.stderr, desc="theory"):
        point = {"config": config.replace(D=1).to_dict(), "alpha": alpha, "estimator": estimator, "init": init,
                 "lam": lam if estimator != "bayes" else None, "mc_samples": mc_samples, "seed": seed}
        row = log.result(point) if log is not None else None
        if row is None:
            if estimator == "bayes":
                solved = bayes_replica_point(config, alpha=alpha, init=init, mc_samples=mc_samples, seed=seed)
            else:
                solved = erm_replica_point(config, estimator, alpha=alpha, lam=lam, init=init,
                                           mc_samples=mc_samples, seed=seed)
            row = solved.to_row()
            if log is not None:
                log.append(point, row, seed)
        rows.append(row)
    return rows
