"""``dynamics``: train attention by gradients, or follow its high-dimensional limit, and log it.

One point per ``(activation, seed)`` on one task (docs/dynamics.md): full-batch gradient descent
on the ERM objective at ``(alpha, D)`` (``gd``), online SGD with batch ``B`` and step ``eta``
(``sgd``), the population gradient flow (``flow``: ``D -> inf``, ``alpha -> inf``, ``eta -> 0``)
or the SGD ODE with its variance term (``sgd-ode``); each optionally projected on the sphere of
the start's norms (``sphere``). Every method runs on one clock, the ODE time (``eta`` per gd step,
``eta / D`` per sgd step), to ``t_max``; the trajectory is logged at log-spaced steps (overlaps,
cross overlaps, test error) and compared with the activation's population optimum and the Bayes
error. With several teacher heads, absent heads or several student heads (``heads``,
``presence``, ``student_heads``; docs/multihead.md, "Dynamics") a point runs ``H_s`` student heads
from a random start by any method (``gd``, ``sgd``, ``flow``, ``sgd-ode``) and
reads when each head specialises on which teacher head, or whether the run stalls.
"""

from __future__ import annotations

import dataclasses
import functools
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from bayes_slr.attention.activations import (
    SPHERE_ERF_FORM,
    activation_accepted,
    activation_names,
)
from bayes_slr.errors import ConfigError, Integer
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    flatten,
    option,
    register_experiment,
)
from bayes_slr.experiments.dynamics_view import (
    heads_notes,
    plot_errors,
    plot_head_overlaps,
    runs_frame,
    runs_table,
)
from bayes_slr.experiments.runner import in_current_terms, inner_progress, sweep_records
from bayes_slr.experiments.task import (
    describe_nu,
    resolved_nu,
    student_heads_option,
    task_config,
    task_option,
)
from bayes_slr.memory import (
    CHUNK_COPIES,
    check_channel_memory,
    check_dynamics_memory,
    check_erm_memory,
)
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.records import SweepLog
from bayes_slr.studies.dynamics import dynamics_point
from bayes_slr.studies.dynamics_data_methods import GD, SGD
from bayes_slr.studies.dynamics_erm import (
    DEFAULT_REPLICA_SAMPLES,
    ERM_NOTE,
    ERROR_SIGMAS,
    STATIONARITY,
    replica_warnings,
)
from bayes_slr.studies.dynamics_methods import (
    DEFAULT_BATCH,
    DEFAULT_LOG_POINTS,
    DEFAULT_N_TEST,
    DEFAULT_ODE_DRAWS,
    DEFAULT_T_MAX,
    DEFAULT_TOLERANCE,
    DynamicsRequest,
    DynamicsSettings,
    check_heads,
    dynamics_method_names,
    dynamics_methods,
    get_dynamics_method,
    heads_given,
)
from bayes_slr.studies.dynamics_ode_methods import (  # noqa: F401 (registers flow, sgd-ode)
    PopulationFlow,
)
from bayes_slr.studies.dynamics_records import (
    ESCAPE_LEVEL,
    DynamicsRun,
    HeadsDynamicsRow,
    optimum_warnings,
)
from bayes_slr.studies.dynamics_state import (
    PointState,
    divergence_kept,
    refuse_foreign_checkpoints,
    train_kept,
)

STARTS = ("random", "sphere", "teacher")
"""``random``: ``k, v ~ N(0, 0.01 I_D)``; ``sphere``: uniform on ``|k|^2 = |v|^2 = D``;
``teacher``: ``k = c_nu k*``, ``v = v*`` (the core's ``informed`` start)."""


