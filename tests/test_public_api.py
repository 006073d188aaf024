"""The public functions are plain functions of the package, and no public name is also the
name of a subpackage (the import system binds a subpackage as an attribute of its parent, which
would replace a public function of the same name by the module)."""

from __future__ import annotations

import importlib
import inspect
import json
import pkgutil
import subprocess
import sys

import bayes_slr


def test_no_public_name_is_the_name_of_a_subpackage_or_module():
    children = {module.name for module in pkgutil.iter_modules(bayes_slr.__path__)}
    assert children.isdisjoint(bayes_slr.__all__), children & set(bayes_slr.__all__)


def test_every_public_function_is_a_function_with_its_experiments_options():
    for name in ("simulate", "bayes_risk", "gap", "posterior", "posterior_sweep", "theory", "amp"):
        function = getattr(bayes_slr, name)
        assert callable(function) and inspect.isfunction(function), name
    assert "alpha" in inspect.signature(bayes_slr.theory).parameters


def test_every_experiment_module_of_the_package_is_a_public_function():
    """An experiment is one module: a fresh ``import bayes_slr`` offers the function of every
    experiment that any module of ``experiments/`` registers (no list names them)."""
    import bayes_slr.experiments as experiments_package
    from bayes_slr.experiments import EXPERIMENTS

    for module in pkgutil.iter_modules(experiments_package.__path__):
        importlib.import_module(f"bayes_slr.experiments.{module.name}")
    functions = {name.replace("-", "_") for name in EXPERIMENTS.names()}
    fresh = subprocess.run(
        [sys.executable, "-c", "import json, bayes_slr; print(json.dumps(bayes_slr.__all__))"],
        capture_output=True,
        text=True,
        check=True,
    )
    public = set(json.loads(fresh.stdout))
    assert functions <= public, functions - public
    for name in functions:
        function = getattr(bayes_slr, name)
        assert inspect.isfunction(function) and function.__name__ == name
