"""Pure numerical tools with no SLR configuration: quadrature rules, location integrals, device
layout.

Imports nothing of ``bayes_slr`` except :mod:`bayes_slr.errors`; every other layer may use it.
"""
