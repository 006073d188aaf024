"""Pure numerical tools with no SLR configuration: quadrature rules, location integrals, device
layout.

Imports nothing of ``bayes_slr`` except :mod:`bayes_slr.errors`; every other layer may use it.
"""

MAX_FINITE_NU = 100.0
"""Largest finite inverse temperature of the location integrals (:mod:`.location_integrals`):
their cost grows like ``nu`` (the Gaussian rule has ``~72 nu`` nodes), while ``nu = inf`` differs
by ``O(1/nu^2)``. Defined here, where it imports without JAX, so that options are refused before
JAX is imported."""
