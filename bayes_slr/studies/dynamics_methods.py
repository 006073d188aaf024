"""The methods of ``dynamics``: one registered object per method, each with its settings record.

A :class:`DynamicsMethod` resolves the settings a user gives (:class:`DynamicsRequest`: every
option of the command as given, ``None`` where left to the method) into its own typed settings
record (a :class:`DynamicsSettings` subclass: only what the method reads, every default filled
in), refusing a setting that does not apply to it, and runs one point from that record. The
registry imports without JAX (an experiment validates its options before any computation); the
methods are registered by their family modules, :mod:`bayes_slr.studies.dynamics_data_methods`
(``gd``, ``sgd``: training on data at dimension ``D``) and
:mod:`bayes_slr.studies.dynamics_ode_methods` (``flow``, ``sgd-ode``: the ``D -> inf`` ODEs).
Adding a method is one module: a settings record, a :class:`DynamicsMethod` subclass and a
:func:`register_dynamics_method` call. A method with the equations of several student heads on
multi-head SLR (docs/multihead.md, "Dynamics") says so (``multihead``) and defines
:meth:`DynamicsMethod.heads_trajectory`; the others refuse a multi-head task by name.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Callable
from typing import Any

from bayes_slr.errors import Accepts, ConfigError, Integer, Number, OrNone, validate_fields
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import Record
from bayes_slr.registry import Registry
from bayes_slr.studies.dynamics_erm import DEFAULT_REPLICA_SAMPLES
from bayes_slr.studies.dynamics_records import SPECIALISATION_LEVEL

DEFAULT_T_MAX = 40.0
DEFAULT_BATCH = 32
"""Online SGD moves the overlaps like the flow plus a noise of weight ``eta / B``, which raises
the error it ends at by about ``0.23 eta / B`` (softmax, spiked ``nu = 2``, ``L = 3``: the SGD ODE
ends 0.058 above the optimum at ``eta / B = 1/4``, 0.007 at ``1/32``): the default ``1/32`` ends
within the default tolerance."""
DEFAULT_LOG_POINTS = 40
DEFAULT_N_TEST = 20_000
DEFAULT_ODE_DRAWS = 2**16
DEFAULT_TOLERANCE = 0.01
"""The defaults of a request (the ``dynamics`` command's): logged points, test sequences per
logged point, the ODEs' Monte Carlo draws, and how far above the population optimum counts as
reaching it."""
T_MIN = 1e-2
"""First logged time after 0 of an ODE."""


@dataclasses.dataclass(frozen=True)
class DynamicsRequest(Record):
    """The settings of a ``dynamics`` point as given, before a method resolves them.

    Attributes
    ----------
    D : the token dimension (of a data run; the start's of an ODE).
    start : ``random``, ``sphere`` or ``teacher``.
    sphere : projected dynamics.
    t_max, steps : the clock (``None``: the method's default, or from the other).
    eta, batch : step size and batch (``None``: the method's default).
    alpha, lam : samples per dimension and ridge (data at fixed ``N``).
    compare_erm, replica_samples : the comparison of a run on fixed data with the ERM minimum.
    log_points, N_test, ode_draws, tolerance : the logging, the test sets, the ODEs' draws, and
        what counts as reaching the population optimum.
    """

    D: int
    start: str = "random"
    sphere: bool = False
    t_max: float | None = None
    steps: int | None = None
    eta: float | None = None
    batch: int | None = None
    alpha: float | None = None
    lam: float = 0.0
    compare_erm: bool = True
    replica_samples: int = DEFAULT_REPLICA_SAMPLES
    log_points: int = DEFAULT_LOG_POINTS
    N_test: int = DEFAULT_N_TEST
    ode_draws: int = DEFAULT_ODE_DRAWS
    tolerance: float = DEFAULT_TOLERANCE

    def __post_init__(self) -> None:
        validate_fields(self, REQUEST_ACCEPTS)
        if self.ode_draws % 2:
            raise ConfigError(f"ode_draws must be an even integer >= 2, got {self.ode_draws}")

    def given(self, name: str) -> bool:
        """Whether the setting ``name`` was given (not left to a method): set, and ``lam`` not 0."""
        value = getattr(self, name)
        return value != 0.0 if name == "lam" else value is not None


REQUEST_ACCEPTS: dict[str, Accepts] = {
    "D": Integer(1),
    "t_max": OrNone(Number(0.0, strict=True)),
    "steps": OrNone(Integer(1)),
    "eta": OrNone(Number(0.0, strict=True)),
    "batch": OrNone(Integer(1)),
    "alpha": OrNone(Number(0.0, strict=True)),
    "lam": Number(0.0),
    "replica_samples": Integer(16),  # 8 scramblings, 2 points each
    "log_points": Integer(2),
    "N_test": Integer(2),
    "ode_draws": Integer(2),
    "tolerance": Number(0.0, strict=True),
}
"""The accepted range of each field of :class:`DynamicsRequest` (the ``dynamics`` options as the
methods take them), checked when it is built."""

OPTIONAL = ("alpha", "lam", "eta", "batch", "steps")
"""The settings only some methods take: giving one to another method is refused."""


@dataclasses.dataclass(frozen=True)
class DynamicsSettings(Record):
    """What every method reads: the start, the projection, the clock's end, the logging.

    Attributes
    ----------
    method : the registered method.
    D : the dimension of a data run, the start's of an ODE.
    start, sphere : as :class:`DynamicsRequest`'s.
    t_max : the time reached.
    log_points : about this many logged points.
    tolerance : reached: the final error at most this above the population optimum.
    activation : the point's activation (a registered one).
    student_heads : ``H_s`` student heads on the multi-head task (``None``: the one-head
        dynamics); the method must have multi-head equations.
    level : the cosine level a run of heads is read at (:mod:`bayes_slr.studies.dynamics`), in
        ``(0, 1)``.

    The last three are the point's (keyword-only: every method's record has them, after its
    own fields).
    """

    method: str
    D: int
    start: str
    sphere: bool
    t_max: float
    log_points: int
    tolerance: float
    activation: str = dataclasses.field(default="softmax", kw_only=True)
    student_heads: int | None = dataclasses.field(default=None, kw_only=True)
    level: float = dataclasses.field(default=SPECIALISATION_LEVEL, kw_only=True)


@dataclasses.dataclass(frozen=True)
class DynamicsMethod:
    """A method of ``dynamics`` (module docstring); subclasses define :meth:`settings` and
    :meth:`trajectory`.

    Attributes
    ----------
    name : what ``method=`` and ``--method`` call it.
    description : one line for help texts.
    default_eta : the default step size (``None``: the method takes no step).
    data : whether it trains on data at dimension ``D`` (logged by step, resumable from a
        checkpoint) rather than integrating an ODE (logged by time).
    takes : the settings of :data:`OPTIONAL` it reads.
    note : a sentence the table of its runs shows (``""``: none).
    multihead : whether it has the equations of ``H_s`` student heads on multi-head SLR
        (docs/multihead.md, "Dynamics"): then it defines :meth:`heads_trajectory`.
    """

    name: str
    description: str
    default_eta: float | None
    data: bool
    takes: tuple[str, ...]
    note: str = ""
    multihead: bool = False

    def settings(self, request: DynamicsRequest) -> DynamicsSettings:
        """The method's settings of ``request``; ``ConfigError`` on a value out of range or a
        setting the method does not take."""
        raise NotImplementedError

    def trajectory(
        self,
        config: SLRConfig,
        activation: str,
        seed: int,
        settings: DynamicsSettings,
        train: Callable[[Any], Any] | None = None,
    ) -> Any:
        """The :class:`~bayes_slr.attention.trajectory.Trajectory` of one ``(activation, seed)``
        on the task ``config`` (JAX from here on); ``train`` runs a data method's
        :class:`~bayes_slr.attention.dynamics.TrainingRun` (default: ``train_dynamics``)."""
        raise NotImplementedError

    def heads_trajectory(
        self,
        config: SLRConfig,
        activation: str,
        student_heads: int,
        seed: int,
        settings: DynamicsSettings,
    ) -> Any:
        """The :class:`~bayes_slr.attention.trajectory.Trajectory` of ``student_heads`` heads
        of ``activation`` (its points :class:`~bayes_slr.attention.trajectory.HeadsPoint`) from
        the seed's random start on the task ``config`` (JAX from here on); only a method with
        ``multihead``."""
        raise NotImplementedError

    def check_heads(self, request: DynamicsRequest, heads: int, given: tuple[str, ...]) -> None:
        """``ConfigError`` unless this method runs student heads on an ``heads``-head teacher
        with ``request``'s start and dimension; ``given`` names the multi-head settings given
        (``heads``, ``presence``, ``student_heads``)."""
        if not self.multihead:
            takers = [method.name for method in _REGISTRY.items() if method.multihead]
            verb = "apply" if len(given) > 1 else "applies"
            raise ConfigError(
                f"{' and '.join(given)} {verb} to methods {_listed(takers)} only (method "
                f"{self.name} has no multi-head equations)"
            )
        if request.start != "random":
            raise ConfigError(
                "start: the multi-head dynamics start at random (k_j, v_j ~ N(0, 0.01 I)), got "
                f"{request.start}"
            )
        if request.sphere:
            raise ConfigError("sphere: the multi-head dynamics are not projected")
        if request.D < 2 * heads:
            raise ConfigError(
                f"D must be an integer >= {2 * heads} with {heads} heads (the teacher's keys and "
                f"values orthogonal), got {request.D}"
            )

    def refuse_others(self, request: DynamicsRequest) -> None:
        """``ConfigError`` naming the given settings of :data:`OPTIONAL` this method does not
        take, with the methods that do."""
        for name in OPTIONAL:
            if name in self.takes or not request.given(name):
                continue
            takers = _takers(name)
            together = [other for other in OPTIONAL if _takers(other) == takers]
            subject = " and ".join(together)
            verb = "apply" if len(together) > 1 else "applies"
            if len(takers) == 1:
                raise ConfigError(f"{subject} {verb} to method {takers[0]} only")
            raise ConfigError(f"{subject} {verb} to methods {_listed(takers)}")

    def steps(self, settings: DynamicsSettings) -> int | None:
        """The optimiser steps of a run with ``settings`` (``None``: an ODE)."""
        return None

    def compare(self, trajectory: Any, settings: DynamicsSettings) -> Any:
        """What the run's end is compared with beside the population optimum (``None``: nothing;
        ``gd``: the ERM minimum, :class:`~bayes_slr.studies.dynamics_erm.ERMComparison`), for
        one head or student heads."""
        return None

    def batch_size(self, request: DynamicsRequest) -> int:
        """``batch`` as given, or :data:`DEFAULT_BATCH`; ``ConfigError`` unless ``>= 1``."""
        return DEFAULT_BATCH if request.batch is None else request.batch

    def step_size(self, request: DynamicsRequest) -> float:
        """``eta`` as given, or the method's default; ``ConfigError`` unless ``> 0``."""
        return self.default_eta if request.eta is None else request.eta


def heads_given(heads: int, presence: float, student_heads: int | None) -> tuple[str, ...]:
    """The multi-head settings given: ``heads`` above 1, ``presence`` below 1, ``student_heads``
    other than 1 (none: the one-head dynamics)."""
    given = (
        ("heads", heads != 1),
        ("presence", presence != 1.0),
        ("student_heads", student_heads not in (None, 1)),
    )
    return tuple(name for name, differs in given if differs)


def check_heads(
    method: str, request: DynamicsRequest, heads: int, presence: float, student_heads: int | None
) -> None:
    """Refuse a student of fewer than one head, and a multi-head task or student ``method`` has
    no equations for, or a start and dimension they do not take."""
    given = heads_given(heads, presence, student_heads)
    if given:
        get_dynamics_method(method).check_heads(request, heads, given)


def _takers(name: str) -> list[str]:
    """The registered methods that take the setting ``name``."""
    return [method.name for method in _REGISTRY.items() if name in method.takes]


def _listed(names: list[str]) -> str:
    """``a, b and c``."""
    return names[0] if len(names) == 1 else f"{', '.join(names[:-1])} and {names[-1]}"


def resolved_clock(
    request: DynamicsRequest, time_per_step: float | None
) -> tuple[int | None, float]:
    """``(steps, t_max)`` from whichever was given (``time_per_step``: ``None`` for an ODE, which
    takes ``t_max`` only); both given must agree (a record of resolved options reads back as it
    was written)."""
    if request.steps is not None:
        steps = request.steps
        t_max = steps * time_per_step
        if request.t_max is not None and not math.isclose(request.t_max, t_max, rel_tol=1e-9):
            raise ConfigError("steps and t_max: give one of them (t_max = steps x time per step)")
        return steps, t_max
    t_max = DEFAULT_T_MAX if request.t_max is None else request.t_max
    if time_per_step is not None:
        steps = max(1, round(t_max / time_per_step))
        return steps, steps * time_per_step
    if t_max <= 2 * T_MIN:
        raise ConfigError(
            f"t_max must be > {2 * T_MIN:g} for the ODEs (logged from t = {T_MIN:g}); got {t_max:g}"
        )
    return None, t_max


def common_settings(method: DynamicsMethod, request: DynamicsRequest, t_max: float) -> dict:
    """The fields of :class:`DynamicsSettings` of ``request`` for ``method``."""
    return dict(
        method=method.name,
        D=request.D,
        start=request.start,
        sphere=request.sphere,
        t_max=t_max,
        log_points=request.log_points,
        tolerance=request.tolerance,
    )


_REGISTRY: Registry[DynamicsMethod] = Registry("method", DynamicsMethod)
register_dynamics_method = _REGISTRY.register
unregister_dynamics_method = _REGISTRY.unregister
get_dynamics_method = _REGISTRY.get
dynamics_method_names = _REGISTRY.names
dynamics_methods = _REGISTRY.items
