"""The high-dimensional limit of training ``H_s`` student heads on an ``H``-head teacher: ODEs on
the overlap matrices (docs/multihead.md, "Dynamics").

With the teacher's ``2H`` directions orthogonal (squared norms ``D``), the population error of
the student depends on its ``2 H_s`` vectors (keys ``k_j``, values ``v_j``) only through their
overlaps with the teacher directions and with each other. Write them in an orthonormal frame of
the teacher's keys, the teacher's values and ``2 H_s`` residual directions:
``u_a = sqrt(D) W[a] . (e*, e)``, ``W`` of shape ``(2 H_s, 2H + 2 H_s)`` whose first ``2H``
columns are the overlaps with ``k_h*`` and ``v_h*`` (``m_k``, ``k.v*`` for a key; ``v.k*``,
``m_v`` for a value) and whose last ``2 H_s`` are a square root ``F`` of the residual Gram matrix
(the Gram matrix of the student vectors is ``W W^T``: ``q_k``, ``q_v``, ``k.v``). A token's
projections are then ``(chi_j, z_j) = W (chi*, z*, r)``, ``r`` i.i.d. ``N(0, 1)``, and the error
is ``E = E[(y - f)^2]`` with ``f = sum_j sum_l s(chi_j)_l z_{j,l}`` and
``y = (rho H)^(-1/2) sum_h b_h z*_{h, eps_h}``. No cross overlap is assumed to vanish: from a random
start the cross overlaps are of order ``1/sqrt(D)`` and, unlike one head's (docs/dynamics.md), two
heads can grow them (docs/multihead.md, "Dynamics").

The update rule and clock of docs/dynamics.md (``d theta / dt = -D grad (E / 2)`` on every
``k_j``, ``v_j``; ``-grad (E / 2)`` on ``c``) become, in the frame, ``dW / dt = -grad_W E / 2`` and
``dc / dt = -dE/dc / 2``:

- ``method="flow"``: the population gradient flow, nothing else;
- ``method="sgd"``: online SGD with step ``eta`` per sequence and batch ``B``; a step's noise adds
  ``(eta / B) N`` to the Gram matrix's rate, ``N[a, b] = E[((y - f)^2 + Delta) sum_l
  (df/dp_al)(df/dp_bl)]`` with ``p_a`` the projections on ``u_a`` (the squared norms, ``D ->
  inf``, of one sequence's gradients; the overlaps with the teacher get none), realised in the
  frame by ``dF / dt += (eta / 2B) N F^(-T)`` (``dF F^T + F dF^T`` is then the noise).

With ``H = H_s = 1`` on the manifold of vanishing cross overlaps both are the ODEs of
:mod:`bayes_slr.formulas.flow` (``rho = F^2``). ``E``, its gradient and ``N`` are averages over one
fixed set of draws of the teacher's scores, presence and locations
(:func:`~bayes_slr.inference.bayes_risk.draw_population_heads`) and of the normals ``z*``, ``r``,
made once per run, so the right-hand side is a smooth deterministic function (JAX autodiff) that
SciPy's ``solve_ivp`` integrates. The draws come in antithetic pairs that flip the value
coordinates (``z*`` and the values' residual directions), a symmetry of the law that maps ``(y, f)``
to ``(-y, -f)`` on the manifold, which the flow then keeps exactly. The error reported at each
point is that Monte Carlo ``E`` with its standard error.

**Why a module of its own.** Training on data is one code path for any number of heads
(:mod:`bayes_slr.attention.dynamics`: a run takes ``student_heads``; its points are
:class:`~bayes_slr.attention.trajectory.HeadsPoint`, which these ODEs log too). The ODEs are other
mathematics: one head's (:mod:`bayes_slr.formulas.flow`) live on the manifold of vanishing cross
overlaps, where the risk is ``1 - 2 m_v A + q_v B`` with two scalar functions of the key's
overlaps (the location integrated with the teacher's posterior); these keep every cross overlap
(two heads leave that manifold: section "Dynamics" of docs/multihead.md) and need the joint law
of all heads' projections in the frame of ``W``, so neither is the other with a head axis.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from scipy.integrate import solve_ivp

from bayes_slr.attention.activations import Activation, get_activation
from bayes_slr.attention.trajectory import HeadsPoint, HeadsTrajectory, as_matrix, log_spaced_times
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.flow import ATOL, MC_SAMPLES, RTOL, check_integration_settings
from bayes_slr.inference.bayes_risk import draw_population_heads
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class HeadsFlowRun(Record):
    """One ODE trajectory of ``H_s`` heads. Checked on creation (``ConfigError``).

    Attributes
    ----------
    config : the task (``heads``, ``presence``, token law, ``Delta``; ``D`` is ignored).
    activation : any activation (registered, or ``softmax1``, ``bayes_softmax``).
    start : the initial overlaps, cross overlaps included (a logged point, e.g. the first of an
        online-SGD run); its residual Gram matrix must be positive definite.
    t_max : final time, ``> 0``.
    method : ``"flow"`` or ``"sgd"`` (module docstring).
    eta : SGD step per sequence, ``> 0`` (sgd only).
    batch : SGD batch, ``>= 1`` (sgd only).
    log_points : logged times (0 and ``log_points - 1`` log-spaced from ``t_min``), ``>= 2``.
    t_min : first logged time after 0, in ``(0, t_max)``.
    mc_samples : Monte Carlo draws, an even integer ``>= 2``.
    seed : seed of the draws.
    """

    config: SLRConfig
    activation: str
    start: HeadsPoint
    t_max: float
    method: str = "flow"
    eta: float | None = None
    batch: int = 1
    log_points: int = 64
    t_min: float = 1e-2
    mc_samples: int = MC_SAMPLES
    seed: int = 0

    def __post_init__(self) -> None:
        if not isinstance(self.config, SLRConfig):
            raise ConfigError(f"config must be an SLRConfig, got {type(self.config).__name__}")
        object.__setattr__(self, "activation", get_activation(self.activation).name)
        if not isinstance(self.start, HeadsPoint):
            raise ConfigError(f"start must be a HeadsPoint, got {type(self.start).__name__}")
        if np.shape(self.start.m_k)[1:] != (self.config.heads,):
            raise ConfigError(
                f"start's m_k must have one column per teacher head ({self.config.heads}), got "
                f"shape {np.shape(self.start.m_k)}"
            )
        check_integration_settings(self)

    @property
    def student_heads(self) -> int:
        """``H_s``, the rows of the start's overlap matrices."""
        return len(self.start.m_k)

    @property
    def noise(self) -> float:
        """``eta / B``: the weight of the SGD noise term (0 for the flow)."""
        return 0.0 if self.method == "flow" else self.eta / self.batch


