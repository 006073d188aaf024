"""Whole measurements, one experiment object per module, registered by name.

Importing this package registers every experiment (:data:`EXPERIMENTS`) without importing JAX:
each module imports the computing layers only inside ``solve``.
"""

from bayes_slr.experiments import (
    amp,
    bayes_risk,
    dynamics,
    gap,
    multihead,
    phase,
    posterior,
    posterior_sweep,
    simulate,
    theory,
)
from bayes_slr.experiments.base import EXPERIMENTS, Experiment, Options, Result
from bayes_slr.experiments.runner import run_experiment

__all__ = [
    "EXPERIMENTS",
    "Experiment",
    "Options",
    "Result",
    "amp",
    "bayes_risk",
    "dynamics",
    "gap",
    "multihead",
    "phase",
    "posterior",
    "posterior_sweep",
    "run_experiment",
    "simulate",
    "theory",
]
