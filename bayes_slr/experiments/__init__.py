"""Whole measurements, one experiment object per module, registered by name.

Importing this package registers every experiment (:data:`EXPERIMENTS`) without importing JAX:
each module imports the computing layers only inside ``solve``.
"""

from bayes_slr.experiments import bayes_risk, posterior, posterior_sweep
from bayes_slr.experiments.base import EXPERIMENTS, Experiment, Options, Result
from bayes_slr.experiments.runner import run_experiment

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "Options",
    "Result",
    "bayes_risk",
    "posterior",
    "posterior_sweep",
    "run_experiment",
]
