"""``python -m bayes_slr.cli``: the ``bayes-slr`` command."""

from bayes_slr.cli.entry import run

run()
