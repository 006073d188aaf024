"""Output channel of a Gaussian mixture over tokens with log-normal weights, by quadrature.

A sequence of ``L`` tokens with Gaussian fields ``(w_l, o_l) ~ N(0, diag(q_k, q_v))``, i.i.d. over
tokens, and an output ``y`` see the mixture

    Z(y, w, o) = (1/L) sum_l exp(c w_l - c^2 q_k / 2) N(y; o_l, s^2),   s^2 = Delta + 1 - q_v

(``E_w[exp(c w - c^2 q_k / 2)] = 1``: ``int dy E[Z] = 1``). :func:`lognormal_mixture_channel`
returns, averaged over ``L`` from a length law,

* ``psi = int dy E[Z log Z]``,
* ``score_w = int dy E[Z sum_l (d log Z / d w_l)^2]`` and ``score_o`` the same in ``o_l``.

Every term is an average over independent tokens, so with ``log Z = log a_1 + log(1 + R)``,
``log(1 + R) = int dt/t e^(-t) (1 - e^(-t R))`` and ``1/Z = int e^(-t Z) dt`` each becomes a
one-dimensional integral over ``nu = log t + log A`` of products of one-token Laplace transforms
(:func:`bayes_slr.numerics.laplace_kernels.quadratic_transforms`), the other tokens entering as the
power ``Lambda^(L - 1)`` (:func:`bayes_slr.numerics.integrals.power_mixture`), and an outer
integral over ``y``. With ``A = exp(kappa + c w) exp(-r^2 / 2)``, ``r = (y - o) / s ~ N(y / s,
q_v / s^2)``, ``kappa = -c^2 q_k / 2 - log(s sqrt(2 pi))``:

    psi     = int dy { E[A log A] - E[log L] E[A]
                       + e^kappa int dnu e^-nu first (1 - E_L Lambda^(L-1)) }
    score_w = c^2     int dy e^kappa int dnu e^-nu second     E_L Lambda^(L-1)
    score_o = 2 / s^2 int dy e^kappa int dnu e^-nu second_rho E_L Lambda^(L-1)

(``Lambda = 1 - tail``; ``E[A]`` and ``E[A log A]`` in closed form). Both integrals are trapezoid
rules on analytic integrands that vanish at the ends: the spacings below give about 1e-11 relative
accuracy, checked against finer grids (and the kernel table's own 1e-9 on the logarithms).
"""

from __future__ import annotations

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.numerics import integrals, laplace_kernels

NU_GRID = np.arange(-30.0, 45.0 + 1e-9, 0.5)
"""Grid of ``nu = log t + kappa`` for weights of small spread: below, the integrands fall like
``e^nu``; above, like ``e^-nu`` times the weight's scale ``e^kappa`` (``kappa < 14`` down to ``s =
1e-6``). The integrands are analytic in the strip ``|Im nu| < pi / 2``: the trapezoid error is
about ``exp(-pi^2 / 0.5)`` (1e-9 relative, 1e-12 in practice against spacing 0.25).
:func:`nu_grid` extends it below for a wide spread."""
NU_TAIL = 27.0
"""The grid's lower end is ``min(-30, -NU_TAIL - 1.5 sigma^2)``: ``score_w``'s integrand
(``e^-nu E[X^2 e^-X]``, ``X = e^(nu + sigma z)``) peaks near ``nu = -sigma^2`` at ``e^(sigma^2 /
2)`` and falls like ``e^(nu + 2 sigma^2)`` below ``-2 sigma^2``, so the cut loses about
``e^(-NU_TAIL)`` of it at every spread (the grid grows only once ``sigma^2 > 2``)."""
Y_GRID = np.linspace(-9.0, 9.0, 55)
"""Grid of ``y / sqrt(1 + Delta)`` (``y ~ N(0, 1 + Delta)``: the integrands vary on a unit scale
unless ``q_v`` is tiny)."""


