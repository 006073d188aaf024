"""The Bayes-optimal predictor at finite alpha and location posteriors from posterior draws.

For one draw ``(k, v)`` the predictor is ``E[y | X, k, v] = sum_l P(eps = l | X, k) z_l``
with ``P(eps = l | X, k) = softmax(c_nu chi)_l`` (docs/model.md section 2); the Bayes-optimal
predictor given the training set is its posterior mean over the draws. On a multi-head task
(docs/multihead.md section 8) the draws have a head axis and the heads' joint states are summed
out; the posterior is symmetric under a permutation of the heads, so its draws are read by their
label-free :func:`matched_overlaps`.
"""

from __future__ import annotations

import functools
import itertools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.inference.location import location_posterior
from bayes_slr.models.head_states import (
    joint_head_states,
    joint_state_log_weights,
    sequence_evidence_and_prediction,
)
from bayes_slr.models.numpyro_models import location_joint_log_weights, location_log_weights
from bayes_slr.models.scoring import (
    ExcessError,
    Pairs,
    PredictFn,
    Scorer,
    excess_test_error,
    fresh_sample_scorer,
)
from bayes_slr.models.simulate import MultiHeadBatch, SLRBatch, Teacher, token_mask
from bayes_slr.models.spec import SLRConfig

DRAWS_PER_BLOCK = 32
"""Posterior draws evaluated together by the predictor (split over its groups). A block's
arrays, ``DRAWS_PER_BLOCK * n * Lbar`` numbers, stay in a CPU's cache for the usual chunks of
``n = 10_000`` sequences: against 64, 0.27 against 0.34 s CPU for 400 draws on 10000 sequences
at ``D = 50``, ``L = 3`` (one group; four groups 0.35 against 0.40 s), 0.78 against 1.05 s at
``D = 100``, ``L = 10``, 0.55 against 0.66 s at ``D = 500``, the same at ``D = 200``."""


def _flat(draws: jax.Array | np.ndarray) -> np.ndarray:
    """``(chains, draws, D)`` or ``(S, D)`` -> ``(S, D)``, on the host (bookkeeping on the host
    compiles no program)."""
    draws = np.asarray(draws)
    return draws.reshape(-1, draws.shape[-1])


def location_probabilities(
    config: SLRConfig,
    X: jax.Array,
    lengths: jax.Array,
    k: jax.Array,
    v: jax.Array | None = None,
    y: jax.Array | None = None,
) -> jax.Array:
    """``P(eps = l | X, k)`` (or ``P(eps = l | X, y, k, v)`` when ``v`` and ``y`` are given), ``(N,
    Lbar)``.

    Zero on padded tokens. For one direction ``k`` of shape ``(D,)``; without ``y`` this is
    :func:`~bayes_slr.inference.location.location_posterior` at ``k``.
    """
    if y is None:
        return location_posterior(X, lengths, config, k=k)
    logits = location_joint_log_weights(X, lengths, y, k, v, config)
    return jax.nn.softmax(logits, axis=-1, where=token_mask(lengths, config.Lbar))


@functools.partial(jax.jit, static_argnames=("config",))
def _predict(
    config: SLRConfig,
    k_blocks: jax.Array,
    v_blocks: jax.Array,
    weights: jax.Array,
    X: jax.Array,
    lengths: jax.Array,
) -> jax.Array:
    """Weighted sum over draw blocks ``(blocks, B, D)`` of the per-draw predictions, by
    ``lax.scan``.
    """

    def one(k_i: jax.Array, v_i: jax.Array) -> jax.Array:
        z = X @ v_i / jnp.sqrt(config.D)
        return jnp.sum(location_probabilities(config, X, lengths, k_i) * z, axis=-1)

    def step(
        total: jax.Array, block: tuple[jax.Array, jax.Array, jax.Array]
    ) -> tuple[jax.Array, None]:
        k_block, v_block, w_block = block
        return total + w_block @ jax.vmap(one)(k_block, v_block), None

    total, _ = jax.lax.scan(step, jnp.zeros(X.shape[0], X.dtype), (k_blocks, v_blocks, weights))
    return total


