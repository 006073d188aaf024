"""Computations under the experiments: each a function of a task config, a settings record and a
seed that returns typed records (never an experiment's ``Options``).

An experiment builds the settings from its options and calls a study in its ``solve``; a study may
import JAX. It imports the theory (:mod:`bayes_slr.formulas`) and the layers below, never an
experiment.
"""
