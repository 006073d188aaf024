"""The posterior of multi-head SLR (``posterior --heads H --presence rho``, docs/multihead.md
section 8): a teacher of ``H`` heads and ``N = round(alpha D)`` training sequences of the seed,
the posterior of every head's ``(k_h, v_h)`` sampled into an ArviZ ``DataTree``, and its typed
summary (imported by ``posterior`` inside ``solve``: this module imports JAX).

The prior and the likelihood are symmetric under a permutation of the heads, so only quantities
that do not depend on the heads' labels are summarised: the matched overlaps and the
Bayes-optimal predictor (a sum over the heads).

Groups of the tree (the one-head file's layout, docs/posterior.md, with a head axis):

* ``posterior``: ``k``, ``v`` (``chain, draw, head, dim``) and the matched overlaps ``m_k``,
  ``m_v``, ``q_k``, ``q_v`` (``chain, draw``); its attributes hold the task, the sampler, the
  seed, the settings and the package versions, as the one-head file's do.
* ``sample_stats``: ``lp`` and the sampler's statistics.
* ``observed_data``: ``y``; ``constant_data``: ``X``, ``lengths``, the heads' true locations
  ``eps_true`` and presences ``present`` (``sequence, head``), the teacher ``k_star``,
  ``v_star`` (``head, dim``).
* ``head_states``: ``probs`` (``chain, sequence, head, state``): each chain's
  Rao-Blackwellised posterior of every head's state in every training sequence (``state < L``:
  present at that token; ``state = L``: absent), the heads labelled as in that chain.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import xarray as xr

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.estimators import attention_predictor
from bayes_slr.formulas.multihead import multihead_bayes_error_exact
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import MATCHED_OVERLAPS, matched_overlaps, posterior_errors
from bayes_slr.models.batch import MultiHeadBatch, SLRBatch, Teacher
from bayes_slr.models.head_states import joint_head_states, joint_state_log_weights
from bayes_slr.models.scoring import Predictor
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.erm import erm_study
from bayes_slr.studies.multihead_posterior_records import (
    MultiHeadPosteriorSummary,
    skipped_notes,
)
from bayes_slr.studies.posterior import sample_chains, seed_training_set
from bayes_slr.studies.posterior_file import settings_record
from bayes_slr.studies.posterior_records import (
    ERM_ACTIVATIONS,
    Diagnostic,
    ERMComparison,
    Estimate,
    SamplingSettings,
    convergence_warnings,
)

HEAD_STATES_GROUP = "head_states"


def sample_multihead_tree(
    config: SLRConfig,
    alpha: float,
    settings: SamplingSettings,
    seed: int,
    *,
    progress: bool = False,
) -> xr.DataTree:
    """Draw the teacher of ``H`` heads and the training set of ``seed``, sample the posterior,
    return its ArviZ ``DataTree`` (the layout of the module docstring).

    The keys of the teacher, the data and the chains are split from ``seed`` as the one-head
    posterior's are. ``progress``: show the chains' steps (changes no draw).
    """
    N, teacher, batch, key_sampler = seed_training_set(config, alpha, settings, seed)
    draws = sample_chains(key_sampler, config, batch, teacher, settings, settings.init, progress)
    record = settings_record(settings, alpha, N, draws.sampler)
    tree = posterior_io.draws_tree(
        draws,
        config,
        batch,
        teacher,
        matched_overlaps(draws.k, draws.v, teacher),
        seed,
        record,
        head_axis=True,
        constant={"present": (np.asarray(batch.present), ["sequence", "head"])},
    )
    probs = head_state_posterior(config, batch, draws.k, draws.v, settings.max_draws)
    tree[HEAD_STATES_GROUP] = xr.Dataset(
        {"probs": (("chain", "sequence", "head", "state"), probs)},
        coords={"chain": tree.posterior["chain"].values},
        attrs={"state": f"0..{config.Lbar - 1}: present at that token; {config.Lbar}: absent"},
    )
    return tree


def head_state_posterior(
    config: SLRConfig,
    batch: MultiHeadBatch,
    k_draws: np.ndarray,
    v_draws: np.ndarray,
    max_draws: int,
) -> np.ndarray:
    """Each chain's posterior of every head's state in every training sequence, ``(chains, N, H,
    Lbar + 1)``: the mean over the chain's draws (at most ``max_draws`` in all, evenly thinned
    within each chain) of ``P(s_h = s | X, y, k, v)``, the heads' joint states summed out."""
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


