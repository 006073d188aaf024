"""Validation of the task specification: every bad value gets one clear ConfigError."""

import math

import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig


def make(**changes):
    fields = dict(variant="spiked", D=8, length=LengthLaw.fixed(3), nu=1.0, Delta=0.1)
    fields.update(changes)
    return SLRConfig(**fields)


@pytest.mark.parametrize(
    "changes, fragment",
    [
        (dict(nu=-0.5), "nu must be a number >= 0"),
        (dict(nu=float("nan")), "nu must be"),
        (dict(nu=math.inf), "nu must be a finite number >= 0 for the spiked variant"),
        (dict(D=0), "D must be an integer >= 1"),
        (dict(D=2.5), "D must be an integer >= 1"),
        (dict(Delta=-1.0), "Delta must be a number >= 0"),
        (dict(variant="gauss"), "variant must be one of spiked, max"),
        (dict(nu="2"), "nu must be"),
    ],
)
def test_invalid_config_names_parameter_and_range(changes, fragment):
    with pytest.raises(ConfigError, match=fragment):
        make(**changes)


@pytest.mark.parametrize(
    "build, fragment",
    [
        (lambda: LengthLaw.fixed(0), "L must be an integer >= 1"),
        (lambda: LengthLaw.uniform(-2), "Lbar must be an integer >= 1"),
        (lambda: LengthLaw((0.5, 0.6)), "sum to 1"),
        (lambda: LengthLaw((0.5, -0.5, 1.0)), ">= 0"),
        (lambda: LengthLaw((1.0, 0.0)), "last entry"),
        (lambda: LengthLaw(()), "non-empty"),
    ],
)
def test_invalid_length_law(build, fragment):
    with pytest.raises(ConfigError, match=fragment):
        build()


def test_max_variant_accepts_infinite_signal_and_c_nu():
    config = make(variant="max", nu=math.inf)
    assert math.isinf(config.c_nu)
    assert make(nu=4.0).c_nu == pytest.approx(2.0)
    assert make(variant="max", nu=4.0).c_nu == pytest.approx(4.0)


def test_length_laws():
    uniform = LengthLaw.uniform(4)
    assert uniform.mean() == pytest.approx(2.5)
    assert not uniform.is_fixed and LengthLaw.fixed(4).is_fixed
    assert LengthLaw.fixed(4).support() == ((4, 1.0),)
    assert [L for L, _ in uniform.support()] == [1, 2, 3, 4]


def test_config_round_trips_through_dict():
    for config in (make(length=LengthLaw.uniform(5)), make(variant="max", nu=math.inf)):
        assert SLRConfig.from_dict(config.to_dict()) == config


def test_from_dict_rejects_incomplete_record():
    with pytest.raises(ConfigError, match="incomplete"):
        SLRConfig.from_dict({"variant": "spiked"})
