"""Bayes-optimal GAMP for single-location regression (docs/theory.md, part C).

The unknowns are ``W = (k, v)`` in ``R^{D x 2}`` with prior ``N(0, I)`` on each column; each
sequence ``mu`` is seen through the ``Lbar x 2`` projections ``h_{mu l} = x_{mu l} . W / sqrt(D)``
of its tokens (the sequence multi-index setting). The output channel is the SLR likelihood
with the location summed out and the token tilt included,

    w(y | h) = sum_l pi_l(h_k) N(y; h_{l,v}, Delta),

``pi_l = exp(sqrt(nu) h_{l,k}) / L`` (spiked: the tilt's normaliser ``-nu |k|^2 / (2D)`` does not
depend on ``h``; summed over the ``N`` sequences it is the Gaussian factor
``exp(-N nu |k|^2 / (2D))``, moved into the prior of ``k``, whose precision becomes ``1 + N nu /
D``)
or ``pi_l = softmax(nu h_k)_l`` (max; the argmax indicator at ``nu = inf``).

One iteration (damping ``d``, ``d = 1`` is plain GAMP):

    omega_{mu l} = x_{mu l} . W_hat / sqrt(D) - C g_{mu l}                        (Onsager)
    g_{mu l}, dg_{mu l} = d log Z_out / d omega_{mu l}, its 2 x 2 diagonal block per token,
        Z_out(y, omega, C) = E_{h_l ~ N(omega_l, C)}[w(y | h)]
    g <- (1 - d) g + d g_new;  A <- (1 - d) A + d (-(1/D) sum_{mu l} dg_{mu l})
    B_i = sum_{mu l} x_{mu l i} g_{mu l} / sqrt(D) + A W_hat_i
    W_hat_i <- (1 - d) W_hat_i + d (A + Lambda_0)^-1 B_i,  C <- (1 - d) C + d (A + Lambda_0)^-1

``Z_out``: spiked, exact Gaussian mixture over the location with the full ``2 x 2`` ``C``;
max, the one-dimensional location integrals of :mod:`bayes_slr.numerics.location_integrals`
(the state evolution's), with the ``k``-``v`` cross term of ``C`` dropped inside ``Z_out`` (it is
``O(1/sqrt(D))`` and zero in the limit by the reflection symmetry of docs/theory.md); ``g`` and
``dg`` in closed form (:func:`output_denoiser`). Each iteration reads the tokens twice (``X W`` and
``X^T g``, computed as ``g^T X`` with ``W_hat`` stored as two rows); everything else is per token.
``C`` is the same for every coordinate ``i`` (Gaussian prior, ``A`` averaged over coordinates).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.inference.amp_settings import (
    DEFAULT_DAMPING,
)
from bayes_slr.models.simulate import Teacher, chunk_sequences, iterate_batches
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics import location_integrals
from bayes_slr.progress import progress_bar

START_OVERLAP = 1e-3
"""Random start: ``|W_hat_a|^2 / D = START_OVERLAP``, ``C = (1 - START_OVERLAP) I`` (the state
evolution's
uninformed ``q = 1e-3``); informed start: overlap ``1 - START_OVERLAP`` with the teacher,
Nishimori-consistent."""
ADAPT_DOWN, ADAPT_UP, MIN_DAMPING = 0.7, 1.05, 0.05
"""Adaptive damping of :func:`run_amp`."""
ITERATION_CHUNK = 10
"""Iterations per compiled call of :func:`run_amp` when it shows progress (one host round trip per
chunk).
"""
PRECISION_FLOOR = 1e-6
"""Smallest eigenvalue allowed for ``A + Lambda_0`` (a transient iterate can make ``A`` indefinite).
"""


class AMPData(NamedTuple):
    """A training set in the form AMP reads it.

    Attributes
    ----------
    X : (N, Lbar, D) tokens in the working dtype, zero on padded tokens.
    y : (N,) outputs.
    mask : (N, Lbar) True on real tokens.
    """

    X: jax.Array
    y: jax.Array
    mask: jax.Array


class AMPState(NamedTuple):
    """The iterate of :func:`amp_step`.

    Attributes
    ----------
    W : (2, D) posterior means of ``k`` (row 0) and ``v`` (row 1); rows, so that both token products
        stream the tokens without a transposed copy (docs/performance.md).
    C : (2, 2) posterior covariance of one coordinate ``(k_i, v_i)`` (the same for every ``i``).
    g : (N, Lbar, 2) output messages ``d log Z_out / d omega`` (damped), zero on padding.
    A : (2, 2) channel precision ``-(1/D) sum dg`` (damped).
    iteration : number of steps taken.
    residual : root-mean-square change of ``W`` (largest of the two columns) and largest change
        of ``C`` at the last step, before damping; ``inf`` before the first step.
    """

    W: jax.Array
    C: jax.Array
    g: jax.Array
    A: jax.Array
    iteration: jax.Array
    residual: jax.Array


class AMPResult(NamedTuple):
    """Outcome of :func:`run_amp`.

    Attributes
    ----------
    state : the last :class:`AMPState`.
    history : (max_iter + 1, 4) overlaps ``m_k, q_k, m_v, q_v`` of ``W_hat`` at every iterate
        (row ``t`` after ``t`` steps; ``m`` are NaN without a teacher; rows past the last are NaN).
    residual_history : (max_iter + 1,) residual after each step (row 0 is ``inf``).
    converged : residual ``<= tol`` reached with finite values.
    damping : the damping of the last step (lowered by the adaptive rule, see :func:`run_amp`).
    """

    state: AMPState
    history: jax.Array
    residual_history: jax.Array
    converged: jax.Array
    damping: jax.Array


def check_amp_config(config: SLRConfig) -> SLRConfig:
    """Refuse a ``nu`` whose location integrals the variant cannot evaluate (max-SLR with
    ``MAX_FINITE_NU < nu < inf``); ``D >= 2`` is the ``amp`` options' range.
    """
    config.law.check_field_location(config.nu)
    return config


RUNTIME_BYTES = 400 * 2**20
"""What a point holds besides its arrays: the JAX runtime and compiled programs (0.3 GB after
import, about
0.1 GB more during a point; docs/theory.md part C)."""


def memory_bytes(
    config: SLRConfig, N: int, dtype: str = "float64", chunk_size: int | None = None
) -> int:
    """Estimated peak memory of a point: the tokens in ``dtype`` once (:func:`amp_data` writes the
    chunks into
    the device array in place), one float64 simulation chunk of ``chunk_size`` sequences (default
    :func:`~bayes_slr.models.simulate.chunk_sequences`: a fixed byte budget) with its intermediates
    (three
    copies of its tokens; the test scoring uses the same chunks), the per-token messages and
    :data:`RUNTIME_BYTES`."""
    itemsize = np.dtype(dtype).itemsize
    chunk_size = chunk_sequences(config) if chunk_size is None else chunk_size
    tokens = N * config.Lbar * config.D
    chunk = 3 * min(N, chunk_size) * config.Lbar * config.D * 8
    return int(tokens * itemsize + chunk + 12 * N * config.Lbar * 2 * 8 + RUNTIME_BYTES)


@functools.partial(jax.jit, donate_argnums=(0,))
def _write_rows(buffers: tuple, rows: tuple, start: jax.Array) -> tuple:
    """``buffers[i][start:start + n] = rows[i]`` in each buffer's dtype, in place (the buffers are
    donated).
    """
    return tuple(
        jax.lax.dynamic_update_slice_in_dim(buffer, row.astype(buffer.dtype), start, axis=0)
        for buffer, row in zip(buffers, rows)
    )


def amp_data(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    N: int,
    *,
    dtype: str = "float64",
    chunk_size: int | None = None,
) -> AMPData:
    """Draw ``N`` training sequences from ``teacher`` and store them in ``dtype``.

    Generated ``chunk_size`` at a time (:func:`~bayes_slr.models.simulate.iterate_batches`; default
    :func:`~bayes_slr.models.simulate.chunk_sequences`, a byte budget that does not depend on
    ``dtype``),
    each chunk written in place into the device arrays in ``dtype`` (peak: those arrays and one
    float64
    chunk with its intermediates, no host copy). The same ``key`` gives the same data in every
    dtype.
    """
    chunk_size = chunk_sequences(config) if chunk_size is None else chunk_size
    device = jax.devices()[0]
    buffers = jax.device_put(
        (
            jnp.zeros((N, config.Lbar, config.D), dtype),
            jnp.zeros(N, dtype),
            jnp.zeros((N, config.Lbar), bool),
        ),
        device,
    )
    start = 0
    for batch in iterate_batches(key, config, teacher, N, chunk_size):
        rows = jax.device_put((batch.X, batch.y, batch.mask), device)
        buffers = _write_rows(buffers, rows, start)
        start += batch.y.shape[0]
    return AMPData(*buffers)


def prior_precision(config: SLRConfig, N: int) -> jax.Array:
    """``Lambda_0 = diag(1 + N p / D, 1)``, ``p`` the variant's
    :meth:`~bayes_slr.models.variants.TokenLaw.key_normaliser_precision` (spiked: ``nu``, the tilt
    normaliser moved into the prior of ``k``; max: 0).
    """
    k_precision = 1.0 + N * config.law.key_normaliser_precision(config.nu) / config.D
    return jnp.diag(jnp.array([k_precision, 1.0]))


def output_denoiser(
    config: SLRConfig, omega: jax.Array, y: jax.Array, mask: jax.Array, V: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``g = d log Z_out / d omega`` ``(Lbar, 2)`` and the ``2 x 2`` diagonal blocks of its Jacobian
    ``(Lbar, 2, 2)``.

    ``Z_out(y, omega, V) = sum_l P_l(omega_k) N(y; mu_l, Delta + V_vv)`` up to a constant, a mixture
    over the location whose log weights ``log P_l`` and means ``mu_l`` come from the variant
    (:meth:`~bayes_slr.models.variants.TokenLaw.field_location`): spiked, ``sqrt(nu) omega_{l,k}``
    and ``mu_l = omega_{l,v} + sqrt(nu) V_kv`` (exact: ``E_h[exp(sqrt(nu) h_{l,k}) N(y; h_{l,v},
    Delta)]``; the factor ``1/L`` and ``nu V_kk / 2`` are the same for every token); max, the
    location integrals of variance ``V_kk`` and ``mu_l = omega_{l,v}``. With the responsibilities
    ``r_l = P(eps = l | y, omega)``, ``e_l = (y - mu_l) / (Delta + V_vv)``, ``J_lj = d log P_l / d
    omega_{j,k}``
    and ``K_lj = d^2 log P_l / d omega_{j,k}^2``, in closed form:

        g_{j,k} = sum_l r_l J_lj,                          g_{j,v} = r_j e_j,
        dg_{j,kk} = sum_l r_l (K_lj + J_lj^2) - g_{j,k}^2,  dg_{j,kv} = r_j e_j (J_jj - g_{j,k}),
        dg_{j,vv} = r_j (1 - r_j) e_j^2 - r_j / (Delta + V_vv).

    (Spiked: ``J = sqrt(nu) I``, ``K = 0``.) Zero on padded tokens. ``tests/inference/test_amp.py``
    checks
    them against automatic differentiation of ``log Z_out``.
    """
    variance = config.Delta + V[1, 1]
    location, value_shift = config.law.field_location(
        config.nu, omega[:, 0], V[0, 0], V[0, 1], mask
    )
    residual = y - (omega[:, 1] + value_shift)
    score = residual / variance
    r = jax.nn.softmax(jnp.where(mask, location.log_post - 0.5 * score * residual, -jnp.inf))
    g_k = r @ location.jacobian
    g_v = r * score
    dg_kk = r @ (location.curvature + location.jacobian**2) - g_k**2
    dg_kv = g_v * (jnp.diagonal(location.jacobian) - g_k)
    dg_vv = g_v * score * (1.0 - r) - r / variance
    g = jnp.stack([g_k, g_v], axis=-1)
    dg = jnp.stack(
        [jnp.stack([dg_kk, dg_kv], axis=-1), jnp.stack([dg_kv, dg_vv], axis=-1)], axis=-2
    )
    return jnp.where(mask[:, None], g, 0.0), jnp.where(mask[:, None, None], dg, 0.0)


