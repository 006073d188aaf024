"""The public functions stay what ``bayes_slr.NAME`` is, also after a computation imported the
subpackage of the same name (``bayes_slr/theory/``): the import system binds a subpackage as an
attribute of its parent, which made ``bayes_slr.theory`` a module after the first ``gap`` call."""

from __future__ import annotations

import inspect

import bayes_slr
from bayes_slr.theory import replica_erm  # noqa: F401  (imports the subpackage on purpose)


def test_every_public_function_is_callable_after_its_namesake_subpackage_was_imported():
    for name in ("simulate", "bayes_risk", "gap", "posterior", "posterior_sweep", "theory", "amp"):
        function = getattr(bayes_slr, name)
        assert callable(function) and inspect.isfunction(function), name
    assert "alpha" in inspect.signature(bayes_slr.theory).parameters


def test_the_subpackage_is_still_importable_by_name():
    from bayes_slr.theory import population

    assert population.__name__ == "bayes_slr.theory.population"
