"""bayes-slr: check Bayes-optimality claims about attention on single-location regression.

The public API is one function per measurement, with the command line's names and defaults,
each returning a typed result (``.rows``, ``.to_pandas()``, ``.plot()``, ``.table()``,
``.to_json()``)::

    import bayes_slr
    result = bayes_slr.gap(L=(3, 5, 10))
    result.to_pandas()

Importing the package turns on JAX float64 and the persistent compilation cache (see
:mod:`bayes_slr.jax_setup`) without importing JAX: JAX is imported when a computation starts.
"""

from bayes_slr.jax_setup import configure_jax

configure_jax()

from bayes_slr.api import bayes_risk, posterior, posterior_sweep  # noqa: E402
from bayes_slr.errors import ConfigError  # noqa: E402
from bayes_slr.models.spec import LengthLaw, SLRConfig  # noqa: E402

__version__ = "0.1.0"

__all__ = [
    "ConfigError",
    "LengthLaw",
    "SLRConfig",
    "__version__",
    "bayes_risk",
    "posterior",
    "posterior_sweep",
]
