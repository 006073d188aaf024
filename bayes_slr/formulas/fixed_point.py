"""Fixed-point iterations run entirely inside ``jax.lax.while_loop``: damped, the chord method
(Newton's method with a Jacobian computed once) and the two in turn; and the standard error of a
fixed point from its independent replicates."""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np


class FixedPointResult(NamedTuple):
    """Outcome of :func:`damped_fixed_point` or :func:`chord_fixed_point`.

    Attributes
    ----------
    x : the last iterate (a pytree like the start).
    residual : ``max |F(x) - x| / max(1, |x|)`` at the last step (before the step).
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

    def advance(x: object, fx: object) -> object:
        return jax.tree_util.tree_map(lambda a, b: (1.0 - damping) * a + damping * b, x, fx)

    return _iterate(update, x0, advance, tol, max_iter)


def chord_fixed_point(
    update: Callable[[jax.Array], jax.Array],
    x0: jax.Array,
    *,
    inverse: jax.Array,
    tol: float,
    max_iter: int,
) -> FixedPointResult:
    """Iterate ``x <- x + inverse (F(x) - x)`` (the chord method: Newton's method for
    ``x = F(x)`` with ``inverse = (I - J)^{-1}`` for a Jacobian ``J`` of ``F`` computed once)
    until the relative residual is below ``tol``.

    It converges linearly, at the rate of ``inverse (J_true - J)``: fast from a start near the
    fixed point with ``J`` taken near it (for example on a subset of the averages' draws).

    Parameters
    ----------
    update : F, a pure JAX function from a ``(k,)`` array to one of the same shape.
    x0 : starting point, ``(k,)``.
    inverse : ``(k, k)`` matrix ``(I - J)^{-1}``.
    tol, max_iter : as in :func:`damped_fixed_point`.
    """
    return _iterate(update, x0, lambda x, fx: x + inverse @ (fx - x), tol, max_iter)


def damped_or_chord_fixed_point(
    update: Callable[[jax.Array], jax.Array],
    x0: jax.Array,
    *,
    chord: jax.Array,
    inverse: jax.Array,
    damping: float,
    tol: float,
    max_iter: int,
) -> FixedPointResult:
    """:func:`chord_fixed_point` with ``inverse`` where ``chord`` is true, else
    :func:`damped_fixed_point` with ``damping``, on a ``(k,)`` array: the two iterations in one
    program (``chord`` and ``max_iter`` may be traced). Each step is the chosen iteration's, number
    for number (the other one's step is computed and dropped)."""

    def advance(x: jax.Array, fx: jax.Array) -> jax.Array:
        return jnp.where(chord, x + inverse @ (fx - x), (1.0 - damping) * x + damping * fx)

    return _iterate(update, x0, advance, tol, max_iter)


Mapper = Callable[[Callable[[jax.Array], jax.Array], jax.Array], jax.Array]
"""How :func:`difference_jacobian` evaluates ``update`` at its perturbed points: ``mapper(f, xs)``
is ``f`` applied to each row of ``xs``, stacked (``jax.lax.map``, or :func:`host_map`)."""


def host_map(f: Callable[[jax.Array], jax.Array], xs: jax.Array) -> jax.Array:
    """``jax.lax.map(f, xs)`` as a loop on the host, one call of ``f`` per row: for an ``f`` that
    is a compiled program of its own (which ``jax.lax.map`` outside ``jit`` would trace into a
    new program)."""
    return jnp.stack([f(x) for x in xs])


def difference_jacobian(
    update: Callable[[jax.Array], jax.Array],
    x: jax.Array,
    *,
    step: float,
    mapper: Mapper = jax.lax.map,
) -> jax.Array:
    """The Jacobian of ``update`` at the ``(k,)`` array ``x`` by central differences of relative
    step ``step`` (one perturbation at a time: the memory of one evaluation; ``2 k``
    evaluations, by ``mapper``)."""
    steps = step * jnp.maximum(1.0, jnp.abs(x))
    shifts = jnp.concatenate([jnp.diag(steps), -jnp.diag(steps)])
    values = mapper(lambda shift: update(x + shift), shifts)
    return ((values[: x.size] - values[x.size :]) / (2 * steps[:, None])).T


def difference_inverse(
    update: Callable[[jax.Array], jax.Array],
    x: jax.Array,
    *,
    step: float,
    mapper: Mapper = jax.lax.map,
) -> jax.Array:
    """``(I - J)^{-1}``, ``J`` the Jacobian of ``update`` at ``x`` (:func:`difference_jacobian`)."""
    jacobian = difference_jacobian(update, x, step=step, mapper=mapper)
    return jnp.linalg.inv(jnp.eye(x.size) - jacobian)


ATTRACTING_POWER = 6
""":func:`attracting` squares the damped map's Jacobian this many times (its 64th power)."""


def attracting(jacobian: jax.Array, damping: float) -> jax.Array:
    """Whether a fixed point whose map has ``jacobian`` attracts the damped iteration: the 64th
    power of ``(1 - damping) I + damping J`` has max-norm below 1 (spectral radius below 1; a
    radius of 0.99 passes, 1.001 fails), by repeated squaring (no eigenvalues: the same program on
    every device)."""
    power = (1.0 - damping) * jnp.eye(jacobian.shape[0]) + damping * jacobian
    for _ in range(ATTRACTING_POWER):
        power = power @ power
    return jnp.max(jnp.sum(jnp.abs(power), axis=1)) < 1.0


def damped_then_chord(
    update: Callable[[jax.Array], jax.Array],
    x0: jax.Array,
    *,
    damping: float,
    tol: float,
    max_iter: int,
    switch: float,
    radius: float,
    step: float,
) -> FixedPointResult:
    """The damped iteration until the relative residual is below ``switch``, then the chord
    iteration from there with the Jacobian there (:func:`difference_inverse`, relative step
    ``step``) until it is below ``tol``; where the chord iteration fails, moves farther than
    ``radius`` (max norm) from where it started, or ends on a fixed point that does not attract
    the damped iteration (:func:`attracting`, the Jacobian there by central differences), the
    damped iteration goes on from where the chord iteration started instead.

    The damped iteration converges linearly at the rate of the map's Jacobian; the chord
    iteration from a point within ``switch`` of the fixed point at the rate of the Jacobian's
    change over that distance (a few steps from ``switch = 1e-2`` to ``tol = 1e-9``). A point
    that the damped iteration reaches with residual ``r`` lies about ``r / (1 - rho)`` from its
    fixed point (``rho`` the contraction of the undamped map), so ``radius`` bounds the
    ``1 / (1 - rho)`` that the chord step is trusted with. Where the damped iteration slows
    down near a fold (a fixed point that has vanished, or a pair of them, one unstable), the
    chord iteration can converge on the unstable one, which the damped iteration never reaches:
    the attraction check leaves such a point to the damped iteration, as without the chord.

    Parameters
    ----------
    update : F, a pure JAX function from a ``(k,)`` array to one of the same shape.
    x0 : starting point, ``(k,)``.
    damping, tol, max_iter : as in :func:`damped_fixed_point` (``max_iter`` for each stage).
    switch : residual at which the chord iteration takes over, ``>= tol``.
    radius : longest distance the chord iteration may move the iterate.
    step : relative step of the central differences.

    Returns
    -------
    FixedPointResult
        ``iterations`` counts both stages' applications of F (not the two Jacobians' ``4 k``).
    """
    first = damped_fixed_point(
        update, x0, damping=damping, tol=jnp.maximum(switch, tol), max_iter=max_iter
    )

    def damped_on() -> FixedPointResult:
        return damped_fixed_point(update, first.x, damping=damping, tol=tol, max_iter=max_iter)

    def chord_or_damped() -> FixedPointResult:
        inverse = difference_inverse(update, first.x, step=step)
        chord = chord_fixed_point(update, first.x, inverse=inverse, tol=tol, max_iter=max_iter)
        near = (
            chord.converged
            & jnp.all(jnp.isfinite(inverse))
            & (jnp.max(jnp.abs(chord.x - first.x)) <= radius)
        )
        trusted = near & attracting(difference_jacobian(update, chord.x, step=step), damping)
        return jax.lax.cond(trusted, lambda: chord, damped_on)

    # a damped iteration that did not reach ``switch`` (``max_iter``, or non-finite) is the result
    unmoved = first._replace(iterations=jnp.zeros_like(first.iterations))
    second = jax.lax.cond(first.converged, chord_or_damped, lambda: unmoved)
    return second._replace(iterations=first.iterations + second.iterations)


def _iterate(
    update: Callable[[object], object],
    x0: object,
    advance: Callable[[object, object], object],
    tol: float,
    max_iter: int,
) -> FixedPointResult:
    """Iterate ``x <- advance(x, F(x))`` until the relative residual of ``F`` is below ``tol``."""

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
        return advance(x, fx), residual_of(x, fx), iteration + 1

    x, residual, iterations = jax.lax.while_loop(
        keep_going, step, (x0, jnp.asarray(jnp.inf), jnp.asarray(0))
    )
    converged = (residual <= tol) & jnp.isfinite(residual)
    return FixedPointResult(x, residual, iterations, converged)


def replicate_stderr(values: list[float]) -> float:
    """The standard error of the mean of independent replicates (their spread over
    ``sqrt(count)``): the fixed points of independent draw batches, each solved from the pooled
    one, so that the fixed point's movement with the draws is included."""
    return float(np.std(values, ddof=1) / math.sqrt(len(values)))
