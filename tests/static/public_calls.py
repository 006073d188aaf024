"""Calls of every public function with its real argument names and types, for mypy (never run:
each call would run its experiment). ``tests/test_static_signatures.py`` type-checks this file
against the package's stub, so a renamed, removed or retyped argument fails the test suite."""

from __future__ import annotations

from pathlib import Path

import bayes_slr
from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.experiments.simulate import SimulateResult


def simulate() -> SimulateResult:
    return bayes_slr.simulate(
        variant="max", nu=float("inf"), L=5, D=50, N=200, seed=1, heads=2, out=Path("d.npz")
    )


def bayes_risk() -> float:
    result = bayes_slr.bayes_risk(L=(3, 5, 10), nu=(1.0, 2.0), method="mc", mc_sequences=4096)
    return len(result.rows)


def gap() -> str:
    result = bayes_slr.gap(
        L=[3, 5],
        alpha=16,
        activations=("softmax", "linear"),
        lam="auto",
        seeds=2,
        Delta=0.1,
        data=None,
        out="runs/gap",
        force=True,
        progress=False,
    )
    return result.table()


def gap_heads() -> float | None:
    result = bayes_slr.gap(
        variant="spiked", heads=2, presence=0.5, student_heads=1, alpha=16, lam=1.0, D=8
    )
    return result.rows[0].bayes


def theory() -> None:
    bayes_slr.theory(alpha=(1.0, 4.0), lam=0.5, bayes=True, simulate=False, channel_draws=8192)


def amp() -> None:
    bayes_slr.amp(D=500, alpha=2.0, seeds=3, damping=0.5, dtype="float32", workers=2)


def posterior() -> None:
    bayes_slr.posterior(
        alpha=4.0, sampler="gibbs", chains=4, samples=500, check_start=False, source=None
    )
    bayes_slr.posterior(data=Path("d.npz"), holdout=0.2, seed=3)


def posterior_sweep() -> None:
    bayes_slr.posterior_sweep(alpha=(1, 2, 4), D=50, erm=False, scheduler="tcp://host:8786")


def phase() -> None:
    bayes_slr.phase(alpha_min=0.1, alpha_max=10.0, curves=True, tol=1e-6)


def dynamics() -> None:
    bayes_slr.dynamics(method="sgd", eta=0.5, t_max=40.0, activations="softmax", seeds=(0, 1))


def multihead() -> float:
    result = bayes_slr.multihead(heads=2, presence=(0.5, 1.0), activations=["softmax"])
    return result.rows[0].bayes_error


def exported() -> tuple[type[Exception], type, type]:
    return ConfigError, LengthLaw, SLRConfig


def check() -> str:
    result = bayes_slr.check(claims=Path("claims.toml"), level=0.01, target_stderr=0.005)
    return result.rows[0].verdict
