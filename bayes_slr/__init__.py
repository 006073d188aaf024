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
from bayes_slr.warning_categories import filter_from_environment

configure_jax()
filter_from_environment()  # BAYES_SLR_WARNINGS=error: a script fails on a result's warning

__version__ = "0.1.0"

_EXPORTS = {
    "ConfigError": "bayes_slr.errors",
    "BayesSLRWarning": "bayes_slr.warning_categories",
    "ConvergenceWarning": "bayes_slr.warning_categories",
    "RSInstabilityWarning": "bayes_slr.warning_categories",
    "HardPhaseWarning": "bayes_slr.warning_categories",
    "AccuracyWarning": "bayes_slr.warning_categories",
    "LengthLaw": "bayes_slr.models.spec",
    "SLRConfig": "bayes_slr.models.spec",
}
"""Public name -> the module defining it (imported on first use), besides the experiments'
functions: every registered experiment's comes from :mod:`bayes_slr.api`."""


def _experiment_functions() -> tuple[str, ...]:
    """The public functions' names, one per registered experiment (imports no JAX)."""
    from bayes_slr.api import PUBLIC_FUNCTIONS

    return tuple(PUBLIC_FUNCTIONS)


def _public_names() -> list[str]:
    """Every public name: the version, the experiments' functions and :data:`_EXPORTS`."""
    return ["__version__", *_experiment_functions(), *_EXPORTS]


def __getattr__(name: str) -> Any:
    import importlib

    if name == "__all__":
        value: Any = _public_names()
    elif name in _EXPORTS:
        value = getattr(importlib.import_module(_EXPORTS[name]), name)
    elif not name.startswith("_") and name in _experiment_functions():
        value = getattr(importlib.import_module("bayes_slr.api"), name)
    else:
        raise AttributeError(f"module 'bayes_slr' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list[str]:
    """The public names only (what ``dir(bayes_slr)`` and tab completion show)."""
    return sorted(_public_names())
