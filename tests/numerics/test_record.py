"""The record base (``numerics/record.py``): a record goes to JSON and back, reads the non-finite
numbers of the JSON outputs and of older logs, and a dict that does not fit is refused naming
why."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.numerics.record import Record
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
