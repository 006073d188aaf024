"""The chord iteration (:func:`~bayes_slr.formulas.fixed_point.chord_fixed_point`) reaches the
damped iteration's fixed point, and in few steps when its Jacobian is taken near it."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from bayes_slr.formulas.fixed_point import chord_fixed_point, damped_fixed_point

SHIFT = jnp.array([0.3, -0.2, 0.5])
COUPLING = jnp.array([[0.4, 0.3, 0.0], [-0.2, 0.5, 0.2], [0.1, 0.0, 0.6]])


def contraction(x: jax.Array) -> jax.Array:
    """A smooth nonlinear map of ``R^3`` with a unique fixed point (Lipschitz constant below 1)."""
    return COUPLING @ jnp.tanh(x) + SHIFT


def test_chord_reaches_the_damped_fixed_point_in_few_steps():
    """Both stop within ``tol`` of the fixed point; the damped iteration's distance is ``tol``
    over one minus its rate (at most 0.9 here), so they agree within ``20 tol``. The chord
    iteration's Jacobian, taken at a point 0.1 away, gives a rate of about 0.1: it needs far
    fewer steps than the damped one."""
    tol = 1e-10
    damped = damped_fixed_point(contraction, jnp.zeros(3), damping=0.5, tol=tol, max_iter=2000)
    near = damped.x + 0.1
    inverse = jnp.linalg.inv(jnp.eye(3) - jax.jacfwd(contraction)(near))
    chord = chord_fixed_point(contraction, near, inverse=inverse, tol=tol, max_iter=100)
    assert bool(damped.converged) and bool(chord.converged)
    assert jnp.max(jnp.abs(chord.x - damped.x)) < 20 * tol
    assert int(chord.iterations) < int(damped.iterations) / 3


@pytest.mark.parametrize("scale", [jnp.inf, jnp.nan])
def test_chord_stops_unconverged_on_a_non_finite_iterate(scale):
    """A map that leaves the finite numbers stops the loop at once, reported not converged."""
    result = chord_fixed_point(
        lambda x: x * scale, jnp.ones(2), inverse=jnp.eye(2), tol=1e-8, max_iter=50
    )
    assert not bool(result.converged)
    assert int(result.iterations) == 1
