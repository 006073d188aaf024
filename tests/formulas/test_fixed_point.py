"""The chord iteration (:func:`~bayes_slr.formulas.fixed_point.chord_fixed_point`) reaches the
damped iteration's fixed point, and in few steps when its Jacobian is taken near it; the damped
iteration finished by the chord one (:func:`~bayes_slr.formulas.fixed_point.damped_then_chord`)
reaches it too, and leaves a slow contraction to the damped iteration; the two in one program
(:func:`~bayes_slr.formulas.fixed_point.damped_or_chord_fixed_point`) steps as the
chosen one does."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from bayes_slr.formulas.fixed_point import (
    attracting,
    chord_fixed_point,
    damped_fixed_point,
    damped_or_chord_fixed_point,
    damped_then_chord,
    difference_inverse,
    host_map,
)

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


CHORD = {"switch": 1e-2, "radius": 1e-1, "step": 1e-5}


def test_difference_inverse_is_the_jacobians():
    """Central differences of step 1e-5 on a smooth map: ``(I - J)^{-1}`` within 1e-8 of the
    one from the exact Jacobian (the differences' error is ``step^2`` times the third
    derivative)."""
    x = jnp.array([0.2, -0.4, 0.9])
    exact = jnp.linalg.inv(jnp.eye(3) - jax.jacfwd(contraction)(x))
    assert jnp.max(jnp.abs(difference_inverse(contraction, x, step=1e-5) - exact)) < 1e-8


@pytest.mark.parametrize("chord", [True, False])
def test_damped_or_chord_takes_the_chosen_iterations_steps(chord):
    """The two iterations in one program: with ``chord`` true the chord iteration's iterates,
    iteration count and verdict, else the damped one's, number for number (the same arithmetic
    of each step, the other step computed and dropped)."""
    x0, inverse = jnp.array([0.1, 0.2, -0.3]), jnp.linalg.inv(jnp.eye(3) - 0.5 * COUPLING)
    settings = {"tol": 1e-12, "max_iter": 400}
    both = damped_or_chord_fixed_point(
        contraction, x0, chord=jnp.asarray(chord), inverse=inverse, damping=0.5, **settings
    )
    alone = (
        chord_fixed_point(contraction, x0, inverse=inverse, **settings)
        if chord
        else damped_fixed_point(contraction, x0, damping=0.5, **settings)
    )
    assert int(both.iterations) == int(alone.iterations)
    assert bool(both.converged) == bool(alone.converged)
    assert jnp.array_equal(both.x, alone.x)


def test_difference_inverse_by_host_map_is_by_lax_map():
    """Evaluating the perturbed points one call at a time on the host gives the Jacobian that
    ``jax.lax.map`` gives: the same evaluations (within the rounding of one program against
    another, 1e-12 of the entries here, far below the differences' own step error)."""
    x = jnp.array([0.2, -0.4, 0.9])
    on_host = difference_inverse(jax.jit(contraction), x, step=1e-5, mapper=host_map)
    assert jnp.max(jnp.abs(on_host - difference_inverse(contraction, x, step=1e-5))) < 1e-12


def test_damped_then_chord_reaches_the_damped_fixed_point_in_fewer_steps():
    """Both stop within ``20 tol`` of the fixed point (as above); the chord iteration takes over
    at residual 1e-2 and needs a few steps where the damped one needs dozens."""
    tol = 1e-10
    damped = damped_fixed_point(contraction, jnp.zeros(3), damping=0.5, tol=tol, max_iter=2000)
    both = damped_then_chord(
        contraction, jnp.zeros(3), damping=0.5, tol=tol, max_iter=2000, **CHORD
    )
    assert bool(damped.converged) and bool(both.converged)
    assert jnp.max(jnp.abs(both.x - damped.x)) < 20 * tol
    assert int(both.iterations) < int(damped.iterations) / 2


def test_damped_then_chord_leaves_a_slow_contraction_to_the_damped_iteration():
    """``x -> 0.995 x + 0.005`` (fixed point 1): from 0 the residual (0.005) is below the switch
    at once, the iterate about 1 from the fixed point, beyond the radius 0.1, so the chord step
    (exact on a linear map) is refused and the result is the damped iteration's own, iterate for
    iterate."""

    def slow(x: jax.Array) -> jax.Array:
        return 0.995 * x + 0.005

    options = {"damping": 1.0, "tol": 1e-9, "max_iter": 20000}
    damped = damped_fixed_point(slow, jnp.zeros(1), **options)
    both = damped_then_chord(slow, jnp.zeros(1), **options, **CHORD)
    assert bool(both.converged)
    assert float(both.x[0]) == float(damped.x[0])
    assert int(both.iterations) == int(damped.iterations)


@pytest.mark.parametrize(
    "eigenvalue, attracts", [(0.99, True), (1.001, False), (-2.5, True), (-3.5, False)]
)
def test_attracting_is_the_damped_maps_spectral_radius_below_one(eigenvalue, attracts):
    """Damping 0.5: the damped map's eigenvalue is ``0.5 + 0.5 lambda`` (0.995, 1.0005, -0.75,
    -1.25), in a non-diagonal basis."""
    basis = jnp.array([[1.0, 0.3], [-0.2, 1.0]])
    jacobian = basis @ jnp.diag(jnp.array([eigenvalue, 0.2])) @ jnp.linalg.inv(basis)
    assert bool(attracting(jacobian, 0.5)) is attracts


def test_damped_then_chord_refuses_an_unstable_fixed_point():
    """``x -> x - (x - 0.3)(x - 0.6)(x - 0.9)``: 0.6 is a fixed point with slope 1.09 (unstable),
    0.3 and 0.9 attract. From 0.62 the residual (0.0018) is below the switch and the chord step
    lands on 0.6, within the radius; the damped iteration leaves it for 0.9, and so does the
    combination."""

    def cubic(x: jax.Array) -> jax.Array:
        return x - (x - 0.3) * (x - 0.6) * (x - 0.9)

    options = {"damping": 1.0, "tol": 1e-10, "max_iter": 20000}
    damped = damped_fixed_point(cubic, jnp.full(1, 0.62), **options)
    both = damped_then_chord(cubic, jnp.full(1, 0.62), **options, **CHORD)
    assert abs(float(damped.x[0]) - 0.9) < 1e-8
    assert bool(both.converged) and float(both.x[0]) == float(damped.x[0])


def test_damped_then_chord_unconverged_where_the_damped_stage_is():
    """A damped stage that ends at ``max_iter`` above the switch is the result, not converged."""
    result = damped_then_chord(
        contraction, jnp.zeros(3), damping=0.01, tol=1e-10, max_iter=5, **CHORD
    )
    assert not bool(result.converged)
    assert int(result.iterations) == 5