def _random_like(key: jax.Array, shape: tuple[int, ...], dtype: jnp.dtype) -> jax.Array:
    return jax.random.normal(key, shape, dtype=jnp.float64).astype(dtype)


def amp_init(
    key: jax.Array,
    data: AMPData,
    config: SLRConfig,
    init: str = "random",
    teacher: Teacher | None = None,
) -> AMPState:
    """The starting iterate.

    ``random``: ``W_hat = sqrt(START_OVERLAP) xi`` (``xi`` standard normal), ``C = (1 -
    START_OVERLAP) I``.
    ``informed``: ``W_hat = c W* + sqrt(c (1 - c)) xi``, ``c = 1 - START_OVERLAP``, ``C = (1 - c)
    I``
    (overlap ``m = q = c`` with the teacher, as the state evolution's informed start). Onsager
    memory
    ``g = 0``; ``A = C^-1 - Lambda_0`` (consistent with ``C``).
    """
    N, Lbar, D = data.X.shape
    dtype = data.X.dtype
    xi = _random_like(key, (D, 2), dtype).T
    if init == "random":
        W, c = math.sqrt(START_OVERLAP) * xi, START_OVERLAP
    else:
        if teacher is None:
            raise ConfigError("init informed needs the teacher (k*, v*); pass teacher=")
        c = 1.0 - START_OVERLAP
        W_star = jnp.stack([teacher.k_star, teacher.v_star]).astype(dtype)
        W = c * W_star + math.sqrt(c * (1.0 - c)) * xi
    C = (1.0 - c) * jnp.eye(2, dtype=dtype)
    A = jnp.linalg.inv(C) - prior_precision(config, N).astype(dtype)
    return AMPState(
        W, C, jnp.zeros((N, Lbar, 2), dtype), A, jnp.asarray(0), jnp.asarray(jnp.inf, dtype)
    )


