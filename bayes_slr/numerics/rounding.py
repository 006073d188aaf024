"""What counts as float64 rounding of zero in a computed result, and how many digits a value with
a standard error has."""

from __future__ import annotations

import math

ROUNDING = 1e-12
"""Below this, a computed value is float64 rounding of zero (no computation here is more accurate):
tables print 0, not e.g. -9.1e-15, and a gap of this size is stored as an exact 0."""


def error_decimals(stderr: float, significant: int = 2) -> int | None:
    """Decimals that show ``stderr`` to ``significant`` significant digits (a value and its
    standard error are printed to the same decimal); ``None`` without a positive finite error."""
    if not (math.isfinite(stderr) and stderr > 0):
        return None
    return max(0, significant - 1 - math.floor(math.log10(stderr)))


def matched_digits(value: float, stderr: float | None) -> tuple[str, str] | None:
    """``value`` and ``stderr`` as text to the decimal of the error's second significant digit
    (``0.61172`` with ``0.00083`` gives ``("0.61172", "0.00083")``, with ``0.0083`` ``("0.6117",
    "0.0083")``); ``None`` where there is no positive finite error or value to match."""
    decimals = None if stderr is None else error_decimals(stderr)
    if decimals is None or not math.isfinite(value):
        return None
    return f"{value:.{decimals}f}", f"{stderr:.{decimals}f}"