@dataclasses.dataclass(frozen=True)
class DynamicsOptions(Options):
    """Settings of ``dynamics``: the task, the activations and seeds, the method and its clock."""

    variant: str = task_option("variant")
    nu: float | None = task_option("nu")
    L: int = task_option("L")
    variable_length: bool = task_option("variable_length")
    Delta: float = task_option("Delta")
    D: int = task_option(
        "D",
        default=500,
        help="token dimension, >= 1 (gd and sgd; the ODEs from a random or sphere start start at "
        "the overlaps, signs included, of the start the run of the same seed at this D draws)",
    )
    heads: int = task_option("heads")
    presence: float = task_option("presence")
    student_heads: int | None = student_heads_option("every method: gd, sgd, flow, sgd-ode")
    activations: tuple[str, ...] = option(
        ("softmax",),
        lambda: (
            f"the activations trained: {', '.join(activation_names())}, or {SPHERE_ERF_FORM} "
            "(the ICLR 2025 predecessor's erf(lambda chi), lambda > 0: erf_sphere_0.5)"
        ),
        metavar="ACTIVATION",
        accepts=activation_accepted,
    )
    seeds: tuple[int, ...] = option(
        (0,),
        "seeds, each >= 0: teacher, data, start, test set and SGD stream (the ODEs: the start "
        "of that seed's run at D and their Monte Carlo draws)",
        accepts=Integer(0),
    )
    method: str = option(
        "sgd",
        lambda: "; ".join(f"{method.name}: {method.description}" for method in dynamics_methods()),
        choices=dynamics_method_names,
    )
    start: str = option(
        "random",
        "random: k, v ~ N(0, 0.01 I); sphere: uniform on |k|^2 = |v|^2 = D; teacher: k = c_nu k*, "
        "v = v*",
        choices=STARTS,
    )
    sphere: bool = option(
        False, "projected dynamics: |k| and |v| stay at the start's (the ICLR 2025 predecessor's)"
    )
    t_max: float | None = option(
        None,
        "training time, > 0, on the common clock (eta per gd step, eta/D per sgd step)",
        default_text=f"{DEFAULT_T_MAX:g}, or from --steps",
    )
    steps: int | None = option(
        None,
        "optimiser steps, >= 1 (gd and sgd; instead of --t-max)",
        default_text="t_max / (time per step)",
    )
    eta: float | None = option(
        None,
        "step size, > 0 (gd, sgd, sgd-ode); linear and erf, whose weights sum to about L, want "
        "about 1/L of what softmax takes",
        default_text=f"{SGD.default_eta:g} for sgd and sgd-ode, {GD.default_eta:g} for gd",
    )
    batch: int | None = option(
        None,
        "sequences per SGD step, >= 1 (sgd, sgd-ode)",
        default_text=f"{DEFAULT_BATCH} for sgd and sgd-ode",
    )
    alpha: float | None = option(
        None,
        "samples per dimension N/D, > 0 (gd only, required there)",
        default_text="required for gd",
    )
    lam: float = option(0.0, "ridge of the ERM objective, >= 0 (gd only)")
    compare_erm: bool = option(
        True,
        "gd: also find the multi-start L-BFGS minimum of the same objective on the same data and "
        "solve the replica-symmetric ERM error at (alpha, lam); at_minimum: gd's gradient norm "
        f"<= {STATIONARITY:g} (L-BFGS's stopping rule), objective gap within max(gradient norm) x "
        f"distance, test errors within {ERROR_SIGMAS:g} combined standard errors",
    )
    replica_samples: int = option(
        DEFAULT_REPLICA_SAMPLES,
        "channel points of the replica ERM equations, shared by 8 scramblings, >= 16 (gd with "
        "--compare-erm)",
    )
    log_points: int = option(DEFAULT_LOG_POINTS, "about this many log-spaced logged steps, >= 2")
    N_test: int = option(DEFAULT_N_TEST, "test sequences per logged point, >= 2 (gd, sgd)")
    ode_draws: int = option(
        DEFAULT_ODE_DRAWS,
        "Monte Carlo draws of the ODEs' terms, an even number >= 2 (flow, sgd-ode)",
        aliases=("--mc-samples",),
    )
    tolerance: float = option(
        DEFAULT_TOLERANCE,
        "reached: the final test error at most this far above the population optimum, > 0",
    )

    def validate(self) -> None:
        """Refuse any value out of range, and settings that do not apply to the method."""
        if len(set(self.activation_names())) != len(self.activations):
            raise ConfigError("activations: each at most once")
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError("seeds: each at most once")
        self.config()
        self.settings()
        check_heads(self.method, self.request(), self.heads, self.presence, self.student_heads)
        self._check_memory(self.config())

    def _check_memory(self, config: SLRConfig) -> None:
        """Refuse a run that would not fit in memory (:mod:`bayes_slr.memory`), before any."""
        settings = self.settings()
        where = f"D = {config.D}, L = {config.Lbar}"
        if self.method == GD.name:
            N = training_size(settings.alpha, config.D)
            check_erm_memory(
                f"{where}, alpha = {settings.alpha:g}",
                N,
                config.Lbar,
                config.D,
                1,
                "use a smaller D, alpha or L",
            )
            return
        if self.method != SGD.name:  # the ODEs: their draws, and the start drawn at D
            check_channel_memory(self.ode_draws, config.Lbar, "use fewer ode_draws")
        heads = self.heads_run() or 1
        tokens = 0
        if self.heads_run() is not None and self.method == SGD.name:  # full batches, a test set
            tokens = (settings.N_test + CHUNK_COPIES * settings.batch) * config.Lbar * config.D
        check_dynamics_memory(
            where, config.D, max(heads, config.heads), tokens, "use a smaller D or L"
        )

    def filled(self) -> dict[str, object]:
        """The activations by their records' names, the variant's ``nu``, and the clock and step
        the method resolves (a record of resolved options reads back as it was written)."""
        settings = self.settings()
        resolved = {name: getattr(settings, name) for name in RESOLVED if hasattr(settings, name)}
        nu = resolved_nu(self.variant, self.nu)
        return {"activations": self.activation_names(), "nu": nu, **resolved}

    def activation_names(self) -> tuple[str, ...]:
        """The activations as their records name them (``erf_sphere_<lambda>`` written out)."""
        return tuple(activation_accepted("activations", a) for a in self.activations)

    def settings(self) -> DynamicsSettings:
        """The method's settings record of these options
        (:mod:`~bayes_slr.studies.dynamics_methods`)."""
        return get_dynamics_method(self.method).settings(self.request())

    def request(self) -> DynamicsRequest:
        """The method's settings as given."""
        return DynamicsRequest(**{name: getattr(self, name) for name in REQUEST_FIELDS})

    def config(self) -> SLRConfig:
        """The task (its ``D``: the dimension of a data run, the start's of an ODE)."""
        return task_config(
            self.variant,
            self.L,
            self.variable_length,
            self.nu,
            self.Delta,
            self.D,
            self.heads,
            self.presence,
        )

    def heads_run(self) -> int | None:
        """``H_s`` of a multi-head run (the teacher's heads by default), ``None`` for the
        one-head dynamics."""
        if not heads_given(self.heads, self.presence, self.student_heads):
            return None
        return self.heads if self.student_heads is None else self.student_heads