def _posterior_covariance(precision: jax.Array) -> jax.Array:
    """``precision^-1`` of a symmetric ``2 x 2`` matrix, eigenvalues floored at
    :data:`PRECISION_FLOOR`.
    """
    values, vectors = jnp.linalg.eigh(0.5 * (precision + precision.T))
    return (vectors / jnp.maximum(values, PRECISION_FLOOR)) @ vectors.T


def amp_step(
    state: AMPState,
    data: AMPData,
    config: SLRConfig,
    damping: float = DEFAULT_DAMPING,
    *,
    coupled: bool = False,
    variance: str = "hessian",
) -> tuple[AMPState, dict]:
    """One damped GAMP iteration (see the module docstring); pure, jit- and loop-friendly.

    With ``coupled=False`` (default) the ``k``-``v`` cross term of the channel precision ``A`` is
    dropped, so ``C`` is diagonal (the state evolution's structure: the cross overlaps and
    conjugates vanish in the limit). ``coupled=True`` keeps the full ``2 x 2`` ``A`` and ``C`` (for
    spiked
    SLR the cross term enters ``Z_out`` exactly; max-SLR's ``Z_out`` ignores it). Without damping,
    ``coupled=True`` shows a period-2 growth of ``A_kv`` (docs/theory.md part C).

    ``variance="hessian"`` (default): ``A = -(1/D) sum_{mu l} dg_{mu l}``, plain GAMP.
    ``variance="nishimori"``: ``A = (1/D) sum g g^T - (Lambda_0 - I)`` (the Nishimori identity of
    the
    normalised likelihood, whose ``k`` part carries the tilt normaliser); the same in expectation at
    the Bayes-optimal point, always ``>= -(Lambda_0 - I)``.

    Returns
    -------
    (AMPState, dict)
        The new state and ``info``: ``residual``, ``A`` (undamped channel precision of this step),
        ``min_precision`` (smallest eigenvalue of ``A + Lambda_0`` before the floor).
    """
    N, _, D = data.X.shape
    dtype = data.X.dtype
    tokens = data.X.reshape(-1, D)  # (N Lbar, D): both products below stream it row by row
    omega = (tokens @ state.W.T).reshape(state.g.shape) / math.sqrt(D) - state.g @ state.C
    omega = jnp.where(data.mask[..., None], omega, 0.0)
    g_new, dg = jax.vmap(output_denoiser, in_axes=(None, 0, 0, 0, None))(
        config, omega, data.y, data.mask, state.C
    )
    if variance == "hessian":
        A_new = -jnp.sum(dg, axis=(0, 1)) / D
    else:
        A_new = jnp.einsum("nla,nlb->ab", g_new, g_new) / D - (
            prior_precision(config, N) - jnp.eye(2)
        )
    A_new = 0.5 * (A_new + A_new.T) if coupled else jnp.diag(jnp.diag(A_new))
    g = ((1.0 - damping) * state.g + damping * g_new).astype(dtype)
    A = ((1.0 - damping) * state.A + damping * A_new).astype(dtype)
    # g^T X, (2, D): with W stored as rows nothing is transposed after the product, so XLA keeps it
    # a
    # plain product (with W as columns it rewrote (g^T X)^T as X^T g, a slower kernel;
    # docs/performance.md)
    B = g.reshape(-1, 2).T @ tokens / math.sqrt(D) + A @ state.W
    precision = A + prior_precision(config, N).astype(dtype)
    C_new = _posterior_covariance(precision).astype(dtype)
    W_new = C_new @ B
    residual = jnp.maximum(
        jnp.max(jnp.sqrt(jnp.mean((W_new - state.W) ** 2, axis=1))),
        jnp.max(jnp.abs(C_new - state.C)),
    )
    W = (1.0 - damping) * state.W + damping * W_new
    C = ((1.0 - damping) * state.C + damping * C_new).astype(dtype)
    new_state = AMPState(W.astype(dtype), C, g, A, state.iteration + 1, residual.astype(dtype))
    info = {
        "residual": residual,
        "A": A_new,
        "A_kv": -jnp.sum(dg[..., 0, 1]) / D,
        "min_precision": jnp.min(jnp.linalg.eigvalsh(precision)),
    }
    return new_state, info


