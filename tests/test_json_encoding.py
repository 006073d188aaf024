"""One encoding of non-finite numbers in every JSON the toolkit writes (``inf`` as ``1e999``,
``nan`` as ``null``), and the files written before, which held ``"inf"``/``"nan"`` strings, still
read: every committed result file and golden output, and every committed sweep log resumes (its
points found under the keys the runner asks for now)."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.models.dataset import load_dataset
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.records import SweepLog, json_text, read_json

ROOT = Path(__file__).resolve().parents[1]
COMMITTED_JSON = sorted(
    [*ROOT.glob("docs/results/**/*.json"), *ROOT.glob("tests/**/golden/*.json")]
)
SWEEP_LOGS = sorted(
    path for path in ROOT.glob("docs/results/**/*.jsonl") if path.stem in EXPERIMENTS.names()
)


def _names(paths: list[Path]) -> list[str]:
    return [str(path.relative_to(ROOT)) for path in paths]


def test_there_are_committed_files_to_read():
    assert len(COMMITTED_JSON) > 20 and len(SWEEP_LOGS) > 20


@pytest.mark.parametrize("path", COMMITTED_JSON, ids=_names(COMMITTED_JSON))
def test_every_committed_json_file_reads(path: Path):
    assert isinstance(read_json(path.read_text()), (dict, list))


@pytest.mark.parametrize("path", SWEEP_LOGS, ids=_names(SWEEP_LOGS))
def test_every_committed_sweep_log_resumes_under_the_keys_asked_for_now(path: Path):
    log = SweepLog(path)
    records = list(log)
    assert records, path
    for record in records:
        point = record["provenance"]["config"]
        assert log.result(point) is record["result"]
        assert record["key"] == SweepLog.point_key(point)


def test_a_task_with_infinite_nu_is_written_as_a_number_and_read_back():
    config = SLRConfig("max", 5, LengthLaw.fixed(3), math.inf, 0.1)
    text = json_text(config.to_dict())
    assert '"nu": 1e999' in text and '"inf"' not in text
    assert SLRConfig.from_dict(read_json(text)) == config
    written_before = {**config.to_dict(), "nu": "inf"}
    assert SLRConfig.from_dict(read_json(json_text(written_before))) == config


def test_a_data_file_of_either_encoding_reads_its_task(tmp_path: Path):
    config = SLRConfig("max", 4, LengthLaw.fixed(3), math.inf, 0.1)
    rng = np.random.default_rng(0)
    arrays = {"X": rng.standard_normal((6, 3, 4)), "y": rng.standard_normal(6)}
    for nu in (math.inf, "inf"):
        record = {"config": {**config.to_dict(), "nu": nu, "N": 6}}
        path = tmp_path / f"data_{nu}.npz"
        np.savez(path, **arrays, config=np.asarray(json_text(record, indent=None)))
        data = load_dataset(path)
        assert SLRConfig.from_dict(data.provenance["config"]) == config


THEORY_STORES = sorted(ROOT.glob("docs/results/finite_alpha/notebook/*/theory.jsonl"))


@pytest.mark.parametrize("path", THEORY_STORES, ids=_names(THEORY_STORES))
def test_theory_rows_logged_before_their_diagnostics_carried_a_kind_read_as_their_source(path):
    """A theory row's diagnostics are a tagged union; rows logged before the tag read as the
    record whose fields they hold, which is the one of their source and estimator."""
    from bayes_slr.studies.theory_records import DIAGNOSTICS_KINDS, TheoryRow

    expected = {"simulation": "simulation", "population": "population"}
    for record in SweepLog(path):
        assert "kind" not in record["result"]["diagnostics"]
        row = TheoryRow.from_dict(record["result"])
        kind = expected.get(row.source) or (
            "erm" if row.estimator not in ("bayes", "amp") else ("bayes_branch", "bayes")
        )
        assert [k for k, t in DIAGNOSTICS_KINDS.items() if type(row.diagnostics) is t][0] in kind
        text = json_text(row.to_dict())
        assert '"kind": ' in text
        assert json_text(TheoryRow.from_dict(read_json(text)).to_dict()) == text
