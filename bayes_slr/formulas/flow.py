"""The high-dimensional limit of training: ODEs on the order parameters (docs/dynamics.md).

As ``D -> inf`` a run of :mod:`bayes_slr.attention.dynamics` (same update rule and clock) follows
an ODE on ``(m_k, rho_k, m_v, rho_v, c)``, with ``rho = q - m^2`` the squared norm (over ``D``) of
the part of ``k`` (or ``v``) orthogonal to the teacher, on the manifold where the cross overlaps
vanish (which the flow preserves: the reflection of ``v*`` maps the risk to itself and flips the
three cross overlaps). With ``k = m_k k* + r_k sqrt(D) e``, ``r = sqrt(rho)``, the population risk
(docs/model.md section 4) is ``E = 1 - 2 m_v A(m_k, r_k, c) + (m_v^2 + r_v^2) B(m_k, r_k, c)``, and
the gradient flow ``d theta/dt = -D grad (E/2)`` becomes the flow of ``E/2`` in these coordinates:

``dm/dt = -dE/dm / 2``, ``drho/dt = -r dE/dr`` (for ``k`` and for ``v``), ``dc/dt = -dE/dc / 2``;

``r dE/dr`` is even in ``r`` and smooth in ``rho``, so nothing is singular where ``q = m^2``.

- ``method="flow"``: population gradient flow (the limit of ``gd`` as ``alpha -> inf``,
  ``eta -> 0``, and of ``sgd`` as ``eta / B -> 0``).
- ``method="sgd"``: online SGD with step ``eta`` per sequence and batch ``B`` (time ``eta / D``
  per step): the noise of a finite step adds ``(eta / B) V`` to ``drho/dt``, with
  ``V_k = E[(y - f)^2 sum_l (df/dchi_l)^2]`` and ``V_v = E[(y - f)^2 sum_l s_l^2]`` (the squared
  norms of one sequence's gradients, ``D -> inf``); ``m`` and ``c`` get no noise term.
- ``sphere=True``: ``q_k``, ``q_v`` stay at their start values; the velocity of ``(m, r)`` is
  projected on the circle ``m^2 + r^2 = q`` and the noise (sgd) is removed by the radial
  retraction, which adds ``-(eta V / (2 B q)) m`` to ``dm/dt``.

``A``, ``B``, their gradients and ``V`` are Monte Carlo averages over one set of draws of the
population law of the scores (:mod:`bayes_slr.formulas.channel`, the location integrated with the
teacher's posterior, the student noise ``u`` in antithetic pairs), made once per run, so the
right-hand side is a smooth deterministic function (JAX autodiff gives the gradients) and SciPy's
``solve_ivp`` integrates it. The antithetic pairs keep the symmetries exact: for an odd activation
(``erf_sphere``) ``A = 0`` at ``m_k = 0``, so the saddle at ``m = 0`` is exactly a fixed point.
The draws' accuracy is checked against the quadrature of :mod:`bayes_slr.formulas.population` in the
tests; the reported test error is the Monte Carlo ``E`` with its standard error.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from bayes_slr.attention.activations import activation_accepted, get_activation
from bayes_slr.attention.trajectory import (
    Checkpoint,
    DivergenceError,
    OnLog,
    Trajectory,
    TrajectoryPoint,
    log_spaced_times,
)
from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Integer,
    Number,
    OneOf,
    OrNone,
    validate_fields,
)
from bayes_slr.formulas.channel import draw_channel
from bayes_slr.formulas.population import OVERLAP_ACCEPTS
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import PlantedScores
from bayes_slr.numerics.record import Record

METHODS = ("flow", "sgd")
TERMS = ("auto", "closed_form", "monte_carlo")
"""ODEs: population gradient flow, online SGD with its variance term."""
MC_SAMPLES = 2**16
"""Default number of draws (antithetic pairs count twice): the relative Monte Carlo error of
``A``, ``B`` is a few 1e-3 (measured in the tests against the quadrature)."""
RTOL, ATOL = 1e-7, 1e-9
"""Tolerances of ``solve_ivp`` (far below the Monte Carlo error of the right-hand side)."""


INTEGRATION_ACCEPTS: dict[str, Accepts] = {
    "method": OneOf(METHODS),
    "t_max": Number(0.0, strict=True),
    "t_min": Number(0.0, strict=True),
    "batch": Integer(1),
    "eta": OrNone(Number(0.0, strict=True)),
    "log_points": Integer(2),
    "mc_samples": Integer(2),
    "seed": Integer(0),
}
"""The accepted range of each setting every ODE run shares (:class:`FlowRun` and the multi-head
flow's run)."""


def check_integration_settings(run: Any) -> None:
    """Check and normalise, on the frozen ``run``, what every ODE run shares
    (:data:`INTEGRATION_ACCEPTS`), then what they accept together: ``t_min < t_max``, ``eta``
    (required) and ``batch`` for SGD only, an even ``mc_samples`` (``ConfigError`` naming the bad
    one)."""
    validate_fields(run, INTEGRATION_ACCEPTS)
    if run.t_min >= run.t_max:
        raise ConfigError(f"t_min must be < t_max = {run.t_max:g}, got {run.t_min!r}")
    if run.method == "sgd" and run.eta is None:
        raise ConfigError(f"eta must be a number > 0 (finite), got {run.eta!r}")
    if run.method != "sgd" and (run.eta is not None or run.batch != 1):
        raise ConfigError("eta and batch apply to method sgd only (flow has no step)")
    if run.mc_samples % 2:
        raise ConfigError(f"mc_samples must be an even integer >= 2, got {run.mc_samples!r}")


@dataclasses.dataclass(frozen=True)
class Overlaps:
    """A point on the manifold of vanishing cross overlaps: ``m_k, q_k, m_v, q_v`` and the offset
    ``c``. ``ConfigError`` unless ``q >= m^2``."""

    m_k: float
    q_k: float
    m_v: float
    q_v: float
    c: float = 0.0

    def __post_init__(self) -> None:
        validate_fields(self, OVERLAP_ACCEPTS)
        for m_name, q_name in (("m_k", "q_k"), ("m_v", "q_v")):
            q, m = getattr(self, q_name), getattr(self, m_name)
            if q < m**2 * (1.0 - 1e-12):
                raise ConfigError(
                    f"{q_name} must be >= {m_name}^2 = {m**2:.6g} (Cauchy-Schwarz), got {q!r}"
                )

    @classmethod
    def of_point(cls, point: TrajectoryPoint) -> Overlaps:
        """The overlaps of a logged point (cross overlaps dropped): an ODE started where a run
        started."""
        return cls(
            point.m_k,
            max(point.q_k, point.m_k**2),
            point.m_v,
            max(point.q_v, point.m_v**2),
            point.c,
        )

    @classmethod
    def typical_start(cls, start: str, D: int, config: SLRConfig) -> Overlaps:
        """The start of :mod:`bayes_slr.attention.dynamics` at dimension ``D``, with ``m`` at its
        typical size and a positive sign: ``random`` ``q_k = q_v = 0.01``,
        ``m_k = m_v = +0.1 / sqrt(D)``; ``sphere`` ``q = 1``, ``m = +1 / sqrt(D)``; ``informed``
        the teacher (``m_k = c_nu``, or 1 at ``nu = inf``; ``m_v = q_v = 1``). A run's own start
        has ``m`` of either sign: :meth:`seed_start` is the one a given seed draws."""
        if start == "informed":
            c_nu = config.c_nu if math.isfinite(config.c_nu) else 1.0
            return cls(c_nu, c_nu**2, 1.0, 1.0)
        scale = {"random": 0.1, "sphere": 1.0}.get(start)
        if scale is None:
            raise ConfigError(f"start must be one of random, sphere, informed; got {start!r}")
        m = scale / math.sqrt(D)
        return cls(m, scale**2, m, scale**2)

    @classmethod
    def seed_start(cls, start: str, config: SLRConfig, seed: int) -> Overlaps:
        """The overlaps (cross overlaps dropped) of the start that a training run of seed
        ``seed`` at dimension ``config.D`` draws (:func:`~bayes_slr.attention.dynamics.
        seed_start_overlaps`, exact teacher), signs included: the ODE of that run's own start."""
        from bayes_slr.attention.dynamics import seed_start_overlaps

        overlaps = seed_start_overlaps(config, start, seed)
        return cls(**{name: overlaps[name] for name in ("m_k", "q_k", "m_v", "q_v", "c")})


@dataclasses.dataclass(frozen=True)
class FlowRun(Record):
    """One ODE trajectory. Checked on creation (``ConfigError``).

    Attributes
    ----------
    config : the task (``D`` is ignored: the limit ``D -> inf``).
    activation : a registered activation.
    start : initial overlaps (:meth:`Overlaps.typical_start`, :meth:`Overlaps.of_point`).
    t_max : final time, ``> 0``.
    method : ``"flow"`` or ``"sgd"``.
    eta : SGD step per sequence, ``> 0`` (sgd only).
    batch : SGD batch, an integer ``>= 1`` (sgd only).
    sphere : projected dynamics (``q_k``, ``q_v`` fixed at the start's).
    log_points : logged times (0 and ``log_points - 1`` log-spaced from ``t_min``), ``>= 2``.
    t_min : first logged time after 0, in ``(0, t_max)``.
    mc_samples : Monte Carlo draws, an even integer ``>= 2``.
    seed : seed of the draws.
    terms : how ``A``, ``B`` are computed: ``"monte_carlo"`` (the draws), ``"closed_form"``
        (:func:`closed_form_available`), or ``"auto"`` (closed form where available). The SGD
        variance term always uses the draws.
    """

    config: SLRConfig
    activation: str
    start: Overlaps
    t_max: float
    method: str = "flow"
    eta: float | None = None
    batch: int = 1
    sphere: bool = False
    log_points: int = 64
    t_min: float = 1e-2
    mc_samples: int = MC_SAMPLES
    seed: int = 0
    terms: str = "auto"

    def __post_init__(self) -> None:
        if not isinstance(self.config, SLRConfig):
            raise ConfigError(f"config must be an SLRConfig, got {type(self.config).__name__}")
        if not isinstance(self.start, Overlaps):
            raise ConfigError(f"start must be Overlaps, got {type(self.start).__name__}")
        validate_fields(self, {"activation": activation_accepted, "terms": OneOf(TERMS)})
        check_integration_settings(self)
        if self.terms == "closed_form" and not closed_form_available(self.activation, self.config):
            raise ConfigError(
                f"terms='closed_form' needs an element-wise activation with closed-form moments on "
                f"a planted law; {self.activation} on {self.config.variant} has none (use 'auto')"
            )

    @property
    def noise(self) -> float:
        """``eta / B``: the weight of the SGD variance term (0 for the flow)."""
        return 0.0 if self.method == "flow" else self.eta / self.batch


class ScoreDraws(NamedTuple):
    """Draws of the population law of the scores, ``(n, Lbar)`` each, in antithetic pairs.

    ``chi_star``, ``z_star``: teacher scores; ``p_star``: the teacher's location posterior;
    ``u``, ``w``: the student's key and value noise (``u`` flips sign in the second half);
    ``mask``: real tokens.
    """

    chi_star: jax.Array
    z_star: jax.Array
    p_star: jax.Array
    u: jax.Array
    w: jax.Array
    mask: jax.Array


def draw_scores(key: jax.Array, config: SLRConfig, n: int) -> ScoreDraws:
    """``n`` draws (``n/2`` from the channel, each paired with its ``u -> -u`` mirror)."""
    half = draw_channel(key, config, n // 2)
    chi_star, z_star = half.h_star[..., 0], half.h_star[..., 1]
    p_star = config.law.location_posterior(chi_star, half.mask, config.nu)

    def pair(a: jax.Array, mirror: bool = False) -> jax.Array:
        return jnp.concatenate([a, -a if mirror else a])

    return ScoreDraws(
        pair(chi_star),
        pair(z_star),
        pair(p_star),
        pair(half.xi[..., 0], mirror=True),
        pair(half.xi[..., 1]),
        pair(half.mask),
    )


def closed_form_available(activation: str, config: SLRConfig) -> bool:
    """Whether ``A`` and ``B`` have closed forms: an element-wise activation with a Gaussian mean
    and second moment (linear, ``erf_sphere``) on a planted law (spiked), where
    ``A = E[s(chi_loc)]`` and ``B = (E[L] - 1) E[s(chi_0)^2] + E[s(chi_loc)^2]``
    (:mod:`bayes_slr.formulas.elementwise`)."""
    record = get_activation(activation)
    return (
        not record.normalised
        and record.gaussian_mean is not None
        and record.gaussian_second_moment is not None
        and isinstance(config.law.population_scores(config.nu), PlantedScores)
    )


def _key_terms(m_k, r_k, c, draws, activation: str, config: SLRConfig | None):
    """``(A, B)`` at the key ``(m_k, r_k)``: closed forms when ``config`` is given, else the
    draws' averages."""
    record = get_activation(activation)
    if config is not None:
        shift = m_k * config.law.population_scores(config.nu).shift
        q_k = m_k**2 + r_k**2
        located = record.gaussian_second_moment(shift, jnp.sqrt(q_k), c)
        other = record.gaussian_second_moment(0.0, jnp.sqrt(q_k), c)
        return record.gaussian_mean(shift, q_k, c), (config.length.mean() - 1.0) * other + located
    s = record.weights((m_k * draws.chi_star + r_k * draws.u) * draws.mask, draws.mask, c)
    return jnp.sum(draws.p_star * s, -1), jnp.sum(s**2, -1)


def _risk(theta: jax.Array, draws, activation: str, config: SLRConfig | None) -> jax.Array:
    """``E = 1 - 2 m_v A + (m_v^2 + r_v^2) B`` (per draw with Monte Carlo terms);
    ``theta = (m_k, r_k, m_v, r_v, c)``."""
    m_k, r_k, m_v, r_v, c = theta
    a_value, b_value = _key_terms(m_k, r_k, c, draws, activation, config)
    return 1.0 - 2.0 * m_v * a_value + (m_v**2 + r_v**2) * b_value


def _gradient_noise(theta: jax.Array, draws: ScoreDraws, activation: str, Delta):
    """``(V_k, V_v)``: mean squared norms of one sequence's gradients in ``k`` and ``v`` (``D``
    times the per-coordinate scale), the location and label noise integrated."""
    m_k, r_k, m_v, r_v, c = theta
    z = m_v * draws.z_star + r_v * draws.w
    record = get_activation(activation)

    def output(chi, z_row, mask_row):
        return jnp.sum(record.weights(chi, mask_row, c) * z_row)

    chi = (m_k * draws.chi_star + r_k * draws.u) * draws.mask
    f, key_gradient = jax.vmap(jax.value_and_grad(output))(chi, z, draws.mask)
    s = record.weights(chi, draws.mask, c)
    residual = jnp.sum(draws.p_star * (draws.z_star - f[:, None]) ** 2, -1) + Delta
    return (
        jnp.mean(residual * jnp.sum(key_gradient**2, -1)),
        jnp.mean(residual * jnp.sum(s**2, -1)),
    )


def _overlaps(y: jax.Array, q: jax.Array, sphere: bool) -> tuple[jax.Array, ...]:
    """``(m_k, r_k, m_v, r_v, c)`` of the ODE state ``y``: ``(m_k, rho_k, m_v, rho_v, c)``, or on
    the sphere the angles to the teacher ``(phi_k, phi_v, c)`` with ``m = sqrt(q) cos phi``."""
    if sphere:
        phi, c = y[:2], y[2]
        m, r = jnp.sqrt(q) * jnp.cos(phi), jnp.sqrt(q) * jnp.sin(phi)
        return m[0], r[0], m[1], r[1], c
    m_k, rho_k, m_v, rho_v, c = y
    return m_k, jnp.sqrt(jnp.maximum(rho_k, 0.0)), m_v, jnp.sqrt(jnp.maximum(rho_v, 0.0)), c


@functools.partial(
    jax.jit, static_argnames=("config", "activation", "closed_form", "sphere", "with_noise")
)
def _rates(
    y: jax.Array,
    q: jax.Array,
    draws: ScoreDraws,
    noise: jax.Array,
    config: SLRConfig,
    *,
    activation: str,
    closed_form: bool,
    sphere: bool,
    with_noise: bool,
) -> jax.Array:
    """``dy/dt`` (module docstring); ``q`` the fixed norms on the sphere, ``noise = eta / B``."""
    theta = jnp.stack(_overlaps(y, q, sphere))
    terms_config = config if closed_form else None
    gradient = jax.grad(lambda t: jnp.mean(_risk(t, draws, activation, terms_config)))(theta)
    m, r = theta[jnp.array([0, 2])], theta[jnp.array([1, 3])]
    d_m, d_r = gradient[jnp.array([0, 2])], gradient[jnp.array([1, 3])]
    spread = (
        noise * jnp.stack(_gradient_noise(theta, draws, activation, config.Delta))
        if with_noise
        else jnp.zeros(2)
    )
    c_rate = -0.5 * gradient[4]
    if sphere:
        # the velocity of (m, r) projected on the circle of radius sqrt(q); the retraction of a
        # noisy step adds -(spread / 2q) m to dm/dt, i.e. (spread / 2q) cot(phi) to dphi/dt
        phi = y[:2]
        phi_rate = 0.5 * (r * d_m - m * d_r) / q + 0.5 * spread / q / jnp.tan(phi)
        return jnp.stack([phi_rate[0], phi_rate[1], c_rate])
    m_rate, rho_rate = -0.5 * d_m, -r * d_r + spread
    return jnp.stack([m_rate[0], rho_rate[0], m_rate[1], rho_rate[1], c_rate])


@functools.partial(jax.jit, static_argnames=("config", "activation", "closed_form", "sphere"))
def _risk_and_stderr(y, q, draws, config, *, activation: str, closed_form: bool, sphere: bool):
    theta = jnp.stack(_overlaps(y, q, sphere))
    values = _risk(theta, draws, activation, config if closed_form else None)
    if closed_form:
        return values, jnp.zeros(())
    pairs = 0.5 * (values[: values.size // 2] + values[values.size // 2 :])
    return jnp.mean(pairs), jnp.std(pairs, ddof=1) / jnp.sqrt(pairs.size)


PHI_FLOOR = 1e-6
"""Smallest angle to the teacher of a noisy (sgd) run on the sphere: the noise term is
``cot(phi)``, infinite at exact alignment, which the noise leaves at once (``phi^2`` grows
linearly); starting at this angle instead of 0 changes nothing visible."""


class _System(NamedTuple):
    """A run's ODE: its right-hand side, the initial state, the risk and the state's overlaps."""

    rates: Any
    y0: np.ndarray
    risk: Any
    overlaps: Any


def _system(run: FlowRun) -> _System:
    closed_form = run.terms == "closed_form" or (
        run.terms == "auto" and closed_form_available(run.activation, run.config)
    )
    with_noise = run.noise > 0.0
    draws = (
        draw_scores(jax.random.PRNGKey(run.seed), run.config, run.mc_samples)
        if with_noise or not closed_form
        else None
    )
    start, q = run.start, jnp.asarray([run.start.q_k, run.start.q_v])
    config = run.config.replace(D=1)  # static and D-free: one compilation for every D
    if run.sphere:
        phi = np.arccos(
            np.clip([start.m_k / math.sqrt(start.q_k), start.m_v / math.sqrt(start.q_v)], -1.0, 1.0)
        )
        if with_noise:
            phi = np.clip(phi, PHI_FLOOR, math.pi - PHI_FLOOR)
        y0 = np.array([phi[0], phi[1], start.c])
    else:
        y0 = np.array(
            [start.m_k, start.q_k - start.m_k**2, start.m_v, start.q_v - start.m_v**2, start.c]
        )
    static = dict(activation=run.activation, closed_form=closed_form, sphere=run.sphere)
    return _System(
        functools.partial(
            _rates,
            q=q,
            draws=draws,
            noise=jnp.asarray(run.noise),
            config=config,
            with_noise=with_noise,
            **static,
        ),
        y0,
        functools.partial(_risk_and_stderr, q=q, draws=draws, config=config, **static),
        lambda y: _overlaps(jnp.asarray(y), q, run.sphere),
    )


def _point(y: np.ndarray, time: float, system: _System, Delta: float) -> TrajectoryPoint:
    m_k, r_k, m_v, r_v, c = (float(x) for x in system.overlaps(y))
    error, stderr = (float(x) for x in system.risk(jnp.asarray(y)))
    return TrajectoryPoint(
        step=None,
        time=float(time),
        m_k=m_k,
        q_k=m_k**2 + r_k**2,
        m_v=m_v,
        q_v=m_v**2 + r_v**2,
        k_vstar=0.0,
        v_kstar=0.0,
        k_v=0.0,
        c=c,
        test_error=error,
        test_stderr=stderr,
        loss=0.5 * (error + Delta),
    )


def solve_flow(run: FlowRun, *, on_log: OnLog | None = None) -> Trajectory:
    """Integrate the ODE of ``run`` (module docstring) and log it at log-spaced times.

    Parameters
    ----------
    run : FlowRun
    on_log : called with a :class:`~bayes_slr.attention.trajectory.Checkpoint` per logged point
        (``state``: the ODE state, :func:`_overlaps`).

    Returns
    -------
    Trajectory
        Cross overlaps are 0 (the manifold); ``test_error`` is the population error (Monte Carlo
        with its standard error, or exact with ``stderr = 0`` for closed-form terms); ``final``
        the last state.

    Raises
    ------
    DivergenceError
        The solver failed or the state became non-finite (``eta``: the run's, 0 for the flow).
    """
    if not isinstance(run, FlowRun):
        raise ConfigError(f"run must be a FlowRun, got {type(run).__name__}")
    system = _system(run)
    times = log_spaced_times(run.t_max, run.t_min, run.log_points)
    solution = solve_ivp(
        lambda t, y: np.asarray(system.rates(y)),
        (0.0, run.t_max),
        system.y0,
        method="RK45",
        t_eval=times,
        rtol=RTOL,
        atol=ATOL,
    )
    points: list[TrajectoryPoint] = []
    for i, time in enumerate(solution.t):
        y = solution.y[:, i]
        if not np.all(np.isfinite(y)):
            break
        points.append(_point(y, time, system, run.config.Delta))
        if on_log is not None:
            on_log(Checkpoint(None, y, tuple(points)))
    if len(points) < times.size:
        raise DivergenceError(
            run.method,
            run.eta or 0.0,
            math.nan,
            float(times[len(points)]),
            Checkpoint(None, solution.y[:, len(points) - 1], tuple(points)) if points else None,
        )
    return Trajectory(run, tuple(points), solution.y[:, -1])


def matching_flow(
    trajectory: Trajectory,
    *,
    start: int = 0,
    log_points: int = 200,
    mc_samples: int = MC_SAMPLES,
    seed: int = 0,
) -> FlowRun:
    """The ODE that a training run follows as ``D -> inf``, from one of its logged points.

    ``trajectory`` comes from :func:`~bayes_slr.attention.dynamics.train_dynamics`: online SGD
    maps to ``method="sgd"`` with its ``eta`` and batch, gradient descent to the population flow
    (its ``alpha -> inf``, ``eta -> 0`` limit); the activation, task and projection are the run's.
    The ODE starts at the overlaps of ``trajectory.points[start]`` (cross overlaps dropped) and
    ends at the run's last logged time.
    """
    settings = trajectory.settings
    if not hasattr(settings, "time_per_step"):
        raise ConfigError("trajectory must come from a training run (train_dynamics)")
    first, end = trajectory.points[start], trajectory.last.time
    later = [p.time for p in trajectory.points[start + 1 :] if p.time > first.time]
    if not later:
        raise ConfigError(f"start must be a logged point before the last; got {start}")
    method = dict(method="sgd", eta=settings.eta, batch=settings.batch)
    return FlowRun(
        settings.config,
        settings.activation,
        Overlaps.of_point(first),
        t_max=end - first.time,
        sphere=settings.sphere,
        log_points=log_points,
        t_min=min(later[0] - first.time, 0.5 * (end - first.time)),
        mc_samples=mc_samples,
        seed=seed,
        **(method if settings.method == "sgd" else {}),
    )


def escape_rate(run: FlowRun) -> float:
    """Growth rate ``mu`` of ``(m_k, m_v)`` at the saddle ``m_k = m_v = 0`` with the norms of the
    start.

    The largest real part of the eigenvalues of the Jacobian of the ODE in ``(m_k, m_v)`` (on the
    sphere: in the angles, the same eigenvalues) there. From overlaps of order ``1/sqrt(D)`` a run
    leaves the saddle after ``log(D) / (2 mu) + O(1)``: the escape time grows by ``1 / (2 mu)``
    per unit of ``log D``. Meaningful where ``m = 0`` is a fixed point (odd activations such as
    ``erf_sphere``); elsewhere the overlaps leave in a time that does not grow with ``D``.
    """
    system = _system(run)
    at_saddle = np.array(system.y0)
    if run.sphere:
        at_saddle[:2], moving = math.pi / 2, np.array([0, 1])
    else:
        at_saddle[[0, 2]], moving = 0.0, np.array([0, 2])
        at_saddle[[1, 3]] = [run.start.q_k, run.start.q_v]

    def rates_of(coordinates: jax.Array) -> jax.Array:
        return system.rates(jnp.asarray(at_saddle).at[moving].set(coordinates))[moving]

    jacobian = np.asarray(jax.jacfwd(rates_of)(jnp.asarray(at_saddle[moving])))
    return float(np.max(np.linalg.eigvals(jacobian).real))
