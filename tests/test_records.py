"""Result-file plumbing: provenance, atomic writes, resumable sweep logs."""

import json
import math
import re

import pytest

from bayes_slr import ConfigError
from bayes_slr.records import (
    SweepLog,
    as_json_values,
    atomic_write,
    check_output_file,
    json_text,
    prepare_output_folder,
    provenance,
    read_json,
)


def test_provenance_records_config_seed_and_versions():
    record = provenance({"a": 1}, 5)
    assert record["config"] == {"a": 1} and record["seed"] == 5
    assert {"python", "jax", "numpyro", "arviz", "numpy", "scipy", "optax"} <= set(
        record["versions"]
    )


def test_json_text_is_standard_json_with_one_type_per_number():
    """Infinity is the number 1e999 (read back as inf), nan is null; nothing else changes."""
    text = json_text({"nu": math.inf, "low": -math.inf, "x": [1.5, math.nan], "s": "inf"})
    assert "Infinity" not in text and "NaN" not in text
    assert json.loads(text) == {"nu": math.inf, "low": -math.inf, "x": [1.5, None], "s": "inf"}
    assert '"nu": 1e999' in text and '"low": -1e999' in text


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: tmp / "missing" / "x.png", "does not exist"),
        (
            lambda tmp: (tmp / "afile").write_text("x") and tmp / "afile" / "x.png",
            "is not a folder",
        ),
        (lambda tmp: tmp, "is a folder"),
        (lambda tmp: __import__("pathlib").Path("/proc/x.png"), "cannot write in folder /proc"),
    ],
)
def test_output_files_that_cannot_be_written_are_refused_before_work(tmp_path, make, message):
    with pytest.raises(ConfigError, match=message):
        check_output_file(make(tmp_path), force=False, name="plot")


@pytest.mark.parametrize(
    "make, message",
    [
        (lambda tmp: (tmp / "afile").write_text("x") and tmp / "afile", "is a file"),
        (lambda tmp: (tmp / "afile").write_text("x") and tmp / "afile" / "sub", "cannot create"),
        (lambda tmp: __import__("pathlib").Path("/proc/gapout"), "cannot create folder"),
    ],
)
def test_output_folders_that_cannot_be_made_are_refused(tmp_path, make, message):
    with pytest.raises(ConfigError, match=message):
        prepare_output_folder(make(tmp_path))


def test_atomic_write_leaves_nothing_on_failure(tmp_path):
    target = tmp_path / "out.txt"

    def failing(path):
        path.write_text("partial")
        raise RuntimeError("interrupted")

    with pytest.raises(RuntimeError):
        atomic_write(target, failing)
    assert list(tmp_path.iterdir()) == []
    atomic_write(target, lambda path: path.write_text("done"))
    assert target.read_text() == "done" and list(tmp_path.iterdir()) == [target]


def test_sweep_log_resumes_finished_points(tmp_path):
    path = tmp_path / "sweep.jsonl"
    log = SweepLog(path)
    point = {"L": 3, "nu": math.inf}
    assert log.result(point) is None
    log.append(point, {"error": 0.25}, seed=1)
    reopened = SweepLog(path)
    assert reopened.result({"nu": math.inf, "L": 3}) == {"error": 0.25}
    assert reopened.result({"L": 4, "nu": math.inf}) is None
    record = json.loads(path.read_text().splitlines()[0])
    assert record["provenance"]["seed"] == 1 and "versions" in record["provenance"]


def test_sweep_log_writes_non_finite_numbers_as_the_outputs_do(tmp_path):
    """One encoding: ``inf`` is ``1e999`` and ``nan`` is ``null`` in the log as in ``--json``;
    a result read back is what a point solved now gives (``as_json_values``)."""
    path = tmp_path / "sweep.jsonl"
    result = {"error": math.inf, "bound": -math.inf, "undefined": math.nan, "x": (1.5,)}
    SweepLog(path).append({"nu": math.inf}, as_json_values(result), seed=0)
    line = path.read_text()
    assert "1e999" in line and "-1e999" in line and "null" in line
    assert '"inf"' not in line and "NaN" not in line and "Infinity" not in line
    expected = {"error": math.inf, "bound": -math.inf, "undefined": None, "x": [1.5]}
    assert as_json_values(result) == expected
    assert SweepLog(path).result({"nu": math.inf}) == expected


