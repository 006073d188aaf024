"""The ``bayes-slr`` command line."""