def overlaps(W: jax.Array, teacher: Teacher | None) -> jax.Array:
    """``(m_k, q_k, m_v, q_v)`` of ``W_hat``: ``m_a = W_hat_a . W*_a / D``, ``q_a = |W_hat_a|^2 /
    D``; ``m`` NaN without teacher.
    """
    D = W.shape[1]
    q = jnp.sum(W.astype(jnp.float64) ** 2, axis=1) / D
    if teacher is None:
        m = jnp.full(2, jnp.nan)
    else:
        W_star = jnp.stack([teacher.k_star, teacher.v_star]).astype(jnp.float64)
        m = jnp.sum(W.astype(jnp.float64) * W_star, axis=1) / D
    return jnp.stack([m[0], q[0], m[1], q[1]])


@functools.partial(jax.jit, static_argnames=("config", "coupled", "variance", "adaptive"))
def _run_chunk(
    carry: tuple,
    data: AMPData,
    config: SLRConfig,
    teacher: Teacher | None,
    damping,
    tol,
    stop,
    coupled: bool,
    variance: str,
    adaptive: bool,
) -> tuple:
    """Iterate from ``carry = (state, history, residuals, damping)`` until iteration ``stop``,
    convergence or a
    non-finite iterate; one ``lax.while_loop`` (``stop`` is traced: every chunk reuses one
    compilation)."""

    def keep_going(carry: tuple) -> jax.Array:
        state = carry[0]
        r = state.residual
        return (state.iteration == 0) | ((state.iteration < stop) & (r > tol) & jnp.isfinite(r))

    def body(carry: tuple) -> tuple:
        state, history, residuals, d = carry
        previous = state.residual
        state, _ = amp_step(state, data, config, d, coupled=coupled, variance=variance)
        finite = jnp.all(jnp.isfinite(state.W)) & jnp.all(jnp.isfinite(state.C))
        state = state._replace(residual=jnp.where(finite, state.residual, jnp.nan))
        history = history.at[state.iteration].set(overlaps(state.W, teacher))
        residuals = residuals.at[state.iteration].set(state.residual)
        if adaptive:
            d = jnp.where(
                state.residual > previous,
                jnp.maximum(ADAPT_DOWN * d, MIN_DAMPING),
                jnp.minimum(ADAPT_UP * d, damping),
            )
        return state, history, residuals, d

    return jax.lax.while_loop(keep_going, body, carry)


