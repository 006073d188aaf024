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
"""Grid of ``nu = log t + kappa``: below, the integrands fall like ``e^nu``; above, like
``e^-nu`` times the weight's scale ``e^kappa`` (``kappa < 14`` down to ``s = 1e-6``). The
integrands are analytic in the strip ``|Im nu| < pi / 2``: the trapezoid error is about
``exp(-pi^2 / 0.5)`` (1e-9 relative, 1e-12 in practice against spacing 0.25)."""
Y_GRID = np.linspace(-9.0, 9.0, 55)
"""Grid of ``y / sqrt(1 + Delta)`` (``y ~ N(0, 1 + Delta)``: the integrands vary on a unit scale
unless ``q_v`` is tiny)."""


@functools.partial(jax.jit, static_argnames=("rule_nodes",))
def _lognormal_mixture_channel(q, Delta, c, probs, lengths, rule_nodes):
    rule = laplace_kernels.table_rule(rule_nodes)
    q_k, q_v = q[0], q[1]
    s2 = Delta + 1.0 - q_v
    s = jnp.sqrt(s2)
    sigma = c * jnp.sqrt(q_k)
    kappa = -0.5 * c**2 * q_k - jnp.log(s * math.sqrt(2.0 * math.pi))
    y = jnp.sqrt(1.0 + Delta) * Y_GRID
    m, tau = y / s, jnp.sqrt(q_v) / s
    transforms = laplace_kernels.quadratic_transforms(
        laplace_kernels.kernel_table(sigma, rule), jnp.asarray(NU_GRID), m, tau
    )
    powers = integrals.power_mixture(
        probs, lengths - 1.0, integrals.log_complement(transforms.tail)
    )
    spread = 1.0 + tau**2
    mean_weight = jnp.exp(-0.5 * m**2 / spread) / (jnp.sqrt(spread) * s * math.sqrt(2.0 * math.pi))
    mean_rho_weight = 0.5 * mean_weight * ((m / spread) ** 2 + tau**2 / spread)
    mean_weight_log = mean_weight * (kappa + sigma**2) - mean_rho_weight
    nu_step = NU_GRID[1] - NU_GRID[0]
    inner = jnp.exp(kappa - jnp.asarray(NU_GRID)) * nu_step
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
        q, Delta, jnp.asarray(c, dtype=float), probs, lengths, laplace_kernels.table_rule_size(c)
    )
