"""Third-party modules imported on first use: the registries and the validation of options import
without JAX, NumPyro or SciPy, so that a bad value is refused before any of them loads.

``jnp = lazy_module("jax.numpy")`` at the top of a module stands for ``import jax.numpy as jnp``:
the real module is imported the first time one of its attributes is read (in practice, the first
time a function of the module runs), and every later read is a plain attribute look-up. Only
third-party modules go through here; ``bayes_slr`` modules are imported with ``import`` statements,
so that the import contract (``lint-imports``) sees the layers.
"""

from __future__ import annotations

import importlib
import sys
import types


class LazyModule(types.ModuleType):
    """Stands for the module called ``name`` and imports it at the first attribute read.

    At every read that misses (the first one, and one for each attribute the real module gains
    later, such as a submodule imported afterwards) the real module's public attributes are copied
    here, so that later reads cost what a read of the real module costs.
    """

    def __getattr__(self, attribute: str) -> object:
        module = importlib.import_module(self.__name__)
        self.__dict__.update(
            (name, value) for name, value in vars(module).items() if not name.startswith("__")
        )
        return getattr(module, attribute)

    def __repr__(self) -> str:
        loaded = "loaded" if self.__name__ in sys.modules else "not imported yet"
        return f"<lazy module {self.__name__!r} ({loaded})>"


def lazy_module(name: str) -> types.ModuleType:
    """The module ``name`` itself if it is imported already, else a :class:`LazyModule` for it."""
    return sys.modules.get(name) or LazyModule(name)