class HeadDraws(NamedTuple):
    """Draws of the population law, ``n`` sequences: the token coordinates ``coords``
    ``(n, 2H + 2 H_s, Lbar)`` (teacher scores ``chi*``, teacher values ``z*``, residual normals
    ``r``; 0 on padded tokens), locations ``eps`` and presence ``present`` ``(n, H)``, the real
    tokens ``mask`` ``(n, 1, Lbar)``. The second half is the first with the value coordinates
    flipped."""

    coords: jax.Array
    eps: jax.Array
    present: jax.Array
    mask: jax.Array


def draw_heads_population(
    key: jax.Array, config: SLRConfig, student_heads: int, n: int
) -> HeadDraws:
    """``n`` draws (``n / 2`` sequences, each paired with its value-flipped mirror)."""
    key_heads, key_values, key_residual = jax.random.split(key, 3)
    half, H = n // 2, config.heads
    chi_star, lengths, eps, present = draw_population_heads(key_heads, config, half)
    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    z_star = jax.random.normal(key_values, chi_star.shape)
    residual = jax.random.normal(key_residual, (half, 2 * student_heads, config.Lbar))
    coords = jnp.concatenate([chi_star, z_star, residual], axis=1) * mask
    flip = np.ones(2 * H + 2 * student_heads)
    flip[H : 2 * H] = flip[2 * H + student_heads :] = -1.0
    return HeadDraws(
        jnp.concatenate([coords, coords * flip[:, None]]),
        jnp.concatenate([eps, eps]),
        jnp.concatenate([present, present]),
        jnp.concatenate([mask, mask]),
    )


class Frame(NamedTuple):
    """The state in the frame: ``W`` ``(2 H_s, 2H + 2 H_s)`` (rows: keys, then values) and the
    offsets ``c`` ``(H_s,)``."""

    W: jax.Array
    c: jax.Array


