"""Location posterior and Bayes estimator against NumPyro's enumeration of the location."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from numpyro import handlers
from numpyro.contrib.funsor import config_enumerate, enum

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.inference.location import bayes_estimator, location_posterior
from bayes_slr.models.numpyro_models import ENUM_DIM, slr_model_enumerated
from bayes_slr.models.simulate import Teacher, draw_teacher, token_mask

D, N, LBAR = 5, 7, 4

CASES = [
    SLRConfig("spiked", D, LengthLaw.uniform(LBAR), 2.0, 0.5),
    SLRConfig("max", D, LengthLaw.uniform(LBAR), 1.5, 0.5),
    SLRConfig("max", D, LengthLaw.uniform(LBAR), math.inf, 0.5),
]


def _data(key: jax.Array) -> tuple[Teacher, jax.Array, jax.Array, jax.Array]:
    """A prior-draw teacher (``|k*|^2 != D``, so the spiked normaliser matters), tokens, lengths,
    ``y``.

    The posterior formula holds for any tokens, so they need not come from the SLR law;
    every length from 1 to ``LBAR`` occurs and padding is zero.
    """
    key_teacher, key_x, key_y = jax.random.split(key, 3)
    lengths = jnp.arange(N) % LBAR + 1
    X = 1.5 * jax.random.normal(key_x, (N, LBAR, D)) * token_mask(lengths, LBAR)[..., None]
    return draw_teacher(key_teacher, D), X, lengths, jax.random.normal(key_y, (N,))


def _enumerated_location_posterior(
    config: SLRConfig, teacher: Teacher, X: jax.Array, lengths: jax.Array, y: jax.Array
) -> jax.Array:
    """``P(eps | X, k*)`` from NumPyro's parallel enumeration of ``eps`` in the generative model.

    The joint ``log p(eps) + log p(X | eps)`` is read from the trace with ``eps`` enumerated
    over its support (shape ``(Lbar, N)``) and normalised over the location. The ``y`` site
    is left out: the Bayes estimator conditions on the tokens only.
    """
    model = enum(config_enumerate(slr_model_enumerated), first_available_dim=ENUM_DIM)
    model = handlers.substitute(model, data={"k": teacher.k_star, "v": teacher.v_star})
    trace = handlers.trace(handlers.seed(model, 0)).get_trace(config, lengths, X=X, y=y)
    log_joint = sum(trace[name]["fn"].log_prob(trace[name]["value"]) for name in ("eps", "X"))
    assert log_joint.shape == (config.Lbar, N)  # eps really was enumerated
    return jax.nn.softmax(log_joint, axis=0).T


@pytest.mark.parametrize(
    "config", CASES, ids=lambda c: f"{c.variant}-{c.length.describe()}-nu{c.nu:g}"
)
def test_posterior_and_estimator_match_numpyro_enumeration(
    key: jax.Array, config: SLRConfig
) -> None:
    teacher, X, lengths, y = _data(key)
    reference = _enumerated_location_posterior(config, teacher, X, lengths, y)
    posterior = location_posterior(X, lengths, config, k=teacher.k_star)
    np.testing.assert_allclose(posterior, reference, atol=1e-10)
    chi_star, z_star = (X @ direction / math.sqrt(D) for direction in teacher)
    np.testing.assert_allclose(location_posterior(chi_star, lengths, config), posterior, atol=1e-14)
    assert np.all(np.asarray(posterior)[~np.asarray(token_mask(lengths, LBAR))] == 0.0)
    np.testing.assert_allclose(np.sum(posterior, axis=-1), 1.0, atol=1e-12)
    expected = jnp.sum(reference * z_star, axis=-1)
    np.testing.assert_allclose(bayes_estimator(X, lengths, config, teacher), expected, atol=1e-10)


def test_argmax_ties_are_split_evenly() -> None:
    config = SLRConfig("max", 1, LengthLaw.uniform(4), math.inf)
    chi = jnp.array(
        [[1.0, 2.0, 2.0, 9.0], [3.0, 3.0, 0.0, 3.0], [1.0, 2.0, 3.0, 4.0], [0.0, -1.0, 5.0, 5.0]]
    )
    lengths = jnp.array([3, 4, 1, 4])
    expected = [[0, 0.5, 0.5, 0], [1 / 3, 1 / 3, 0, 1 / 3], [1, 0, 0, 0], [0, 0, 0.5, 0.5]]
    np.testing.assert_allclose(location_posterior(chi, lengths, config), expected, atol=1e-15)


def test_limits_nu_zero_and_large_spike() -> None:
    """``nu = 0``: uniform over the real tokens; finite ``nu`` large: close to the argmax."""
    chi = jnp.array([[0.3, -1.0, 2.0], [0.1, 0.4, 7.0]])
    lengths = jnp.array([2, 3])
    uniform = location_posterior(chi, lengths, SLRConfig("spiked", 1, LengthLaw.uniform(3), 0.0))
    np.testing.assert_allclose(uniform, [[0.5, 0.5, 0], [1 / 3, 1 / 3, 1 / 3]], atol=1e-15)
    sharp = location_posterior(chi, lengths, SLRConfig("max", 1, LengthLaw.uniform(3), 200.0))
    argmax = location_posterior(chi, lengths, SLRConfig("max", 1, LengthLaw.uniform(3), math.inf))
    np.testing.assert_allclose(sharp, argmax, atol=1e-12)
    # the same logits under spiked with nu = c^2 and max with nu = c (c_nu = sqrt(nu) vs nu)
    np.testing.assert_allclose(
        location_posterior(chi, lengths, SLRConfig("spiked", 1, LengthLaw.uniform(3), 4.0)),
        location_posterior(chi, lengths, SLRConfig("max", 1, LengthLaw.uniform(3), 2.0)),
        atol=1e-15,
    )
