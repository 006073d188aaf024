"""The attention activations ``s(chi)`` of MODEL.md section 3, one definition for all code.

``softmax`` and ``softplus`` are normalised over the real tokens:
``s_l = phi(chi_l) / sum_j phi(chi_j)`` with ``phi = exp`` or ``softplus``.
``linear`` (``1 + chi_l``) and ``erf`` (``1 + erf(c + chi_l)``, trained offset ``c``)
act element-wise. Padded tokens (``mask = False``) get weight 0.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp

from bayes_slr.errors import check_choice

ACTIVATIONS = ("softmax", "linear", "erf", "softplus")
NORMALISED = ("softmax", "softplus")


def check_activation(name: object) -> str:
    """Return ``name`` if it is a known activation, else raise ``ConfigError``."""
    return check_choice("activation", name, ACTIVATIONS)


def elementwise_score(activation: str, chi: jax.Array, c: jax.Array | float = 0.0) -> jax.Array:
    """The per-token function before normalisation.

    ``exp(chi)`` is not returned for softmax (it overflows); use :func:`attention_weights`.
    Returns ``softplus(chi)``, ``1 + chi`` or ``1 + erf(c + chi)``.
    """
    if activation == "softplus":
        return jax.nn.softplus(chi)
    if activation == "linear":
        return 1.0 + chi
    if activation == "erf":
        return 1.0 + jax.scipy.special.erf(c + chi)
    raise ValueError(f"elementwise_score is defined for softplus, linear, erf; got {activation!r}")


def attention_weights(
    activation: str, chi: jax.Array, mask: jax.Array | None = None, c: jax.Array | float = 0.0
) -> jax.Array:
    """Weights ``s(chi)`` over the last axis, zero on padded tokens.

    Parameters
    ----------
    activation : one of :data:`ACTIVATIONS`.
    chi : (..., Lbar) scores ``X k / sqrt(D)``.
    mask : (..., Lbar) boolean, True on real tokens; None means all real.
    c : offset of the erf activation (ignored by the others).
    """
    check_activation(activation)
    if mask is None:
        mask = jnp.ones(chi.shape, dtype=bool)
    if activation == "softmax":
        return jax.nn.softmax(jnp.where(mask, chi, -jnp.inf), axis=-1, where=mask)
    score = jnp.where(mask, elementwise_score(activation, chi, c), 0.0)
    if activation in NORMALISED:
        return score / jnp.sum(score, axis=-1, keepdims=True)
    return score
