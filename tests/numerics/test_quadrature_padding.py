"""The zero-weight padding of quadrature rules (bayes_slr.numerics.integrals.evaluate_levels)
changes no value beyond float64 rounding: every integral of docs/model.md section 4, on both
resolutions, with and without it."""

from __future__ import annotations

import numpy as np
import pytest

from bayes_slr.formulas import bayes, elementwise, normalised
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.numerics import integrals

PROBS, LENGTHS = np.array([0.25, 0.75]), np.array([2.0, 5.0])

CASES = {
    "independent": lambda: normalised.independent_terms("softmax", 1.3, 0.8, PROBS, LENGTHS),
    "tilted": lambda: normalised.tilted_first("softmax", 2.0, 0.9, 0.4, PROBS, LENGTHS),
    "tilted, point rule": lambda: normalised.tilted_first(
        "softplus", 2.0, 3.0, 0.0, PROBS, LENGTHS
    ),
    "argmax": lambda: normalised.argmax_first("softmax", 0.7, 0.5, PROBS, LENGTHS),
    "argmax, shifted": lambda: normalised.argmax_first("softmax", 2.0, 0.0, PROBS, LENGTHS),
    "second moment": lambda: elementwise.second_moment("linear", 0.3, 1.7, 0.2),
    "elementwise tilted": lambda: elementwise.tilted_first(
        "erf", 2.0, 0.9, 0.4, 0.1, PROBS, LENGTHS
    ),
    "multihead": lambda: np.array(
        [bayes.presence_bayes_error_exact(SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)).value]
    ),
}


@pytest.mark.parametrize("case", sorted(CASES))
def test_padding_changes_values_by_rounding_only(case, monkeypatch):
    """Padded sums gain only exact zeros, so they may differ only in summation order: relative
    1e-13 (float64 rounding over up to ~1e5 terms), far below the rules' own error bound floor
    (1e-12). The check can fail: a padded node with a nonzero weight, or a node where the
    integrand is not finite (0 * inf), changes the value at the first digits."""
    padded = np.asarray(CASES[case]())
    monkeypatch.setattr(integrals, "_bucket", lambda count: count)
    plain = np.asarray(CASES[case]())
    assert padded.shape == plain.shape
    np.testing.assert_allclose(padded, plain, rtol=1e-13, atol=1e-15)


def test_padding_sizes_skip_every_other_rung():
    """Fine rules of 2^e + 1 nodes go to the next odd e; their coarse rules follow."""
    rule = integrals.gaussian_rule(2.0)
    count = rule.nodes.shape[0]
    fine, rough = integrals._pad_pair(rule, integrals.coarse(rule))
    size = fine.nodes.shape[0]
    assert size >= count and (size - 1).bit_count() == 1 and (size - 1).bit_length() % 2 == 0
    assert rough.nodes.shape[0] == (size - 1) // 2 + 1
    assert float(fine.weights[count:].sum()) == 0.0 and float(rough.weights.sum()) == pytest.approx(
        float(integrals.coarse(rule).weights.sum())
    )