def grid_extension(max_sigma: float) -> int:
    """Nodes added below :data:`NU_GRID` for spreads up to ``max_sigma``: down to ``-NU_TAIL - 1.5
    max_sigma^2`` where that is below ``-30``."""
    step = NU_GRID[1] - NU_GRID[0]
    reach = max(0.0, NU_GRID[0] + NU_TAIL + 1.5 * float(max_sigma) ** 2) / step
    return math.ceil(round(reach, 9))  # sqrt(2)^2 = 2 + 4e-16 adds nothing


def nu_grid(extension: int) -> np.ndarray:
    """:data:`NU_GRID` with ``extension`` nodes of the same spacing added below."""
    step = NU_GRID[1] - NU_GRID[0]
    return np.concatenate([NU_GRID[0] + step * np.arange(-extension, 0), NU_GRID])


@functools.partial(jax.jit, static_argnames=("rule_nodes", "rule_top", "extension"))
def _lognormal_mixture_channel(q, Delta, c, probs, lengths, rule_nodes, rule_top, extension):
    rule = laplace_kernels.table_rule(rule_nodes, rule_top)
    grid = nu_grid(extension)
    q_k, q_v = q[0], q[1]
    s2 = Delta + 1.0 - q_v
    s = jnp.sqrt(s2)
    sigma = c * jnp.sqrt(q_k)
    kappa = -0.5 * c**2 * q_k - jnp.log(s * math.sqrt(2.0 * math.pi))
    y = jnp.sqrt(1.0 + Delta) * Y_GRID
    m, tau = y / s, jnp.sqrt(q_v) / s
    transforms = laplace_kernels.quadratic_transforms(
        laplace_kernels.kernel_table(sigma, rule), jnp.asarray(grid), m, tau
    )
    powers = integrals.power_mixture(
        probs, lengths - 1.0, integrals.log_complement(transforms.tail)
    )
    spread = 1.0 + tau**2
    mean_weight = jnp.exp(-0.5 * m**2 / spread) / (jnp.sqrt(spread) * s * math.sqrt(2.0 * math.pi))
    mean_rho_weight = 0.5 * mean_weight * ((m / spread) ** 2 + tau**2 / spread)
    mean_weight_log = mean_weight * (kappa + sigma**2) - mean_rho_weight
    nu_step = grid[1] - grid[0]
    inner = jnp.exp(kappa - jnp.asarray(grid)) * nu_step
    psi = (
        mean_weight_log
        - jnp.sum(probs * jnp.log(lengths)) * mean_weight
        + jnp.sum(inner * transforms.first * (1.0 - powers), axis=1)
    )
    score_w = c**2 * jnp.sum(inner * transforms.second * powers, axis=1)
    score_o = 2.0 / s2 * jnp.sum(inner * transforms.second_rho * powers, axis=1)
    y_step = (Y_GRID[1] - Y_GRID[0]) * jnp.sqrt(1.0 + Delta)
    return y_step * jnp.stack([jnp.sum(psi), jnp.sum(score_w), jnp.sum(score_o)])


def lognormal_mixture_channel(
    q: jax.Array, Delta: jax.Array, c: float, probs: jax.Array, lengths: jax.Array
) -> jax.Array:
    """``(psi, score_w, score_o)`` of the mixture channel (module docstring), a ``(3,)`` array.

    Parameters
    ----------
    q : (2,) overlaps ``(q_k, q_v)``, with ``0 <= q_k`` and ``0 <= q_v < 1 + Delta``.
    Delta : noise variance ``>= 0``.
    c : weight scale ``>= 0`` (a Python number: it sizes the kernel tables).
    probs, lengths : the length law's support (``probs`` sum to one; padded entries have
        probability 0), as float arrays.

    Differentiable in ``q`` and ``Delta`` (forward mode), jittable inside a caller's ``jit``.
    """
    return _lognormal_mixture_channel(
        q,
        Delta,
        jnp.asarray(c, dtype=float),
        probs,
        lengths,
        laplace_kernels.table_rule_size(c),
        laplace_kernels.rule_top(c),
        grid_extension(c),
    )


