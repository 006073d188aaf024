"""The ``dynamics`` methods that train on data at dimension ``D``: ``gd`` and ``sgd``.

Each resolves its settings record and runs one
:class:`~bayes_slr.attention.dynamics.TrainingRun` (:mod:`bayes_slr.attention.dynamics`: the
update rule, the clock, the logged points); a run is deterministic given its seed, logged by
step, and resumable from a checkpoint (the experiment's ``train`` keeps them).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.studies.dynamics_erm import compare_with_erm
from bayes_slr.studies.dynamics_methods import (
    DynamicsMethod,
    DynamicsRequest,
    DynamicsSettings,
    common_settings,
    register_dynamics_method,
    resolved_clock,
)


@dataclasses.dataclass(frozen=True)
class GDSettings(DynamicsSettings):
    """Full-batch gradient descent on the ERM objective at ``alpha``.

    Attributes
    ----------
    eta : step size (ODE time ``eta`` per step).
    steps : optimiser steps.
    N_test : test sequences per logged point.
    alpha, lam : samples per dimension and ridge of the objective.
    compare_erm, replica_samples : compare the end with the L-BFGS minimum of the same objective
        and the replica ERM error (its channel draws).
    """

    eta: float
    steps: int
    N_test: int
    alpha: float
    lam: float
    compare_erm: bool
    replica_samples: int


@dataclasses.dataclass(frozen=True)
class SGDSettings(DynamicsSettings):
    """Online SGD, a fresh batch at every step.

    Attributes
    ----------
    eta : step size (ODE time ``eta / D`` per step).
    steps : optimiser steps.
    N_test : test sequences per logged point.
    batch : sequences per step.
    """

    eta: float
    steps: int
    N_test: int
    batch: int


class DataMethod(DynamicsMethod):
    """A method that trains on data (module docstring)."""

    def steps(self, settings: Any) -> int:
        """The run's optimiser steps."""
        return settings.steps

    def training_run(self, config: SLRConfig, activation: str, seed: int, settings: Any) -> Any:
        """The :class:`~bayes_slr.attention.dynamics.TrainingRun` of one point."""
        raise NotImplementedError

    def trajectory(
        self,
        config: SLRConfig,
        activation: str,
        seed: int,
        settings: DynamicsSettings,
        train: Callable[[Any], Any] | None = None,
    ) -> Any:
        """``train`` (default ``train_dynamics``) of :meth:`training_run`."""
        from bayes_slr.attention.dynamics import train_dynamics

        return (train or train_dynamics)(self.training_run(config, activation, seed, settings))


def _core_start(start: str) -> str:
    """The core's name of a start (the teacher is its ``informed`` start)."""
    return "informed" if start == "teacher" else start


class GradientDescent(DataMethod):
    """``gd``: full-batch gradient descent on the ERM objective at ``alpha``."""

    def settings(self, request: DynamicsRequest) -> GDSettings:
        """``alpha`` is required; ``eta`` per step of the clock."""
        if request.alpha is None:
            raise ConfigError(
                f"alpha (samples per dimension, > 0) is required for method {self.name}"
            )
        alpha = check_real("alpha", request.alpha, minimum=0.0, strict=True)
        training_size(alpha, request.D)
        self.refuse_others(request)
        eta = self.step_size(request)
        steps, t_max = resolved_clock(request, eta)
        return GDSettings(
            **common_settings(self, request, t_max),
            eta=eta,
            steps=steps,
            N_test=request.N_test,
            alpha=alpha,
            lam=request.lam,
            compare_erm=request.compare_erm,
            replica_samples=request.replica_samples,
        )

    def training_run(self, config: SLRConfig, activation: str, seed: int, settings: Any) -> Any:
        """Method ``gd`` of the core on ``round(alpha D)`` sequences of the seed."""
        from bayes_slr.attention.dynamics import TrainingRun

        return TrainingRun(
            config,
            activation,
            "gd",
            eta=settings.eta,
            steps=settings.steps,
            seed=seed,
            alpha=settings.alpha,
            lam=settings.lam,
            start=_core_start(settings.start),
            sphere=settings.sphere,
            log_points=settings.log_points,
            N_test=settings.N_test,
        )

    def compare(self, trajectory: Any, settings: Any) -> Any:
        """The end against the L-BFGS minimum and the replica point (with ``compare_erm``)."""
        return (
            compare_with_erm(trajectory, settings.replica_samples) if settings.compare_erm else None
        )


class OnlineSGD(DataMethod):
    """``sgd``: online SGD, a fresh batch of ``batch`` sequences per step."""

    def settings(self, request: DynamicsRequest) -> SGDSettings:
        """``eta / D`` per step of the clock."""
        self.refuse_others(request)
        eta = self.step_size(request)
        batch = self.batch_size(request)
        steps, t_max = resolved_clock(request, eta / request.D)
        return SGDSettings(
            **common_settings(self, request, t_max),
            eta=eta,
            steps=steps,
            N_test=request.N_test,
            batch=batch,
        )

    def training_run(self, config: SLRConfig, activation: str, seed: int, settings: Any) -> Any:
        """Method ``sgd`` of the core, the seed's stream of fresh sequences."""
        from bayes_slr.attention.dynamics import TrainingRun

        return TrainingRun(
            config,
            activation,
            "sgd",
            eta=settings.eta,
            steps=settings.steps,
            seed=seed,
            batch=settings.batch,
            start=_core_start(settings.start),
            sphere=settings.sphere,
            log_points=settings.log_points,
            N_test=settings.N_test,
        )

    def heads_trajectory(
        self,
        config: SLRConfig,
        activation: str,
        student_heads: int,
        seed: int,
        settings: Any,
    ) -> Any:
        """Online SGD of the heads (:func:`~bayes_slr.attention.multihead_sgd.train_heads_sgd`):
        the seed's exact teacher, start and stream, on the one-head clock."""
        from bayes_slr.attention.multihead_sgd import HeadsSGDRun, train_heads_sgd

        run = HeadsSGDRun(
            config,
            activation,
            student_heads,
            settings.eta,
            settings.steps,
            settings.batch,
            seed,
            log_points=settings.log_points,
            N_test=settings.N_test,
        )
        return train_heads_sgd(run)


GD = register_dynamics_method(
    GradientDescent(
        "gd",
        "full-batch gradient descent on the ERM objective at alpha",
        default_eta=0.1,
        data=True,
        takes=("alpha", "lam", "eta", "steps"),
        note=(
            "gd descends the empirical risk at alpha: its end is the ERM estimator, not the "
            "population optimum (alpha -> inf)"
        ),
    )
)
SGD = register_dynamics_method(
    OnlineSGD(
        "sgd",
        "online SGD",
        default_eta=1.0,
        data=True,
        takes=("eta", "batch", "steps"),
        note=(
            "online SGD at finite eta/B ends above the population optimum by its noise: "
            "--method sgd-ode with the same eta and batch gives that level (D -> inf)"
        ),
        multihead=True,
    )
)
