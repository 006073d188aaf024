"""``check`` gives each claim the verdict its truth calls for, where the truth is known apart from
the code path that decides it: the closed form of linear attention's population optimum
(docs/model.md section 4), the population gap between linear and softmax attention, and a
tolerance no two teachers can resolve. A bad claims file is refused before any work."""

from __future__ import annotations

import json

import pytest

import bayes_slr
from bayes_slr.cli.main import main

L, NU = 3, 2.0
LINEAR_CLOSED_FORM = L * (L - 1) / (L**2 + (L - 1) * NU)
"""Linear attention's population optimum on spiked SLR at fixed ``L`` (docs/model.md section 4)."""

CLAIMS = f"""
level = 0.05

[[claim]]
name = "linear's optimum is its closed form"
left = "population linear"
relation = "equal"
right = {LINEAR_CLOSED_FORM!r}
tolerance = 1e-6
L = {L}

[[claim]]
name = "false: linear's optimum is 0.01 below its closed form"
left = "population linear"
relation = "below"
right = {LINEAR_CLOSED_FORM - 0.01!r}
L = {L}

[[claim]]
name = "false: ERM linear beats ERM softmax"
left = "erm linear"
relation = "below"
right = "erm softmax"
L = {L}
alpha = 16
D = 20
teachers = 3
max_teachers = 6

[[claim]]
name = "ERM linear within 0.2 of ERM softmax, from two teachers"
left = "erm linear"
relation = "equal"
right = "erm softmax"
tolerance = 0.2
L = {L}
alpha = 16
D = 20
teachers = 2
max_teachers = 2
"""


@pytest.fixture(scope="module")
def checked(tmp_path_factory):
    folder = tmp_path_factory.mktemp("check")
    path = folder / "claims.toml"
    path.write_text(CLAIMS)
    out = folder / "out"
    return bayes_slr.check(claims=path, out=out, progress=False), out


def test_each_verdict_is_the_known_truth(checked) -> None:
    """Holds: the closed form. Fails: 0.01 below it, and linear beating softmax (their
    population optima differ by 0.109 and ERM at alpha = 16 is within a few hundredths of them).
    Undecided: a true claim (the difference is about 0.1, within 0.2) that two teachers (one
    degree of freedom) cannot decide, with the teachers it would take."""
    result, _ = checked
    verdicts = [row.verdict for row in result.rows]
    assert verdicts == ["holds", "fails", "fails", "undecided"]
    undecided = result.rows[3]
    assert undecided.teachers == 2 and "teachers" in undecided.to_decide
    linear_minus_softmax = result.rows[2]
    assert linear_minus_softmax.difference > 0
    assert linear_minus_softmax.teachers in (3, 6)


def test_erm_differences_are_paired(checked) -> None:
    """Both ERM sides see the same teachers: the paired standard error is below the unpaired
    one, since each teacher's luck moves both errors together."""
    result, _ = checked
    evidence = result.rows[2].evidence
    import numpy as np

    left = np.concatenate([b.left for b in evidence.batches])
    right = np.concatenate([b.right for b in evidence.batches])
    unpaired = np.sqrt((left.var(ddof=1) + right.var(ddof=1)) / left.size)
    assert evidence.stderr < unpaired


def test_the_result_reads_as_a_table_json_and_a_frame(checked) -> None:
    result, out = checked
    table = result.table()
    assert "holds" in table and "undecided" in table and "Holm" in table
    frame = result.to_pandas()
    assert list(frame["verdict"]) == [row.verdict for row in result.rows]
    assert {"difference", "stderr", "p_value", "to_decide"} <= set(frame.columns)
    record = json.loads(json.dumps(result.to_json()))
    assert record["rows"][2]["evidence"]["batches"]
    assert sorted(p.name for p in (out / "claims").iterdir())  # the kept batches


def test_a_bad_claims_file_is_refused_before_any_work(tmp_path, capsys) -> None:
    bad = tmp_path / "bad.toml"
    bad.write_text('[[claim]]\nname = "x"\nleft = "erm"\nrelation = "below"\nright = "bayes"\n')
    out = tmp_path / "out"
    assert main(["check", "--claims", str(bad), "--out", str(out)]) == 2
    error = capsys.readouterr().err.strip()
    assert "claim 1 ('x')" in error and "left" in error and len(error.splitlines()) == 1
    assert not out.exists()
