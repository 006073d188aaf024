"""A claims file is read into checked claims, and a bad claim is refused before any work with
one line naming the claim and the field."""

from __future__ import annotations

from pathlib import Path

import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.studies.claims_file import default_claims_path, read_claims

GOOD = """
level = 0.01

[[claim]]
name = "linear above Bayes"
left = "population linear"
relation = "above"
right = "bayes"
L = [3, 10]

[[claim]]
name = "ERM softmax below a number"
left = "erm softmax"
relation = "below"
right = 0.9
alpha = 4
D = 10
"""


def _file(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "claims.toml"
    path.write_text(text)
    return path


def test_a_list_makes_one_claim_per_value(tmp_path) -> None:
    family = read_claims(_file(tmp_path, GOOD))
    assert family.level == 0.01
    assert [c.name for c in family.claims] == [
        "linear above Bayes (L=3)",
        "linear above Bayes (L=10)",
        "ERM softmax below a number",
    ]
    assert [c.task.L for c in family.claims[:2]] == [3, 10]
    assert family.claims[2].right.value == 0.9 and family.claims[2].per_teacher == "erm"


def test_the_shipped_file_reads() -> None:
    """The default of ``check``: every claim passes the checks."""
    family = read_claims(default_claims_path())
    assert len(family.claims) >= 10


CLAIM = 'name = "c"\nleft = "population linear"\nrelation = "above"\nright = "bayes"\n'


@pytest.mark.parametrize(
    ("text", "named"),
    [
        (
            CLAIM.replace("population linear", "posterior_mean"),
            "unknown estimator 'posterior_mean'",
        ),
        (CLAIM.replace('relation = "above"\n', ""), "field 'relation' is missing"),
        (CLAIM.replace('"above"', '"beyond"'), "field 'relation' must be one of"),
        (CLAIM.replace('"above"', '"equal"'), "field 'tolerance' is missing"),
        (CLAIM + "tolerance = 0.1\n", "only read with relation 'equal'"),
        (CLAIM.replace("population linear", "population"), "takes one activation"),
        (CLAIM.replace("population linear", "population relu6"), "activation"),
        (CLAIM + "colour = 3\n", "unknown field(s) colour"),
        (CLAIM + "L = 0\n", "L"),
        (CLAIM + "nu = -1\n", "nu"),
        (CLAIM + "alpha = 4\n", "no side is measured at finite data"),
        (CLAIM.replace('"bayes"', '"erm linear"'), "field 'alpha' is missing"),
        (CLAIM.replace('"bayes"', '"oracle"') + "alpha = 4\n", "must be 'erm ACTIVATION'"),
        (
            CLAIM.replace("population linear", "replica linear") + "alpha = 4\n",
            "needs a numeric 'lam'",
        ),
        (
            CLAIM.replace("population linear", "erm linear") + "alpha = 4\nheads = 2\n",
            "no route computes erm on a multi-head task",
        ),
        (
            CLAIM.replace("population linear", "erm linear").replace('"bayes"', '"posterior"')
            + "alpha = 4\n",
            "no route compares sides measured on different teachers (erm and posterior)",
        ),
        (
            CLAIM.replace('"bayes"', '"posterior"') + 'alpha = 4\nvariant = "max"\n',
            "needs a finite nu",
        ),
        (CLAIM + "teachers = 8\nmax_teachers = 4\n", "max_teachers (4) must be >= teachers"),
    ],
)
def test_a_bad_claim_is_refused_naming_it_and_the_field(tmp_path, text, named) -> None:
    path = _file(tmp_path, "[[claim]]\n" + text)
    with pytest.raises(ConfigError) as raised:
        read_claims(path)
    message = str(raised.value)
    assert "claim 1 ('c')" in message
    assert named in message
    assert "\n" not in message


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("level = 2\n[[claim]]\n" + CLAIM, "level must be in (0, 1)"),
        ("[claim\n", "is not a TOML file"),
        ("level = 0.05\n", "holds no [[claim]] table"),
        ("claims = 1\n", "unknown top-level key(s) claims"),
    ],
)
def test_a_bad_file_is_refused(tmp_path, text, named) -> None:
    with pytest.raises(ConfigError, match="claims: ") as raised:
        read_claims(_file(tmp_path, text))
    assert named in str(raised.value)


def test_a_missing_file_is_refused(tmp_path) -> None:
    with pytest.raises(ConfigError, match="cannot read"):
        read_claims(tmp_path / "absent.toml")


def test_online_sgd_is_measured_per_teacher(tmp_path) -> None:
    """``sgd ACT`` runs on fresh sequences: no ``alpha``, its own teachers."""
    text = CLAIM.replace("population linear", "sgd softmax") + "D = 200\n"
    (claim,) = read_claims(_file(tmp_path, "[[claim]]\n" + text)).claims
    assert claim.per_teacher == "sgd" and claim.task.D == 200


@pytest.mark.parametrize("side", ["erm linear", "posterior", "sgd softmax"])
def test_a_claim_too_large_for_memory_is_refused_before_work(tmp_path, side) -> None:
    alpha = "" if side.startswith("sgd") else "alpha = 4\n"
    D = 10**9 if side.startswith("sgd") else 10**7  # online SGD holds D-vectors, not tokens
    text = CLAIM.replace("population linear", side) + alpha + f"D = {D}\n"
    with pytest.raises(ConfigError, match="GiB") as raised:
        read_claims(_file(tmp_path, "[[claim]]\n" + text))
    assert "claim 1 ('c')" in str(raised.value)
