"""Whole measurements, one experiment object per module, registered by name.

Importing this package imports each of its public modules, and an experiment module registers
its experiment on import (:data:`EXPERIMENTS`): adding a measurement is adding its module (its
command, public function and ``docs/defaults.md`` rows follow). Nothing here imports JAX: each
module imports the computing layers only inside ``solve``; a helper that imports them at its top
(``_posterior_point``) has a private name and is imported where it is used.
"""

import importlib
import pkgutil

from bayes_slr.experiments.base import EXPERIMENTS, Experiment, Options, Result
from bayes_slr.experiments.runner import run_experiment


def _import_every_module() -> None:
    """Import the package's public modules in name order (each experiment module registers
    itself)."""
    for module in pkgutil.iter_modules(__path__):
        if not module.name.startswith("_"):
            importlib.import_module(f"{__name__}.{module.name}")


_import_every_module()

__all__ = ["EXPERIMENTS", "Experiment", "Options", "Result", "run_experiment"]
