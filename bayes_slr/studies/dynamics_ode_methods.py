"""The ``dynamics`` methods that integrate the ``D -> inf`` ODEs: ``flow`` and ``sgd-ode``.

The population gradient flow (the limit of ``gd`` as ``alpha -> inf``, ``eta -> 0``) and the SGD
ODE with its variance term (the limit of ``sgd`` at ``eta / B``) of
:mod:`bayes_slr.formulas.flow`, from the overlaps of the start the data run of the same seed
at ``D`` draws (or the teacher), logged at log-spaced times from ``t = 0.01``; for ``H_s``
student heads on multi-head SLR, the ODEs on the overlap matrices of
:mod:`bayes_slr.formulas.multihead_flow` from the random start the online-SGD run of the seed
draws.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.dynamics_methods import (
    T_MIN,
    DynamicsMethod,
    DynamicsRequest,
    DynamicsSettings,
    common_settings,
    register_dynamics_method,
    resolved_clock,
)


@dataclasses.dataclass(frozen=True)
class FlowSettings(DynamicsSettings):
    """The population gradient flow.

    Attributes
    ----------
    ode_draws : Monte Carlo draws of the ODE's terms, an even number.
    """

    ode_draws: int


@dataclasses.dataclass(frozen=True)
class SGDODESettings(FlowSettings):
    """The SGD ODE.

    Attributes
    ----------
    eta, batch : the step and batch of the online SGD it is the limit of (noise ``eta / B``).
    """

    eta: float
    batch: int


class PopulationFlow(DynamicsMethod):
    """``flow``: the population gradient flow (no step)."""

    def settings(self, request: DynamicsRequest) -> FlowSettings:
        """``t_max`` only on the clock."""
        self.refuse_others(request)
        _, t_max = resolved_clock(request, None)
        return FlowSettings(**common_settings(self, request, t_max), ode_draws=request.ode_draws)

    def flow_run(self, config: SLRConfig, activation: str, seed: int, settings: Any) -> Any:
        """The :class:`~bayes_slr.formulas.flow.FlowRun` of one point: from the teacher, or from
        the overlaps of the start the run of the seed at ``D`` draws."""
        from bayes_slr.formulas.flow import FlowRun, Overlaps

        start = (
            Overlaps.typical_start("informed", settings.D, config)
            if settings.start == "teacher"
            else Overlaps.seed_start(settings.start, config, seed)
        )
        return FlowRun(
            config,
            activation,
            start,
            t_max=settings.t_max,
            sphere=settings.sphere,
            log_points=settings.log_points,
            t_min=T_MIN,
            mc_samples=settings.ode_draws,
            seed=seed,
        )

    def trajectory(
        self,
        config: SLRConfig,
        activation: str,
        seed: int,
        settings: DynamicsSettings,
        train: Callable[[Any], Any] | None = None,
    ) -> Any:
        """The ODE solved (``train`` is not used: an ODE keeps no checkpoint)."""
        from bayes_slr.formulas.flow import solve_flow

        return solve_flow(self.flow_run(config, activation, seed, settings))

    def heads_flow_run(
        self, config: SLRConfig, activation: str, student_heads: int, seed: int, settings: Any
    ) -> Any:
        """The :class:`~bayes_slr.formulas.multihead_flow.HeadsFlowRun` of one point: from the
        overlaps, cross overlaps included, of the random start the online-SGD run of the seed at
        ``D`` draws (with its exact teacher)."""
        from bayes_slr.attention.dynamics import TrainingRun, seed_heads_start
        from bayes_slr.formulas.multihead_flow import HeadsFlowRun

        data_run = TrainingRun(
            config,
            activation,
            "sgd",
            1.0,
            1,
            seed=seed,
            token_draws="full",
            student_heads=student_heads,
        )
        return HeadsFlowRun(
            config,
            activation,
            seed_heads_start(data_run),
            settings.t_max,
            log_points=settings.log_points,
            t_min=T_MIN,
            mc_samples=settings.ode_draws,
            seed=seed,
        )

    def heads_trajectory(
        self,
        config: SLRConfig,
        activation: str,
        student_heads: int,
        seed: int,
        settings: Any,
    ) -> Any:
        """The multi-head ODE solved
        (:func:`~bayes_slr.formulas.multihead_flow.solve_heads_flow`)."""
        from bayes_slr.attention.trajectory import Trajectory
        from bayes_slr.formulas.multihead_flow import solve_heads_flow

        run = self.heads_flow_run(config, activation, student_heads, seed, settings)
        return Trajectory(run, solve_heads_flow(run).points)


class SGDODE(PopulationFlow):
    """``sgd-ode``: the SGD ODE, with the variance term of step ``eta`` and batch ``B``."""

    def settings(self, request: DynamicsRequest) -> SGDODESettings:
        """The flow's settings with the step and batch."""
        self.refuse_others(request)
        eta = self.step_size(request)
        batch = self.batch_size(request)
        _, t_max = resolved_clock(request, None)
        return SGDODESettings(
            **common_settings(self, request, t_max),
            ode_draws=request.ode_draws,
            eta=eta,
            batch=batch,
        )

    def flow_run(self, config: SLRConfig, activation: str, seed: int, settings: Any) -> Any:
        """The flow's run with the SGD variance term (the core's method ``sgd``)."""
        run = super().flow_run(config, activation, seed, settings)
        return dataclasses.replace(run, method="sgd", eta=settings.eta, batch=settings.batch)

    def heads_flow_run(
        self, config: SLRConfig, activation: str, student_heads: int, seed: int, settings: Any
    ) -> Any:
        """The multi-head flow's run with the SGD noise term."""
        run = super().heads_flow_run(config, activation, student_heads, seed, settings)
        return dataclasses.replace(run, method="sgd", eta=settings.eta, batch=settings.batch)


FLOW = register_dynamics_method(
    PopulationFlow(
        "flow",
        "population gradient flow (D -> inf)",
        default_eta=None,
        data=False,
        takes=(),
        multihead=True,
    )
)
SGD_ODE = register_dynamics_method(
    SGDODE(
        "sgd-ode",
        "the SGD ODE (D -> inf)",
        default_eta=1.0,
        data=False,
        takes=("eta", "batch"),
        multihead=True,
    )
)
