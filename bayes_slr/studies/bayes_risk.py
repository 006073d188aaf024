"""The population Bayes error with known directions of one task, by quadrature or by Monte Carlo
over the law of ``chi*`` (docs/model.md section 2; several heads: docs/multihead.md)."""

from __future__ import annotations

from bayes_slr.models.spec import SLRConfig
from bayes_slr.studies.bayes_risk_records import BayesRiskRow, BayesRiskSettings


def bayes_risk_row(config: SLRConfig, settings: BayesRiskSettings, seed: int) -> BayesRiskRow:
    """The Bayes error of ``config`` by ``settings.method``: ``exact`` (quadrature; ``stderr``
    its error bound) or ``mc`` (``settings.mc_sequences`` sequences drawn with ``seed``;
    ``stderr`` the standard error)."""
    if settings.method == "exact":
        from bayes_slr.formulas.bayes import bayes_error_exact

        value, stderr = bayes_error_exact(config)
    else:
        import jax

        from bayes_slr.inference.bayes_risk import bayes_risk_mc

        estimate = bayes_risk_mc(config, settings.mc_sequences, jax.random.PRNGKey(seed))
        value, stderr = estimate.bayes_error.mean, estimate.bayes_error.stderr
    return BayesRiskRow(
        config.variant,
        config.Lbar,
        settings.variable_length,
        config.nu,
        float(value),
        float(stderr),
        settings.method,
        config.heads,
        config.presence,
    )
