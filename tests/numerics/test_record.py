"""The record base (``numerics/record.py``): a record goes to JSON and back, reads the non-finite
numbers of the JSON outputs and of older logs, and a dict that does not fit is refused naming
why."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.numerics.record import Record, register_tagged_union
from bayes_slr.records import json_text


@dataclasses.dataclass(frozen=True)
class Part(Record):
    value: float
    bound: float | None = None


@dataclasses.dataclass(frozen=True)
class Whole(Record):
    name: str
    parts: tuple[Part, ...]
    rate: float = 1.0

    def __post_init__(self) -> None:
        check_real("rate", self.rate, minimum=0.0, strict=True)


def test_a_record_with_non_finite_numbers_survives_the_json_output():
    whole = Whole("w", (Part(math.inf, 0.5), Part(-math.inf)), rate=2.0)
    again = Whole.from_dict(json.loads(json_text(whole.to_dict())))
    assert again == whole
    with_nan = Whole.from_dict(json.loads(json_text(Whole("n", (Part(math.nan),)).to_dict())))
    assert math.isnan(with_nan.parts[0].value)


def test_older_strings_for_non_finite_numbers_are_read():
    data = {"name": "w", "parts": [{"value": "inf"}, {"value": "-inf"}, {"value": "nan"}]}
    values = [part.value for part in Whole.from_dict(data).parts]
    assert values[:2] == [math.inf, -math.inf] and math.isnan(values[2])


@pytest.mark.parametrize(
    "data, reason",
    [
        ({"name": "w", "parts": [], "rate": -1.0}, "rate must be"),
        ({"parts": []}, r"required field missing @ \$\.name"),
        ({"name": "w", "parts": [{"value": "x"}]}, r"\$\.parts\[0\]\.value"),
    ],
)
def test_a_dict_that_does_not_fit_is_refused_naming_why(data, reason):
    with pytest.raises(ConfigError, match=f"a Whole record does not fit.*{reason}"):
        Whole.from_dict(data)


@dataclasses.dataclass(frozen=True)
class Exact(Record):
    value: float
    bound: float


@dataclasses.dataclass(frozen=True)
class Sampled(Record):
    value: float
    bound: float


@dataclasses.dataclass(frozen=True)
class Searched(Record):
    value: float
    note: str


@dataclasses.dataclass(frozen=True)
class Measured(Record):
    result: Exact | Sampled | Searched


register_tagged_union(
    Exact | Sampled | Searched, {"exact": Exact, "sampled": Sampled, "searched": Searched}
)


def test_a_tagged_union_is_read_by_its_tag_even_where_the_fields_are_the_same():
    """``Exact`` and ``Sampled`` have the same fields: only the tag tells them apart."""
    for result in (Exact(0.5, 1e-9), Sampled(0.5, 0.01), Searched(0.5, "boundary")):
        data = json.loads(json_text(Measured(result).to_dict()))
        assert data["result"]["kind"] == type(result).__name__.lower()
        assert Measured.from_dict(data) == Measured(result)
    with pytest.raises(ConfigError, match="unknown kind 'quadrature'"):
        Measured.from_dict({"result": {"kind": "quadrature", "value": 0.5, "bound": 0.1}})
    with pytest.raises(ConfigError, match="note"):
        Measured.from_dict({"result": {"kind": "searched", "value": 0.5, "bound": 0.1}})


def test_an_untagged_member_written_before_is_the_record_with_exactly_its_fields():
    assert Measured.from_dict({"result": {"value": 0.5, "note": ""}}) == Measured(Searched(0.5, ""))
    with pytest.raises(ConfigError, match="no one record has exactly the fields"):
        Measured.from_dict({"result": {"value": 0.5}})
    with pytest.raises(ConfigError, match="no one record"):  # Exact or Sampled: not guessed
        Measured.from_dict({"result": {"value": 0.5, "bound": 0.1}})


def test_the_kinds_must_be_the_members_of_the_union():
    with pytest.raises(TypeError, match="are not the members"):
        register_tagged_union(Exact | Sampled, {"exact": Exact})
