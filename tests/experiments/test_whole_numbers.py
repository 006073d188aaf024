"""Numbers as users type them: a whole-number float (``1e3``, ``10.0``) of an integer option is
that integer, in Python and on the command line alike; a float that is not whole is refused with
one line."""

from __future__ import annotations

import argparse
import dataclasses

import pytest

import bayes_slr
from bayes_slr.cli.flags import integer
from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.base import EXPERIMENTS, _is_int_type

REQUIRED = {"posterior-sweep": {"alpha": (2.0, 4.0)}}


def integer_defaults(name: str) -> dict[str, object]:
    """The integer options of an experiment with an integer (or tuple of integers) default."""
    options_type = EXPERIMENTS.get(name).options_type
    types_ = options_type.field_types()
    return {
        field.name: field.default
        for field in options_type.option_fields()
        if _is_int_type(types_[field.name])
        and field.default is not None
        and not isinstance(field.default, bool)
    }


@pytest.mark.parametrize("name", EXPERIMENTS.names())
def test_every_integer_option_takes_its_value_as_a_whole_float(name):
    options_type = EXPERIMENTS.get(name).options_type
    defaults = integer_defaults(name)
    assert defaults or name in ("posterior-sweep",), name
    as_floats = {
        key: tuple(float(v) for v in value) if isinstance(value, tuple) else float(value)
        for key, value in defaults.items()
    }
    options = options_type(**REQUIRED.get(name, {}), **as_floats)
    for key, value in defaults.items():
        given = getattr(options, key)
        assert given == value and type(given) is type(value), key
        if isinstance(value, tuple):
            assert all(type(item) is int for item in given), key
    assert options == options_type(**REQUIRED.get(name, {}))  # the same run, the same log key


def test_simulate_of_the_issue_runs():
    result = bayes_slr.simulate(N=1e3, D=5, progress=False)
    assert result.options.N == 1000 and result.arrays["X"].shape == (1000, 3, 5)


def test_a_float_that_is_not_whole_is_refused_in_one_line(capsys):
    with pytest.raises(ConfigError, match="seeds must be an integer >= 1, got 1.5"):
        bayes_slr.gap(seeds=1.5, alpha=1, D=5)
    assert main(["simulate", "--N", "1.5", "--quiet"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


@pytest.mark.parametrize(("text", "value"), [("1000", 1000), ("1e3", 1000), ("10.0", 10)])
def test_the_command_line_reads_whole_numbers(text, value):
    assert integer(text) == value


@pytest.mark.parametrize("text", ["1.5", "1e-3", "inf", "nan", "ten"])
def test_the_command_line_refuses_other_words(text):
    with pytest.raises(argparse.ArgumentTypeError, match="expected an integer"):
        integer(text)


def test_resolved_options_keep_integers():
    options = EXPERIMENTS.get("gap").options_type(seeds=2.0, alpha=1, D=8.0, L=(3.0,))
    assert dataclasses.asdict(options.resolved())["D"] == 8
