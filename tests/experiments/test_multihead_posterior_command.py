"""``posterior --heads --presence`` (docs/multihead.md section 8): the multi-head posterior of the
command against the teacher's known-directions predictor and the population Bayes error, its
file's head axis, the start check, ``posterior-sweep`` and ``posterior --data`` with two heads,
the one-head command unchanged at ``heads = 1``, and bad input one line.

Tolerances: 4 standard errors of the test-set means (the known-directions error of an exact
teacher is the population Bayes error at any ``D``; the posterior predictor is never better than
the known directions); the two samplers' errors on the same sequences within 4 combined standard
errors (loose: the sequences are shared). Sizes of section 8's sampler test (``D = 6``,
``alpha = 12``, ``rho = 0.5``)."""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
import xarray as xr

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.studies.posterior_records import PosteriorSummary

TWO_HEADS = {
    "heads": 2,
    "presence": 0.5,
    "D": 6,
    "alpha": 12.0,
    "exact_teacher": True,
    "init": "informed",
    "chains": 4,
    "warmup": 200,
    "N_test": 4000,
    "max_draws": 200,
    "erm": False,  # each asked for by its own test
    "check_start": False,
}


@pytest.fixture(scope="module")
def gibbs(tmp_path_factory):
    """The posterior of the multi-head Gibbs sampler and the file it wrote."""
    path = tmp_path_factory.mktemp("multihead") / "posterior.nc"
    result = bayes_slr.posterior(**TWO_HEADS, samples=500, sampler="multihead-gibbs", out=path)
    return result, path


def test_posterior_is_no_better_than_the_known_directions(gibbs):
    result, _ = gibbs
    row = result.summary
    assert isinstance(row, PosteriorSummary) and row.sampler == "multihead-gibbs"
    assert (row.heads, row.presence, row.N, row.n_test) == (2, 0.5, 72, 4000)
    # exact teacher: its known-directions error is the population Bayes error at any D
    oracle, population = row.oracle_error, row.population_bayes_error
    assert abs(oracle.value - population) < 4 * oracle.stderr + 1e-7  # quadrature bound < 1e-7
    # the same sequences: the paired excess is the difference of the two errors
    excess = row.paired_differences["bayes - oracle"]
    assert excess.value == pytest.approx(row.bayes_error.value - oracle.value, abs=1e-12)
    assert excess.value > -4 * excess.stderr
    assert row.bayes_error.value < 1  # better than the zero predictor
    assert set(row.diagnostics) == {"m_k", "m_v", "q_k", "q_v"}
    assert all(math.isfinite(d.r_hat) for d in row.diagnostics.values())
    assert row.erm is None and row.start_check is None  # each runs when asked for
    assert "known-direction (oracle) error" in result.table()


def test_file_has_a_head_axis_and_the_settings(gibbs):
    _, path = gibbs
    with xr.open_datatree(path, engine="h5netcdf") as tree:
        assert tree["posterior_vectors"]["k"].dims == ("chain", "draw", "head", "dim")
        assert tree.constant_data["eps_true"].dims == ("sequence", "head")
        probs = tree.head_states["probs"]
        assert probs.dims == ("chain", "sequence", "head", "state") and probs.shape[-1] == 4
        np.testing.assert_allclose(probs.sum("state"), 1.0, atol=1e-12)
        record = json.loads(tree.posterior.attrs["bayes_slr"])
    assert (record["config"]["heads"], record["config"]["presence"]) == (2, 0.5)
    assert record["config"]["sampler"] == "multihead-gibbs"


def test_the_file_re_summarises_to_the_same_numbers(gibbs):
    """``posterior --from`` of a two-head file: the file's task and seed, so the same test
    sequences and draws give the same errors and matched overlaps."""
    result, path = gibbs
    again = bayes_slr.posterior(source=path).summary
    assert (again.heads, again.presence) == (2, 0.5)
    assert again.bayes_error == result.summary.bayes_error
    assert again.overlaps == result.summary.overlaps
    with pytest.raises(bayes_slr.ConfigError, match="contradict the file's 2, 0.5"):
        bayes_slr.posterior(source=path, heads=3)


def test_auto_is_nuts_and_agrees_with_gibbs(gibbs):
    """The same seed: the same teacher, training set and test sequences for both samplers."""
    row = bayes_slr.posterior(**TWO_HEADS, samples=125).summary
    other = gibbs[0].summary
    assert row.sampler == "nuts" and row.divergences is not None
    assert row.oracle_error == other.oracle_error
    difference = row.bayes_error.value - other.bayes_error.value
    assert abs(difference) < 4 * math.hypot(row.bayes_error.stderr, other.bayes_error.stderr)


