"""``validate()`` checks and changes nothing: options keep the values as given, and the defaults
that depend on another option or a file (the variant's ``nu``, a method's clock, the sampling
defaults) are filled in only by ``resolved()``, whose record resolves to itself."""

from __future__ import annotations

import pytest

from bayes_slr.experiments.base import EXPERIMENTS

REQUIRED = {"posterior-sweep": {"alpha": (2.0, 4.0)}}
"""The options an experiment cannot run without."""


@pytest.mark.parametrize("name", EXPERIMENTS.names())
def test_options_keep_their_defaults_until_resolved(name):
    options_type = EXPERIMENTS.get(name).options_type
    required = REQUIRED.get(name, {})
    options = options_type(**required)
    for field in options_type.option_fields():
        if field.name not in required:
            assert getattr(options, field.name) == field.default, field.name
    resolved = options.resolved()
    assert resolved.resolved() == resolved
