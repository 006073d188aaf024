"""bayes-slr: check Bayes-optimality claims about attention on single-location regression.

The public API is one function per measurement, with the command line's names and defaults,
each returning a typed result (``.rows``, ``.to_pandas()``, ``.plot()``, ``.table()``,
``.to_json()``)::

    import bayes_slr
    result = bayes_slr.bayes_risk(L=(3, 5, 10))
    result.to_pandas()

Importing the package turns on JAX float64 and the persistent compilation cache (see
:mod:`bayes_slr.jax_setup`) without importing JAX, and loads the rest on first use: JAX is
imported when a computation starts.
"""

from typing import Any

from bayes_slr.jax_setup import configure_jax

configure_jax()

__version__ = "0.1.0"

_EXPORTS = {
    "simulate": "bayes_slr.api",
    "bayes_risk": "bayes_slr.api",
    "gap": "bayes_slr.api",
    "theory": "bayes_slr.api",
    "amp": "bayes_slr.api",
    "posterior": "bayes_slr.api",
    "posterior_sweep": "bayes_slr.api",
    "phase": "bayes_slr.api",
    "dynamics": "bayes_slr.api",
    "multihead": "bayes_slr.api",
    "ConfigError": "bayes_slr.errors",
    "BayesSLRWarning": "bayes_slr.warning_categories",
    "ConvergenceWarning": "bayes_slr.warning_categories",
    "RSInstabilityWarning": "bayes_slr.warning_categories",
    "HardPhaseWarning": "bayes_slr.warning_categories",
    "AccuracyWarning": "bayes_slr.warning_categories",
    "LengthLaw": "bayes_slr.models.spec",
    "SLRConfig": "bayes_slr.models.spec",
}
"""Public name -> the module defining it (imported on first use)."""

__all__ = ["__version__", *_EXPORTS]


def __getattr__(name: str) -> Any:
    if name not in _EXPORTS:
        raise AttributeError(f"module 'bayes_slr' has no attribute {name!r}")
    import importlib

    value = getattr(importlib.import_module(_EXPORTS[name]), name)
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (what ``dir(bayes_slr)`` and tab completion show)."""
    return sorted(__all__)
