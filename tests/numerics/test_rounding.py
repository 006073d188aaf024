"""A value with a standard error is printed to the decimal of the error's second significant
digit, and a value without one is left to the table."""

from __future__ import annotations

import math

import pytest

from bayes_slr.numerics.rounding import error_decimals, matched_digits


@pytest.mark.parametrize(
    "value, stderr, expected",
    [
        (0.611723, 0.00083, ("0.61172", "0.00083")),
        (0.611723, 0.0083, ("0.6117", "0.0083")),
        (12.3456, 1.5, ("12.3", "1.5")),
        (1234.5, 15.0, ("1234", "15")),
    ],
)
def test_the_value_stops_at_the_errors_second_digit(value, stderr, expected):
    assert matched_digits(value, stderr) == expected


@pytest.mark.parametrize("stderr", [None, 0.0, math.nan, math.inf, -1.0])
def test_no_positive_finite_error_leaves_the_value_alone(stderr):
    assert matched_digits(0.5, stderr) is None
    if stderr is not None:
        assert error_decimals(stderr) is None
