"""The public functions are plain functions of the package, and no public name is also the
name of a subpackage (the import system binds a subpackage as an attribute of its parent, which
would replace a public function of the same name by the module)."""

from __future__ import annotations

import inspect
import pkgutil

import bayes_slr


def test_no_public_name_is_the_name_of_a_subpackage_or_module():
    children = {module.name for module in pkgutil.iter_modules(bayes_slr.__path__)}
    assert children.isdisjoint(bayes_slr.__all__), children & set(bayes_slr.__all__)


def test_every_public_function_is_a_function_with_its_experiments_options():
    for name in ("simulate", "bayes_risk", "gap", "posterior", "posterior_sweep", "theory", "amp"):
        function = getattr(bayes_slr, name)
        assert callable(function) and inspect.isfunction(function), name
    assert "alpha" in inspect.signature(bayes_slr.theory).parameters
