"""The points of ``gap`` on multi-head SLR (docs/multihead.md sections 2 to 7): the Bayes error
with known directions, an activation's population optimum of ``H_s`` student heads aligned one
to one with the teacher's, and ERM with ``H_s`` heads; :func:`heads_point` is the one function
``gap`` calls for every kind of point of a multi-head task.

Whether an optimum of aligned heads is over all overlaps or an upper bound is read against the
Bayes error (:func:`~bayes_slr.studies.multihead_population.optimum_scope`) when the row is
assembled. The computing layers are imported inside the functions, so the module imports
without JAX.
"""

from __future__ import annotations

from bayes_slr.formulas.optimum_record import PopulationOptimum
from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.gap_records import BayesValue
from bayes_slr.studies.multihead_erm_records import MultiHeadERM
from bayes_slr.studies.multihead_gap_records import HeadsERMSettings, HeadsSolved


def heads_point(
    config: SLRConfig,
    kind: str,
    activation: str | None,
    settings: HeadsERMSettings,
    seed: int,
    alpha: float | None,
) -> HeadsSolved:
    """One point of ``gap`` on the multi-head task ``config``.

    Parameters
    ----------
    config : the task (``heads``, ``presence``, variant, length law, ``nu``; ``D`` and
        ``Delta`` are those of ERM).
    kind : ``"bayes"``, ``"population"`` or ``"erm"``.
    activation : the activation of a population or ERM point.
    settings : the student's heads and how ERM runs.
    seed : the root seed of ERM (seeds ``seed .. seed + seeds - 1``).
    alpha : the sample ratio of ERM.

    Returns
    -------
    HeadsSolved
        The Bayes error, the optimum of ``H_s`` aligned heads, or ERM with ``H_s`` heads.
    """
    if kind == "bayes":
        return HeadsSolved(bayes=bayes_value(config))
    if kind == "population":
        return HeadsSolved(population=aligned_optimum(config, activation, settings.student_heads))
    return HeadsSolved(erm=heads_erm(config, activation, settings, seed, alpha))


def bayes_value(config: SLRConfig) -> BayesValue:
    """The population Bayes error with known directions and its quadrature bound."""
    from bayes_slr.formulas.multihead import multihead_bayes_error_exact

    exact = multihead_bayes_error_exact(config)
    return BayesValue(float(exact.value), float(exact.error_bound))


def aligned_optimum(config: SLRConfig, activation: str, student_heads: int) -> PopulationOptimum:
    """The population optimum of ``student_heads`` heads aligned one to one with the teacher's
    (extra heads silenced; each head at the overlaps of the optimum of ``H`` aligned heads)."""
    from bayes_slr.formulas.optimum import optimal_population_error
    from bayes_slr.formulas.student_heads import heads_at_optimum

    optimum = optimal_population_error(activation, config)
    if student_heads == config.heads:
        return optimum
    heads = heads_at_optimum(optimum, config, student_heads)
    return PopulationOptimum(heads.error, optimum.overlaps)


def heads_erm(
    config: SLRConfig,
    activation: str,
    settings: HeadsERMSettings,
    seed: int,
    alpha: float,
) -> MultiHeadERM:
    """ERM with ``H_s`` heads on ``settings.seeds`` exact teachers at ``alpha``."""
    from bayes_slr.studies.multihead_erm import multihead_erm

    return multihead_erm(
        config,
        activation,
        settings.student_heads,
        alpha,
        seeds=settings.seeds,
        seed=seed,
        starts=settings.starts,
        lam=settings.lam,
        N_test=settings.N_test,
    )
