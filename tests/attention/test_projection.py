"""Variable projection (bayes_slr/attention/projection.py) against the full objective.

Two routes to the same minimum: L-BFGS over every parameter, and L-BFGS over the keys with the
values in closed form. The closed-form ``v`` must be the objective's minimiser given the keys
(its gradient in ``v`` zero to rounding, the objective convex in ``v``), and the projected
solve must end at the full solve's objective to the stopping tolerance, with ``|grad| <= tol``
of the full objective, for every activation, one head or two, at ``lam > 0`` and ``lam = 0``.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.estimators import informed_params
from bayes_slr.attention.projection import Keys, design, ridge_values, with_values
from bayes_slr.attention.training import objective, train_jit
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig

TOL = 1e-7
CONFIG = SLRConfig("spiked", 10, LengthLaw.uniform(4), 2.0, 0.1)


@pytest.fixture(scope="module")
def problem():
    teacher = draw_teacher(jax.random.PRNGKey(0), CONFIG.D)
    batch = simulate(jax.random.PRNGKey(1), CONFIG, teacher, 200)
    return teacher, batch


def _keys(heads: int) -> Keys:
    k = 0.3 * jax.random.normal(jax.random.PRNGKey(7), (heads, CONFIG.D))
    c = jnp.full((heads,), 0.2)
    return Keys(k[0], c[0]) if heads == 1 else Keys(k, c)


@pytest.mark.parametrize("heads", [1, 2])
@pytest.mark.parametrize("activation", activation_names())
@pytest.mark.parametrize("lam", [0.1, 0.0])
def test_the_closed_form_v_minimises_the_objective_given_the_keys(problem, activation, heads, lam):
    _, batch = problem
    keys = _keys(heads)
    params = with_values(keys, batch.X, batch.lengths, batch.y, activation, lam)

    def of_v(v):
        return objective(params._replace(v=v), batch.X, batch.lengths, batch.y, activation, lam)

    grad = jax.grad(of_v)(params.v)
    # rounding of a sum of N terms of size |y|^2 against the gradient's scale
    assert float(jnp.linalg.norm(grad)) < 1e-10
    # f = A v: the design reproduces the prediction of the full parameters
    A = design(keys, batch.X, batch.lengths, activation)
    direction = jax.random.normal(jax.random.PRNGKey(3), params.v.shape)
    assert of_v(params.v + 1e-3 * direction) > of_v(params.v)
    np.testing.assert_allclose(
        ridge_values(A, batch.y, lam).reshape(params.v.shape), params.v, rtol=1e-12
    )


SOLVE_CASES_IN_CI = {("softmax", 1), ("linear", 2)}
"""Each case compiles two L-BFGS programs (21-33 s of a cold cache's compile time, some twenty
times its run time): CI runs these two, ``BAYES_SLR_FULL=1`` every activation with one head and
two."""


@pytest.mark.parametrize(
    ("activation", "heads"),
    [
        pytest.param(a, h, marks=() if (a, h) in SOLVE_CASES_IN_CI else pytest.mark.full_size_only)
        for a in activation_names()
        for h in (1, 2)
    ],
)
def test_the_projected_solve_reaches_the_full_solves_objective(problem, activation, heads):
    teacher, batch = problem
    informed = informed_params(CONFIG, teacher)
    keys = Keys(informed.k, informed.c)
    if heads == 2:
        keys = Keys(jnp.stack([keys.k, 0.5 * keys.k[::-1]]), jnp.zeros(2))
    common = dict(activation=activation, optimizer="lbfgs", lam=0.1, tol=TOL, max_iter=5000)
    data = (batch.X, batch.lengths, batch.y)
    # one start for both: the projected solve sets v in closed form, so the full one starts there
    start = with_values(keys, *data, activation, 0.1)
    full = train_jit(start, *data, projected=False, **common)
    projected = train_jit(start, *data, projected=True, **common)
    assert float(full[2]) <= TOL and float(projected[2]) <= TOL
    # both at |grad| <= tol of a minimum with curvature >= lam / N: objectives within
    # tol^2 / (2 lam / N) of the minimum each
    bound = TOL**2 / (0.1 / batch.y.shape[0])
    assert abs(float(full[1]) - float(projected[1])) <= max(bound, 1e-13)
    # the same minimum, not another one of the same height
    np.testing.assert_allclose(projected[0].v, full[0].v, atol=1e-4)
