"""State evolution of the Bayes-optimal estimator at finite ``alpha`` (docs/theory.md, part B).

Under the Nishimori identities one overlap per direction remains, ``q_a = m_a`` for
``a in {k, v}``. The prior side is ``q_a = qhat_a / (1 + qhat_a)`` (prior ``N(0, I)``);
the channel side is ``qhat_a = alpha E[sum_l (d log Z_out / d omega_{l,a})^2]`` with
``Z_out(y, omega, 1 - q) = E_{h ~ N(omega, 1 - q)}[(1/L) sum_eps g_nu(eps, h_k) N(y; h_{eps,v},
Delta)]``.
Implemented for spiked SLR (any ``nu``, ``Z_out`` in closed form) and max-SLR: with
``nu = inf`` the location posterior is an argmax probability (one-dimensional
Gauss-Hermite quadrature); with finite ``nu <= MAX_FINITE_NU`` it is
``E_h[softmax(nu h)]``, computed through ``1/S = int exp(-t S) dt`` as a quadrature in
``log t`` of products of one-dimensional Gaussian integrals, tabulated once per
evaluation (:mod:`bayes_slr.numerics.location_integrals`).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable

import jax
import jax.numpy as jnp
import numpy as np
from scipy.interpolate import BarycentricInterpolator

from bayes_slr.formulas.channel import (
    ChannelDraws,
    draw_channel,
    log_output_partition,
    student_fields,
)
from bayes_slr.formulas.fixed_point import damped_then_chord, replicate_stderr
from bayes_slr.formulas.population import length_support, population_terms
from bayes_slr.formulas.result import (
    REPLICA_REPLICATES,
    BayesTheoryDiagnostics,
    TheoryPoint,
)
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.rounding import ROUNDING

INNER_SAMPLES = 64
CHORD_SWITCH = 1e-2
"""Residual of the damped iteration below which the chord iteration takes over
(:func:`~bayes_slr.formulas.fixed_point.damped_then_chord`; the quadrature state evolution's
Newton steps start there too, :data:`~bayes_slr.formulas.state_evolution.NEWTON_SWITCH`): the
damped iteration contracts by 0.7 to 0.87 a step on the max-SLR points measured, and a point's
iterations fall from 34-149 to 14-26 (max ``nu = 2``, ``alpha`` 1 to 64; ``nu = inf``,
``alpha = 2``), its fixed point the same within 2e-9."""
CHORD_RADIUS = 1e-1
"""Longest move of the chord iteration trusted: ten times the switch, so a fixed point whose
undamped map contracts by less than about 0.9 (near a fold) is left to the damped iteration."""
JACOBIAN_STEP = 1e-5
"""Relative step of the central differences of the chord's Jacobian (the map is smooth in ``q``:
its draws are fixed)."""
Q_CEILING = 1.0 - 1e-12


def location_log_posterior(
    config: SLRConfig, omega_k: jax.Array, V_k: jax.Array, mask: jax.Array
) -> jax.Array:
    """``log P(eps = l | X, data)`` from key fields ``omega_k ~ (Lbar,)`` of posterior variance
    ``V_k``.

    Parameters
    ----------
    config : SLRConfig
        Spiked: ``log softmax(sqrt(nu) omega_k)`` (the test tokens' own tilt included).
        Max, ``nu = inf``: log probability that token ``l`` is the argmax of independent
        ``h_j ~ N(omega_{k,j}, V_k)``. Max, finite ``nu``: ``log E_h[softmax(nu h)_l]``
        (:func:`~bayes_slr.numerics.location_integrals.softmax_log_posterior`). The variant
        computes it (:meth:`~bayes_slr.models.variants.TokenLaw.gaussian_location_log_posterior`).
    omega_k : (Lbar,) posterior means of the key projections.
    V_k : posterior variance, in ``[0, 1]`` (``1 - q_k``).
    mask : (Lbar,) True on real tokens.

    Returns
    -------
    (Lbar,) log probabilities, ``-inf`` on padded tokens; differentiable in ``omega_k``.
    """
    return config.law.gaussian_location_log_posterior(config.nu, omega_k, V_k, mask)


def _update(q: jax.Array, draws: ChannelDraws, config: SLRConfig, alpha) -> jax.Array:
    """One application of the state-evolution map ``q -> qhat / (1 + qhat)``."""
    omega = student_fields(draws, q, q)
    score = jax.vmap(jax.grad(log_output_partition), in_axes=(0, 0, 0, None, None))(
        omega, draws.y, draws.mask, q, config
    )
    qhat = alpha * jnp.mean(jnp.sum(score**2 * draws.mask[..., None], axis=1), axis=0)
    return jnp.minimum(qhat / (1.0 + qhat), Q_CEILING)


def draw_errors(
    q: jax.Array, draws: ChannelDraws, config: SLRConfig, key: jax.Array
) -> dict[str, jax.Array]:
    """Test errors at overlaps ``q``, by Monte Carlo over the channel draws.

    ``bayes``: of ``E[y | X, data] = sum_l P(eps = l | X, data) omega_{l,v}`` (uses the test
    tokens' likelihood), as the mean of ``(y - yhat)^2 - Delta`` (small variance when
    ``yhat`` is close to ``y``), with ``nishimori_gap`` = ``E[yhat^2] - E[y yhat]``.
    ``posterior_mean_f_excess``: how much worse the posterior
    mean of ``sum_l softmax(c_nu chi)_l z_l`` given the training set only (docs/model.md
    section 5) does; zero for max-SLR, where the tokens carry no information on ``k*``.
    """
    omega = student_fields(draws, q, q)
    V = 1.0 - q
    log_post = jax.vmap(location_log_posterior, in_axes=(None, 0, None, 0))(
        config, omega[..., 0], V[0], draws.mask
    )
    yhat = jnp.sum(jnp.where(draws.mask, jnp.exp(log_post), 0.0) * omega[..., 1], axis=-1)
    square_errors = (draws.y - yhat) ** 2 - config.Delta
    result = {
        "bayes": jnp.mean(square_errors),
        "bayes_stderr": jnp.std(square_errors) / math.sqrt(yhat.size),
        "nishimori_gap": jnp.mean(yhat**2) - jnp.mean(draws.y * yhat),
        "nishimori_gap_stderr": jnp.std(yhat**2 - draws.y * yhat) / math.sqrt(yhat.size),
    }
    weights = config.law.training_set_location_weights(
        key, config.nu, omega[..., 0], V[0], draws.mask, INNER_SAMPLES
    )
    predictions = jnp.sum(jnp.where(draws.mask, weights, 0.0) * omega[..., 1], axis=-1)
    # yhat = E[y | omega], so its error exceeds the Bayes one by E[(yhat - prediction)^2];
    # two independent inner estimates make the product unbiased for the square (zero where the
    # tokens carry no evidence about k: the two predictors coincide).
    result["posterior_mean_f_excess"] = jnp.mean((yhat - predictions[0]) * (yhat - predictions[1]))
    return result


def quadrature_bayes_error(config: SLRConfig, q_k: float, q_v: float) -> float | None:
    """The Bayes error at overlaps ``(q_k, q_v)`` by quadrature, free of Monte Carlo error.

    By Nishimori the error is ``1 - q_v E[P_eps*]`` with ``P`` the Bayes location weights
    (:func:`bayes_agreement`). ``None`` where ``E[P_eps*]`` has no quadrature, or for non-finite
    overlaps (the Monte Carlo value stays).
    """
    if not math.isfinite(q_v):
        return None
    agreement = bayes_agreement(config, q_k)
    return None if agreement is None else 1.0 - q_v * agreement


def bayes_agreement(config: SLRConfig, q_k: float) -> float | None:
    """``E[P_eps*]``, the Bayes location weights' mean on the true location, at ``q_k``, by
    quadrature (the Bayes error is ``1 - q_v`` times it).

    Where the weights are a softmax attention (:meth:`~bayes_slr.models.variants.TokenLaw.
    bayes_attention_key_overlaps`: spiked ``softmax(c omega_k)``, key overlaps ``(c q_k, c^2
    q_k)``; max with finite ``nu``, ``E[softmax(nu h')]`` over a posterior sample ``h' = q_k chi*
    + sqrt(1 - q_k^2) u``, key overlaps ``(nu q_k, nu^2)``) it is ``A_softmax`` (docs/model.md
    section 4); max with ``nu = inf`` and lengths up to 2 has a closed form
    (:meth:`~bayes_slr.models.variants.TokenLaw.argmax_agreement`). ``None`` otherwise, or for a
    non-finite ``q_k``.
    """
    if not math.isfinite(q_k):
        return None
    overlaps = config.law.bayes_attention_key_overlaps(config.nu, q_k)
    if overlaps is not None:
        return population_terms("softmax", config, *overlaps)[0]
    return config.law.argmax_agreement(config.nu, q_k, *length_support(config))


@functools.partial(jax.jit, static_argnames=("config", "max_iter"))
def _solve(draws, start, config, alpha, damping, tol, max_iter, key):
    result = damped_then_chord(
        lambda q: _update(q, draws, config, alpha),
        start,
        damping=damping,
        tol=tol,
        max_iter=max_iter,
        switch=CHORD_SWITCH,
        radius=CHORD_RADIUS,
        step=JACOBIAN_STEP,
    )
    return result, draw_errors(result.x, draws, config, key)


@functools.partial(jax.jit, static_argnames=("config", "iterations"))
def _history(draws, start, config, alpha, damping, iterations):
    def step(q, _):
        q = (1.0 - damping) * q + damping * _update(q, draws, config, alpha)
        return q, q

    _, iterates = jax.lax.scan(step, start, None, length=iterations)
    return jnp.concatenate([start[None], iterates])


def bayes_state_evolution_history(
    config: SLRConfig,
    *,
    alpha: float,
    start: tuple[float, float],
    iterations: int,
    damping: float = 1.0,
    mc_samples: int = 16384,
    seed: int = 0,
) -> np.ndarray:
    """The iterates ``q_t = (q_k, q_v)``, ``t = 0..iterations``, of the damped state-evolution map
    from ``start``.

    Same channel draws as :func:`bayes_replica_point` with the same ``mc_samples`` and ``seed``; for
    comparing an algorithm's per-iteration overlaps (AMP) with the state evolution. Returns an
    array of shape ``(iterations + 1, 2)``.
    """
    draws = draw_channel(jax.random.split(jax.random.PRNGKey(seed))[0], config, mc_samples)
    return np.asarray(
        _history(draws, jnp.asarray(start, dtype=float), config, alpha, damping, iterations)
    )


def bayes_replica_point(
    config: SLRConfig,
    *,
    alpha: float,
    init: str = "random",
    mc_samples: int = 16384,
    seed: int = 0,
    damping: float = 0.5,
    tol: float = 1e-9,
    max_iter: int = 2000,
    replicates: int = REPLICA_REPLICATES,
) -> TheoryPoint:
    """Solve the Bayes-optimal state evolution at one ``alpha``.

    The point is the fixed point on all ``mc_samples`` draws; each of ``replicates`` consecutive
    (independent) batches of them has its fixed point solved from it (the damped iteration on its
    draws alone), and the batches' spread over ``sqrt(replicates)`` is the point's standard error,
    the fixed point's movement with the draws included (as the replica ERM's replicates).

    Parameters
    ----------
    config : SLRConfig
        Spiked (any ``nu``) or max (``nu <= MAX_FINITE_NU`` or ``nu = inf``); ``D`` is ignored.
    alpha : float
        Samples per dimension, ``> 0``.
    init : {"random", "informed"}: the uninformed (random) or the informed start
        Start at ``q = 1 - 1e-3`` (near the teacher) or ``q = 1e-3``.
    mc_samples, seed : number and seed of the channel draws (common random numbers).
    damping, tol, max_iter : of the damped iteration.
    replicates : batches of the draws, ``2 <= replicates <= mc_samples / 2``.

    Returns
    -------
    TheoryPoint
        ``test_error`` is the Bayes-optimal error: by quadrature at the fixed point's overlaps for
        spiked and for max with finite ``nu``, by Monte Carlo for max with ``nu = inf``;
        ``stderr`` (and ``diagnostics.test_error_stderr``, ``diagnostics.overlaps_stderr``) the
        batches' spread. ``diagnostics`` also hold the Monte Carlo value and its standard error
        at the point's overlaps (``monte_carlo_error``, ``monte_carlo_stderr``: the draws'
        spread, the fixed point held), the error of the training-set posterior mean of ``f``
        (``posterior_mean_f_error``) and the Nishimori gap with its standard error.
    """
    assert mc_samples >= 2 * replicates >= 4, "the options give each batch two draws or more"
    key_draws, key_inner = jax.random.split(jax.random.PRNGKey(seed))
    draws = draw_channel(key_draws, config, mc_samples)
    start = jnp.full(2, 1.0 - 1e-3 if init == "informed" else 1e-3)
    iteration = (config, alpha, damping, tol, max_iter, key_inner)
    result, errors = _solve(draws, start, *iteration)
    point = _numbers(result.x, errors, functools.partial(bayes_agreement, config))
    solves = [_solve(batch, result.x, *iteration) for batch in _batches(draws, replicates)]
    spread = _batch_spread(config, point, solves)
    finite = all(math.isfinite(point[name]) for name in ("q_k", "q_v", "bayes"))
    converged = bool(result.converged) and all(bool(s[0].converged) for s in solves)
    return TheoryPoint(
        alpha=alpha,
        estimator="bayes",
        test_error=point["bayes"],
        stderr=spread["bayes"],
        overlaps={"q_k": point["q_k"], "q_v": point["q_v"]},
        converged=converged and finite,
        init=init,
        diagnostics=BayesTheoryDiagnostics(
            residual=float(result.residual),
            iterations=int(result.iterations),
            posterior_mean_f_error=point["bayes"] + point["posterior_mean_f_excess"],
            test_error_stderr=spread["bayes"],
            monte_carlo_error=point["monte_carlo"],
            monte_carlo_stderr=point["monte_carlo_stderr"],
            nishimori_gap=point["nishimori_gap"],
            nishimori_gap_stderr=point["nishimori_gap_stderr"],
            mc_samples=mc_samples,
            overlaps_stderr={"q_k": spread["q_k"], "q_v": spread["q_v"]},
            replicates=replicates,
        ),
    )


def _batch_spread(config: SLRConfig, point: dict, solves: list) -> dict[str, float]:
    """The standard errors of the error and the overlaps from the batches' ``solves`` (each
    ``(result, errors)`` of :func:`_solve`) around the pooled ``point`` (:func:`_numbers`)."""
    agreement = _batch_agreement(config, point, [float(result.x[0]) for result, _ in solves])
    numbers = [_numbers(result.x, errors, agreement) for result, errors in solves]
    return {name: _batch_stderr([n[name] for n in numbers]) for name in ("bayes", "q_k", "q_v")}


def _batch_agreement(
    config: SLRConfig, point: dict, batch_q_k: list[float]
) -> Callable[[float], float | None]:
    """:func:`bayes_agreement` at the batches' ``q_k`` from at most two quadratures besides the
    pooled point's, instead of one a batch.

    More than two batches: exact at the point's ``q_k`` and at the batches' least and greatest
    (the middle of those two where the point is one of them), quadratic through those three
    nodes in between, off by at most ``max |A'''| w^3 / 6`` for a spread ``w`` of the batches'
    ``q_k``: third order in the fixed point's movement with the draws, whose first order is the
    standard error itself. Two batches: exact at the point and at the batch farther from it,
    linear to the other (the pooled point lies about halfway between them), off by about ``|A''|
    d^2`` at a distance ``d`` from the point: second order, ``|A'' d / A'|`` of the standard error
    (a spread of one degree of freedom, itself uncertain by more than half). Each batch's own
    quadrature where the point has none or a batch's ``q_k`` is not finite.
    """
    if point["agreement"] is None or not all(map(math.isfinite, batch_q_k)):
        return functools.partial(bayes_agreement, config)
    low, high = min(batch_q_k), max(batch_q_k)
    nodes = {point["q_k"]: point["agreement"]}
    farther = max(low, high, key=lambda q_k: abs(q_k - point["q_k"]))
    ends = (low, high) if len(batch_q_k) > 2 else (farther,)
    for q_k in ends:
        if q_k not in nodes:
            nodes[q_k] = bayes_agreement(config, q_k)
    if len(ends) == 2 and len(nodes) == 2 and low < high:  # the point at an end: the middle too
        nodes[0.5 * (low + high)] = bayes_agreement(config, 0.5 * (low + high))
    interpolant = BarycentricInterpolator(list(nodes), list(nodes.values()))
    return lambda q_k: float(interpolant(q_k))  # a node's own value at a node


def _batch_stderr(values: list[float]) -> float:
    """The standard error of the mean of independent batches (their spread over
    ``sqrt(count)``), an exact 0 where it is float64 rounding (``Delta = 0`` above ``alpha = 1``:
    every batch recovers ``v`` exactly and ``q_k`` in closed form)."""
    stderr = replicate_stderr(values)
    return stderr if stderr > ROUNDING else 0.0


def _batches(draws: ChannelDraws, count: int) -> list[ChannelDraws]:
    """``draws`` cut into ``count`` consecutive batches of equal size (the rest left out)."""
    size = draws.y.shape[0] // count
    return [
        jax.tree_util.tree_map(lambda part, i=i: part[i * size : (i + 1) * size], draws)
        for i in range(count)
    ]


def _numbers(
    q: jax.Array, errors: dict[str, jax.Array], agreement: Callable[[float], float | None]
) -> dict:
    """The overlaps ``q`` and the errors there: ``bayes`` by quadrature where it applies (``1 -
    q_v`` times ``agreement`` at ``q_k``, kept as ``agreement``; the Monte Carlo value kept as
    ``monte_carlo``), else the Monte Carlo value (``agreement`` None)."""
    numbers = {name: float(value) for name, value in errors.items()}
    numbers["q_k"], numbers["q_v"] = (float(x) for x in q)
    numbers["monte_carlo"], numbers["monte_carlo_stderr"] = (
        numbers["bayes"],
        numbers["bayes_stderr"],
    )
    numbers["agreement"] = agreement(numbers["q_k"]) if math.isfinite(numbers["q_v"]) else None
    if numbers["agreement"] is not None:
        numbers["bayes"] = 1.0 - numbers["q_v"] * numbers["agreement"]
    return numbers
