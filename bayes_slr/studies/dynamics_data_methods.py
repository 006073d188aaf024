"""The ``dynamics`` methods that train on data at dimension ``D``: ``gd`` and ``sgd``.

Each resolves its settings record and runs one
:class:`~bayes_slr.attention.dynamics.TrainingRun` (:mod:`bayes_slr.attention.dynamics`: the
update rule, the clock, the logged points); a run is deterministic given its seed, logged by
step, and resumable from a checkpoint (the experiment's ``train`` keeps them). Both run ``H_s``
student heads on multi-head SLR the same way (the run's ``student_heads``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from bayes_slr.errors import ConfigError
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

    def training_run(
        self,
        config: SLRConfig,
        activation: str,
        seed: int,
        settings: Any,
        student_heads: int | None = None,
    ) -> Any:
        """The :class:`~bayes_slr.attention.dynamics.TrainingRun` of one point (of
        ``student_heads`` heads: a head axis, full token draws)."""
        from bayes_slr.attention.dynamics import TrainingRun

        heads = {} if student_heads is None else {"student_heads": student_heads}
        if student_heads is not None and self.name == "sgd":
            heads["token_draws"] = "full"
        return TrainingRun(
            config,
            activation,
            self.name,
            eta=settings.eta,
            steps=settings.steps,
            seed=seed,
            start=_core_start(settings.start),
            sphere=settings.sphere,
            log_points=settings.log_points,
            N_test=settings.N_test,
            **self.own_settings(settings),
            **heads,
        )

    def own_settings(self, settings: Any) -> dict[str, Any]:
        """The fields of the run this method's settings give beside the common ones."""
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

    def heads_trajectory(
        self,
        config: SLRConfig,
        activation: str,
        student_heads: int,
        seed: int,
        settings: Any,
    ) -> Any:
        """The run of ``student_heads`` heads (``train_dynamics``): the seed's exact teacher,
        random start and data, on the one-head clock."""
        from bayes_slr.attention.dynamics import train_dynamics

        return train_dynamics(self.training_run(config, activation, seed, settings, student_heads))


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
        alpha = request.alpha
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

    def own_settings(self, settings: Any) -> dict[str, Any]:
        """Method ``gd`` of the core on ``round(alpha D)`` sequences of the seed."""
        return {"alpha": settings.alpha, "lam": settings.lam}

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

    def own_settings(self, settings: Any) -> dict[str, Any]:
        """Method ``sgd`` of the core, the seed's stream of fresh sequences."""
        return {"batch": settings.batch}


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
        multihead=True,
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
