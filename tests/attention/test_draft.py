"""The float32 draft of L-BFGS (bayes_slr/attention/optimizers.py, ``LBFGS._draft``).

Two routes to the same minimum from the same start: L-BFGS in float64 alone, and L-BFGS first on
the float32 copy of the objective, then in float64 from where it stopped. Both must end at
``|grad| <= tol`` of the float64 objective, at objectives within the stopping tolerance's bound
of each other and at the same parameters, reported in float64, for every activation, one head
or two, on both laws, over every parameter and under variable projection. A draft whose
float32 objective fails (non-finite) must leave the float64 solve to find the minimum alone.
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.attention.estimators import AttentionParams, informed_params
from bayes_slr.attention.optimizers import LBFGS, Problem, StoppingRule
from bayes_slr.attention.training import train_jit
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig

TOL = 1e-7
LAM = 0.1
CONFIGS = {
    "spiked": SLRConfig("spiked", 10, LengthLaw.uniform(4), 2.0, 0.1),
    "max": SLRConfig("max", 10, LengthLaw.fixed(3), float("inf"), 0.1),
}


CASES = [
    ("spiked", "softmax", 1, False),
    ("max", "linear", 2, False),
    pytest.param("spiked", "linear", 1, True, marks=pytest.mark.full_size_only),
    pytest.param("spiked", "erf", 1, True, marks=pytest.mark.full_size_only),
    pytest.param("spiked", "softplus", 1, False, marks=pytest.mark.full_size_only),
    pytest.param("spiked", "softmax", 2, True, marks=pytest.mark.full_size_only),
]
"""(law, activation, heads, projected): every activation, both routes, one head and two, both
laws; CI runs the first two (each case compiles its own two L-BFGS programs, 17-57 s of a cold
cache's compile time, about twenty times its run time)."""


@functools.cache
def _problem(law: str):
    config = CONFIGS[law]
    teacher = draw_teacher(jax.random.PRNGKey(0), config.D)
    batch = simulate(jax.random.PRNGKey(1), config, teacher, 200)
    return config, teacher, batch


@pytest.mark.parametrize(("law", "activation", "heads", "projected"), CASES)
def test_the_draft_reaches_the_float64_solves_minimum(law, activation, heads, projected):
    config, teacher, batch = _problem(law)
    informed = informed_params(config, teacher)
    start = AttentionParams(0.5 * informed.k, 0.5 * informed.v, jnp.zeros(()))
    if heads == 2:
        start = AttentionParams(
            jnp.stack([start.k, 0.5 * start.k[::-1]]),
            jnp.stack([start.v, 0.5 * start.v[::-1]]),
            jnp.zeros(2),
        )
    data = (batch.X, batch.lengths, batch.y)
    common = dict(
        activation=activation,
        optimizer="lbfgs",
        lam=LAM,
        tol=TOL,
        max_iter=5000,
        projected=projected,
    )
    alone = train_jit(start, *data, draft=False, **common)
    drafted = train_jit(start, *data, draft=True, **common)
    for leaf in jax.tree_util.tree_leaves(drafted[:3]):
        assert leaf.dtype == jnp.float64
    assert float(alone[2]) <= TOL and float(drafted[2]) <= TOL
    # both at |grad| <= tol of a minimum with curvature >= lam / N: objectives within
    # tol^2 / (2 lam / N) of the minimum each
    bound = TOL**2 / (LAM / batch.y.shape[0])
    assert abs(float(alone[1]) - float(drafted[1])) <= max(bound, 1e-13)
    # the same minimum, not another one of the same height: |grad| <= tol puts each within
    # tol / (lam / N) = 2e-4 of it
    for a, b in zip(jax.tree_util.tree_leaves(alone[0]), jax.tree_util.tree_leaves(drafted[0])):
        np.testing.assert_allclose(b, a, atol=4e-4)


def test_a_failing_draft_leaves_the_float64_solve_to_finish():
    target = jnp.linspace(-1.0, 1.0, 6)
    scales = jnp.linspace(1.0, 10.0, 6)

    def value_fn(x):
        return 0.5 * jnp.sum(scales * (x - target) ** 2)

    def failing(x):  # a float32 objective that fails (non-finite) away from the start
        return jnp.where(jnp.max(jnp.abs(x)) > 0.3, jnp.nan, value_fn(x))

    rule = StoppingRule(1e-10, 200, 0.5)
    lbfgs = LBFGS("lbfgs", "", vectorised=False, warm_path=True)
    start = jnp.zeros(6)
    params, value, grad_norm, count = lbfgs.minimise(
        start, Problem(value_fn, None, (None, None, None), draft=failing), rule
    )
    reference = lbfgs.minimise(start, Problem(value_fn, None, (None, None, None)), rule)
    assert params.dtype == jnp.float64
    assert float(grad_norm) <= 1e-10
    np.testing.assert_allclose(params, target, atol=1e-10)
    assert abs(float(value) - float(reference[1])) <= 1e-15
    assert int(count) > 0