def summarise_multihead(tree: xr.DataTree, settings: SamplingSettings) -> MultiHeadPosteriorSummary:
    """Diagnostics of the matched overlaps, the Bayes-optimal predictor's test error against the
    teacher's known-directions predictor on the same fresh sequences and against the population
    Bayes error, and warnings, of the multi-head posterior ``tree``.

    The test sequences come from the recorded seed (the one-head posterior's test key).
    """
    record, config = posterior_io.record_of(tree), posterior_io.config_of(tree)
    teacher = Teacher(
        jnp.asarray(tree.constant_data["k_star"].values),
        jnp.asarray(tree.constant_data["v_star"].values),
    )
    key_test, _ = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(record["seed"]), 1))
    posterior = tree.posterior.to_dataset()
    table = diagnostics.summary_table(posterior[list(MATCHED_OVERLAPS)])
    convergence = diagnostics.convergence_summary(table)
    stats = tree.sample_stats
    divergences = int(stats["diverging"].sum()) if "diverging" in stats else None
    erm, predictors = _erm(tree, config, teacher, settings) if settings.erm else ({}, {})
    errors = posterior_errors(
        key_test,
        config,
        teacher,
        *posterior_io.draws_of(tree),
        N_test=settings.N_test,
        max_draws=settings.max_draws,
        others={"known": known_directions_predictor(config, teacher), **predictors},
        pairs=[("bayes", "known"), *((name, "bayes") for name in predictors)],
    )
    error, over_known, known = errors.bayes, errors.others["bayes - known"], errors.others["known"]
    population = multihead_bayes_error_exact(config)
    recorded = record["config"]
    return MultiHeadPosteriorSummary(
        alpha=float(recorded["alpha"]),
        N=int(recorded["N"]),
        heads=config.heads,
        presence=config.presence,
        sampler=recorded["sampler"],
        bayes_error=Estimate(error.value, error.stderr),
        excess_over_known=Estimate(over_known.value, over_known.stderr),
        oracle_error=Estimate(known.value, known.stderr),
        population_bayes_error=Estimate(population.value, population.error_bound),
        n_test=error.n_test,
        rhat_max=convergence["rhat_max"],
        ess_bulk_min=convergence["ess_bulk_min"],
        ess_tail_min=convergence["ess_tail_min"],
        divergences=divergences,
        diagnostics={name: Diagnostic(**row) for name, row in table.items()},
        overlaps={name: row["mean"] for name, row in table.items()},
        notes=skipped_notes(),
        warnings=tuple(
            convergence_warnings(
                convergence["rhat_max"], convergence["ess_bulk_min"], divergences, None
            )
        ),
        erm=erm or None,
        erm_minus_bayes={
            a: Estimate(
                errors.others[f"erm_{a} - bayes"].value, errors.others[f"erm_{a} - bayes"].stderr
            )
            for a in erm
        }
        or None,
    )


def _erm(
    tree: xr.DataTree, config: SLRConfig, teacher: Teacher, settings: SamplingSettings
) -> tuple[dict[str, ERMComparison], dict[str, Predictor]]:
    """ERM of an ``H``-head student (docs/multihead.md section 7, as ``gap`` trains it) on the
    posterior's training set, per activation: its row (scored on ERM's own fresh sequences of the
    teacher) and its fit as a predictor, scored again beside the posterior's."""
    data = tree.constant_data
    X = jnp.asarray(data["X"].values)
    unknown = jnp.full(X.shape[:2], jnp.nan)  # ERM reads X, lengths and y only
    batch = SLRBatch(
        X,
        jnp.asarray(data["lengths"].values),
        jnp.asarray(tree.observed_data["y"].values),
        jnp.zeros(X.shape[0], int),
        unknown,
        unknown,
    )
    erm_settings = ERMSettings(
        lam=settings.lam,
        N_test=settings.N_test,
        predict_population=False,
        student_heads=config.heads,
    )
    seed = int(posterior_io.record_of(tree)["seed"])
    rows, predictors = {}, {}
    for activation in ERM_ACTIVATIONS:
        summary = erm_study(config, activation, erm_settings, seed, data=(teacher, batch))
        rows[activation] = ERMComparison.of(summary)
        fit = jax.tree_util.tree_map(lambda leaf: leaf[0], summary.params)
        predictors[f"erm_{activation}"] = attention_predictor(fit, activation)
    return rows, predictors


def multihead_posterior(
    config: SLRConfig,
    alpha: float,
    settings: SamplingSettings,
    seed: int,
    *,
    progress: bool = False,
) -> tuple[xr.DataTree, MultiHeadPosteriorSummary]:
    """The multi-head posterior of ``seed`` (:func:`sample_multihead_tree`) and its summary
    (:func:`summarise_multihead`)."""
    tree = sample_multihead_tree(config, alpha, settings, seed, progress=progress)
    return tree, summarise_multihead(tree, settings)
