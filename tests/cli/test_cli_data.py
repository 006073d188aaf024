"""``posterior --data`` and ``gap --data``: bring-your-own data, checked against independent routes.

(a) A file holding exactly the teacher and sequences that ``posterior`` draws gives ``posterior``'s
numbers.
(b) A plain ``X, y`` file (no record, no teacher, no lengths) gives the numbers of the simulate file
with its
    teacher stripped, the settings then coming from the flags.
(c) Without the teacher, errors on held-out sequences agree (within their standard errors) with the
errors via
    the teacher of a posterior (and ERM) trained on the same training sequences: the draws are the
    same. So do
    the paired differences between predictors, which are the differences of the held-out errors.
Bad files and conflicting flags end with one line naming the array or both values, exit 2, nothing
written.
"""

from __future__ import annotations

import json
import math

import jax
import numpy as np
import pytest

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.models.dataset import load_dataset, split_holdout
from bayes_slr.models.scoring import difference_name
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.posterior import PAIRED_DIFFERENCES

SETTINGS = ["--variant", "spiked", "--nu", "4", "--Delta", "0.1"]
CONFIG = SLRConfig("spiked", 10, LengthLaw.fixed(3), 4.0, 0.1)
FAST = [
    "--sampler",
    "gibbs",
    "--chains",
    "4",
    "--warmup",
    "200",
    "--samples",
    "300",
    "--max-draws",
    "200",
    "--seed",
    "0",
]
FRESH = ["--N-test", "20000"]
"""Fresh test sequences, for runs with a teacher (without one the held-out sequences are the test
set).
"""
ERM = ["--activations", "softmax", "linear", "--starts", "2", "--lam", "1", "--quiet"]
N, HOLDOUT = 600, 0.5


def _run(capsys, argv: list[str]) -> dict:
    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


def _posterior(output: dict) -> dict:
    """The one row of a ``posterior --json`` output, with the output's notes."""
    (row,) = output["rows"]
    return {**row, "notes": output["notes"]}


def _save(path, teacher, batch, *, record: bool = True, with_teacher: bool = True):
    arrays = {
        "X": np.asarray(batch.X),
        "y": np.asarray(batch.y),
        "lengths": np.asarray(batch.lengths),
        "eps": np.asarray(batch.eps),
    }
    if with_teacher:
        arrays.update(k_star=np.asarray(teacher.k_star), v_star=np.asarray(teacher.v_star))
    if record:
        meta = {
            "config": {**CONFIG.to_dict(), "N": int(batch.y.shape[0]), "exact_teacher": False},
            "seed": 0,
        }
        arrays["config"] = np.asarray(json.dumps(meta))
    np.savez(path, **arrays)
    return path


@pytest.fixture(scope="module")
def files(tmp_path_factory):
    """The simulate file with its teacher stripped, the same X, y alone, and the training part with
    the teacher.
    """
    folder = tmp_path_factory.mktemp("data")
    simulated = folder / "simulated.npz"
    assert (
        main(
            [
                "simulate",
                *SETTINGS,
                "--D",
                "10",
                "--L",
                "3",
                "--N",
                str(N),
                "--seed",
                "5",
                "--out",
                str(simulated),
            ]
        )
        == 0
    )
    with np.load(simulated) as arrays:
        stripped = {name: arrays[name] for name in arrays.files if name not in ("k_star", "v_star")}
        np.savez(folder / "stripped.npz", **stripped)
        np.savez(folder / "plain.npz", X=arrays["X"], y=arrays["y"])
    full = load_dataset(simulated)
    train, _ = split_holdout(full, HOLDOUT, seed=0)
    _save(folder / "train.npz", full.teacher, train.as_batch())
    return {name: folder / f"{name}.npz" for name in ("simulated", "stripped", "plain", "train")}


def test_data_holding_posteriors_own_draws_gives_its_numbers(tmp_path, capsys):
    """(a): the file holds the teacher and the N = alpha D sequences of posterior --seed 0; same
    chains, same test set.
    """
    key_teacher, key_data, _ = jax.random.split(jax.random.PRNGKey(0), 3)
    teacher = draw_teacher(key_teacher, CONFIG.D)
    path = _save(
        tmp_path / "own.npz", teacher, simulate(key_data, CONFIG, teacher, 80), record=False
    )
    drawn = _run(
        capsys,
        [
            "posterior",
            *SETTINGS,
            "--D",
            "10",
            "--L",
            "3",
            "--alpha",
            "8",
            *FAST,
            *FRESH,
            "--no-erm",
            "--no-check-start",
            "--json",
        ],
    )
    out = tmp_path / "post.nc"
    given = _run(
        capsys,
        [
            "posterior",
            *SETTINGS,
            "--data",
            str(path),
            *FAST,
            *FRESH,
            "--no-erm",
            "--no-check-start",
            "--out",
            str(out),
            "--json",
        ],
    )
    again = _run(
        capsys,
        [
            "posterior",
            "--from",
            str(out),
            "--N-test",
            "20000",
            "--max-draws",
            "200",
            "--no-erm",
            "--json",
        ],
    )
    drawn, given, again = (_posterior(output) for output in (drawn, given, again))
    for name in (
        "bayes_error",
        "oracle_error",
        "prior_predictive_error",
        "overlaps",
        "population_bayes_error",
    ):
        assert given[name] == drawn[name] == again[name], name
    assert (
        given["data"]["source"]["sources"]["nu"] == "given"
        and given["notes"] == []
        and again["data"] == given["data"]
    )


