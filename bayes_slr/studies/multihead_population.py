"""The population answers of multi-head SLR for one task (docs/multihead.md sections 3 to 6):
the Bayes error with known directions and each activation's population optimum of ``H``
student heads aligned one to one with the teacher's, each by quadrature and checked by Monte
Carlo with its standard error.

An aligned optimum is an optimum over all overlaps when there is one head (nothing else to
align with) or when it equals the Bayes error (which no estimator beats); otherwise it is an
upper bound: heads that mix teacher heads may do better (docs/multihead.md section 6), and the
optimum over all overlaps is searched beside it
(:func:`~bayes_slr.formulas.all_overlaps.all_overlaps_optimum`).
"""

from __future__ import annotations

from bayes_slr.formulas.optimum_record import AllOverlapsOptimum, PopulationOptimum
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.multihead_population_records import (
    ALL_OVERLAPS,
    UPPER_BOUND,
    ActivationOptimum,
    MonteCarloCheck,
    MultiHeadPopulationRow,
    PopulationSettings,
)

BAYES_MATCH = 1e-6
"""An aligned optimum within this of the Bayes error is the Bayes error (their quadratures agree
to about ``1e-9``), hence the optimum over all overlaps."""


def optimum_scope(
    config: SLRConfig, error: float, bayes_error: float, student_heads: int | None = None
) -> str:
    """:data:`ALL_OVERLAPS` for one student head on one teacher head or an optimum at the Bayes
    error, else :data:`UPPER_BOUND` (``student_heads``: the student's ``H_s``, by default the
    teacher's ``H``)."""
    if config.heads == (student_heads or config.heads) == 1 or error - bayes_error <= BAYES_MATCH:
        return ALL_OVERLAPS
    return UPPER_BOUND


def _bayes_mc(config: SLRConfig, sequences: int, seed: int) -> MonteCarloCheck:
    """The Bayes error with known directions by Monte Carlo over the heads' scores."""
    import jax

    from bayes_slr.inference.bayes_risk import bayes_risk_mc

    estimate = bayes_risk_mc(config, sequences, jax.random.PRNGKey(seed)).bayes_error
    return MonteCarloCheck(float(estimate.mean), float(estimate.stderr), int(estimate.count))


def _optimum_mc(
    activation: str, config: SLRConfig, optimum: PopulationOptimum, sequences: int, seed: int
) -> MonteCarloCheck:
    """The error of ``H`` aligned heads at the optimum's overlaps by Monte Carlo."""
    from bayes_slr.formulas.population_mc import population_error_mc

    o = optimum.overlaps
    estimate = population_error_mc(
        activation, config, o.m_k, o.q_k, o.m_v, o.q_v, o.c, samples=sequences, seed=seed
    )
    return MonteCarloCheck(float(estimate.mean), float(estimate.stderr), int(estimate.count))


def _all_overlaps(
    activation: str, config: SLRConfig, settings: PopulationSettings, seed: int
) -> AllOverlapsOptimum:
    """The optimum of ``H`` student heads over all overlaps, by search and paired check."""
    from bayes_slr.formulas.all_overlaps import all_overlaps_optimum

    return all_overlaps_optimum(
        activation,
        config,
        config.heads,
        settings.search_sequences,
        settings.check_sequences,
        seed,
    )


def population_row(
    config: SLRConfig, settings: PopulationSettings, seed: int
) -> MultiHeadPopulationRow:
    """The Bayes error and each activation's aligned optimum of ``config``, with their Monte
    Carlo checks.

    Parameters
    ----------
    config : the task (``heads``, ``presence``, variant, length law, ``nu``); ``D`` and
        ``Delta`` are ignored.
    settings : the activations, the size of each Monte Carlo check (0: none) and of the search
        over all overlaps where an aligned optimum is an upper bound (0: none).
    seed : seed of every Monte Carlo check (the same sequences for every activation).

    Returns
    -------
    MultiHeadPopulationRow
        The Bayes error (quadrature, its bound, Monte Carlo) and per activation its optimum,
        overlaps, scope, Monte Carlo check and optimum over all overlaps.
    """
    from bayes_slr.formulas.bayes import bayes_error_exact
    from bayes_slr.formulas.optimum import optimal_population_error

    bayes = bayes_error_exact(config)
    checks = settings.mc_sequences > 0
    optima = []
    for activation in settings.activations:
        optimum = optimal_population_error(activation, config)
        scope = optimum_scope(config, optimum.error, bayes.value)
        optima.append(
            ActivationOptimum(
                activation,
                float(optimum.error),
                optimum.overlaps,
                scope,
                _optimum_mc(activation, config, optimum, settings.mc_sequences, seed)
                if checks
                else None,
                _all_overlaps(activation, config, settings, seed)
                if scope == UPPER_BOUND and settings.search_sequences > 0
                else None,
            )
        )
    return MultiHeadPopulationRow(
        config.variant,
        config.Lbar,
        not config.length.is_fixed,
        config.nu,
        config.heads,
        config.presence,
        float(bayes.value),
        float(bayes.error_bound),
        _bayes_mc(config, settings.mc_sequences, seed) if checks else None,
        tuple(optima),
    )
