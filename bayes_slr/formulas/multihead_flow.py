"""The high-dimensional limit of training ``H_s`` student heads on an ``H``-head teacher: ODEs on
the overlap matrices (docs/multihead.md, "Dynamics").

With the teacher's ``2H`` directions orthogonal (squared norms ``D``) and the student's keys
orthogonal to every value direction and its values to every key direction (the manifold of
vanishing cross overlaps, as for one head, docs/dynamics.md), the population error is a function
of the ``H_s x H`` overlaps ``M_k``, ``M_v``, the ``H_s x H_s`` Gram matrices ``Q_k``, ``Q_v`` and
the offsets ``c``. Write the keys in an orthonormal frame of the teacher keys and ``H_s`` residual
directions, ``k_j = sqrt(D) (sum_h M_k[j, h] e_h* + sum_a F_k[j, a] e_a)``, i.e. ``K_k = [M_k |
F_k]`` with ``Q_k = K_k K_k^T`` (and ``K_v`` for the values). The student's scores are
``chi_j = sum_h M_k[j, h] chi*_h + sum_a F_k[j, a] g_a`` (``g`` i.i.d. ``N(0, 1)`` per token), its
values ``z_j = sum_h M_v[j, h] z*_h + sum_a F_v[j, a] w_a``, and, integrating the values
(independent of the scores, and of each other across tokens),

``E = 1 - 2 (rho H)^(-1/2) sum_jh M_v[j, h] A[j, h] + sum_ij Q_v[i, j] B[i, j]``,

``A[j, h] = E[b_h s(chi_j)_{eps_h}]``, ``B[i, j] = E[sum_l s(chi_i)_l s(chi_j)_l]``. The update rule
and clock of docs/dynamics.md (``d theta / dt = -D grad (E / 2)`` on ``k``, ``v``; ``-grad (E / 2)``
on ``c``) become, in the frame, ``dK / dt = -grad_K E / 2`` and ``dc / dt = -dE/dc / 2``:

- ``method="flow"``: the population gradient flow, nothing else;
- ``method="sgd"``: online SGD with step ``eta`` per sequence and batch ``B``; a step's noise adds
  ``(eta / B) N`` to ``dQ / dt``, with ``N_k[i, j] = E[(y - f)^2 sum_l (df/dchi_il)(df/dchi_jl)]``
  and ``N_v[i, j] = E[(y - f)^2 sum_l s_il s_jl]`` (the label noise ``Delta`` included; ``M`` gets
  none), realised in the frame by ``dF / dt += (eta / 2B) N F^(-T)`` (``dF F^T + F dF^T`` is then
  the noise). With ``H = H_s = 1`` both are the ODEs of :mod:`bayes_slr.formulas.flow`
  (``rho = F^2``).

``A``, ``B``, their gradients and ``N`` are averages over one fixed set of draws of the teacher's
scores, presence and locations (:func:`~bayes_slr.inference.bayes_risk.draw_population_heads`) and
of the standard normals ``g`` (in antithetic pairs ``g -> -g``), ``z*``, ``w``, made once per run,
so the right-hand side is a smooth deterministic function (JAX autodiff) that SciPy's ``solve_ivp``
integrates. The error reported at each point is that Monte Carlo ``E`` with its standard error.
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
from bayes_slr.attention.multihead_trajectory import HeadsPoint, HeadsTrajectory, as_matrix
from bayes_slr.attention.trajectory import log_spaced_times
from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.formulas.flow import ATOL, MC_SAMPLES, METHODS, RTOL
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
    start : the initial overlaps (a logged point, e.g. the first of an online-SGD run; its cross
        overlaps are dropped); its residual Gram matrices ``Q - M M^T`` must be positive
        definite.
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
        check_choice("method", self.method, METHODS)
        t_max = check_real("t_max", self.t_max, minimum=0.0, strict=True)
        object.__setattr__(self, "t_max", t_max)
        t_min = check_real("t_min", self.t_min, minimum=0.0, strict=True)
        if t_min >= t_max:
            raise ConfigError(f"t_min must be < t_max = {t_max:g}, got {t_min!r}")
        object.__setattr__(self, "t_min", t_min)
        object.__setattr__(self, "batch", check_int("batch", self.batch, 1))
        if self.method == "sgd":
            object.__setattr__(self, "eta", check_real("eta", self.eta, minimum=0.0, strict=True))
        elif self.eta is not None or self.batch != 1:
            raise ConfigError("eta and batch apply to method sgd only (flow has no step)")
        object.__setattr__(self, "log_points", check_int("log_points", self.log_points, 2))
        samples = check_int("mc_samples", self.mc_samples, 2)
        if samples % 2:
            raise ConfigError(f"mc_samples must be an even integer >= 2, got {samples!r}")
        object.__setattr__(self, "seed", check_int("seed", self.seed, 0))

    @property
    def student_heads(self) -> int:
        """``H_s``, the rows of the start's overlap matrices."""
        return len(self.start.m_k)

    @property
    def noise(self) -> float:
        """``eta / B``: the weight of the SGD noise term (0 for the flow)."""
        return 0.0 if self.method == "flow" else self.eta / self.batch


