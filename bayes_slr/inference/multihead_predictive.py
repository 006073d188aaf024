"""The posterior of multi-head SLR read out (docs/multihead.md section 8): the Bayes-optimal
predictor's test error and overlaps that do not depend on the heads' labels.

The prior and the likelihood are symmetric under a permutation of the heads, so the posterior
is too: a head's own overlaps depend on which labelling a chain settled in. The matched overlaps
of a draw (the permutation of its heads that best fits the teacher's, then the mean over heads)
and the predictor (a sum over the heads) do not.
"""

from __future__ import annotations

import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.inference.predictive import GROUPS, PosteriorPredictor
from bayes_slr.models.head_states import sequence_evidence_and_prediction
from bayes_slr.models.simulate import Teacher, streamed_mean
from bayes_slr.models.spec import SLRConfig

MATCHED_OVERLAPS = ("m_k", "m_v", "q_k", "q_v")


def matched_overlaps(
    k_draws: np.ndarray, v_draws: np.ndarray, teacher: Teacher
) -> dict[str, np.ndarray]:
    """Label-free overlaps of draws ``(..., H, D)`` with the teacher ``(H, D)``, each ``(...)``.

    Per draw, the permutation ``pi`` of the heads that maximises ``sum_h (k_h . k*_pi(h) +
    v_h . v*_pi(h))``; then ``m_k = mean_h k_h . k*_pi(h) / D``, ``m_v`` likewise, ``q_k =
    mean_h |k_h|^2 / D``, ``q_v`` likewise.
    """
    k, v = np.asarray(k_draws, float), np.asarray(v_draws, float)
    k_star, v_star = np.asarray(teacher.k_star, float), np.asarray(teacher.v_star, float)
    H, D = k_star.shape
    m_k = np.einsum("...hd,gd->...hg", k, k_star) / D
    m_v = np.einsum("...hd,gd->...hg", v, v_star) / D
    permutations = np.asarray(list(itertools.permutations(range(H))))  # (P, H)
    heads = np.arange(H)
    fit = (m_k + m_v)[..., heads, permutations].sum(-1)  # (..., P)
    best = permutations[np.argmax(fit, axis=-1)]  # (..., H)
    return {
        "m_k": np.take_along_axis(m_k, best[..., None], axis=-1)[..., 0].mean(-1),
        "m_v": np.take_along_axis(m_v, best[..., None], axis=-1)[..., 0].mean(-1),
        "q_k": np.mean(np.sum(k**2, axis=-1), axis=-1) / D,
        "q_v": np.mean(np.sum(v**2, axis=-1), axis=-1) / D,
    }


class MultiHeadBayesError(NamedTuple):
    """The posterior predictor's excess test error, its excess over the known-directions
    predictor on the same sequences (paired) and the known-directions predictor's own error,
    each with its standard error over the test set."""

    error: float
    stderr: float
    over_known: float
    over_known_stderr: float
    n_test: int
    known: float
    known_stderr: float


def multihead_bayes_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    k_draws: np.ndarray,
    v_draws: np.ndarray,
    *,
    N_test: int = 20_000,
    chunk_size: int = 5_000,
    max_draws: int = 1_000,
    groups: int = GROUPS,
) -> MultiHeadBayesError:
    """Excess test error of the Bayes-optimal posterior predictor of a multi-head task on
    ``N_test`` fresh sequences of ``teacher``, its excess over the known-directions Bayes
    predictor ``E[y | X, k*, v*]`` on the same sequences, and that predictor's own error.

    The predictor conditions each test sequence on itself (:class:`PosteriorPredictor`: the
    draws weighted by ``p(X | k)``, the heads' joint states summed out). The draws (``(chains,
    draws, H, D)``) are split into ``groups >= 2`` disjoint groups, whose predictors ``f_g`` are
    independent given the training set; the per-sequence statistic ``sum_{g != g'} (y - f_g)(y -
    f_g') / (G (G - 1))``, with ``y`` the noiseless signal, has the excess error of the
    predictor's expectation as its mean (no ``1/S`` bias of the squared residual). The known
    directions' predictor sums the same joint states at ``(k*, v*)``; with an exact teacher its
    error is the population Bayes error of docs/multihead.md section 2. Standard errors are over
    the test sequences.
    """
    predictor = PosteriorPredictor(config, k_draws, v_draws, max_draws=max_draws, groups=groups)
    k_star, v_star = jnp.asarray(teacher.k_star), jnp.asarray(teacher.v_star)

    def statistic(batch) -> jax.Array:
        residuals = batch.y[:, None] - predictor.replicates(batch.X, batch.lengths)  # (n, G)
        total = jnp.sum(residuals, axis=1)
        G = residuals.shape[1]
        error = (total**2 - jnp.sum(residuals**2, axis=1)) / (G * (G - 1))
        _, known = sequence_evidence_and_prediction(batch.X, batch.lengths, k_star, v_star, config)
        known_error = (batch.y - known) ** 2
        return jnp.stack([error, error - known_error, known_error], axis=1)

    mean = streamed_mean(statistic, key, config.replace(Delta=0.0), teacher, N_test, chunk_size)
    return MultiHeadBayesError(
        float(mean.mean[0]),
        float(mean.stderr[0]),
        float(mean.mean[1]),
        float(mean.stderr[1]),
        int(mean.count),
        float(mean.mean[2]),
        float(mean.stderr[2]),
    )