def run_amp(
    key: jax.Array,
    data: AMPData,
    config: SLRConfig,
    *,
    init: str = "random",
    teacher: Teacher | None = None,
    damping: float = DEFAULT_DAMPING,
    tol: float = 1e-6,
    max_iter: int = 300,
    coupled: bool = False,
    variance: str = "hessian",
    adaptive: bool = True,
    progress: bool = False,
) -> AMPResult:
    """Iterate :func:`amp_step` from :func:`amp_init` until the residual is ``<= tol`` or
    ``max_iter`` steps.

    Without ``progress`` the whole loop is one compiled ``lax.while_loop`` (no host round trip).
    With it, the same compiled loop runs :data:`ITERATION_CHUNK` iterations at a time and a
    transient progress bar (iterations, last residual) is updated between chunks: one host round
    trip per chunk.
    A non-finite iterate stops the loop and is reported as not converged (residual NaN).

    Parameters
    ----------
    key : PRNG key of the start.
    data : AMPData
        Training set (:func:`amp_data`); its dtype is the working precision.
    config : SLRConfig
        Task; ``config.D`` must match the tokens.
    init : {"random", "informed"}
    teacher : Teacher, optional
        Needed for ``init="informed"``; when given, ``history`` holds the overlaps ``m``.
    damping : weight of the new iterate, in ``(0, 1]`` (1: plain GAMP, unstable for spiked SLR).
    tol, max_iter : stopping rule (residual of :class:`AMPState`).
    coupled : keep the ``k``-``v`` cross term of ``A`` and ``C`` (see :func:`amp_step`).
    variance : ``"hessian"`` (``A = -(1/D) sum dg``) or ``"nishimori"`` (``A = (1/D) sum g g^T``
        minus the tilt normaliser's precision, equal in expectation at the Bayes-optimal point),
        see :func:`amp_step`.
    adaptive : after a step whose residual exceeds the previous one, multiply the damping by
        ``ADAPT_DOWN`` (not below ``MIN_DAMPING``); after a decrease, by ``ADAPT_UP`` (up to
        ``damping``).
        It tames the oscillating finite-size mode of spiked SLR (docs/theory.md part C); ``False``
        keeps the damping fixed (per-iteration comparison with the state evolution).
    progress : show a transient (``leave=False``) progress bar of the iterations on stderr.
    """
    if data.X.ndim != 3 or data.X.shape[1:] != (config.Lbar, config.D):
        raise ConfigError(
            f"data.X must have shape (N, {config.Lbar}, {config.D}), got {tuple(data.X.shape)}"
        )
    state = amp_init(key, data, config, init, teacher)
    history = jnp.full((max_iter + 1, 4), jnp.nan).at[0].set(overlaps(state.W, teacher))
    residuals = jnp.full(max_iter + 1, jnp.nan).at[0].set(jnp.inf)
    carry = (state, history, residuals, jnp.asarray(damping, dtype=jnp.float64))
    chunk = ITERATION_CHUNK if progress else max_iter
    run = functools.partial(
        _run_chunk,
        data=data,
        config=config,
        teacher=teacher,
        damping=damping,
        tol=tol,
        coupled=bool(coupled),
        variance=variance,
        adaptive=bool(adaptive),
    )
    state, history, residuals, final_damping = _iterate_in_chunks(
        run, carry, max_iter, chunk, progress
    )
    converged = (state.residual <= tol) & jnp.isfinite(state.residual)
    return AMPResult(state, history, residuals, converged, final_damping)


