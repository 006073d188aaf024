"""Damped fixed-point iteration, run entirely inside ``jax.lax.while_loop``."""

from __future__ import annotations

from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp


class FixedPointResult(NamedTuple):
    """Outcome of :func:`damped_fixed_point`.

    Attributes
    ----------
    x : the last iterate (a pytree like the start).
    residual : ``max |F(x) - x| / max(1, |x|)`` at the last step (before damping).
    iterations : number of applications of ``F``.
    converged : whether ``residual <= tol`` was reached with finite values.
    """

    x: object
    residual: jax.Array
    iterations: jax.Array
    converged: jax.Array


def damped_fixed_point(
    update: Callable[[object], object],
    x0: object,
    *,
    damping: float,
    tol: float,
    max_iter: int,
) -> FixedPointResult:
    """Iterate ``x <- (1 - damping) x + damping F(x)`` until the relative residual is below ``tol``.

    Parameters
    ----------
    update : F, a pure JAX function from a pytree of arrays to one of the same structure.
    x0 : starting point.
    damping : weight of the new iterate, in ``(0, 1]``.
    tol : stopping threshold on the relative residual.
    max_iter : largest number of iterations.

    Returns
    -------
    FixedPointResult
        A non-finite iterate stops the loop and is reported as not converged.
    """

    def residual_of(x: object, fx: object) -> jax.Array:
        gaps = jax.tree_util.tree_map(
            lambda a, b: jnp.max(jnp.abs(b - a) / jnp.maximum(1.0, jnp.abs(a))), x, fx
        )
        return jnp.max(jnp.stack(jax.tree_util.tree_leaves(gaps)))

    def keep_going(state: tuple) -> jax.Array:
        _, residual, iteration = state
        return (iteration == 0) | (
            (iteration < max_iter) & (residual > tol) & jnp.isfinite(residual)
        )

    def step(state: tuple) -> tuple:
        x, _, iteration = state
        fx = update(x)
        residual = residual_of(x, fx)
        x_new = jax.tree_util.tree_map(lambda a, b: (1.0 - damping) * a + damping * b, x, fx)
        return x_new, residual, iteration + 1

    x, residual, iterations = jax.lax.while_loop(
        keep_going, step, (x0, jnp.asarray(jnp.inf), jnp.asarray(0))
    )
    converged = (residual <= tol) & jnp.isfinite(residual)
    return FixedPointResult(x, residual, iterations, converged)