SHIFT_STEP = 0.125
"""Spacing of the two-token rule in ``delta = log(P_2 / P_1)``, and of the fine ``nu`` grid whose
index shifts are those ``delta``."""
SHIFT_RANGE = 30.0
"""``|delta|`` covered: beyond it the second token's weight is below ``e^-30`` of the first's."""
_SHIFTS = np.arange(-SHIFT_RANGE, SHIFT_RANGE + 1e-9, SHIFT_STEP)
_FINE_NU = np.arange(NU_GRID[0] - SHIFT_RANGE, NU_GRID[-1] + SHIFT_RANGE + 1e-9, SHIFT_STEP)
_BASE = np.round((NU_GRID - _FINE_NU[0]) / SHIFT_STEP).astype(int)
_SHIFTED = _BASE[None, :] + np.round(_SHIFTS / SHIFT_STEP).astype(int)[:, None]
NEWTON_STEPS = 40
NARROW_SPREAD = 0.5
"""Below this standard deviation of ``u`` (``q_k < 0.2``) the law of the key difference is
integrated by Gauss-Hermite in ``u``."""
INTERPOLATION_ORDER = 8
_HERMITE_NODES, _HERMITE_WEIGHTS = np.polynomial.hermite_e.hermegauss(41)
_HERMITE_WEIGHTS = _HERMITE_WEIGHTS / _HERMITE_WEIGHTS.sum()


def _softmax_pair_probability(u: jax.Array, a: jax.Array, rule: integrals.Rule):
    """``log P_1`` and ``d P_1 / d u`` for ``P_1 = E_z[sigmoid(a (u + z))]``."""
    x = a * (u[..., None] + rule.nodes)
    log_p = jax.scipy.special.logsumexp(jax.nn.log_sigmoid(x) + jnp.log(rule.weights), axis=-1)
    slope = a * jnp.sum(rule.weights * jax.nn.sigmoid(x) * jax.nn.sigmoid(-x), axis=-1)
    return log_p, slope


def _pair_probability(
    u: jax.Array, a: jax.Array, argmax: bool, rule: integrals.Rule
) -> tuple[jax.Array, jax.Array]:
    """``P_1`` and ``d P_1 / d u`` at ``u`` (see :func:`_pair_location`)."""
    if argmax:
        return jax.scipy.special.ndtr(u), jnp.exp(jax.scipy.stats.norm.logpdf(u))
    log_p, slope = _softmax_pair_probability(u, a, rule)
    return jnp.exp(log_p), slope


def _pair_location(
    delta: jax.Array, a: jax.Array, argmax: bool, rule: integrals.Rule
) -> tuple[jax.Array, jax.Array]:
    """``u`` with ``log(P_2 / P_1) = delta``, and ``d P_1 / d u`` there.

    ``u = (w_1 - w_2) / sqrt(2 V_k)`` is the scaled key difference; ``P_1 = Phi(u)`` (argmax) or
    ``E_z[sigmoid(a (u + z))]`` with ``a = nu sqrt(2 V_k)`` (softmax at inverse temperature
    ``nu``), inverted by Newton's method on ``log P_1``.
    """
    log_target = jax.nn.log_sigmoid(-delta)
    if argmax:
        u = jax.scipy.special.ndtri(jnp.exp(log_target))
        return u, jnp.exp(jax.scipy.stats.norm.logpdf(u))

    # P_1(-u) = 1 - P_1(u): solve where P_1 <= 1/2 (Newton on log P_1 is well behaved there) and
    # reflect
    log_target = jax.nn.log_sigmoid(-jnp.abs(delta))

    def step(u, _):
        log_p, slope = _softmax_pair_probability(u, a, rule)
        return u - (log_p - log_target) * jnp.exp(log_p) / slope, None

    start = -jnp.abs(delta) * jnp.sqrt(1.0 + math.pi * a**2 / 8.0) / a
    u, _ = jax.lax.scan(step, start, None, length=NEWTON_STEPS)
    return jnp.sign(delta) * u, _softmax_pair_probability(u, a, rule)[1]