def frame_of(point: HeadsPoint) -> Frame:
    """The frame of a logged point: ``F`` the Cholesky factor of the residual Gram matrix;
    ``ConfigError`` where that is not positive definite."""
    teacher = np.block(
        [
            [np.asarray(point.m_k), np.asarray(point.k_vstar)],
            [np.asarray(point.v_kstar), np.asarray(point.m_v)],
        ]
    )
    gram = np.block(
        [
            [np.asarray(point.q_k), np.asarray(point.k_v)],
            [np.asarray(point.k_v).T, np.asarray(point.q_v)],
        ]
    )
    residual = gram - teacher @ teacher.T
    try:
        factor = np.linalg.cholesky(0.5 * (residual + residual.T))
    except np.linalg.LinAlgError as exc:
        raise ConfigError(
            "the start's residual Gram matrix (the student vectors' Gram matrix less their "
            "overlaps with the teacher) must be positive definite (a random start's is), got "
            f"{residual.tolist()}"
        ) from exc
    return Frame(
        jnp.asarray(np.concatenate([teacher, factor], axis=1)), jnp.asarray(point.c, dtype=float)
    )


def _output(projections, c, mask, record: Activation):
    """``f`` of one sequence from its projections ``(2 H_s, Lbar)`` (scores, then values)."""
    heads = projections.shape[0] // 2
    chi, z = projections[:heads], projections[heads:]
    return jnp.sum(record.weights(chi, jnp.broadcast_to(mask, chi.shape), c[:, None]) * z)


def _targets(draws: HeadDraws, scale: float) -> jax.Array:
    """``y`` of every draw (no label noise)."""
    H = draws.eps.shape[1]
    z_star = draws.coords[:, H : 2 * H]
    at_location = jnp.take_along_axis(z_star, draws.eps[..., None], axis=-1)[..., 0]
    return scale * jnp.sum(jnp.where(draws.present, at_location, 0.0), axis=-1)


def _risks(frame: Frame, draws: HeadDraws, record: Activation, scale: float) -> jax.Array:
    """``(y - f)^2`` per draw (module docstring); ``scale`` is ``(rho H)^(-1/2)``."""
    projections = jnp.einsum("ab,nbl->nal", frame.W, draws.coords)
    f = jax.vmap(_output, in_axes=(0, None, 0, None))(projections, frame.c, draws.mask, record)
    return (_targets(draws, scale) - f) ** 2


def _noise(frame: Frame, draws: HeadDraws, record: Activation, scale: float, Delta: float):
    """``N``: the second moments of one sequence's gradients (module docstring)."""
    projections = jnp.einsum("ab,nbl->nal", frame.W, draws.coords)
    f, gradient = jax.vmap(jax.value_and_grad(_output), in_axes=(0, None, 0, None))(
        projections, frame.c, draws.mask, record
    )
    residual = (_targets(draws, scale) - f) ** 2 + Delta
    return jnp.einsum("n,nal,nbl->ab", residual, gradient, gradient) / residual.size


@functools.partial(jax.jit, static_argnames=("record", "with_noise"))
def _rates(state, draws, noise, *, record, scale, Delta, with_noise):
    """``d state / dt`` (module docstring); ``noise = eta / B``."""
    frame = _unflatten(state, draws)
    gradient = jax.grad(lambda f: jnp.mean(_risks(f, draws, record, scale)))(frame)
    W_rate, c_rate = -0.5 * gradient.W, -0.5 * gradient.c
    if with_noise:
        teachers = 2 * draws.eps.shape[1]
        spread = jnp.linalg.solve(frame.W[:, teachers:], _noise(frame, draws, record, scale, Delta))
        W_rate = W_rate.at[:, teachers:].add(0.5 * noise * spread.T)
    return _flatten(Frame(W_rate, c_rate))


def _flatten(frame: Frame) -> jax.Array:
    return jnp.concatenate([frame.W.ravel(), frame.c])


def _unflatten(state: jax.Array, draws: HeadDraws) -> Frame:
    """The frame of a flat state: ``2 H_s`` rows of ``2H + 2 H_s`` coordinates, then ``c``."""
    columns = draws.coords.shape[1]
    rows = columns - 2 * draws.eps.shape[1]
    return Frame(state[: rows * columns].reshape(rows, columns), state[rows * columns :])


