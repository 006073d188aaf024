"""What counts as float64 rounding of zero in a computed result."""

from __future__ import annotations

ROUNDING = 1e-12
"""Below this, a computed value is float64 rounding of zero (no computation here is more accurate):
tables print 0, not e.g. -9.1e-15, and a gap of this size is stored as an exact 0."""