@functools.partial(jax.jit, static_argnames=("argmax", "rule_nodes"))
def _two_token_mixture_channel(q, Delta, nu, argmax, rule_nodes):
    q_k, q_v = q[0], q[1]
    V_k = 1.0 - q_k
    s2 = Delta + 1.0 - q_v
    s = jnp.sqrt(s2)
    kappa = -jnp.log(s * math.sqrt(2.0 * math.pi))
    y = jnp.sqrt(1.0 + Delta) * Y_GRID
    m, tau = y / s, jnp.sqrt(q_v) / s
    table = laplace_kernels.kernel_table(jnp.zeros(()), laplace_kernels.table_rule(17))
    fine = laplace_kernels.quadratic_transforms(table, jnp.asarray(_FINE_NU), m, tau)
    rule = laplace_kernels.table_rule(rule_nodes)
    u, slope = _pair_location(jnp.asarray(_SHIFTS), nu * jnp.sqrt(2.0 * V_k), argmax, rule)
    p = jax.nn.sigmoid(-jnp.asarray(_SHIFTS))
    spread = jnp.sqrt(q_k / V_k)  # u ~ N(0, q_k / V_k)
    safe = jnp.maximum(spread, NARROW_SPREAD)  # the narrow rule replaces these weights below it
    weights = SHIFT_STEP * jnp.exp(jax.scipy.stats.norm.logpdf(u / safe)) / safe
    weights = weights * p * (1.0 - p) / slope  # |du / d delta|
    base = jnp.exp(-jnp.asarray(NU_GRID)) * (NU_GRID[1] - NU_GRID[0])
    tail, first, second, second_rho = (x[:, _BASE] for x in fine)
    tail_s, first_s, second_s = (x[:, _SHIFTED] for x in (fine.tail, fine.first, fine.second))
    # token 1 on the base grid, token 2 shifted by delta = log(P_2 / P_1); the reversed rule is
    # the other token's view (the rule is symmetric in delta)
    J = jnp.sum(base * first[:, None, :] * tail_s, axis=-1)
    J_rho = jnp.sum(base * second_rho[:, None, :] * (1.0 - tail_s), axis=-1)
    located = jnp.sum(base * second_rho, axis=-1)[:, None]
    K = jnp.sum(
        base
        * (
            second[:, None, :] * (1.0 - tail_s) / p[:, None]
            - 2.0 * first[:, None, :] * first_s / (1.0 - p)[:, None]
            + p[:, None] * (1.0 - tail)[:, None, :] * second_s / (1.0 - p)[:, None] ** 2
        ),
        axis=-1,
    )
    on_grid = (
        p * J + (1.0 - p) * J[:, ::-1],
        p * J_rho + (1.0 - p) * J_rho[:, ::-1] - located,
        K,
    )
    # wide laws of the key difference: the trapezoid in delta; narrow ones (spread < NARROW_SPREAD):
    # Gauss-Hermite in u, the functions of delta interpolated from the grid
    narrow_u = spread * _HERMITE_NODES
    narrow_p, narrow_slope = _pair_probability(narrow_u, nu * jnp.sqrt(2.0 * V_k), argmax, rule)
    narrow_delta = jnp.log1p(-narrow_p) - jnp.log(narrow_p)
    narrow = [_interpolate(f, narrow_delta) for f in on_grid]
    wide_rule = (weights, p, slope, on_grid)
    narrow_rule = (_HERMITE_WEIGHTS, narrow_p, narrow_slope, narrow)
    mean_entropy, psi_term, value_term, key_term = jnp.where(
        spread < NARROW_SPREAD, _pair_average(narrow_rule, V_k), _pair_average(wide_rule, V_k)
    )
    spread_r = 1.0 + tau**2
    mean_weight = jnp.exp(-0.5 * m**2 / spread_r) / (
        jnp.sqrt(spread_r) * s * math.sqrt(2 * math.pi)
    )
    mean_rho_weight = 0.5 * mean_weight * ((m / spread_r) ** 2 + tau**2 / spread_r)
    scale = jnp.exp(kappa)
    psi = mean_weight * kappa - mean_rho_weight - mean_weight * mean_entropy + scale * psi_term
    score_o = 2.0 / s2 * scale * (value_term + located[:, 0])
    score_w = 2.0 * scale * key_term
    y_step = (Y_GRID[1] - Y_GRID[0]) * jnp.sqrt(1.0 + Delta)
    return y_step * jnp.stack([jnp.sum(psi), jnp.sum(score_w), jnp.sum(score_o)])


