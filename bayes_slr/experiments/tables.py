"""Plain-text tables of results."""

from __future__ import annotations

import math
from typing import Any

from bayes_slr.numerics.rounding import ROUNDING

NO_VALUE = "-"
"""How a table prints a float that holds no value (``nan``: e.g. the standard error of one draw)."""


def cell(value: Any) -> str:
    """One table cell: floats with 6 significant digits, ``inf`` as ``inf``, ``nan`` (no value)
    as ``-``, rounding noise around zero as ``0``."""
    if isinstance(value, float):
        if math.isnan(value):
            return NO_VALUE
        if math.isinf(value):
            return "inf"
        return "0" if abs(value) < ROUNDING else f"{value:.6g}"
    return str(value)


def plus_minus(value: float, stderr: float, digits: int = 4, sep: str = "+-") -> str:
    """``value+-stderr`` with ``digits`` decimals, as a table cell (``sep`` ``" +- "`` in the
    lines of a report)."""
    return f"{value:.{digits}f}{sep}{stderr:.{digits}f}"


def format_table(header: list[str], rows: list[list[Any]]) -> str:
    """An aligned plain-text table under a header line and a rule."""
    cells = [header] + [[cell(v) for v in row] for row in rows]
    widths = [max(len(r[i]) for r in cells) for i in range(len(header))]
    lines = ["  ".join(c.rjust(w) for c, w in zip(r, widths)) for r in cells]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
