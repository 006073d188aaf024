"""Posterior over the location and the directions; the Bayes estimator and its risk."""