def _pair_average(rule: tuple, V_k: jax.Array) -> jax.Array:
    """``E[H(P_1)]`` and the three averages over the key difference, each ``(n_y,)`` (the entropy
    broadcast), from ``(weights, P_1, dP_1/du, (f_psi, f_v, f_k))`` at the rule's nodes."""
    weights, p, slope, (f_psi, f_v, f_k) = rule
    entropy = -(p * jnp.log(p) + (1.0 - p) * jnp.log1p(-p))
    key_factor = slope**2 / (2.0 * V_k)
    return jnp.stack(
        [
            jnp.broadcast_to(jnp.sum(weights * entropy), f_psi.shape[:1]),
            jnp.sum(weights * f_psi, axis=1),
            jnp.sum(weights * f_v, axis=1),
            jnp.sum(weights * key_factor * f_k, axis=1),
        ]
    )


def _interpolate(values: jax.Array, x: jax.Array) -> jax.Array:
    """``values`` ``(..., n)`` given on the ``delta`` grid, at the points ``x`` ``(m,)``, by
    Lagrange interpolation on the :data:`INTERPOLATION_ORDER` nearest nodes (the functions are
    analytic in ``delta`` on a unit scale: error about ``SHIFT_STEP^8 / 8!``)."""
    count = values.shape[-1]
    position = (x - _SHIFTS[0]) / SHIFT_STEP
    first = jnp.clip(
        jnp.floor(position).astype(jnp.int32) - INTERPOLATION_ORDER // 2 + 1,
        0,
        count - INTERPOLATION_ORDER,
    )
    nodes = first[:, None] + jnp.arange(INTERPOLATION_ORDER)
    gaps = position[:, None] - nodes  # (m, order)
    offsets = jnp.arange(INTERPOLATION_ORDER)
    differences = offsets[:, None] - offsets[None, :]
    ratio = jnp.where(
        differences == 0, 1.0, gaps[:, None, :] / jnp.where(differences == 0, 1.0, differences)
    )  # (m, j, k): (x - x_k) / (x_j - x_k)
    basis = jnp.prod(ratio, axis=-1)
    return jnp.sum(values[..., nodes] * basis, axis=-1)


def two_token_mixture_channel(q: jax.Array, Delta: jax.Array, nu: float) -> jax.Array:
    """``(psi, score_w, score_o)`` for two tokens whose weights are the probabilities that each one
    wins: ``Z = P_1 N(y; o_1, s^2) + P_2 N(y; o_2, s^2)`` with ``P_1 = P(h_1 > h_2)`` (``nu = inf``)
    or ``E[softmax(nu h)_1]``, ``h_j ~ N(w_j, 1 - q_k)``.

    The weights depend on the key fields only through ``d = w_1 - w_2 ~ N(0, 2 q_k)``: the outer
    integral runs over ``delta = log(P_2 / P_1)`` on a uniform grid of spacing
    :data:`SHIFT_STEP`, so that the second token's transforms are the first's on a grid shifted by
    a whole number of steps (one set of transforms on a fine grid serves every ``delta``). Where
    the key difference's law is narrow in ``delta`` (``q_k`` below about 0.04) the rule is coarse.
    """
    if math.isinf(nu):
        return _two_token_mixture_channel(q, Delta, jnp.ones(()), True, 17)
    rule_nodes = laplace_kernels.table_rule_size(nu * math.sqrt(2.0))
    return _two_token_mixture_channel(q, Delta, jnp.asarray(nu, dtype=float), False, rule_nodes)
