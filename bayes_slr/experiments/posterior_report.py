"""The text reports of posteriors: one posterior's (``posterior``) and a sweep's table
(``posterior-sweep``)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from bayes_slr.experiments.tables import format_table, plus_minus
from bayes_slr.records import json_text
from bayes_slr.studies.posterior_records import (
    TEST_SET_FRESH,
    PosteriorSummary,
    PredictorError,
)

LABELS = {
    "bayes": "Bayes-optimal",
    "plain": "plain mean f",
    "oracle": "oracle",
    "erm_softmax": "ERM softmax",
    "erm_linear": "ERM linear",
    "zero": "zero",
}
"""How the predictors of the paired differences are named in the text report."""
WEIGHTED = "Bayes-optimal (draws weighted by p(X | k))"
PLAIN = "posterior mean of f (plain average of the draws)"
DIAGNOSTIC_COLUMNS = ("mean", "sd", "mcse_mean", "r_hat", "ess_bulk", "ess_tail")


def _pm(error: PredictorError | Any, digits: int = 5) -> str:
    return plus_minus(error.value, error.stderr, digits, " +- ")


def divergences_text(row: PosteriorSummary) -> str:
    """The divergent transitions, or why there are none to count."""
    if row.divergences is None:
        return (
            f"divergences not applicable (the {row.sampler} sampler has no divergent transitions)"
        )
    return f"divergences {row.divergences}"


def diagnostics_lines(row: PosteriorSummary) -> list[str]:
    """The diagnostics table and its worst values."""
    return [
        format_table(
            ["quantity", "mean", "sd", "mcse", "r_hat", "ess_bulk", "ess_tail"],
            [
                [name, *(getattr(d, column) for column in DIAGNOSTIC_COLUMNS)]
                for name, d in row.diagnostics.items()
            ],
        ),
        f"r_hat max {row.rhat_max:.4f}, ESS bulk min {row.ess_bulk_min:.0f}, "
        + divergences_text(row),
    ]


def posterior_report(row: PosteriorSummary, options: Any) -> str:
    """The report of one posterior: the options it ran with (resolved), the data file's settings,
    the diagnostics table (with heads: of the matched overlaps), the errors and references, the
    start check, ERM and the paired differences (notes and warnings are printed after it)."""
    lines = [f"config: {json_text(options.to_dict(), indent=None)}"]
    if row.data is not None:
        lines.append(row.data.source.describe(options.task()))
    if row.heads > 1 or row.presence < 1:
        lines.append(
            f"heads {row.heads}, presence {row.presence:g}; matched overlaps (each draw's heads "
            "matched to the teacher's; label-free):"
        )
    lines += diagnostics_lines(row)
    ess = row.importance_ess
    lines += [
        f"sampler {row.sampler}, alpha {row.alpha:g} (N = {row.N}); errors on {row.n_test} "
        f"{row.test_set}",
        f"Bayes-optimal test error (draws weighted by p(X | k), excess over Delta): "
        f"{_pm(row.bayes_error)} (importance ESS median {ess.median:.0f}, 5% quantile "
        f"{ess.q05:.0f} of {ess.draws} draws)",
        f"{PLAIN} test error: {_pm(row.posterior_mean_f_error)}",
    ]
    if row.oracle_error is not None:
        lines.append(f"known-direction (oracle) error of this teacher: {_pm(row.oracle_error)}")
    held_out = "" if row.test_set == TEST_SET_FRESH else " (zero predictor, held out)"
    lines += [
        f"population Bayes error (alpha -> inf, D -> inf): {row.population_bayes_error:.5f}",
        f"prior-predictive error (alpha -> 0){held_out}: {_pm(row.prior_predictive_error)}",
    ]
    check = row.start_check
    if check is not None:
        lines.append(
            f"{check.init} start: Bayes-optimal error {_pm(check.bayes_error)}; start_agreement "
            f"{check.agreement:+.2f} SE, multimodal: {str(check.multimodal).lower()}"
        )
    students = f" ({row.heads} heads)" if row.heads > 1 else ""
    for activation, erm in (row.erm or {}).items():
        lines.append(
            f"ERM {activation}{students} test error: "
            f"{plus_minus(erm.test_error, erm.stderr, 5, ' +- ')}"
            + ("" if erm.converged else " (not converged)")
        )
    if row.paired_differences:
        lines.append(
            f"paired differences on the same {row.n_test} {row.test_set} (mean of the "
            "per-sequence difference of the errors +- its stderr):"
        )
        for name, difference in row.paired_differences.items():
            a, b = name.split(" - ")
            lines.append(
                f"  {LABELS[a]} - {LABELS[b]}: {difference.value:+.5f} +- {difference.stderr:.5f}"
            )
    return "\n".join(lines)


def sweep_table(rows: Sequence[PosteriorSummary], activations: Sequence[str]) -> str:
    """One line per alpha: both predictors' errors, convergence, overlaps, ERM; ``*`` marks the
    points whose chains did not pass the convergence checks (see the warnings)."""
    header = [
        "alpha",
        "Bayes-optimal",
        "stderr",
        "plain mean f",
        "r_hat max",
        "ESS bulk min",
        "m_k",
        "m_v",
    ]
    with_erm = any(row.erm for row in rows)
    if with_erm:
        header += [f"ERM {a}" for a in activations]
    lines = []
    for row in rows:
        overlaps = row.overlaps or {}
        line = [
            f"{row.alpha:g}" + ("" if row.converged else " *"),
            row.bayes_error.value,
            row.bayes_error.stderr,
            row.posterior_mean_f_error.value,
            row.rhat_max,
            row.ess_bulk_min,
            overlaps.get("m_k", float("nan")),
            overlaps.get("m_v", float("nan")),
        ]
        if with_erm:
            line += [
                plus_minus(row.erm[a].test_error, row.erm[a].stderr) if row.erm else "-"
                for a in activations
            ]
        lines.append(line)
    return format_table(header, lines)
