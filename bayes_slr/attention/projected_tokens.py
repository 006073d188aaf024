"""Online SGD's fresh batch drawn through the span of the teacher and the student: exact in law.

A step of online SGD (:mod:`bayes_slr.attention.dynamics`) reads its ``B`` fresh sequences only
through the projections of their tokens on ``S = span(k*, v*, k, v)`` and through the gradient
``grad_k = sum_{b,l} g^chi_{b,l} x_{b,l} / sqrt(D)``, ``grad_v = sum g^z_{b,l} x_{b,l} / sqrt(D)``,
where ``g^chi = dJ / dchi`` and ``g^z = dJ / dz`` of the batch's mean ``J = (y - f)^2 / 2`` depend
on the projections (and the labels) only: the scores ``chi = X k / sqrt(D)`` and values
``z = X v / sqrt(D)`` are projections, every variant only adds a spike along ``k*`` or tilts the
location by ``x . k* / sqrt(D)``, and the label reads ``x . v* / sqrt(D)``.

Write a real token ``x = Q u + x_perp`` with ``Q`` an orthonormal basis (``D x 4``) of a space
holding ``S`` (:func:`~bayes_slr.attention.span.span_basis`). The coordinates ``u = Q^T x`` are
i.i.d. ``N(0, I_4)`` plus the variant's spike, with the location and the label drawn from them
exactly as in dimension ``D``: they are the tokens of the reduced problem of dimension 4 (the
same one the test error uses), drawn by the simulator. The rest, ``x_perp ~ N(0, I - Q Q^T)``, is
independent of ``u``, of the location and of the label noise, so given them

``(sum g^chi x_perp, sum g^z x_perp) ~ N(0, G (x) (I - Q Q^T))``, ``G = [[sum g^chi g^chi,
sum g^chi g^z], [., sum g^z g^z]]`` (sums over real tokens),

which is ``C (n_1, n_2)`` projected off ``Q`` for two i.i.d. ``N(0, I_D)`` vectors and
``C C^T = G``. A step then draws ``4 B Lbar`` numbers for the batch and ``2 D`` for the rest,
instead of ``B Lbar D``, and its update has the law of the full draw's, so the whole trajectory
does (a Markov chain with the same transition law). The batch's loss (the logged training loss)
is computed on the reduced batch, with the same law too.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp

from bayes_slr.attention.estimators import AttentionParams, predict_from_projections
from bayes_slr.attention.span import SPAN, span_basis
from bayes_slr.models.batch import Teacher, token_mask
from bayes_slr.models.simulate import simulate
from bayes_slr.models.spec import SLRConfig


def projected_value_and_grad(
    params: AttentionParams,
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    batch: int,
    activation: str,
    token_dtype: str = "float64",
) -> tuple[jax.Array, AttentionParams]:
    """The batch's mean ``(y - f)^2 / 2`` and its gradient for a fresh batch drawn from ``key``
    through the span of ``k*, v*, k, v`` (module docstring): in law, what ``jax.value_and_grad``
    gives on ``simulate(key, config, teacher, batch)``.

    Parameters
    ----------
    params : the one-head estimator ``(k, v, c)``, ``k`` and ``v`` of shape ``(D,)``.
    key : PRNG key of the step.
    config : the task (``D >= 4``).
    teacher : ``(k*, v*)`` of shape ``(D,)``.
    batch : sequences in the batch.
    activation : a registered activation.
    token_dtype : precision of the ``2 D`` Gaussian numbers of the rest (``simulate``'s
        ``token_dtype``: ``"float64"``, exact in law, or ``"float32"``, the same law rounded to 24
        bits and several times cheaper on a CPU); the batch's coordinates are drawn in float64.

    Returns
    -------
    value : () the batch's loss.
    grads : AttentionParams, the gradient in ``k``, ``v`` and ``c``.
    """
    D = config.D
    basis, small_params, small_teacher = span_basis(params, teacher)
    batch_key, rest_key = jax.random.split(key)
    fresh = simulate(batch_key, config.replace(D=SPAN), small_teacher, batch)
    mask = token_mask(fresh.lengths, config.Lbar)
    directions = jnp.stack([small_params.k, small_params.v], axis=-1) / math.sqrt(SPAN)
    projections = fresh.X @ directions  # (B, Lbar, 2): chi and z, as x . (k, v) / sqrt(D)

    def loss(chi: jax.Array, z: jax.Array, c: jax.Array) -> jax.Array:
        residual = fresh.y - predict_from_projections(chi, z, mask, c, activation)
        return 0.5 * jnp.mean(residual**2)

    value, (g_chi, g_z, g_c) = jax.value_and_grad(loss, argnums=(0, 1, 2))(
        projections[..., 0], projections[..., 1], params.c
    )
    coefficients = jnp.stack([g_chi, g_z]) * mask  # (2, B, Lbar)
    in_span = jnp.einsum("jbl,bls->js", coefficients, fresh.X) @ basis.T  # (2, D)
    noise = jax.random.normal(rest_key, (2, D), dtype=token_dtype).astype(jnp.float64)
    noise = noise - (noise @ basis) @ basis.T
    gram = jnp.einsum("jbl,ibl->ji", coefficients, coefficients)
    rest = _gram_factor(gram) @ noise
    grads = (in_span + rest) / math.sqrt(D)
    return value, AttentionParams(grads[0], grads[1], g_c)


def _gram_factor(gram: jax.Array) -> jax.Array:
    """The lower-triangular ``C`` with ``C C^T = gram`` of a 2 x 2 positive semi-definite matrix
    (singular ones included: a zero first row gives a zero first column)."""
    first = jnp.sqrt(gram[0, 0])
    below = jnp.where(first > 0.0, gram[0, 1] / jnp.where(first > 0.0, first, 1.0), 0.0)
    last = jnp.sqrt(jnp.maximum(gram[1, 1] - below**2, 0.0))
    zero = jnp.zeros_like(first)
    return jnp.stack([jnp.stack([first, zero]), jnp.stack([below, last])])