class _System(NamedTuple):
    """A run's ODE: its right-hand side, the initial state and the state's point."""

    rates: object
    y0: np.ndarray
    point: object


def _system(run: HeadsFlowRun) -> _System:
    start = np.asarray(_flatten(frame_of(run.start)))
    record = get_activation(run.activation)
    config = run.config.replace(D=1)
    heads, H = run.student_heads, config.heads
    draws = draw_heads_population(jax.random.PRNGKey(run.seed), config, heads, run.mc_samples)
    scale = 1.0 / math.sqrt(config.presence * config.heads)
    rates = functools.partial(
        _rates,
        draws=draws,
        noise=jnp.asarray(run.noise),
        record=record,
        scale=scale,
        Delta=float(config.Delta),
        with_noise=run.noise > 0.0,
    )

    def point(state: np.ndarray, time: float) -> HeadsPoint:
        frame = _unflatten(jnp.asarray(state), draws)
        error, stderr = _error(frame, draws, record=record, scale=scale)
        W = np.asarray(frame.W)
        gram = W @ W.T
        return HeadsPoint(
            step=None,
            time=float(time),
            m_k=as_matrix(W[:heads, :H]),
            q_k=as_matrix(gram[:heads, :heads]),
            m_v=as_matrix(W[heads:, H : 2 * H]),
            q_v=as_matrix(gram[heads:, heads:]),
            c=tuple(float(x) for x in np.asarray(frame.c)),
            test_error=float(error),
            test_stderr=float(stderr),
            k_vstar=as_matrix(W[:heads, H : 2 * H]),
            v_kstar=as_matrix(W[heads:, :H]),
            k_v=as_matrix(gram[:heads, heads:]),
        )

    return _System(rates, start, point)


@functools.partial(jax.jit, static_argnames=("record",))
def _error(frame, draws, *, record, scale):
    """The Monte Carlo error and its standard error over the antithetic pairs."""
    values = _risks(frame, draws, record, scale)
    pairs = 0.5 * (values[: values.size // 2] + values[values.size // 2 :])
    return jnp.mean(pairs), jnp.std(pairs, ddof=1) / jnp.sqrt(pairs.size)


def heads_flow_error(run: HeadsFlowRun, point: HeadsPoint) -> tuple[float, float]:
    """The population error at the overlaps of ``point``, as the ODE of ``run`` reports it.

    Parameters
    ----------
    run : HeadsFlowRun
        Its task, activation, draws (``mc_samples``, ``seed``); its start and times are unused.
    point : HeadsPoint
        The overlaps, cross overlaps included.

    Returns
    -------
    tuple of float
        ``E`` on ``run``'s draws and its Monte Carlo standard error.
    """
    _, _, to_point = _system(run)
    reported = to_point(np.asarray(_flatten(frame_of(point))), point.time)
    return reported.test_error, reported.test_stderr


def solve_heads_flow(run: HeadsFlowRun) -> HeadsTrajectory:
    """Integrate the ODE of ``run`` (module docstring) and log it at log-spaced times.

    Parameters
    ----------
    run : HeadsFlowRun

    Returns
    -------
    HeadsTrajectory
        The overlap matrices and the population error (Monte Carlo, with its standard error) at
        0 and ``log_points - 1`` log-spaced times up to ``t_max``.

    Raises
    ------
    ConfigError
        The solver failed or the state became non-finite.
    """
    if not isinstance(run, HeadsFlowRun):
        raise ConfigError(f"run must be a HeadsFlowRun, got {type(run).__name__}")
    system = _system(run)
    times = log_spaced_times(run.t_max, run.t_min, run.log_points)
    solution = solve_ivp(
        lambda t, y: np.asarray(system.rates(jnp.asarray(y))),
        (0.0, run.t_max),
        system.y0,
        method="RK45",
        t_eval=times,
        rtol=RTOL,
        atol=ATOL,
    )
    if solution.y.shape[1] < times.size or not np.all(np.isfinite(solution.y)):
        raise ConfigError(
            f"the {run.method} ODE of {run.student_heads} heads failed before t = {run.t_max:g}: "
            f"{solution.message}"
        )
    return HeadsTrajectory(
        tuple(system.point(solution.y[:, i], t) for i, t in enumerate(solution.t))
    )
