"""The containers of SLR data: a teacher and a batch of sequences (importable without JAX)."""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

if TYPE_CHECKING:
    import jax


class Teacher(NamedTuple):
    """Hidden key and value directions ``k*``, ``v*`` in ``R^D``; ``(H, D)``, one row per head, for
    a multi-head task."""

    k_star: jax.Array
    v_star: jax.Array


class SLRBatch(NamedTuple):
    """``N`` SLR samples, padded to ``Lbar`` tokens.

    Attributes
    ----------
    X : (N, Lbar, D) tokens, zero beyond each length.
    lengths : (N,) int lengths in ``1..Lbar``.
    y : (N,) outputs.
    eps : (N,) int true locations, 0-based, ``< lengths``.
    chi_star, z_star : (N, Lbar) teacher projections ``X k*/sqrt(D)``, ``X v*/sqrt(D)``.
    """

    X: jax.Array
    lengths: jax.Array
    y: jax.Array
    eps: jax.Array
    chi_star: jax.Array
    z_star: jax.Array

    @property
    def mask(self) -> jax.Array:
        """(N, Lbar) boolean: True on real tokens."""
        return token_mask(self.lengths, self.X.shape[1])


class MultiHeadBatch(NamedTuple):
    """``N`` samples of multi-head SLR (docs/multihead.md), padded to ``Lbar`` tokens.

    Attributes
    ----------
    X : (N, Lbar, D) tokens, zero beyond each length.
    lengths : (N,) int lengths in ``1..Lbar``.
    y : (N,) outputs.
    eps : (N, H) int locations of the heads, 0-based, ``< lengths`` (drawn for absent heads too).
    present : (N, H) booleans: whether each head's token is in the sequence.
    chi_star, z_star : (N, H, Lbar) teacher projections ``X k_h*/sqrt(D)``, ``X v_h*/sqrt(D)``.
    """

    X: jax.Array
    lengths: jax.Array
    y: jax.Array
    eps: jax.Array
    present: jax.Array
    chi_star: jax.Array
    z_star: jax.Array

    @property
    def mask(self) -> jax.Array:
        """(N, Lbar) boolean: True on real tokens."""
        return token_mask(self.lengths, self.X.shape[1])


def token_mask(lengths: jax.Array, Lbar: int) -> jax.Array:
    """Boolean mask ``(..., Lbar)``: True for token indices below the length."""
    import jax.numpy as jnp

    return jnp.arange(Lbar) < jnp.asarray(lengths)[..., None]