REQUEST_FIELDS = tuple(field.name for field in dataclasses.fields(DynamicsRequest))
RESOLVED = ("t_max", "steps", "eta", "batch")
"""The options a method fills in when left out (the clock, the step and the batch)."""


@dataclasses.dataclass(frozen=True)
class DynamicsPoint(Record):
    """One ``(activation, seed)``."""

    activation: str
    seed: int


@dataclasses.dataclass(frozen=True, repr=False)
class DynamicsResult(Result[DynamicsOptions, DynamicsRun]):
    """The runs of ``dynamics``, one row per ``(activation, seed)``: each a
    :class:`~bayes_slr.studies.dynamics_records.DynamicsRow`, or with student heads a
    :class:`~bayes_slr.studies.dynamics_records.HeadsDynamicsRow`
    (:mod:`~bayes_slr.experiments.dynamics_view`)."""

    def rows_table(self) -> str:
        """One line per run (:func:`~bayes_slr.experiments.dynamics_view.runs_table`)."""
        return runs_table(self.rows)

    def tidy_rows(self) -> list[dict[str, Any]]:
        """One flat row per run (the rows of :meth:`table` with every field of the run but its
        trajectory, which :meth:`trajectories` gives)."""
        summaries = []
        for row in self.rows:
            data = row.to_dict()
            data.pop("trajectory")
            summaries.append(flatten(data))
        return summaries

    def trajectories(self) -> Any:
        """A ``pandas.DataFrame`` with one row per logged point of every run (with student
        heads: per point, student head and teacher head;
        :func:`~bayes_slr.experiments.dynamics_view.runs_frame`)."""
        return runs_frame(self.rows)

    def plot(self, ax: Any = None) -> Any:
        """One head: the test error against the step (gd, sgd) or the time (ODEs), with the
        optima and the Bayes error; student heads: the cosine of each student key with each
        teacher key against the time."""
        options = self.options
        task = f"{options.variant} nu={describe_nu(options.nu)} L={options.L}"
        data = get_dynamics_method(options.method).data
        if options.heads_run() is not None:
            title = (
                f"{options.method}: {options.heads_run()} heads on {options.heads}, rho="
                f"{options.presence:g}, {task}"
            )
            return plot_head_overlaps(self.rows, title, ax)  # type: ignore[arg-type]
        title = (
            f"{options.method}{' (sphere)' if options.sphere else ''} from {options.start}: "
            f"{task}" + (f", D={options.D}" if data else "")
        )
        return plot_errors(self.rows, data, title, ax)  # type: ignore[arg-type]

    def heads_rows(self) -> tuple[HeadsDynamicsRow, ...]:
        """The rows of student heads, each a
        :class:`~bayes_slr.studies.dynamics_records.HeadsDynamicsRow` (none for one head)."""
        return tuple(row for row in self.rows if isinstance(row, HeadsDynamicsRow))


