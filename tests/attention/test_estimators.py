"""Attention estimators: ``predict`` against a plain NumPy loop, padding, gradients, overlaps."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy.special import erf, softmax

from bayes_slr.attention.activations import activation_names
from bayes_slr.attention.estimators import (
    AttentionParams,
    informed_params,
    overlaps,
    predict,
    random_params,
)
from bayes_slr.attention.training import objective
from bayes_slr.errors import ConfigError
from bayes_slr.models.simulate import draw_teacher, token_mask
from bayes_slr.models.spec import LengthLaw, SLRConfig

D, LBAR, N = 7, 5, 12


def numpy_predict(
    k: np.ndarray, v: np.ndarray, c: float, X: np.ndarray, lengths: np.ndarray, activation: str
) -> np.ndarray:
    """docs/model.md section 3 written out sequence by sequence, token by token, over real tokens
    only.
    """
    out = np.zeros(len(lengths))
    for n, length in enumerate(lengths):
        chi = np.array([X[n, t] @ k / math.sqrt(D) for t in range(length)])
        z = np.array([X[n, t] @ v / math.sqrt(D) for t in range(length)])
        if activation == "softmax":
            s = softmax(chi)
        elif activation == "linear":
            s = 1.0 + chi
        elif activation == "erf":
            s = 1.0 + erf(c + chi)
        else:
            phi = np.log1p(np.exp(chi))
            s = phi / phi.sum()
        out[n] = np.sum(s * z)
    return out


@pytest.fixture
def padded_batch(key):
    """A variable-length batch (lengths 1..LBAR, length 1 included) with random params."""
    k_x, k_len, k_par = jax.random.split(key, 3)
    lengths = jnp.concatenate(
        [jnp.array([1, LBAR]), jax.random.randint(k_len, (N - 2,), 1, LBAR + 1)]
    )
    X = jax.random.normal(k_x, (N, LBAR, D)) * token_mask(lengths, LBAR)[..., None]
    params = random_params(k_par, D)._replace(c=jnp.asarray(0.3))
    return X, lengths, params


@pytest.mark.parametrize("activation", activation_names())
def test_predict_matches_numpy_loop(padded_batch, activation):
    X, lengths, params = padded_batch
    k, v = np.asarray(params.k), np.asarray(params.v)
    expected = numpy_predict(k, v, 0.3, np.asarray(X), np.asarray(lengths), activation)
    np.testing.assert_allclose(
        np.asarray(predict(params, X, lengths, activation)), expected, rtol=1e-12, atol=1e-12
    )


@pytest.mark.parametrize("activation", ["softmax", "erf"])
def test_heads_predict_the_sum_of_their_numpy_loops(padded_batch, activation):
    """Parameters with a head axis (docs/multihead.md): the sum of each head's own estimator."""
    X, lengths, _ = padded_batch
    k, v = np.random.default_rng(1).normal(size=(2, 3, D))
    c = np.array([0.3, -0.5, 1.0])
    expected = sum(
        numpy_predict(k[h], v[h], c[h], np.asarray(X), np.asarray(lengths), activation)
        for h in range(3)
    )
    got = predict(AttentionParams(k, v, c), X, lengths, activation)
    np.testing.assert_allclose(np.asarray(got), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("activation", activation_names())
def test_padding_content_is_ignored(padded_batch, key, activation):
    X, lengths, params = padded_batch
    garbage = (
        1e3
        * jax.random.normal(jax.random.fold_in(key, 1), X.shape)
        * ~token_mask(lengths, LBAR)[..., None]
    )
    np.testing.assert_array_equal(
        np.asarray(predict(params, X + garbage, lengths, activation)),
        np.asarray(predict(params, X, lengths, activation)),
    )


@pytest.mark.parametrize("activation", activation_names())
def test_gradients_finite_and_blind_to_padding(padded_batch, key, activation):
    X, lengths, params = padded_batch
    y = jnp.ones(N)
    garbage = (
        1e3
        * jax.random.normal(jax.random.fold_in(key, 1), X.shape)
        * ~token_mask(lengths, LBAR)[..., None]
    )
    grad_of = jax.jit(jax.grad(objective), static_argnums=(4,))
    clean = grad_of(params, X, lengths, y, activation, 0.1)
    dirty = grad_of(params, X + garbage, lengths, y, activation, 0.1)
    for got, want in zip(jax.tree_util.tree_leaves(dirty), jax.tree_util.tree_leaves(clean)):
        assert np.all(np.isfinite(np.asarray(want)))
        np.testing.assert_array_equal(np.asarray(got), np.asarray(want))


@pytest.mark.parametrize("variant,nu", [("spiked", 2.0), ("max", 1.5)])
def test_informed_softmax_is_the_bayes_estimator(padded_batch, key, variant, nu):
    """Softmax at ``k = c_nu k*``, ``v = v*`` is ``sum_l softmax(c_nu chi*)_l z*_l`` (docs/model.md
    section 2).
    """
    X, lengths, _ = padded_batch
    config = SLRConfig(variant, D, LengthLaw.uniform(LBAR), nu)
    teacher = draw_teacher(key, D)
    X_np, mask = np.asarray(X), np.asarray(token_mask(lengths, LBAR))
    chi_star, z_star = (X_np @ np.asarray(direction) / math.sqrt(D) for direction in teacher)
    bayes = np.sum(
        softmax(np.where(mask, config.c_nu * chi_star, -np.inf), axis=-1) * z_star, axis=-1
    )
    got = predict(informed_params(config, teacher), X, lengths, "softmax")
    np.testing.assert_allclose(np.asarray(got), bayes, rtol=1e-10, atol=1e-12)


def test_informed_start_at_infinite_nu_keeps_the_direction(key):
    config = SLRConfig("max", D, LengthLaw.fixed(3), math.inf)
    teacher = draw_teacher(key, D)
    params = informed_params(config, teacher)
    np.testing.assert_array_equal(np.asarray(params.k), np.asarray(teacher.k_star))


def test_overlaps_are_normalised_dot_products(key):
    teacher = draw_teacher(key, D)
    k, v = jax.random.normal(jax.random.fold_in(key, 3), (2, D))
    result = overlaps(AttentionParams(k, v, jnp.asarray(-0.4)), teacher)
    ks, vs = np.asarray(teacher.k_star), np.asarray(teacher.v_star)
    k, v = np.asarray(k), np.asarray(v)
    expected = {
        "m_k": k @ ks,
        "q_k": k @ k,
        "m_v": v @ vs,
        "q_v": v @ v,
        "k_vstar": k @ vs,
        "v_kstar": v @ ks,
        "k_v": k @ v,
        "rho_k": ks @ ks,
        "rho_v": vs @ vs,
        "kstar_vstar": ks @ vs,
    }
    for name, value in expected.items():
        assert result[name] == pytest.approx(value / D, rel=1e-12), name
    assert result["c"] == pytest.approx(-0.4)


def test_unknown_activation_is_a_config_error(padded_batch):
    X, lengths, params = padded_batch
    with pytest.raises(ConfigError, match="activation must be one of"):
        predict(params, X, lengths, "relu")
