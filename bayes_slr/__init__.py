"""bayes-slr: check Bayes-optimality claims about attention on single-location regression.

Importing the package turns on JAX float64 (``jax_enable_x64``): the exact
integrals and the log-densities need it, and one precision everywhere keeps a
seed's output the same across the CLI, notebooks and tests.
"""

import jax

jax.config.update("jax_enable_x64", True)

from bayes_slr.errors import ConfigError  # noqa: E402
from bayes_slr.models.spec import LengthLaw, SLRConfig  # noqa: E402

__version__ = "0.1.0"

__all__ = ["ConfigError", "LengthLaw", "SLRConfig", "__version__"]