def _iterate_in_chunks(
    run: Callable[..., tuple], carry: tuple, max_iter: int, chunk: int, progress: bool
) -> tuple:
    """Run the compiled loop ``run`` up to ``max_iter`` iterations, ``chunk`` at a time, updating
    the progress bar (with ``progress``) between chunks and stopping once an iteration stopped
    early; returns the last carry ``(state, history, residuals, damping)``."""
    with progress_bar(
        total=max_iter, desc="GAMP iterations", unit="it", leave=False, show=progress
    ) as bar:
        stop = 0
        while stop < max_iter:
            stop = min(stop + chunk, max_iter)
            carry = run(carry, stop=stop)
            if progress:
                iteration = int(carry[0].iteration)
                bar.update(iteration - bar.n)
                bar.set_postfix(residual=f"{float(carry[0].residual):.2e}")
                if iteration < stop:  # converged or not finite before the end of the chunk
                    break
    return carry


def amp_predictor(
    config: SLRConfig, state: AMPState, *, own_tilt: bool = True
) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """A predictor of new sequences from the AMP posterior; ``predict(X, lengths) -> (n,)``.

    A new sequence's key and value fields are ``h_l ~ N(omega_l, C)``, ``omega_l = x_l . W_hat /
    sqrt(D)`` (the sequence is not in the training set: no Onsager term).

    ``own_tilt=True``: the Bayes-optimal ``E[y | X, data]``, whose location posterior includes the
    new sequence's own evidence about ``k`` (docs/model.md section 5), from the variant's
    :meth:`~bayes_slr.models.variants.TokenLaw.field_location`: spiked ``softmax(sqrt(nu)
    omega_k)`` with ``E[h_{l,v} | eps = l] = omega_{l,v} + sqrt(nu) C_kv``; max, the location
    integrals of variance ``C_kk``.
    ``own_tilt=False``: the training-set posterior mean of ``sum_l softmax(c_nu chi)_l z_l``, what a
    sampler's plain average of draws estimates: ``sum_l E[softmax(c_nu h_k)_l] omega_{l,v}`` (the
    location integral :func:`~bayes_slr.numerics.location_integrals.location_derivatives` at
    inverse temperature ``c_nu``). For max-SLR, whose tokens carry no evidence about ``k``, the
    two are the same integral.
    """
    W, C = state.W.astype(jnp.float64), state.C.astype(jnp.float64)
    own_tilt = bool(own_tilt)
    return lambda X, lengths: _predict(config, own_tilt, W, C, jnp.asarray(X), jnp.asarray(lengths))


@functools.partial(jax.jit, static_argnames=("config", "own_tilt"))
def _predict(
    config: SLRConfig, own_tilt: bool, W: jax.Array, C: jax.Array, X: jax.Array, lengths: jax.Array
) -> jax.Array:
    """:func:`amp_predictor` (compiled once per configuration and shape, not per posterior)."""
    mask = jnp.arange(X.shape[1]) < lengths[:, None]
    omega = jnp.einsum("nld,ad->nla", X.astype(jnp.float64), W) / math.sqrt(X.shape[-1])
    if own_tilt:
        location, value_shift = jax.vmap(
            lambda omega_k, real: config.law.field_location(
                config.nu, omega_k, C[0, 0], C[0, 1], real
            )
        )(omega[..., 0], mask)
        values = omega[..., 1] + value_shift[:, None]
    else:
        location = jax.vmap(location_integrals.location_derivatives, in_axes=(None, 0, None, 0))(
            config.c_nu, omega[..., 0], jnp.minimum(C[0, 0], 1.0), mask
        )
        values = omega[..., 1]
    weights = jax.nn.softmax(jnp.where(mask, location.log_post, -jnp.inf), axis=-1, where=mask)
    return jnp.sum(jnp.where(mask, weights * values, 0.0), axis=-1)
