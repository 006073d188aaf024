"""The population Bayes error with known directions of one task, by quadrature or by Monte Carlo
over the law of ``chi*`` (docs/model.md section 2; several heads: docs/multihead.md)."""

from __future__ import annotations

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.bayes_risk_records import BayesRiskRow


def bayes_risk_row(
    config: SLRConfig, variable_length: bool, method: str, mc_sequences: int, seed: int
) -> BayesRiskRow:
    """The Bayes error of ``config`` by ``method``: ``exact`` (quadrature; ``stderr`` its error
    bound) or ``mc`` (``mc_sequences`` sequences drawn with ``seed``; ``stderr`` the standard
    error). ``variable_length``: the task's length law as given, for the row."""
    if method == "exact":
        from bayes_slr.formulas.bayes import bayes_error_exact

        value, stderr = bayes_error_exact(config)
    else:
        import jax

        from bayes_slr.inference.bayes_risk import bayes_risk_mc

        estimate = bayes_risk_mc(config, mc_sequences, jax.random.PRNGKey(seed))
        value, stderr = estimate.bayes_error.mean, estimate.bayes_error.stderr
    return BayesRiskRow(
        config.variant,
        config.Lbar,
        variable_length,
        config.nu,
        float(value),
        float(stderr),
        method,
        config.heads,
        config.presence,
    )