def posterior_mean_predictor(
    config: SLRConfig, k_draws: jax.Array, v_draws: jax.Array, X: jax.Array, lengths: jax.Array
) -> jax.Array:
    """Posterior mean of ``sum_l softmax(c_nu chi)_l z_l`` at each sequence of ``X``.

    Parameters
    ----------
    config : SLRConfig
    k_draws, v_draws : (chains, draws, D) or (S, D) posterior draws.
    X : (n, Lbar, D) tokens; lengths : (n,) lengths.

    Returns
    -------
    (n,) predictions. The draws are scanned over in blocks of
    :data:`DRAWS_PER_BLOCK` (memory ``DRAWS_PER_BLOCK * n * Lbar`` numbers).
    """
    k, v = _flat(k_draws), _flat(v_draws)
    S, D = k.shape
    padded = -(-S // DRAWS_PER_BLOCK) * DRAWS_PER_BLOCK
    weights = np.where(np.arange(padded) < S, 1.0 / S, 0.0).reshape(-1, DRAWS_PER_BLOCK)
    k_blocks, v_blocks = (
        _padded(draws, padded).reshape(-1, DRAWS_PER_BLOCK, D) for draws in (k, v)
    )
    return _predict(config, k_blocks, v_blocks, weights, jnp.asarray(X), jnp.asarray(lengths))


def _padded(array: np.ndarray, length: int, axis: int = 0) -> np.ndarray:
    """``array`` padded with zeros along ``axis`` to ``length``, on the host."""
    widths = [(0, 0)] * array.ndim
    widths[axis] = (0, length - array.shape[axis])
    return np.pad(array, widths)


def draw_vectors(config: SLRConfig, draws: jax.Array | np.ndarray) -> np.ndarray:
    """The draws with each draw one vector: a multi-head task's ``(..., H, D)`` flattened to
    ``(..., H D)``; one-head draws as they are (on the host)."""
    draws = np.asarray(draws)
    return draws.reshape(*draws.shape[:-2], -1) if config.multihead else draws


def thin_draws(draws: jax.Array | np.ndarray, max_draws: int) -> np.ndarray:
    """At most ``max_draws`` (``>= 1``) of the draws, evenly spaced, as ``(S, D)``."""
    flat = _flat(draws)
    step = -(-flat.shape[0] // max_draws)
    return flat[::step]


GROUPS = 4
"""Disjoint groups of draws (chain-major order: with 4 chains, one group per chain) forming
independent replicates of the posterior predictor (unbiased error, draw-noise standard error)."""


class PredictorEvaluation(NamedTuple):
    """Predictions of the posterior predictors at ``n`` sequences, from ``G`` disjoint draw groups.

    Attributes
    ----------
    bayes, bayes_groups : (n,), (n, G): the Bayes-optimal (likelihood-weighted) predictor from
        all draws and from each group.
    plain, plain_groups : (n,), (n, G): the plain posterior mean of ``f`` (equal weights).
    importance_ess : (n,) effective number of draws of the weights ``p(X | k_s)`` (all draws).
    """

    bayes: jax.Array
    bayes_groups: jax.Array
    plain: jax.Array
    plain_groups: jax.Array
    importance_ess: jax.Array


def draw_evidence_and_prediction(
    config: SLRConfig, X: jax.Array, lengths: jax.Array, k: jax.Array, v: jax.Array
) -> tuple[jax.Array, jax.Array]:
    """``log p(X | k)`` (up to the ``k``-free token density) and ``E[y | X, k, v]`` of each
    sequence, ``(n,)`` each, for one draw.

    One head: the location summed out. Multi-head task (``k``, ``v`` flattened from ``(H, D)``):
    the heads' joint states summed out
    (:func:`~bayes_slr.models.head_states.sequence_evidence_and_prediction`).
    """
    if config.multihead:
        shape = (config.heads, config.D)
        return sequence_evidence_and_prediction(
            X, lengths, k.reshape(shape), v.reshape(shape), config
        )
    log_w = location_log_weights(X, lengths, k, config)  # log P(eps = l) g_nu(l, chi)
    log_px = jax.nn.logsumexp(log_w, axis=-1)  # log p(X | k) up to the k-free token density
    z = X @ v / jnp.sqrt(config.D)
    return log_px, jnp.sum(jnp.exp(log_w - log_px[:, None]) * z, axis=-1)


@functools.partial(jax.jit, static_argnames=("config",))
def _evaluate(
    config: SLRConfig,
    k: jax.Array,
    v: jax.Array,
    valid: jax.Array,
    X: jax.Array,
    lengths: jax.Array,
) -> PredictorEvaluation:
    """Stream over draw blocks ``(G, blocks, B, D)``; accumulate per group in log space."""
    n = X.shape[0]

    def one_draw(k_i: jax.Array, v_i: jax.Array) -> tuple[jax.Array, jax.Array]:
        return draw_evidence_and_prediction(config, X, lengths, k_i, v_i)

    def group(k_g: jax.Array, v_g: jax.Array, valid_g: jax.Array):
        def step(carry, block):
            m, a, b, c, total, count = carry
            k_b, v_b, valid_b = block
            log_px, f = jax.vmap(one_draw)(k_b, v_b)  # (B, n)
            log_px = jnp.where(valid_b[:, None], log_px, -jnp.inf)
            f = jnp.where(valid_b[:, None], f, 0.0)
            m_new = jnp.maximum(m, jnp.max(log_px, axis=0))
            scale = jnp.exp(m - m_new)
            e = jnp.exp(log_px - m_new)
            carry = (
                m_new,
                a * scale + e.sum(0),
                b * scale + (e * f).sum(0),
                c * scale**2 + (e**2).sum(0),
                total + f.sum(0),
                count + valid_b.sum(),
            )
            return carry, None

        zeros = jnp.zeros(n, X.dtype)
        init = (jnp.full(n, -jnp.inf, X.dtype), zeros, zeros, zeros, zeros, jnp.asarray(0))
        (m, a, b, c, total, count), _ = jax.lax.scan(step, init, (k_g, v_g, valid_g))
        return m, a, b, c, total, count

    m, a, b, c, total, count = jax.vmap(group)(k, v, valid)  # (G, n) each, count (G,)
    top = jnp.max(m, axis=0)
    scale = jnp.exp(m - top)
    a_all, b_all, c_all = (a * scale).sum(0), (b * scale).sum(0), (c * scale**2).sum(0)
    return PredictorEvaluation(
        b_all / a_all,
        (b / a).T,
        total.sum(0) / count.sum(),
        (total / count[:, None]).T,
        a_all**2 / c_all,
    )


class PosteriorPredictor:
    """The Bayes-optimal predictor of new sequences from posterior draws (docs/model.md section 5).

    ``predict(X, lengths)`` is ``E[y | X, training set]``: the posterior mean of
    ``f(X; k, v) = sum_l P(eps = l | X, k) z_l`` under the posterior given the training set
    AND ``X``, i.e. the draws ``(k_s, v_s)`` weighted per sequence by ``p(X | k_s)``
    (``log p(X | k) = logsumexp_l log[P(eps = l) g_nu(l, chi)]``: for spiked SLR
    ``logsumexp_l(sqrt(nu) chi_l - nu |k|^2/(2D)) - log L``; for max-SLR zero), self-normalised
    in log space (a multi-head task: draws with a head axis, the heads' joint states summed out,
    :func:`draw_evidence_and_prediction`). ``weighted=False`` gives the plain average over draws
    (the training-set posterior mean of ``f``); for max-SLR the two coincide.

    The draws (at most ``max_draws``, evenly thinned) are split into ``groups`` disjoint
    contiguous groups (chain-major: one group per chain when chains = groups), streamed in
    blocks; :meth:`replicates` gives the predictor of each group (independent replicates
    for the unbiased error of :func:`excess_test_error`). Every call records the
    per-sequence importance ESS in :attr:`importance_ess`.
    """

    def __init__(
        self,
        config: SLRConfig,
        k_draws,
        v_draws,
        *,
        weighted: bool = True,
        max_draws: int = 1_000,
        groups: int = GROUPS,
    ) -> None:
        k, v = (thin_draws(draw_vectors(config, x), max_draws) for x in (k_draws, v_draws))
        S, D = k.shape
        groups = min(groups, S)
        per_group = S // groups  # a remainder of fewer than `groups` draws is dropped
        block = min(max(DRAWS_PER_BLOCK // groups, 1), per_group)  # no block of padding alone
        blocks = -(-per_group // block)
        padded = blocks * block

        def arrange(draws: np.ndarray) -> jax.Array:
            grouped = draws[: groups * per_group].reshape(groups, per_group, D)
            return jnp.asarray(_padded(grouped, padded, axis=1).reshape(groups, blocks, block, D))

        self.config, self.weighted, self.groups, self.draws = (
            config,
            weighted,
            groups,
            groups * per_group,
        )
        self._k, self._v = arrange(k), arrange(v)
        self._valid = jnp.asarray(
            np.broadcast_to(np.arange(padded) < per_group, (groups, padded)).reshape(
                groups, blocks, block
            )
        )
        self.importance_ess: list[np.ndarray] = []

    def evaluate(self, X: jax.Array, lengths: jax.Array) -> PredictorEvaluation:
        """Both predictors (weighted and plain), pooled and per group, and the importance ESS."""
        out = _evaluate(
            self.config, self._k, self._v, self._valid, jnp.asarray(X), jnp.asarray(lengths)
        )
        self.importance_ess.append(np.asarray(out.importance_ess))
        return out

    def __call__(self, X: jax.Array, lengths: jax.Array) -> jax.Array:
        out = self.evaluate(X, lengths)
        return out.bayes if self.weighted else out.plain

    def replicates(self, X: jax.Array, lengths: jax.Array) -> jax.Array:
        """``(n, groups)`` predictions of each disjoint group of draws."""
        out = self.evaluate(X, lengths)
        return out.bayes_groups if self.weighted else out.plain_groups

    def both(self, X: jax.Array, lengths: jax.Array) -> dict[str, jax.Array]:
        """Replicates of both predictors: ``{"bayes": (n, G), "plain": (n, G)}`` (one pass over the
        draws).
        """
        out = self.evaluate(X, lengths)
        return {"bayes": out.bayes_groups, "plain": out.plain_groups}

    def ess_summary(self) -> dict[str, float]:
        """Median and 5% quantile over the sequences seen so far of the importance ESS, and the draw
        count.
        """
        values = np.concatenate(self.importance_ess) if self.importance_ess else np.array([np.nan])
        return {
            "median": float(np.median(values)),
            "q05": float(np.quantile(values, 0.05)),
            "draws": int(self.draws),
        }


class PosteriorErrors(NamedTuple):
    """Errors of the two posterior predictors on one test set, and the importance ESS.

    ``others``: the errors of the other predictors scored in the same pass, and the paired
    differences asked for (:func:`scored_posterior_errors`).
    """

    bayes: ExcessError
    plain: ExcessError
    importance_ess: dict[str, float]
    others: dict[str, ExcessError]


N_TEST = 100_000
"""Fresh test sequences of a posterior predictor's error when not given (a command passes its
own ``N_test``): the standard error of an error near ``0.5`` is then about ``0.002`` (the
per-sequence spread, about ``0.7``, over ``sqrt(N_test)``), below the third decimal a table
shows and below the gaps the posterior is compared on; the former multi-head ``20_000`` gave
``0.005``."""


def posterior_errors(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    k_draws,
    v_draws,
    *,
    N_test: int = N_TEST,
    chunk_size: int = 10_000,
    max_draws: int = 1_000,
    groups: int = GROUPS,
    others: dict[str, PredictFn] | None = None,
    pairs: Pairs = (),
) -> PosteriorErrors:
    """Unbiased excess test errors of the Bayes-optimal (weighted) and plain posterior predictors.

    One pass over ``N_test`` fresh sequences of ``teacher`` and the draws
    (:func:`scored_posterior_errors` with :func:`excess_test_error`; one head or several: the
    draws ``(..., H, D)`` of a multi-head task); ``others`` and ``pairs`` as there (the
    known-directions predictor :func:`~bayes_slr.inference.location.known_directions_predictor`
    and ``("bayes", "known")``: the posterior's excess over it on the same sequences).
    """
    score = fresh_sample_scorer(key, config, teacher, N_test, chunk_size)
    return scored_posterior_errors(
        score,
        config,
        k_draws,
        v_draws,
        max_draws=max_draws,
        groups=groups,
        others=others,
        pairs=pairs,
    )


def scored_posterior_errors(
    score: Scorer,
    config: SLRConfig,
    k_draws,
    v_draws,
    *,
    max_draws: int = 1_000,
    groups: int = GROUPS,
    others: dict[str, PredictFn] | None = None,
    pairs: Pairs = (),
) -> PosteriorErrors:
    """Errors of the Bayes-optimal (weighted) and plain posterior predictors on the test set of
    ``score``.

    ``score`` is fresh sequences from a teacher or held-out sequences
    (:data:`~bayes_slr.models.scoring.Scorer`); both predictors are scored from ``groups``
    independent replicates (one pass over the test set and the draws). ``groups >= 2`` is
    needed for the unbiased estimate (``>= 3`` for its draw-noise standard error). The
    weighted predictor conditions each test sequence's prediction on that sequence
    (:class:`PosteriorPredictor`).

    ``others`` (name: ``(n,)`` predictor) are scored in the same pass, on the same sequences, and
    ``pairs`` of names (``"bayes"``, ``"plain"`` or a key of ``others``) give paired differences
    (:func:`~bayes_slr.models.scoring.excess_test_error`); both land in ``PosteriorErrors.others``.
    """
    predictor = PosteriorPredictor(config, k_draws, v_draws, max_draws=max_draws, groups=groups)
    others = others or {}

    def every_predictor(X: jax.Array, lengths: jax.Array) -> dict[str, jax.Array]:
        return {**predictor.both(X, lengths), **{name: f(X, lengths) for name, f in others.items()}}

    errors = score(every_predictor, pairs=pairs)
    return PosteriorErrors(
        errors.pop("bayes"), errors.pop("plain"), predictor.ess_summary(), errors
    )


def bayes_test_error(
    key: jax.Array,
    config: SLRConfig,
    teacher: Teacher,
    k_draws: jax.Array,
    v_draws: jax.Array,
    *,
    N_test: int = N_TEST,
    chunk_size: int = 10_000,
    max_draws: int = 1_000,
    weighted: bool = True,
    groups: int = GROUPS,
) -> ExcessError:
    """Excess test error of the Bayes-optimal posterior predictor on ``N_test`` fresh sequences.

    Parameters
    ----------
    key : PRNG key of the test set.
    config : SLRConfig
    teacher : Teacher
        The teacher that generated the training set (the test set comes from it too).
    k_draws, v_draws : posterior draws, ``(chains, draws, D)`` or ``(S, D)``.
    N_test : int
        Number of test sequences, ``>= 2``.
    chunk_size : int
        Test sequences generated at once.
    max_draws : int
        At most this many draws (evenly thinned) form the predictor.
    weighted : bool
        ``True``: the Bayes-optimal predictor (draws weighted by ``p(X | k)``); ``False``:
        the plain posterior mean of ``f``.
    groups : int
        Disjoint draw groups; ``>= 2`` gives the unbiased estimate (:func:`excess_test_error`),
        ``1`` the plain square of the pooled predictor's residual (biased up by about
        ``E[Var_post f] / S_eff``).
    """
    predictor = PosteriorPredictor(
        config, k_draws, v_draws, weighted=weighted, max_draws=max_draws, groups=groups
    )
    predict = predictor.replicates if predictor.groups >= 2 else predictor
    return excess_test_error(key, config, teacher, predict, N_test=N_test, chunk_size=chunk_size)


class LocationPosterior(NamedTuple):
    """Posterior of the location of one sequence, per token.

    Attributes
    ----------
    probs : (L,) posterior probability ``P(eps = l | X, data)`` (mean over draws).
    lower, upper : (L,) equal-tailed credible interval of ``P(eps = l | X, k)`` over the
        posterior of ``k`` (how much the direction uncertainty moves each probability).
    level : credible level of the interval.
    """

    probs: np.ndarray
    lower: np.ndarray
    upper: np.ndarray
    level: float


def sequence_location_posterior(
    config: SLRConfig,
    k_draws: jax.Array,
    tokens: jax.Array,
    *,
    v_draws: jax.Array | None = None,
    y: float | None = None,
    level: float = 0.9,
) -> LocationPosterior:
    """Location posterior of one new sequence ``tokens`` (shape ``(L, D)``, ``L <= Lbar``).

    Without ``y``: ``P(eps = l | X, k)`` averaged over the draws of ``k``. With ``y`` (and
    ``v_draws``): ``P(eps = l | X, y, k, v)``, the output observed too.
    """
    if level >= 1:
        raise ConfigError(f"level must be a number in (0, 1), got {level!r}")
    tokens = jnp.asarray(tokens)
    if tokens.ndim != 2 or not 1 <= tokens.shape[0] <= config.Lbar or tokens.shape[1] != config.D:
        raise ConfigError(
            f"tokens must have shape (L, D) with 1 <= L <= {config.Lbar} and D = {config.D}, "
            f"got {tuple(tokens.shape)}"
        )
    L = tokens.shape[0]
    X = _padded(np.asarray(tokens, dtype=np.float64), config.Lbar)[None]
    lengths = np.array([L])
    k = _flat(k_draws)
    if y is None:
        per_draw = jax.vmap(lambda k_i: location_probabilities(config, X, lengths, k_i))(k)
    else:
        y_arr = jnp.array([y], dtype=X.dtype)
        per_draw = jax.vmap(
            lambda k_i, v_i: location_probabilities(config, X, lengths, k_i, v_i, y_arr)
        )(k, _flat(v_draws))
    per_draw = np.asarray(per_draw[:, 0, :L])
    tail = (1.0 - level) / 2
    return LocationPosterior(
        per_draw.mean(axis=0),
        np.quantile(per_draw, tail, axis=0),
        np.quantile(per_draw, 1 - tail, axis=0),
        level,
    )


@functools.partial(jax.jit, static_argnames=("config",))
def training_location_posterior(
    config: SLRConfig, batch: SLRBatch, k_draws: jax.Array, v_draws: jax.Array
) -> jax.Array:
    """Per-chain location posteriors of the training sequences, ``(chains, N, Lbar)``.

    Rao-Blackwellised: the mean over a chain's draws of ``P(eps_mu = l | X_mu, y_mu, k, v)``.
    """

    def chain_mean(k_chain: jax.Array, v_chain: jax.Array) -> jax.Array:
        def one(total: jax.Array, kv: tuple[jax.Array, jax.Array]) -> tuple[jax.Array, None]:
            k_i, v_i = kv
            return total + location_probabilities(
                config, batch.X, batch.lengths, k_i, v_i, batch.y
            ), None

        total, _ = jax.lax.scan(one, jnp.zeros(batch.X.shape[:2]), (k_chain, v_chain))
        return total / k_chain.shape[0]

    return jax.vmap(chain_mean)(k_draws, v_draws)


def training_head_state_posterior(
    config: SLRConfig,
    batch: MultiHeadBatch,
    k_draws: jax.Array,
    v_draws: jax.Array,
    max_draws: int,
) -> np.ndarray:
    """Each chain's posterior of every head's state in every training sequence of a multi-head
    task, ``(chains, N, H, Lbar + 1)`` (the heads' counterpart of
    :func:`training_location_posterior`; state ``Lbar``: absent): the mean over the chain's draws
    (at most ``max_draws`` in all, evenly thinned within each chain) of ``P(s_h = s | X, y, k,
    v)``, the heads' joint states summed out."""
    chains, draws = k_draws.shape[:2]
    step = -(-draws // max(max_draws // chains, 1))
    one_hot = jax.nn.one_hot(
        jnp.asarray(joint_head_states(config.heads, config.Lbar)), config.Lbar + 1
    )

    def draw_marginals(kv: tuple[jax.Array, jax.Array]) -> jax.Array:
        log_w, _ = joint_state_log_weights(batch.X, batch.lengths, kv[0], kv[1], config, batch.y)
        return jnp.einsum("ns,shl->nhl", jax.nn.softmax(log_w, axis=-1), one_hot)

    @jax.jit
    def chain_mean(k: jax.Array, v: jax.Array) -> jax.Array:
        return jnp.mean(jax.lax.map(draw_marginals, (k, v)), axis=0)

    return np.stack(
        [
            np.asarray(chain_mean(jnp.asarray(k_draws[c, ::step]), jnp.asarray(v_draws[c, ::step])))
            for c in range(chains)
        ]
    )


MATCHED_OVERLAPS = ("m_k", "m_v", "q_k", "q_v")


def matched_overlaps(
    k_draws: np.ndarray, v_draws: np.ndarray, teacher: Teacher
) -> dict[str, np.ndarray]:
    """Label-free overlaps of multi-head draws ``(..., H, D)`` with the teacher ``(H, D)``, each
    ``(...)``.

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