class HeadDraws(NamedTuple):
    """Draws of the population law, ``n`` sequences: teacher scores ``chi_star`` and values
    ``z_star`` ``(n, H, Lbar)``, locations ``eps`` and presence ``present`` ``(n, H)``, the
    student's residual normals ``g`` (antithetic: the second half is ``-`` the first) and ``w``
    ``(n, H_s, Lbar)``, the real tokens ``mask`` ``(n, 1, Lbar)``."""

    chi_star: jax.Array
    z_star: jax.Array
    eps: jax.Array
    present: jax.Array
    g: jax.Array
    w: jax.Array
    mask: jax.Array


def draw_heads_population(
    key: jax.Array, config: SLRConfig, student_heads: int, n: int
) -> HeadDraws:
    """``n`` draws (``n / 2`` sequences, each paired with its ``g -> -g`` mirror)."""
    keys = jax.random.split(key, 4)
    half = n // 2
    chi_star, lengths, eps, present = draw_population_heads(keys[0], config, half)
    shape = (half, student_heads, config.Lbar)
    g = jax.random.normal(keys[1], shape)

    def pair(a: jax.Array) -> jax.Array:
        return jnp.concatenate([a, a])

    mask = (jnp.arange(config.Lbar) < lengths[:, None])[:, None, :]
    return HeadDraws(
        pair(chi_star),
        pair(jax.random.normal(keys[2], chi_star.shape)),
        pair(eps),
        pair(present),
        jnp.concatenate([g, -g]),
        pair(jax.random.normal(keys[3], shape)),
        pair(mask),
    )


class Frame(NamedTuple):
    """The state in the frame: ``K_k = [M_k | F_k]``, ``K_v = [M_v | F_v]``, ``(H_s, H + H_s)``,
    and the offsets ``c`` ``(H_s,)``."""

    K_k: jax.Array
    K_v: jax.Array
    c: jax.Array


def frame_of(point: HeadsPoint) -> Frame:
    """The frame of a logged point: ``F`` the Cholesky factor of ``Q - M M^T``; ``ConfigError``
    where that is not positive definite."""
    parts = []
    for name in ("k", "v"):
        m, q = np.asarray(getattr(point, f"m_{name}")), np.asarray(getattr(point, f"q_{name}"))
        residual = q - m @ m.T
        try:
            factor = np.linalg.cholesky(0.5 * (residual + residual.T))
        except np.linalg.LinAlgError as exc:
            raise ConfigError(
                f"the start's residual Gram matrix q_{name} - m_{name} m_{name}^T must be positive "
                f"definite (a random start's is), got {residual.tolist()}"
            ) from exc
        parts.append(np.concatenate([m, factor], axis=1))
    return Frame(jnp.asarray(parts[0]), jnp.asarray(parts[1]), jnp.asarray(point.c, dtype=float))


def _scores(K_k: jax.Array, draws: HeadDraws) -> jax.Array:
    """The student's scores ``(n, H_s, Lbar)`` (0 on padded tokens)."""
    H = draws.chi_star.shape[1]
    chi = jnp.einsum("jh,nhl->njl", K_k[:, :H], draws.chi_star)
    chi = chi + jnp.einsum("ja,nal->njl", K_k[:, H:], draws.g)
    return chi * draws.mask


def _weights(record: Activation, chi: jax.Array, c: jax.Array, draws: HeadDraws) -> jax.Array:
    return record.weights(chi, jnp.broadcast_to(draws.mask, chi.shape), c[:, None])


def _risks(frame: Frame, draws: HeadDraws, record: Activation, scale: float) -> jax.Array:
    """The error ``E`` per draw (module docstring), values integrated; ``scale`` is
    ``(rho H)^(-1/2)``."""
    s = _weights(record, _scores(frame.K_k, draws), frame.c, draws)
    H = draws.chi_star.shape[1]
    at_location = jnp.take_along_axis(s[:, :, None, :], draws.eps[:, None, :, None], axis=-1)
    a = jnp.where(draws.present[:, None, :], at_location[..., 0], 0.0)
    b = jnp.einsum("nil,njl->nij", s, s)
    q_v = frame.K_v @ frame.K_v.T
    return (
        1.0
        - 2.0 * scale * jnp.einsum("jh,njh->n", frame.K_v[:, :H], a)
        + jnp.einsum("ij,nij->n", q_v, b)
    )


