"""Variable projection of the ERM objective: the value vectors in closed form.

The student is linear in its value vectors: ``f(X) = sum_h sum_l s(chi_h)_l x_l . v_h / sqrt(D)
= A(k, c) v`` with row ``a_mu = sum_l s(chi_mu)_l x_{mu l} / sqrt(D)`` per head (``N x H D``).
For fixed keys and offsets the objective of docs/model.md section 5,
``sum_mu (y_mu - f)^2 / 2 + lam/2 (|k|^2 + |v|^2 + c^2)``, is a ridge regression in ``v``,
minimised by the solution of ``(A^T A + lam I) v = A^T y`` (at ``lam = 0`` the least-norm
least-squares solution). The *profiled* objective ``F(k, c) = objective(k, v(k, c), c)`` has
the same minima as the full one (a minimum of ``F`` with its ``v`` is one of the objective, and
every minimum of the objective has ``v = v(k, c)``), and by the envelope theorem its gradient is
the objective's partial gradient in ``(k, c)`` at ``v = v(k, c)`` (the gradient in ``v`` is
zero there), so ``v`` enters the automatic derivative as a constant. L-BFGS then runs over the
keys alone (Golub and Pereyra's variable projection): fewer iterations on the ill-conditioned
``v`` directions of linear attention at large ``L``, at the price of two passes over the tokens
per value (``X k``, then ``A``) and a ``H D x H D`` solve (docs/performance.md).
"""

from __future__ import annotations

import math
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.attention.activations import attention_weights
from bayes_slr.attention.estimators import AttentionParams
from bayes_slr.models.simulate import token_mask

MIN_TOKENS_PER_VALUE = 0.1
"""Variable projection is used when the padded length is at least this share of the number of
values ``H D`` (:func:`pays_off`). Its evaluation costs a ``H D x H D`` Gram matrix and solve
(``N (H D)^2``) on top of about twice the full objective's passes over the tokens
(``N Lbar H D``); it saves iterations and evaluations, most for linear attention at large
``L``. One solve at ``D = 100``, ``N = 1600``, ``lam = 1`` and ``0.1``, 4 random starts and the
informed one (``benchmarks/erm_projection.py``, beside other jobs): ``L = 3`` softmax x0.43 and
x0.45 (121 and 178 evaluations against 136 and 302, 2-3 times the time each), linear x0.67 and
x0.94; ``L = 5`` erf x2.0 and x0.80; ``L = 10`` softmax x0.83 and x1.5, linear x1.1 and x6.3;
``L = 30`` softmax x3.4 and x2.7, linear x9.7 and x28; ``L = 100`` (``lam = 0.1``) softmax x1.1,
linear x4.9."""


def pays_off(Lbar: int, values: int, samples: int) -> bool:
    """Whether variable projection is used for ``Lbar`` tokens, ``values`` value coordinates and
    ``samples`` training sequences: where it is cheaper (:data:`MIN_TOKENS_PER_VALUE`), and only
    with more sequences than values. With as many values as sequences or more, ``v`` can
    interpolate the labels for every key, so at ``lam = 0`` the profiled objective is flat (0
    everywhere) and L-BFGS would stop wherever it starts: the full objective's path, whose
    minima those are too, is kept there, so that the reported minimum does not change."""
    return Lbar >= MIN_TOKENS_PER_VALUE * values and samples > values


class Keys(NamedTuple):
    """The parameters L-BFGS runs over under variable projection: keys ``k`` and erf offsets
    ``c`` (shapes of :class:`~bayes_slr.attention.estimators.AttentionParams`)."""

    k: jax.Array
    c: jax.Array


def design(keys: Keys, X: jax.Array, lengths: jax.Array, activation: str) -> jax.Array:
    """``A(k, c)``, ``(N, H D)`` (``(N, D)`` for one head): ``f = A v`` with ``v`` flattened.

    Parameters
    ----------
    keys : ``k`` ``(D,)`` and ``c`` ``()``, or ``(H, D)`` and ``(H,)`` for ``H`` heads.
    X : (N, Lbar, D) tokens; lengths : (N,) (padded tokens get weight 0).
    activation : a registered activation (static).
    """
    if jnp.ndim(keys.k) == 2:
        heads = jax.vmap(lambda head: design(head, X, lengths, activation))(keys)
        return jnp.moveaxis(heads, 0, 1).reshape(X.shape[0], -1)
    scale = math.sqrt(X.shape[-1])
    chi = X @ keys.k / scale
    weights = attention_weights(activation, chi, token_mask(lengths, X.shape[-2]), keys.c)
    return jnp.einsum("nl,nld->nd", weights, X) / scale


def ridge_values(A: jax.Array, y: jax.Array, lam: jax.Array | float) -> jax.Array:
    """The minimiser of ``|y - A v|^2 / 2 + lam |v|^2 / 2``: a Cholesky solve of ``(A^T A + lam
    I) v = A^T y`` for ``lam > 0``; at ``lam = 0`` the least-norm least-squares solution (the
    Gram matrix's eigenvalues below ``P`` machine epsilons of the largest count as zero)."""
    gram, moment = A.T @ A, A.T @ y
    size = gram.shape[0]

    def ridge(_):
        factor = jax.scipy.linalg.cho_factor(gram + lam * jnp.eye(size, dtype=gram.dtype))
        return jax.scipy.linalg.cho_solve(factor, moment)

    def least_norm(_):
        eigenvalues, vectors = jnp.linalg.eigh(gram)
        cutoff = size * jnp.finfo(gram.dtype).eps * jnp.max(eigenvalues)
        inverse = jnp.where(
            eigenvalues > cutoff, 1.0 / jnp.where(eigenvalues > cutoff, eigenvalues, 1.0), 0.0
        )
        return vectors @ (inverse * (vectors.T @ moment))

    return jax.lax.cond(lam > 0, ridge, least_norm, None)


def profiled_parts(
    keys: Keys, X: jax.Array, lengths: jax.Array, y: jax.Array, activation: str, lam
) -> tuple[jax.Array, jax.Array]:
    """``(objective, v)``: the per-sample objective at ``(k, v(k, c), c)`` and the closed-form
    ``v`` (shaped as ``k``), held constant under differentiation (module docstring)."""
    A = design(keys, X, lengths, activation)
    v = jax.lax.stop_gradient(ridge_values(A, y, lam))
    residual = y - A @ v
    penalty = jnp.sum(keys.k**2) + jnp.sum(v**2) + jnp.sum(keys.c**2)
    value = (0.5 * jnp.sum(residual**2) + 0.5 * lam * penalty) / y.shape[0]
    return value, v.reshape(keys.k.shape)


def profiled_objective(
    keys: Keys, X: jax.Array, lengths: jax.Array, y: jax.Array, activation: str, lam
) -> jax.Array:
    """``F(k, c)``: the per-sample objective minimised over ``v`` (:func:`profiled_parts`)."""
    return profiled_parts(keys, X, lengths, y, activation, lam)[0]


def keys_of(params: AttentionParams) -> Keys:
    """The keys and offsets of ``params`` (its ``v`` is set by the projection)."""
    return Keys(params.k, params.c)


def with_values(
    keys: Keys, X: jax.Array, lengths: jax.Array, y: jax.Array, activation: str, lam
) -> AttentionParams:
    """``(k, v(k, c), c)``: the keys with their closed-form values."""
    _, v = profiled_parts(keys, X, lengths, y, activation, lam)
    return AttentionParams(keys.k, v, keys.c)
