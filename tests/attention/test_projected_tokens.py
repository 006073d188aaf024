"""Online SGD's projected token draw against the full draw (docs/dynamics.md, speed).

Independent routes: the gradient of the batch's loss by automatic differentiation on ``B Lbar D``
simulated tokens (the full draw) against the projected draw's (four coordinates a token, two
Gaussian ``D``-vectors for the rest). The two are equal in law, so over many keys every first and
second moment of the loss and the gradient agrees within four combined standard errors (Monte
Carlo). The test has power (checked by replacing the projected draw's factor of the Gram matrix):
without the rest of the gradient the second moments miss by 28 and 31 standard errors, with its
``k`` and ``v`` parts drawn independently by 5.6 (spiked erf; the max-SLR softmax case does not
see that one).
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.attention.estimators import AttentionParams, predict
from bayes_slr.attention.projected_tokens import projected_value_and_grad
from bayes_slr.models.simulate import draw_teacher, simulate

DRAWS = 6000
BATCH = 3


def _full_value_and_grad(params, key, config, teacher, activation):
    fresh = simulate(key, config, teacher, BATCH)

    def loss(p: AttentionParams) -> jax.Array:
        return 0.5 * jnp.mean((fresh.y - predict(p, fresh.X, fresh.lengths, activation)) ** 2)

    return jax.value_and_grad(loss)(params)


def _statistics(value: jax.Array, grads: AttentionParams) -> jax.Array:
    """Per draw: the loss, the gradient, its squares, the products of its ``k`` and ``v``
    entries and the inner products of its ``k`` and ``v`` parts (``(draws, 4 D + 6)``)."""
    flat = jnp.concatenate([grads.k, grads.v, grads.c[:, None]], axis=1)
    inner = jnp.stack(
        [
            jnp.sum(grads.k**2, axis=1),
            jnp.sum(grads.v**2, axis=1),
            jnp.sum(grads.k * grads.v, axis=1),
        ],
        axis=1,
    )
    return jnp.concatenate([value[:, None], flat, flat**2, grads.k * grads.v, inner], axis=1)


@pytest.mark.parametrize(
    "config, activation",
    [
        (SLRConfig("max", 10, LengthLaw.uniform(4), math.inf, Delta=0.1), "softmax"),
        (SLRConfig("spiked", 10, LengthLaw.fixed(3), 2.0), "erf"),
    ],
    ids=["max-variable", "spiked-erf"],
)
def test_projected_draw_has_the_moments_of_the_full_draw(
    config: SLRConfig, activation: str, key
) -> None:
    """Off the manifold (a teacher from the prior, cross overlaps, an erf offset): every mean and
    second moment of the loss and the gradient agrees between the two draws."""
    keys = jax.random.split(key, 4)
    teacher = draw_teacher(keys[0], config.D)
    noise = jax.random.normal(keys[1], (2, config.D))
    params = AttentionParams(
        0.8 * teacher.k_star + 0.4 * teacher.v_star + noise[0],
        0.7 * teacher.v_star + 0.3 * teacher.k_star + 0.5 * noise[1],
        jnp.asarray(0.2),
    )
    full = jax.vmap(lambda k: _full_value_and_grad(params, k, config, teacher, activation))(
        jax.random.split(keys[2], DRAWS)
    )
    projected = jax.vmap(
        lambda k: projected_value_and_grad(params, k, config, teacher, BATCH, activation)
    )(jax.random.split(keys[3], DRAWS))
    a, b = np.asarray(_statistics(*full)), np.asarray(_statistics(*projected))
    difference = a.mean(axis=0) - b.mean(axis=0)
    stderr = np.sqrt((a.var(axis=0, ddof=1) + b.var(axis=0, ddof=1)) / DRAWS)
    excess = np.abs(difference) - 4.0 * stderr
    assert np.all(excess <= 0.0), np.max(np.abs(difference) / np.maximum(stderr, 1e-300))
