"""bayes-slr: check Bayes-optimality claims about attention on single-location regression.

Importing the package turns on JAX float64 (``jax_enable_x64``): the exact
integrals and the log-densities need it, and one precision everywhere keeps a
seed's output the same across the CLI, notebooks and tests. It does so without
importing JAX (the registries and the validation of options import without it):
``JAX_ENABLE_X64`` is set in the environment, which JAX reads when it is imported
(and which processes started from this one inherit); if JAX was imported first, its
configuration is updated instead.
"""

import os
import sys

os.environ["JAX_ENABLE_X64"] = "1"
if "jax" in sys.modules:
    sys.modules["jax"].config.update("jax_enable_x64", True)

from bayes_slr.errors import ConfigError  # noqa: E402
from bayes_slr.models.spec import LengthLaw, SLRConfig  # noqa: E402

__version__ = "0.1.0"

__all__ = ["ConfigError", "LengthLaw", "SLRConfig", "__version__"]