def test_a_log_written_with_non_finite_numbers_as_strings_still_resumes(tmp_path):
    """Logs written before held ``"inf"``/``"nan"`` strings, in the key and the result: the key
    is re-encoded and the strings read as floats; points appended now use the one encoding."""
    path = tmp_path / "sweep.jsonl"
    old_key = json.dumps({"L": 3, "nu": "inf"}, sort_keys=True)
    old = {"key": old_key, "provenance": {"seed": 0}, "result": {"e": "nan", "t": "-inf"}}
    path.write_text(json.dumps(old, sort_keys=True) + "\n")
    log = SweepLog(path)
    stored = log.result({"nu": math.inf, "L": 3})
    assert math.isnan(stored["e"]) and stored["t"] == -math.inf
    assert [record["key"] for record in log] == [SweepLog.point_key({"L": 3, "nu": math.inf})]
    log.append({"L": 4, "nu": math.inf}, {"e": 1.0}, seed=0)
    assert SweepLog(path).result({"L": 4, "nu": math.inf}) == {"e": 1.0}


def test_read_json_reads_both_encodings():
    assert read_json('{"a": 1e999, "b": -1e999, "c": null, "d": "inf", "e": "auto"}') == {
        "a": math.inf,
        "b": -math.inf,
        "c": None,
        "d": math.inf,
        "e": "auto",
    }


def test_sweep_log_drops_an_interrupted_last_line(tmp_path):
    path = tmp_path / "sweep.jsonl"
    SweepLog(path).append({"L": 2}, {"error": 0.5}, seed=0)
    with open(path, "a") as handle:
        handle.write('{"key": "{\\"L\\": 3}", "resu')
    log = SweepLog(path)
    assert log.result({"L": 2}) == {"error": 0.5} and log.result({"L": 3}) is None
    log.append({"L": 3}, {"error": 0.4}, seed=0)
    assert SweepLog(path).result({"L": 3}) == {"error": 0.4}


def test_sweep_log_rejects_a_foreign_file(tmp_path):
    path = tmp_path / "sweep.jsonl"
    path.write_text("this is not json\n")
    with pytest.raises(ConfigError, match="line 1 is not a bayes-slr sweep record"):
        SweepLog(path)


def test_a_failing_point_is_reported_and_the_sweep_goes_on(tmp_path):
    from bayes_slr.records import run_sweep

    def solve(point):
        if point["i"] == 1:
            raise ValueError("no convergence")
        return {"value": point["i"]}

    log = SweepLog(tmp_path / "sweep.jsonl")
    done, failures = run_sweep([{"i": i} for i in range(3)], solve, log=log, progress=False)
    assert [point["i"] for point, _ in done] == [0, 2]
    assert failures == [({"i": 1}, "ValueError: no convergence")]
    assert (
        SweepLog(tmp_path / "sweep.jsonl").result({"i": 1}) is None
    )  # not logged: a re-run retries it


def test_serial_progress_bar_shows_the_point_running_in_this_process(capsys):
    from bayes_slr.records import run_sweep

    seen = []

    def solve(point):
        seen.append(
            capsys.readouterr().err.split("\r")[-1]
        )  # the bar as drawn while this point runs
        if point["i"] == 1:
            raise ValueError("no convergence")
        return {"value": point["i"]}

    run_sweep([{"i": i} for i in range(3)], solve, description="sweep")
    assert [re.search(r"\d/3", line).group() for line in seen] == ["0/3", "1/3", "2/3"]
    assert (
        all(line.rstrip().endswith("running=1 on local]") for line in seen)
        and "failed=1" in seen[2]
    )
    assert "running" not in capsys.readouterr().err.split("\r")[-1]  # none once the sweep is done


def test_theory_command_exits_3_when_a_point_fails(tmp_path, monkeypatch, capsys):
    from bayes_slr.cli.main import main
    from bayes_slr.formulas import replica_erm

    real = replica_erm.erm_replica_point

    def fail_at_alpha_4(config, activation, *, alpha, **kwargs):
        if alpha == 4:
            raise FloatingPointError("diverged")
        return real(config, activation, alpha=alpha, **kwargs)

    monkeypatch.setattr(replica_erm, "erm_replica_point", fail_at_alpha_4)
    code = main(
        [
            "theory",
            "--activation",
            "linear",
            "--alpha",
            "2",
            "4",
            "--channel-draws",
            "64",
            "--quiet",
            "--out",
            str(tmp_path),
        ]
    )
    err = capsys.readouterr().err
    assert code == 3 and "1 point(s) failed" in err and "FloatingPointError: diverged" in err
    logged = (tmp_path / "theory.jsonl").read_text().splitlines()
    assert len(logged) == 2  # alpha = 2 and the population value: the failed point is not logged
