"""``dynamics``: train attention by gradients, or follow its high-dimensional limit, and log it.

One point per ``(activation, seed)`` on one task (docs/dynamics.md): full-batch gradient descent
on the ERM objective at ``(alpha, D)`` (``gd``), online SGD with batch ``B`` and step ``eta``
(``sgd``), the population gradient flow (``flow``: ``D -> inf``, ``alpha -> inf``, ``eta -> 0``)
or the SGD ODE with its variance term (``sgd-ode``); each optionally projected on the sphere of
the start's norms (``sphere``). Every method runs on one clock, the ODE time (``eta`` per gd step,
``eta / D`` per sgd step), to ``t_max``; the trajectory is logged at log-spaced steps (overlaps,
cross overlaps, test error) and compared with the activation's population optimum and the Bayes
error.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from collections.abc import Sequence
from pathlib import Path
from typing import Any, ClassVar

from bayes_slr.attention.activations import SPHERE_ERF_FORM, activation_names, check_activation
from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
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
from bayes_slr.experiments.dynamics_state import (
    PointState,
    divergence_kept,
    refuse_foreign_checkpoints,
    train_kept,
)
from bayes_slr.experiments.figures import new_axes
from bayes_slr.experiments.runner import in_current_terms, inner_progress, sweep_records
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import (
    check_nonempty,
    describe_nu,
    resolved_nu,
    task_config,
    task_option,
)
from bayes_slr.models.spec import training_size
from bayes_slr.records import SweepLog
from bayes_slr.studies.dynamics_erm import (
    DEFAULT_REPLICA_SAMPLES,
    ERM_NOTE,
    ERROR_SIGMAS,
    STATIONARITY,
    ERMComparison,
    compare_with_erm,
    replica_warnings,
)

METHODS = ("gd", "sgd", "flow", "sgd-ode")
"""``gd`` and ``sgd`` train on data at dimension ``D``; ``flow`` and ``sgd-ode`` integrate the
``D -> inf`` ODEs of :mod:`bayes_slr.formulas.flow` (the limits of ``gd`` and of ``sgd``)."""
DATA_METHODS = ("gd", "sgd")
STARTS = ("random", "sphere", "teacher")
"""``random``: ``k, v ~ N(0, 0.01 I_D)``; ``sphere``: uniform on ``|k|^2 = |v|^2 = D``;
``teacher``: ``k = c_nu k*``, ``v = v*`` (the core's ``informed`` start)."""
DEFAULT_T_MAX = 40.0
DEFAULT_ETA = {"gd": 0.1, "sgd": 1.0, "sgd-ode": 1.0}
DEFAULT_BATCH = 32
"""Online SGD moves the overlaps like the flow plus a noise of weight ``eta / B``, which raises
the error it ends at by about ``0.23 eta / B`` (softmax, spiked ``nu = 2``, ``L = 3``: the SGD ODE
ends 0.058 above the optimum at ``eta / B = 1/4``, 0.007 at ``1/32``): the default ``1/32`` ends
within the default tolerance."""
ESCAPE_LEVEL = 0.4
"""An escape from the start: the larger of ``|m_k|`` and ``|k.v*/D|`` reaches this level."""

ERM_COLUMNS = ("lbfgs_error", "replica_error", "objective_gap", "erm_reach_time", "at_minimum")
"""The comparison's columns of the ``dynamics`` table (the rest is in ``--json``)."""


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
    activations: tuple[str, ...] = option(
        ("softmax",),
        lambda: (
            f"the activations trained: {', '.join(activation_names())}, or {SPHERE_ERF_FORM} "
            "(the ICLR 2025 predecessor's erf(lambda chi), lambda > 0: erf_sphere_0.5)"
        ),
        metavar="ACTIVATION",
    )
    seeds: tuple[int, ...] = option(
        (0,),
        "seeds, each >= 0: teacher, data, start, test set and SGD stream (the ODEs: the start "
        "of that seed's run at D and their Monte Carlo draws)",
    )
    method: str = option(
        "sgd",
        "gd: full-batch gradient descent on the ERM objective at alpha; sgd: online SGD; "
        "flow: population gradient flow (D -> inf); sgd-ode: the SGD ODE (D -> inf)",
        choices=METHODS,
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
        default_text=f"{DEFAULT_ETA['sgd']:g} for sgd and sgd-ode, {DEFAULT_ETA['gd']:g} for gd",
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
        "channel draws of the replica ERM equations, >= 2 (gd with --compare-erm)",
    )
    log_points: int = option(40, "about this many log-spaced logged steps, >= 2")
    N_test: int = option(20_000, "test sequences per logged point, >= 2 (gd, sgd)")
    ode_draws: int = option(
        2**16,
        "Monte Carlo draws of the ODEs' terms, an even number >= 2 (flow, sgd-ode)",
        aliases=("--mc-samples",),
    )
    tolerance: float = option(
        0.01, "reached: the final test error at most this far above the population optimum, > 0"
    )

    def validate(self) -> None:
        """Refuse any value out of range, and settings that do not apply to the method."""
        check_choice("method", self.method, METHODS)
        check_choice("start", self.start, STARTS)
        check_nonempty("activations", self.activations)
        self._set(
            "activations", tuple(check_activation(a, "activations") for a in self.activations)
        )
        if len(set(self.activations)) != len(self.activations):
            raise ConfigError("activations: each at most once")
        check_nonempty("seeds", self.seeds)
        for seed in self.seeds:
            check_int("seeds", seed, 0)
        if len(set(self.seeds)) != len(self.seeds):
            raise ConfigError("seeds: each at most once")
        check_int("D", self.D, 1)
        config = task_config(
            self.variant, self.L, self.variable_length, self.nu, self.Delta, self.D
        )
        self._set("nu", resolved_nu(self.variant, self.nu))
        check_real("lam", self.lam, minimum=0.0)
        check_int("log_points", self.log_points, 2)
        check_int("N_test", self.N_test, 2)
        check_int("replica_samples", self.replica_samples, 2)
        samples = check_int("ode_draws", self.ode_draws, 2)
        if samples % 2:
            raise ConfigError(f"ode_draws must be an even integer >= 2, got {samples}")
        check_real("tolerance", self.tolerance, minimum=0.0, strict=True)
        data = self.method in DATA_METHODS
        if self.method == "gd":
            if self.alpha is None:
                raise ConfigError("alpha (samples per dimension, > 0) is required for method gd")
            check_real("alpha", self.alpha, minimum=0.0, strict=True)
            training_size(self.alpha, config.D)
        elif self.alpha is not None or self.lam != 0.0:
            raise ConfigError("alpha and lam apply to method gd only")
        if self.method == "flow":
            if self.eta is not None:
                raise ConfigError("eta applies to methods gd, sgd and sgd-ode (flow has no step)")
        else:
            eta = DEFAULT_ETA[self.method] if self.eta is None else self.eta
            self._set("eta", check_real("eta", eta, minimum=0.0, strict=True))
        if self.method in ("sgd", "sgd-ode"):
            batch = DEFAULT_BATCH if self.batch is None else self.batch
            self._set("batch", check_int("batch", batch, 1))
        elif self.batch is not None:
            raise ConfigError("batch applies to methods sgd and sgd-ode only")
        self._resolve_clock(data)

    def _resolve_clock(self, data: bool) -> None:
        """Fill in ``t_max`` and (gd, sgd) ``steps`` from whichever was given; both given must
        agree (a record of resolved options reads back as it was written)."""
        if self.steps is not None:
            if not data:
                raise ConfigError("steps applies to methods gd and sgd (the ODEs take t_max)")
            steps = check_int("steps", self.steps, 1)
            t_max = steps * self.time_per_step()
            if self.t_max is not None and not math.isclose(self.t_max, t_max, rel_tol=1e-9):
                raise ConfigError(
                    "steps and t_max: give one of them (t_max = steps x time per step)"
                )
            self._set("t_max", t_max)
            return
        t_max = DEFAULT_T_MAX if self.t_max is None else self.t_max
        t_max = check_real("t_max", t_max, minimum=0.0, strict=True)
        if data:
            steps = max(1, round(t_max / self.time_per_step()))
            self._set("steps", steps)
            t_max = steps * self.time_per_step()
        elif t_max <= 2e-2:
            raise ConfigError(
                f"t_max must be > 0.02 for the ODEs (logged from t = 0.01); got {t_max:g}"
            )
        self._set("t_max", t_max)

    def time_per_step(self) -> float:
        """ODE time of one step: ``eta`` (gd) or ``eta / D`` (sgd)."""
        return self.eta if self.method == "gd" else self.eta / self.D


@dataclasses.dataclass(frozen=True)
class DynamicsPoint(Record):
    """One ``(activation, seed)``."""

    activation: str
    seed: int


@dataclasses.dataclass(frozen=True)
class DynamicsTrajectory(Record):
    """The logged points of one run, one tuple per quantity (docs/dynamics.md).

    Attributes
    ----------
    step : optimiser steps at each logged point (``None`` for the ODEs).
    time : ODE time (``eta`` per gd step, ``eta / D`` per sgd step).
    m_k, q_k, m_v, q_v : overlaps ``k.k*/D``, ``k.k/D``, ``v.v*/D``, ``v.v/D``.
    k_vstar, v_kstar, k_v : cross overlaps (0 for the ODEs: their manifold).
    c : erf offset.
    test_error, test_stderr : excess test error and its standard error (the ODEs: the population
        error of the overlaps, Monte Carlo or closed form).
    loss : what the method descends at this point.
    """

    step: tuple[int, ...] | None
    time: tuple[float, ...]
    m_k: tuple[float, ...]
    q_k: tuple[float, ...]
    m_v: tuple[float, ...]
    q_v: tuple[float, ...]
    k_vstar: tuple[float, ...]
    v_kstar: tuple[float, ...]
    k_v: tuple[float, ...]
    c: tuple[float, ...]
    test_error: tuple[float, ...]
    test_stderr: tuple[float, ...]
    loss: tuple[float, ...]


@dataclasses.dataclass(frozen=True)
class DynamicsRow(Record):
    """One run and how it ended.

    Attributes
    ----------
    activation, seed, method, start, sphere, D : what ran (``D``: the dimension of a data run,
        the start's of an ODE).
    steps : optimiser steps (``None`` for the ODEs); ``t_max`` the time reached.
    trajectory : the logged points.
    final_error, final_stderr : test error at the end and its standard error.
    m_k, q_k, m_v, q_v, c : overlaps at the end.
    population_optimum : the activation's best population error (``None`` where the theory has
        none for it); ``optimum_note`` says when it is a limit (``|k| -> inf``).
    bayes_error : the population Bayes error of the task.
    escape_time : first time the larger of ``|m_k|`` and ``|k.v*/D|`` reaches
        :data:`ESCAPE_LEVEL` (``None``: the start is past it, or the run never got there).
    reach_time : first logged time with the test error within ``tolerance`` of the optimum.
    reached : whether the final test error is within ``tolerance`` of the population optimum.
    erm : gd with ``compare_erm``: the end against the L-BFGS minimum of the same objective and
        the replica theory (:class:`~bayes_slr.studies.dynamics_erm.ERMComparison`); else
        ``None``.
    """

    activation: str
    seed: int
    method: str
    start: str
    sphere: bool
    D: int
    steps: int | None
    t_max: float
    trajectory: DynamicsTrajectory
    final_error: float
    final_stderr: float
    m_k: float
    q_k: float
    m_v: float
    q_v: float
    c: float
    population_optimum: float | None
    optimum_note: str
    bayes_error: float
    escape_time: float | None
    reach_time: float | None
    reached: bool | None
    erm: ERMComparison | None = None


COLUMNS = (
    "activation",
    "seed",
    "method",
    "steps",
    "t_max",
    "final_error",
    "final_stderr",
    "population_optimum",
    "bayes_error",
    "escape_time",
    "reach_time",
    "reached",
)
POINT_FIELDS = tuple(field.name for field in dataclasses.fields(DynamicsTrajectory))


@dataclasses.dataclass(frozen=True, repr=False)
class DynamicsResult(Result[DynamicsOptions, DynamicsRow]):
    """The runs of ``dynamics``, one row per ``(activation, seed)``."""

    def rows_table(self) -> str:
        """One line per run: final error, optimum, Bayes error, steps, escape time, reached; for
        gd with the comparison, the L-BFGS and replica errors, the objective gap, the settling
        time and whether GD ended at the minimum."""
        columns = COLUMNS + (ERM_COLUMNS if any(r.erm for r in self.rows) else ())

        def cell(row: DynamicsRow, column: str) -> Any:
            erm_column = column in ERM_COLUMNS
            value = getattr(row.erm, column, None) if erm_column else getattr(row, column)
            if isinstance(value, bool) or column == "reached":
                return "n/a" if value is None else ("yes" if value else "no")
            return "-" if value is None else value

        return format_table(list(columns), [[cell(r, c) for c in columns] for r in self.rows])

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
        """A ``pandas.DataFrame`` with one row per logged point of every run: its activation,
        seed and method, the point's step, time, overlaps and test error, and the run's
        optimum and Bayes error."""
        import pandas as pd

        tidy = []
        for row in self.rows:
            trajectory = row.trajectory
            for i in range(len(trajectory.time)):
                point = {
                    name: (
                        None if getattr(trajectory, name) is None else getattr(trajectory, name)[i]
                    )
                    for name in POINT_FIELDS
                }
                tidy.append(
                    {
                        "activation": row.activation,
                        "seed": row.seed,
                        "method": row.method,
                        **point,
                        "population_optimum": row.population_optimum,
                        "bayes_error": row.bayes_error,
                    }
                )
        return pd.DataFrame(tidy)

    def plot(self, ax: Any = None) -> Any:
        """Test error against the step (gd, sgd) or the time (ODEs) on a log axis, one curve per
        run (one colour per activation); horizontal lines: the Bayes error and each
        activation's population optimum."""
        ax = new_axes(ax, size=(6, 4))
        data = self.options.method in DATA_METHODS
        colours = {a: f"C{i}" for i, a in enumerate(dict.fromkeys(r.activation for r in self.rows))}
        labelled: set[str] = set()
        for row in self.rows:
            x = row.trajectory.step if data else row.trajectory.time
            pairs = [(xi, e) for xi, e in zip(x, row.trajectory.test_error, strict=True) if xi > 0]
            label = None if row.activation in labelled else row.activation
            labelled.add(row.activation)
            ax.plot(
                [p[0] for p in pairs],
                [p[1] for p in pairs],
                color=colours[row.activation],
                lw=1.0,
                alpha=0.8,
                label=label,
            )
        optima = {r.activation: r.population_optimum for r in self.rows}
        for activation, optimum in optima.items():
            if optimum is not None:
                ax.axhline(optimum, color=colours[activation], lw=0.6, ls="--")
        if self.rows:
            ax.axhline(self.rows[0].bayes_error, color="k", lw=1.0, label="Bayes error")
        options = self.options
        ax.set(
            xscale="log",
            xlabel="step" if data else "time t",
            ylabel="excess test error",
            title=(
                f"{options.method}{' (sphere)' if options.sphere else ''} from {options.start}: "
                f"{options.variant} nu={describe_nu(options.nu)} L={options.L}"
                + (f", D={options.D}" if data else "")
            ),
        )
        ax.legend(fontsize=8)
        return ax


@functools.cache
def _references(activation: str, config: Any) -> tuple[float | None, str, float]:
    """The activation's population optimum (``None`` where the theory has none), its note, and
    the Bayes error (cached: every seed of an activation shares them)."""
    from bayes_slr.formulas.bayes import bayes_error_exact
    from bayes_slr.formulas.optimum import optimal_population_error

    try:
        optimum = optimal_population_error(activation, config)
        value, note = optimum.error, optimum.overlaps.note
    except ConfigError as exc:
        value, note = None, f"no population optimum: {exc}"
    return value, note, float(bayes_error_exact(config).value)


def _first(times: Sequence[float], values: Sequence[float], level: float) -> float | None:
    """First logged time where ``values`` come below ``level`` (``None``: never, or already at
    the start, which measures nothing)."""
    from bayes_slr.attention.trajectory import first_crossing

    if values[0] <= level:
        return None
    found = first_crossing(times, values, level)
    return None if math.isnan(found) else found


def _escape_time(trajectory: Any) -> float | None:
    """When the larger of ``|m_k|`` and ``|k.v*/D|`` first reaches :data:`ESCAPE_LEVEL`."""
    import numpy as np

    distance = np.maximum(np.abs(trajectory.column("m_k")), np.abs(trajectory.column("k_vstar")))
    if distance[0] >= ESCAPE_LEVEL:
        return None
    return _first(trajectory.column("time"), -distance, -ESCAPE_LEVEL)


def _run(options: DynamicsOptions, point: DynamicsPoint, state: PointState | None = None) -> Any:
    """The trajectory of one point (JAX from here on); a data method keeps its checkpoints and a
    divergence's last iterate in ``state`` (:mod:`bayes_slr.experiments.dynamics_state`)."""
    config = task_config(
        options.variant, options.L, options.variable_length, options.nu, options.Delta, options.D
    )
    start = "informed" if options.start == "teacher" else options.start
    label = f"{point.activation} seed {point.seed}"
    if options.method in DATA_METHODS:
        from bayes_slr.attention.dynamics import TrainingRun

        run = TrainingRun(
            config,
            point.activation,
            options.method,
            eta=options.eta,
            steps=options.steps,
            seed=point.seed,
            batch=options.batch or 1,
            alpha=options.alpha,
            lam=options.lam,
            start=start,
            sphere=options.sphere,
            log_points=options.log_points,
            N_test=options.N_test,
        )
        return train_kept(run, state, inner_progress(), label)
    from bayes_slr.formulas.flow import FlowRun, Overlaps, solve_flow

    sgd = dict(eta=options.eta, batch=options.batch) if options.method == "sgd-ode" else {}
    run = FlowRun(
        config,
        point.activation,
        (
            Overlaps.typical_start(start, options.D, config)
            if start == "informed"
            else Overlaps.seed_start(start, config, point.seed)
        ),
        t_max=options.t_max,
        method="sgd" if options.method == "sgd-ode" else "flow",
        sphere=options.sphere,
        log_points=options.log_points,
        t_min=1e-2,
        mc_samples=options.ode_draws,
        seed=point.seed,
        **sgd,
    )
    with divergence_kept(None, label, "not kept (an ODE keeps no state file)"):
        return solve_flow(run)


class Dynamics(Experiment[DynamicsOptions, DynamicsPoint, DynamicsRow, DynamicsResult]):
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
        "keeps its last finite iterate."
    )
    options_type = DynamicsOptions
    point_type = DynamicsPoint
    solved_type = DynamicsRow
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

    def solve(self, options: DynamicsOptions, point: DynamicsPoint) -> DynamicsRow:
        """Run one point (no files kept) and compare its end with the theory."""
        return self.solve_in(options, point, None)

    def solve_in(
        self, options: DynamicsOptions, point: DynamicsPoint, folder: Path | None
    ) -> DynamicsRow:
        """Run one point, a data method resuming from and keeping its checkpoint in ``folder``
        (:mod:`~bayes_slr.experiments.dynamics_state`), and compare its end with the theory."""
        trajectory = _run(options, point, _point_state(self, options, point, folder))
        erm = (
            compare_with_erm(trajectory, options.replica_samples)
            if options.method == "gd" and options.compare_erm
            else None
        )
        config = task_config(
            options.variant, options.L, options.variable_length, options.nu, options.Delta
        )
        optimum, note, bayes = _references(point.activation, config)
        columns = {name: tuple(float(x) for x in trajectory.column(name)) for name in POINT_FIELDS}
        data = options.method in DATA_METHODS
        columns["step"] = tuple(int(p.step) for p in trajectory.points) if data else None
        last = trajectory.last
        errors = columns["test_error"]
        reach = (
            None
            if optimum is None
            else _first(columns["time"], errors, optimum + options.tolerance)
        )
        if reach is None and optimum is not None and errors[0] <= optimum + options.tolerance:
            reach = 0.0
        return DynamicsRow(
            activation=point.activation,
            seed=point.seed,
            method=options.method,
            start=options.start,
            sphere=options.sphere,
            D=options.D,
            steps=options.steps if data else None,
            t_max=float(last.time),
            trajectory=DynamicsTrajectory(**columns),
            final_error=float(last.test_error),
            final_stderr=float(last.test_stderr),
            m_k=float(last.m_k),
            q_k=float(last.q_k),
            m_v=float(last.m_v),
            q_v=float(last.q_v),
            c=float(last.c),
            population_optimum=optimum,
            optimum_note=note,
            bayes_error=bayes,
            escape_time=_escape_time(trajectory),
            reach_time=reach,
            reached=None if optimum is None else last.test_error - optimum <= options.tolerance,
            erm=erm,
        )

    def collect(
        self,
        options: DynamicsOptions,
        solved: Sequence[tuple[DynamicsPoint, DynamicsRow]],
        provenance: Provenance,
    ) -> DynamicsResult:
        """The rows in the order of the points, with notes on the clock and the references."""
        rows = tuple(row for _, row in solved)
        notes = [
            "time is the ODE clock: eta per gd step, eta/D per sgd step (docs/dynamics.md); "
            f"escape_time: first time max(|m_k|, |k.v*/D|) reaches {ESCAPE_LEVEL:g}; reach_time: "
            f"first logged time with the test error within tolerance {options.tolerance:g} of the "
            "population optimum; reached: the final error within it",
        ]
        if options.method == "sgd":
            notes.append(
                "online SGD at finite eta/B ends above the population optimum by its noise: "
                "--method sgd-ode with the same eta and batch gives that level (D -> inf)"
            )
        if options.method == "gd":
            notes.append(
                "gd descends the empirical risk at alpha: its end is the ERM estimator, not the "
                "population optimum (alpha -> inf)"
            )
        if any(row.erm for row in rows):
            notes.append(ERM_NOTE)
        if options.sphere:
            notes.append(
                "population_optimum is over all (k, v); a projected run keeps |k|^2/D and "
                "|v|^2/D at the start's and can end above it (its own optimum is on that sphere)"
            )
        warnings = []
        for activation in dict.fromkeys(r.activation for r in rows):
            row = next(r for r in rows if r.activation == activation)
            if row.optimum_note:
                warnings.append(f"{activation}: {row.optimum_note}")
        warnings += replica_warnings(rows)
        return DynamicsResult(options, rows, provenance, tuple(notes), tuple(warnings))


def _point_state(
    experiment: Dynamics, options: DynamicsOptions, point: DynamicsPoint, folder: Path | None
) -> PointState | None:
    """Where a data-method point of a sweep in ``folder`` keeps its files (``None``: nowhere);
    its checkpoint carries the point's key in the sweep log."""
    if folder is None or options.method not in DATA_METHODS:
        return None
    (record,) = sweep_records(experiment, options, [point])
    key = SweepLog.point_key(record)
    return PointState(folder, point.activation, point.seed, key, in_current_terms(experiment))


DYNAMICS = register_experiment(Dynamics())