class Dynamics(Experiment[DynamicsOptions, DynamicsPoint, DynamicsRun, DynamicsResult]):
    """Training dynamics per activation and seed, against the population optimum."""

    name: ClassVar[str] = "dynamics"
    summary: ClassVar[str] = (
        "train attention by gd or online SGD, or follow the D -> inf flow, and log the trajectory"
    )
    description: ClassVar[str] = (
        "One run per (activation, seed) on one task (docs/dynamics.md): full-batch gradient "
        "descent on the ERM objective at alpha (gd), online SGD (sgd), the population gradient "
        "flow (flow) or the SGD ODE (sgd-ode), optionally projected on the sphere; logged at "
        "log-spaced steps (overlaps, cross overlaps, test error) on one clock, and compared with "
        "each activation's population optimum and the Bayes error. With --out, gd and sgd points "
        "keep a checkpoint at every logged step (the same command resumes them) and a diverging "
        "run stops the command (exit 3) with one line naming the step size and the file that "
        "keeps its last finite iterate. With --heads, --presence or --student-heads "
        "(docs/multihead.md) gd, sgd, flow and sgd-ode run H_s student heads from a random start "
        "on multi-head SLR and read when each head specialises on which teacher head, or whether "
        "the run stalls (gd beside the ERM trainer's minimum of its objective); the figure "
        "draws the cosines of the student keys with the teacher keys."
    )
    options_type = DynamicsOptions
    point_type = DynamicsPoint
    solved_type = DynamicsRun  # type: ignore[assignment]  (a tagged union of two rows)
    result_type = DynamicsResult
    sweep_axes: ClassVar[tuple[str, ...]] = ("activations", "seeds")

    def points(self, options: DynamicsOptions) -> list[DynamicsPoint]:
        """Every ``(activation, seed)``, activations outermost."""
        return [DynamicsPoint(a, s) for a in options.activations for s in options.seeds]

    def seed(self, options: DynamicsOptions) -> int | None:
        """The first seed (each row holds its own)."""
        return options.seeds[0]

    def check_output(self, options: DynamicsOptions, out: Path) -> None:
        """Refuse a folder holding the checkpoint of a point these options do not ask for."""
        records = sweep_records(self, options, self.points(options))
        refuse_foreign_checkpoints(out, (SweepLog.point_key(record) for record in records))

    def solve(self, options: DynamicsOptions, point: DynamicsPoint) -> DynamicsRun:
        """Run one point (no files kept) and compare its end with the theory."""
        return self.solve_in(options, point, None)

    def solve_in(
        self, options: DynamicsOptions, point: DynamicsPoint, folder: Path | None
    ) -> DynamicsRun:
        """Run one point, a one-head data method resuming from and keeping its checkpoint in
        ``folder`` (:mod:`~bayes_slr.studies.dynamics_state`), and compare its end with the
        theory; a point of student heads is read for specialisation
        (:mod:`~bayes_slr.studies.dynamics`)."""
        config = options.config()
        settings = dataclasses.replace(
            options.settings(), activation=point.activation, student_heads=options.heads_run()
        )
        if settings.student_heads is not None:
            return dynamics_point(config, settings, point.seed)
        label = f"{point.activation} seed {point.seed}"
        solve = functools.partial(dynamics_point, config, settings, point.seed)
        if get_dynamics_method(options.method).data:
            state = _point_state(self, options, point, folder)
            return solve(
                functools.partial(train_kept, state=state, progress=inner_progress(), label=label)
            )
        with divergence_kept(None, label, "not kept (an ODE keeps no state file)"):
            return solve()

    def collect(
        self,
        options: DynamicsOptions,
        solved: Sequence[tuple[DynamicsPoint, DynamicsRun]],
        provenance: Provenance,
    ) -> DynamicsResult:
        """The rows in the order of the points, with notes on the clock and the references."""
        rows = tuple(row for _, row in solved)
        method = get_dynamics_method(options.method)
        if options.heads_run() is not None:
            notes = list(heads_notes(method.data))
        else:
            notes = [
                "time is the ODE clock: eta per gd step, eta/D per sgd step (docs/dynamics.md); "
                f"escape_time: first time max(|m_k|, |k.v*/D|) reaches {ESCAPE_LEVEL:g}; "
                "reach_time: first logged time with the test error within tolerance "
                f"{options.tolerance:g} of the population optimum; reached: the final error "
                "within it",
            ]
        method_note = get_dynamics_method(options.method).note
        if method_note:
            notes.append(method_note)
        if any(row.erm for row in rows):
            notes.append(ERM_NOTE)
        if options.sphere:
            notes.append(
                "population_optimum is over all (k, v); a projected run keeps |k|^2/D and "
                "|v|^2/D at the start's and can end above it (its own optimum is on that sphere)"
            )
        warnings = optimum_warnings(rows) + replica_warnings(rows)
        return DynamicsResult(options, rows, provenance, tuple(notes), tuple(warnings))


def _point_state(
    experiment: Dynamics, options: DynamicsOptions, point: DynamicsPoint, folder: Path | None
) -> PointState | None:
    """Where a data-method point of a sweep in ``folder`` keeps its files (``None``: nowhere);
    its checkpoint carries the point's key in the sweep log."""
    if folder is None:
        return None
    (record,) = sweep_records(experiment, options, [point])
    key = SweepLog.point_key(record)
    return PointState(folder, point.activation, point.seed, key, in_current_terms(experiment))


DYNAMICS = register_experiment(Dynamics())