@pytest.fixture(scope="module")
def held_out_runs(files):
    """posterior --data on the stripped file, the plain X, y file and the training part with the
    teacher (ERM too).
    """
    import contextlib
    import io

    runs = {}
    for name, extra in (("stripped", []), ("plain", SETTINGS), ("train", FRESH)):
        stdout = io.StringIO()
        with contextlib.redirect_stdout(stdout):
            assert (
                main(
                    [
                        "posterior",
                        "--data",
                        str(files[name]),
                        *extra,
                        *FAST,
                        "--holdout",
                        str(HOLDOUT),
                        "--json",
                    ]
                )
                == 0
            )
        runs[name] = _posterior(json.loads(stdout.getvalue()))
    return runs


def test_plain_pair_gives_the_numbers_of_the_stripped_simulate_file(held_out_runs):
    """(b): same arrays, settings from the flags instead of the record: the same split, draws and
    errors.
    """
    stripped, plain = held_out_runs["stripped"], held_out_runs["plain"]
    for name in (
        "bayes_error",
        "posterior_mean_f_error",
        "prior_predictive_error",
        "erm",
        "diagnostics",
    ):
        assert plain[name] == stripped[name], name
    assert stripped["data"]["source"]["sources"]["nu"] == "the data file's config record"
    assert plain["data"]["source"]["sources"]["nu"] == "given"
    assert (stripped["data"]["n_train"], stripped["n_test"]) == (N // 2, N // 2)


def test_held_out_errors_agree_with_the_teacher_route(held_out_runs):
    """(c): same training sequences and seed, so the same draws (q_k) and ERM fits; the two test
    sets agree.
    """
    held, teacher = held_out_runs["stripped"], held_out_runs["train"]
    assert held["diagnostics"]["q_k"] == teacher["diagnostics"]["q_k"]
    pairs = [
        (held["bayes_error"], teacher["bayes_error"]),
        (held["prior_predictive_error"], teacher["prior_predictive_error"]),
    ]
    pairs += [
        (
            {"value": held["erm"][a]["test_error"], "stderr": held["erm"][a]["stderr"]},
            {"value": teacher["erm"][a]["test_error"], "stderr": teacher["erm"][a]["stderr"]},
        )
        for a in ("softmax", "linear")
    ]
    for by_data, by_teacher in pairs:
        assert abs(by_data["value"] - by_teacher["value"]) < 4 * math.hypot(
            by_data["stderr"], by_teacher["stderr"]
        )
    assert held["erm"]["softmax"]["lam"] == teacher["erm"]["softmax"]["lam"]


def _errors(run: dict) -> dict[str, dict]:
    """The unpaired errors of a posterior run, by the names of its paired differences."""
    erm = {
        f"erm_{a}": {"value": run["erm"][a]["test_error"], "stderr": run["erm"][a]["stderr"]}
        for a in ("softmax", "linear")
    }
    references = {"zero": run["prior_predictive_error"], "oracle": run["oracle_error"]}
    return {
        "bayes": run["bayes_error"],
        "plain": run["posterior_mean_f_error"],
        **references,
        **erm,
    }


def test_paired_differences_on_held_out_sequences(held_out_runs):
    """The paired difference is the difference of the two held-out errors (same sequences) with a
    smaller stderr than the unpaired hypot (the errors covary: same noise, same hard sequences),
    and Bayes - ERM softmax agrees with the teacher route's difference (same draws and fits, fresh
    sequences) within 4 combined SE. With the teacher every difference is on its fresh sequences:
    those of the posterior predictors, the oracle and the zero predictor are the differences of
    their errors, ERM's (scored again on the posterior's sequences) within 4 combined SE of the
    difference of the errors on ERM's own."""
    held, teacher = held_out_runs["stripped"], held_out_runs["train"]
    assert held_out_runs["plain"]["paired_differences"] == held["paired_differences"]
    assert {name for name in held["paired_differences"]} == {
        difference_name(a, b) for a, b in PAIRED_DIFFERENCES if "oracle" not in (a, b)
    }
    assert set(teacher["paired_differences"]) == {difference_name(*p) for p in PAIRED_DIFFERENCES}
    unpaired, by_teacher = _errors(held), _errors(teacher)
    for run, errors in ((held, unpaired), (teacher, by_teacher)):
        for name, paired in run["paired_differences"].items():
            a, b = name.split(" - ")
            combined = math.hypot(errors[a]["stderr"], errors[b]["stderr"])
            difference = errors[a]["value"] - errors[b]["value"]
            if run is teacher and "erm_linear" in (a, b) or "erm_softmax" in (a, b):
                assert abs(paired["value"] - difference) < 4 * math.hypot(
                    paired["stderr"], combined
                )
                continue
            assert paired["value"] == pytest.approx(difference, abs=1e-6), name
            assert paired["stderr"] < combined, name
    paired = held["paired_differences"][difference_name("bayes", "erm_softmax")]
    route = teacher["paired_differences"][difference_name("bayes", "erm_softmax")]
    assert abs(paired["value"] - route["value"]) < 4 * math.hypot(paired["stderr"], route["stderr"])
    assert paired["stderr_draws"] == pytest.approx(held["bayes_error"]["stderr_draws"], rel=1e-6)


def test_without_a_teacher_oracle_and_overlaps_are_absent_and_said(held_out_runs):
    held, teacher = held_out_runs["stripped"], held_out_runs["train"]
    assert (
        held["oracle_error"] is None
        and held["overlaps"] is None
        and set(held["diagnostics"]) >= {"q_k", "q_v"}
    )
    assert "m_k" not in held["diagnostics"] and held["start_check"] is None
    assert any(
        "oracle error and the overlaps m_k, m_v are omitted" in note for note in held["notes"]
    )
    assert any("no start check" in note for note in held["notes"])
    assert teacher["oracle_error"] is not None
    assert teacher["test_set"] == "fresh sequences from the teacher"
    assert held["test_set"] == "held-out sequences of the data"


def test_text_report_states_where_each_setting_came_from(files, capsys):
    assert (
        main(
            [
                "posterior",
                "--data",
                str(files["plain"]),
                "--variant",
                "spiked",
                "--Delta",
                "0.1",
                *FAST,
                "--no-erm",
                "--samples",
                "100",
                "--warmup",
                "50",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert (
        f"data {files['plain']}: variant spiked (given), nu 2 (default), Delta 0.1 (given), "
        "length L=3 (fixed at Lbar), D 10 (array X), N 600 (array y), Lbar 3 (array X)"
    ) in out
    assert (
        "errors on 120 held-out sequences of the data" in out
        and "known-direction (oracle) error" not in out
    )
    assert (
        "paired differences on the same 120 held-out sequences" in out
        and "  Bayes-optimal - zero: -" in out
    )
    assert "ERM softmax" not in out  # --no-erm: the zero predictor is the only one to pair with


GAP_ERM = {"activations": ("softmax", "linear"), "starts": 2, "lam": 1.0, "progress": False}


def test_gap_on_data_agrees_with_the_teacher_route(files, held_out_runs, capsys):
    """One row at the file's L; the held-out ERM errors agree with the teacher's on the same
    training part. With the teacher the oracle (the teacher's own Bayes predictor, issue 22 item
    3) sits beside ERM: below every ERM error on the same sequences, and within its error of the
    oracle ``posterior --data`` measures for the same teacher on other fresh sequences."""
    held = bayes_slr.gap(data=files["stripped"], holdout=HOLDOUT, **GAP_ERM)
    teacher = bayes_slr.gap(data=files["train"], **GAP_ERM)
    population = _run(
        capsys,
        [
            "gap",
            "--variant",
            "spiked",
            "--nu",
            "4",
            "--L",
            "3",
            "--activations",
            "softmax",
            "linear",
            "--json",
        ],
    )
    (row,), (reference,) = held.rows, teacher.rows
    assert row.L == 3 and row.population == population["rows"][0]["population"]
    assert held.options.seeds == 1 and held.options.source.N - held.options.n_train == N // 2
    for activation in ("softmax", "linear"):
        a, b = row.erm[activation], reference.erm[activation]
        assert abs(a.test_error - b.test_error) < 4 * math.hypot(a.stderr, b.stderr)
        assert a.informed_test_error is None and b.informed_test_error is not None
        assert b.test_error >= reference.oracle.value - 1e-12  # per sequence, exactly
    posterior_oracle = held_out_runs["train"]["oracle_error"]
    assert abs(reference.oracle.value - posterior_oracle["value"]) < 4 * math.hypot(
        reference.oracle.stderr, posterior_oracle["stderr"]
    )
    assert row.oracle is None and any("no oracle" in note for note in held.notes)
    assert teacher.table().splitlines()[0].split()[3:5] == ["pop", "bayes"]
    assert "oracle" in teacher.table().splitlines()[0]
    paired = row.erm_paired_differences["softmax - linear"]
    a, b = row.erm["softmax"], row.erm["linear"]
    assert paired.value == pytest.approx(a.test_error - b.test_error, abs=1e-6)
    assert paired.stderr < math.hypot(a.stderr, b.stderr)
    route = reference.erm["softmax"].test_error - reference.erm["linear"].test_error
    route_stderr = math.hypot(reference.erm["softmax"].stderr, reference.erm["linear"].stderr)
    assert abs(paired.value - route) < 4 * math.hypot(paired.stderr, route_stderr)
    by_teacher = reference.erm_paired_differences["softmax - linear"]  # one teacher, its sequences
    assert by_teacher.n == 1 and by_teacher.value == pytest.approx(route, abs=1e-12)
    symbol = {1: ">", -1: "<", 0: "~"}[paired.sign()]
    assert f"softmax {symbol} linear {paired.value:+.4f}+-{paired.stderr:.4f}" in held.table()
    assert "held-out sequences:" in held.table() and "1 teacher:" in teacher.table()


def _bad_files(folder) -> dict[str, tuple]:
    rng = np.random.default_rng(0)
    X, y = rng.normal(size=(20, 3, 10)), rng.normal(size=20)
    cases = {
        "missing y": ({"X": X}, "has no array y"),
        "NaN in X": ({"X": np.where(X > 2, np.nan, X), "y": y}, "array X has NaN or inf entries"),
        "lengths out of range": (
            {"X": X, "y": y, "lengths": np.full(20, 4)},
            "array lengths must lie in 1..Lbar = 1..3",
        ),
        "N mismatch": (
            {"X": X, "y": y[:-1]},
            "array y must have shape (N,) = (20,) to match X, got (19,)",
        ),
        "k_star alone": ({"X": X, "y": y, "k_star": np.ones(10)}, "array v_star is missing"),
    }
    paths = {}
    for name, (arrays, message) in cases.items():
        path = folder / f"{name.replace(' ', '_')}.npz"
        np.savez(path, **arrays)
        paths[name] = (path, message)
    corrupt = folder / "corrupt.npz"
    corrupt.write_bytes(b"PK\x03\x04 not really a zip")
    paths["corrupt"] = (corrupt, "is not a .npz archive")
    return paths


@pytest.mark.parametrize("command", ["posterior", "gap"])
def test_bad_files_are_refused_and_nothing_is_written(command, tmp_path, capsys):
    for name, (path, message) in _bad_files(tmp_path).items():
        out = tmp_path / f"out_{command}_{name.replace(' ', '_')}"
        assert main([command, "--data", str(path), *SETTINGS, "--out", str(out)]) == 2, name
        err = capsys.readouterr().err
        assert message in err and len(err.strip().splitlines()) == 1, (name, err)
        assert not out.exists(), name


REFUSED = {
    "D flag": (
        ["posterior", "--D", "20"],
        "D = 20 (given) conflicts with D = 10 from array X's last axis",
    ),
    "L flag": (
        ["gap", "--L", "5"],
        "L = 5 (given) conflicts with L = 3 from array X's token axis",
    ),
    "nu vs record": (
        ["posterior", "--nu", "2"],
        "nu = 2.0 (given) conflicts with nu = 4.0 from the data file's config record",
    ),
    "alpha": (["posterior", "--alpha", "4"], "--alpha does not apply with --data"),
    "gap alpha": (["gap", "--alpha", "4"], "--alpha does not apply with --data"),
    "exact teacher": (
        ["posterior", "--exact-teacher"],
        "--exact-teacher does not apply with --data",
    ),
    "gap seeds": (["gap", "--seeds", "2"], "seeds must be 1 with --data"),
    "holdout": (["posterior", "--holdout", "1.5"], "holdout must be in (0, 1)"),
    "init informed": (
        ["posterior", "--init", "informed"],
        "init must be random for data without a teacher",
    ),
    "out": (["posterior", "--out", "OUT"], "--out needs a teacher in the --data file"),
    "N-test": (["posterior", "--N-test", "1000"], "--N-test needs a teacher in the --data file"),
    "from": (["posterior", "--from", "post.nc"], "--from and --data exclude each other"),
}


@pytest.mark.parametrize("argv, message", REFUSED.values(), ids=REFUSED.keys())
def test_conflicting_flags_are_refused(files, argv, message, tmp_path, capsys):
    argv = [str(tmp_path / "out.nc") if part == "OUT" else part for part in argv]
    assert main([*argv, "--data", str(files["stripped"])]) == 2
    err = capsys.readouterr().err
    assert message in err and len(err.strip().splitlines()) == 1, err
    assert not (tmp_path / "out.nc").exists()
