"""Attention estimators ``f(X) = sum_l s(chi)_l z_l`` (docs/model.md section 3) and their overlaps.

One jitted function, :func:`predict`, evaluates any activation of
any registered activation (:func:`~bayes_slr.attention.activations.activation_names`) on a padded
batch;
:func:`overlaps` reports the order parameters of docs/model.md section 4 against a teacher.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp

from bayes_slr.attention.activations import attention_weights
from bayes_slr.models.scoring import direction_overlaps
from bayes_slr.models.simulate import Teacher, token_mask
from bayes_slr.models.spec import SLRConfig


class AttentionParams(NamedTuple):
    """Trainable parameters of an attention estimator.

    Attributes
    ----------
    k : (D,) key vector; ``chi = X k / sqrt(D)``. Its norm is the inverse temperature.
    v : (D,) value vector; ``z = X v / sqrt(D)``.
    c : () offset of the erf activation (``0`` and unused by the others).

    A student with ``H_s`` heads (docs/multihead.md) has ``k``, ``v`` of shape ``(H_s, D)`` and
    ``c`` of shape ``(H_s,)``, one row per head.
    """

    k: jax.Array
    v: jax.Array
    c: jax.Array


def informed_params(config: SLRConfig, teacher: Teacher) -> AttentionParams:
    """The informed start: the teacher, ``k = c_nu k*``, ``v = v*``, ``c = 0``.

    For finite ``nu`` this is the Bayes estimator with known directions (softmax
    attention, docs/model.md section 2). For ``nu = inf`` (max-SLR) the Bayes key is
    infinite; the start keeps its direction with unit scale, ``k = k*``.
    """
    scale = config.c_nu if math.isfinite(config.c_nu) else 1.0
    return AttentionParams(
        scale * jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star), jnp.zeros(())
    )


def random_params(key: jax.Array, D: int, scale: float = 1.0) -> AttentionParams:
    """A random start: ``k, v`` i.i.d. ``N(0, scale^2 I_D)`` (overlaps ``q ~ scale^2``, ``m ~ 0``),
    ``c = 0``.

    ERM uses ``scale = RANDOM_INIT_SCALE`` of :mod:`bayes_slr.attention.training` (0.1);
    ``scale = 1`` is the prior of the teacher.
    """
    k, v = scale * jax.random.normal(key, (2, D))
    return AttentionParams(k, v, jnp.zeros(()))


HEADS_INIT_SCALE = 1.0
"""Standard deviation of the coordinates of every ``k_h``, ``v_h`` at a random start of several
heads (:func:`random_heads`): the prior's.

Why not the one-head 0.1 (:data:`~bayes_slr.attention.training.RANDOM_INIT_SCALE`): from small
starts the heads first learn the same direction (the sum of the teacher heads) and stay alike.
Measured (spiked ``nu = 2``, ``L = 3``, ``H = H_s = 2``, ``rho = 1``, ``D = 8``, ``alpha = 250``,
softmax, 4 seeds of 4 starts): at 0.1 every start of one seed ended unspecialised (both keys
mixing both teacher keys, test error 0.391 against 0.364-0.374 for the other seeds); at 1 one of its
starts specialised (0.369), and the lowest objective picked it.
"""


def random_heads(
    key: jax.Array, D: int, student_heads: int, scale: float = HEADS_INIT_SCALE
) -> AttentionParams:
    """A random start of ``student_heads`` heads: every ``k_h``, ``v_h`` i.i.d.
    ``N(0, scale^2 I_D)``, every offset 0 (leaves ``(student_heads, D)``, ``(student_heads,)``)."""
    k, v = scale * jax.random.normal(key, (2, student_heads, D))
    return AttentionParams(k, v, jnp.zeros(student_heads))


@functools.partial(jax.jit, static_argnames=("activation",))
def predict(
    params: AttentionParams, X: jax.Array, lengths: jax.Array, activation: str
) -> jax.Array:
    """Evaluate ``f(X) = sum_l s(chi)_l z_l`` on a padded batch.

    Parameters
    ----------
    params : AttentionParams
        ``k``, ``v`` of shape ``(D,)`` and the erf offset ``c``; with a head axis
        (``(H_s, D)``, ``(H_s,)``) the ``H_s``-head estimator
        ``f(X) = sum_h sum_l s(chi_h)_l z_{h,l}`` (docs/multihead.md), the sum of the heads' own.
    X : (N, Lbar, D) tokens; entries beyond each length are ignored.
    lengths : (N,) int lengths in ``1..Lbar``.
    activation : str
        One of ``softmax``, ``linear``, ``erf``, ``softplus`` (static).

    Returns
    -------
    (N,) predictions.
    """
    if jnp.ndim(params.k) == 2:
        heads = jax.vmap(lambda head: predict(head, X, lengths, activation))(params)
        return jnp.sum(heads, axis=0)
    projections = (
        X @ jnp.stack([params.k, params.v], axis=-1) / math.sqrt(X.shape[-1])
    )  # one pass over X
    chi, z = projections[..., 0], projections[..., 1]
    return predict_from_projections(chi, z, token_mask(lengths, X.shape[-2]), params.c, activation)


def predict_from_projections(
    chi: jax.Array, z: jax.Array, mask: jax.Array, c: jax.Array, activation: str
) -> jax.Array:
    """``f = sum_l s(chi)_l z_l`` of one head from the projections of its tokens.

    Parameters
    ----------
    chi : (..., Lbar) scores ``X k / sqrt(D)``.
    z : (..., Lbar) values ``X v / sqrt(D)``.
    mask : (..., Lbar) True on real tokens (padded ones get weight 0).
    c : () offset of the erf activation.
    activation : a registered activation.

    Returns
    -------
    (...,) predictions.
    """
    return jnp.sum(attention_weights(activation, chi, mask, c) * z, axis=-1)


def overlaps(params: AttentionParams, teacher: Teacher) -> dict[str, float]:
    """Order parameters of ``(k, v)`` against the teacher, all divided by ``D``
    (:func:`direction_overlaps`).

    Returns
    -------
    dict with ``m_k = k.k*/D``, ``q_k = k.k/D``, ``m_v = v.v*/D``, ``q_v = v.v/D``, the
    cross overlaps ``k_vstar = k.v*/D``, ``v_kstar = v.k*/D``, ``k_v = k.v/D`` (zero on
    the manifold of docs/model.md section 4), the teacher norms ``rho_k = |k*|^2/D``,
    ``rho_v = |v*|^2/D``, ``kstar_vstar = k*.v*/D`` and the erf offset ``c``.
    """
    result = {
        name: float(value)
        for name, value in direction_overlaps(params.k, params.v, teacher).items()
    }
    result["c"] = float(params.c)
    return result


def attention_predictor(
    params: AttentionParams, activation: str
) -> Callable[[jax.Array, jax.Array], jax.Array]:
    """The trained estimator as a predictor ``predict(X, lengths)`` (scored by
    ``models.scoring``).
    """
    return functools.partial(predict, params, activation=activation)