def test_the_erm_comparison_trains_two_heads_and_is_no_better_than_the_posterior():
    """``--erm`` with heads: ERM of a two-head student (docs/multihead.md section 7) on the
    posterior's training set, scored beside the posterior on its test sequences; the
    Bayes-optimal predictor is the best on them, so ERM minus it is above ``-4`` standard
    errors (paired)."""
    result = bayes_slr.posterior(**{**TWO_HEADS, "erm": True}, samples=125)
    row = result.summary
    assert set(row.erm) == {"softmax", "linear"}
    for activation in row.erm:
        difference = row.paired_differences[f"bayes - erm_{activation}"]
        assert difference.value < 4 * difference.stderr, activation
        assert math.isfinite(row.erm[activation].test_error)
    assert "ERM linear (2 heads) test error" in result.table()


def test_one_head_is_the_one_head_command():
    small = {"D": 4, "chains": 2, "warmup": 20, "samples": 40, "N_test": 200, "max_draws": 20}
    small |= {"erm": False, "check_start": False}
    one = bayes_slr.posterior(**small).summary
    assert one == bayes_slr.posterior(**small, heads=1, presence=1.0).summary


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--heads", "2", "--from", "p.nc"], "p.nc does not exist"),
        (["--heads", "0"], "heads must be an integer >= 1"),
        (["--presence", "1.5"], "presence must be a probability in (0, 1]"),
        (["--variant", "max", "--presence", "0.5"], "presence must be 1 for the max variant"),
        (["--variant", "max", "--nu", "2", "--heads", "2"], "supports the multi-head max"),
        (["--heads", "2", "--sampler", "gibbs"], "does not support the multi-head spiked"),
        (["--heads", "3", "--D", "5", "--exact-teacher"], "D must be an integer >= 6"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(argv, message, capsys):
    assert main(["posterior", *argv]) == 2
    err = capsys.readouterr().err.strip()
    assert message in err and "\n" not in err


SMALL = {**TWO_HEADS, "sampler": "multihead-gibbs", "warmup": 100, "samples": 100}
SMALL |= {"N_test": 2000, "max_draws": 100}


def test_start_check_with_two_heads():
    """Chains from the other start (informed: at the teacher; the main ones at random) sample the
    same posterior: their Bayes-optimal error agrees with the main chains' within the start
    check's tolerance, and neither is better than the teacher's known directions."""
    row = bayes_slr.posterior(**{**SMALL, "init": "random", "check_start": True}).summary
    check = row.start_check
    assert check is not None and check.init == "informed"
    assert not check.multimodal and abs(check.agreement) < 4
    assert set(check.overlaps) == {"m_k", "m_v", "q_k", "q_v"}
    for error in (row.bayes_error, check.bayes_error):
        excess = error.value - row.oracle_error.value
        assert excess > -4 * math.hypot(error.stderr, row.oracle_error.stderr)


def test_posterior_sweep_with_two_heads_is_the_posterior_at_each_alpha():
    """A sweep point is the posterior of its alpha (the same study and seed), and its Bayes-optimal
    error falls from alpha = 4 to 12 towards the known-directions error."""
    small = {k: v for k, v in SMALL.items() if k != "alpha"}
    rows = bayes_slr.posterior_sweep(**small, alpha=[4.0, 12.0]).rows
    assert [(r.heads, r.presence, r.alpha) for r in rows] == [(2, 0.5, 4.0), (2, 0.5, 12.0)]
    assert rows[1] == bayes_slr.posterior(**SMALL).summary
    low, high = rows[0].bayes_error, rows[1].bayes_error
    assert low.value - high.value > -4 * math.hypot(low.stderr, high.stderr)


def test_posterior_of_a_two_head_data_file_is_the_simulated_posterior(tmp_path):
    """``simulate --heads`` writes what ``posterior --data`` reads: the file of the seed's teacher
    and training set gives the posterior of the same seed's simulated data, draw for draw (the
    chains share the key); without the teacher, the errors are measured on held-out sequences
    and the Bayes-optimal predictor beats the zero predictor on them (paired)."""
    path = tmp_path / "heads.npz"
    bayes_slr.simulate(heads=2, presence=0.5, D=6, N=72, exact_teacher=True, out=path)
    names = ("sampler", "chains", "warmup", "samples", "init", "max_draws", "erm", "check_start")
    sampling = {name: SMALL[name] for name in names}
    row = bayes_slr.posterior(data=path, N_test=2000, **sampling).summary
    simulated = bayes_slr.posterior(**SMALL).summary
    assert (row.heads, row.presence, row.N) == (2, 0.5, 72)
    assert row.bayes_error == simulated.bayes_error and row.overlaps == simulated.overlaps
    arrays = dict(np.load(path))
    teacherless = tmp_path / "no_teacher.npz"
    np.savez(teacherless, **{k: v for k, v in arrays.items() if k not in ("k_star", "v_star")})
    held_out = bayes_slr.posterior(data=teacherless, **{**sampling, "init": "random"}).summary
    assert held_out.oracle_error is None and set(held_out.diagnostics) == {"q_k", "q_v"}
    versus_zero = held_out.paired_differences["bayes - zero"]
    assert versus_zero.value < 0 and held_out.n_test == 14