def _noise(frame: Frame, draws: HeadDraws, record: Activation, scale: float, Delta: float):
    """``(N_k, N_v)``: the second moments of one sequence's gradients (module docstring)."""
    H = draws.chi_star.shape[1]
    z = jnp.einsum("jh,nhl->njl", frame.K_v[:, :H], draws.z_star)
    z = z + jnp.einsum("ja,nal->njl", frame.K_v[:, H:], draws.w)
    chi = _scores(frame.K_k, draws)

    def output(chi_row, z_row, mask_row):
        weights = record.weights(
            chi_row, jnp.broadcast_to(mask_row, chi_row.shape), frame.c[:, None]
        )
        return jnp.sum(weights * z_row)

    f, key_gradient = jax.vmap(jax.value_and_grad(output))(chi, z, draws.mask)
    s = _weights(record, chi, frame.c, draws)
    at_location = jnp.take_along_axis(draws.z_star, draws.eps[..., None], axis=-1)[..., 0]
    y = scale * jnp.sum(jnp.where(draws.present, at_location, 0.0), axis=-1)
    residual = ((y - f) ** 2 + Delta)[:, None, None]
    return (
        jnp.mean(residual * jnp.einsum("nil,njl->nij", key_gradient, key_gradient), axis=0),
        jnp.mean(residual * jnp.einsum("nil,njl->nij", s, s), axis=0),
    )


@functools.partial(jax.jit, static_argnames=("record", "shape", "scale", "Delta", "with_noise"))
def _rates(state, draws, noise, *, record, shape, scale, Delta, with_noise):
    """``d state / dt`` (module docstring); ``shape = (H_s, H)``, ``noise = eta / B``."""
    frame = _unflatten(state, shape)
    gradient = jax.grad(lambda f: jnp.mean(_risks(f, draws, record, scale)))(frame)
    rates = jax.tree_util.tree_map(lambda x: -0.5 * x, gradient)
    if with_noise:
        H = shape[1]
        noise_k, noise_v = _noise(frame, draws, record, scale, Delta)

        def spread(rate: jax.Array, K: jax.Array, N: jax.Array) -> jax.Array:
            return rate.at[:, H:].add(0.5 * noise * jnp.linalg.solve(K[:, H:], N).T)

        rates = Frame(
            spread(rates.K_k, frame.K_k, noise_k), spread(rates.K_v, frame.K_v, noise_v), rates.c
        )
    return _flatten(rates)


def _flatten(frame: Frame) -> jax.Array:
    return jnp.concatenate([frame.K_k.ravel(), frame.K_v.ravel(), frame.c])


def _unflatten(state: jax.Array, shape: tuple[int, int]) -> Frame:
    heads, teachers = shape
    size = heads * (teachers + heads)
    return Frame(
        state[:size].reshape(heads, teachers + heads),
        state[size : 2 * size].reshape(heads, teachers + heads),
        state[2 * size :],
    )


class _System(NamedTuple):
    """A run's ODE: its right-hand side, the initial state and the state's point."""

    rates: object
    y0: np.ndarray
    point: object


def _system(run: HeadsFlowRun) -> _System:
    start = np.asarray(_flatten(frame_of(run.start)))
    record = get_activation(run.activation)
    config = run.config.replace(D=1)
    shape = (run.student_heads, config.heads)
    draws = draw_heads_population(
        jax.random.PRNGKey(run.seed), config, run.student_heads, run.mc_samples
    )
    scale = 1.0 / math.sqrt(config.presence * config.heads)
    rates = functools.partial(
        _rates,
        draws=draws,
        noise=jnp.asarray(run.noise),
        record=record,
        shape=shape,
        scale=scale,
        Delta=float(config.Delta),
        with_noise=run.noise > 0.0,
    )

    zeros = as_matrix(np.zeros(shape))

    def point(state: np.ndarray, time: float) -> HeadsPoint:
        frame = _unflatten(jnp.asarray(state), shape)
        error, stderr = _error(frame, draws, record=record, scale=scale)
        K_k, K_v = np.asarray(frame.K_k), np.asarray(frame.K_v)
        return HeadsPoint(
            step=None,
            time=float(time),
            m_k=as_matrix(K_k[:, : shape[1]]),
            q_k=as_matrix(K_k @ K_k.T),
            m_v=as_matrix(K_v[:, : shape[1]]),
            q_v=as_matrix(K_v @ K_v.T),
            c=tuple(float(x) for x in np.asarray(frame.c)),
            test_error=float(error),
            test_stderr=float(stderr),
            k_vstar=zeros,
            v_kstar=zeros,
            k_v=as_matrix(np.zeros((shape[0], shape[0]))),
        )

    return _System(rates, start, point)


@functools.partial(jax.jit, static_argnames=("record", "scale"))
def _error(frame, draws, *, record, scale):
    """The Monte Carlo error and its standard error over the antithetic pairs."""
    values = _risks(frame, draws, record, scale)
    pairs = 0.5 * (values[: values.size // 2] + values[values.size // 2 :])
    return jnp.mean(pairs), jnp.std(pairs, ddof=1) / jnp.sqrt(pairs.size)


def heads_flow_error(run: HeadsFlowRun, point: HeadsPoint) -> tuple[float, float]:
    """The population error ``E`` at the overlaps of ``point`` on ``run``'s draws (the error the
    ODE of ``run`` reports there) and its Monte Carlo standard error."""
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
