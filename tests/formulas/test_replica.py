"""Checks of the replica-symmetric theory (bayes_slr.formulas.replica_*) against
independent routes.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest

from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.formulas.bayes import bayes_error_exact
from bayes_slr.formulas.optimum import optimal_population_error
from bayes_slr.formulas.replica_bayes import bayes_replica_point
from bayes_slr.formulas.replica_erm import erm_replica_point
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.studies.erm import erm_study
from bayes_slr.studies.theory import theory_row
from bayes_slr.studies.theory_records import TheorySettings, curve_warnings

SPIKED = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0)
MAX_INF = SLRConfig("max", 1, LengthLaw.fixed(3), math.inf)
SAMPLES = 2048


@pytest.fixture(scope="module")
def spiked_bayes_curve() -> dict[float, object]:
    return {
        alpha: bayes_replica_point(SPIKED, alpha=alpha, mc_samples=SAMPLES)
        for alpha in (1e-3, 1.0, 16.0, 64.0, 256.0)
    }


def test_bayes_spiked_tends_to_population_bayes_error_from_above(spiked_bayes_curve):
    """alpha -> inf: the known-direction Bayes error (docs/model.md section 2) is a lower bound and
    the limit.

    The excess over it is O(1/alpha) (q -> 1 like 1 - O(1/alpha)): from alpha = 64 to 256
    it must shrink by well over half (asymptotically by 4), and stay >= 0 up to the
    quadrature bound of the population value.
    """
    population = bayes_error_exact(SPIKED)
    excess = {a: p.test_error - population.value for a, p in spiked_bayes_curve.items()}
    assert all(p.converged for p in spiked_bayes_curve.values())
    assert excess[256.0] >= -population.error_bound - 1e-7
    assert 0 <= excess[256.0] < 0.5 * excess[64.0]


def test_bayes_spiked_decreases_with_alpha_and_starts_at_one(spiked_bayes_curve):
    """More data never hurts the Bayes-optimal estimator; alpha -> 0 gives the prior-predictive
    error 1.
    """
    errors = [spiked_bayes_curve[a].test_error for a in sorted(spiked_bayes_curve)]
    assert all(b < a for a, b in zip(errors, errors[1:]))
    assert 0.99 < errors[0] <= 1.0


def test_bayes_nishimori_identity_and_posterior_mean_excess(spiked_bayes_curve):
    """E[yhat^2] = E[y yhat] for yhat = E[y | X, data], to Monte Carlo precision (4 standard
    errors).

    The training-set posterior mean of f (docs/model.md section 5) cannot beat E[y | X, data]:
    its excess is a mean square (up to the inner Monte Carlo error, 1e-3 here).
    """
    for point in spiked_bayes_curve.values():
        d = point.diagnostics
        assert abs(d.nishimori_gap) < 4 * d.nishimori_gap_stderr + 1e-12
        assert d.posterior_mean_f_error >= point.test_error - 1e-3
        # quadrature (docs/model.md section 4) and Monte Carlo evaluations of the same error agree
        assert abs(d.monte_carlo_error - point.test_error) < 4 * d.nishimori_gap_stderr + 4 / (
            math.sqrt(SAMPLES)
        )
        # the error's standard error is the batches' spread (the overlaps are Monte Carlo):
        # tests/formulas/test_bayes_stderr.py checks it against the spread over seeds
        assert d.replicates == 8 and d.test_error_stderr >= 0.0


@pytest.mark.slow
def test_bayes_max_inf_tends_to_zero_and_both_starts_agree():
    """max-SLR, nu = inf: the population Bayes error is 0 and is reached like 1/alpha.

    At L = 3 the informed and uninformed starts reach the same fixed point (no hard phase).
    """
    points = {
        alpha: bayes_replica_point(MAX_INF, alpha=alpha, mc_samples=512) for alpha in (4.0, 64.0)
    }
    informed = bayes_replica_point(MAX_INF, alpha=4.0, mc_samples=512, init="informed")
    assert bayes_error_exact(MAX_INF).value == 0.0
    assert all(p.converged for p in points.values())
    assert abs(informed.overlaps["q_k"] - points[4.0].overlaps["q_k"]) < 1e-6
    for p in points.values():
        assert abs(p.diagnostics.nishimori_gap) < 4 * p.diagnostics.nishimori_gap_stderr
    assert 0 < points[64.0].overlaps["q_k"] - points[4.0].overlaps["q_k"]
    small, large = points[4.0], points[64.0]
    assert large.test_error + 4 * large.diagnostics.test_error_stderr < small.test_error / 4
    assert large.test_error > -4 * large.diagnostics.test_error_stderr


def test_bayes_noiseless_spiked_has_a_hard_phase_just_above_alpha_one():
    """Spiked ``nu = 2``, ``L = 3``, ``Delta = 0`` (docs/theory.md part C): exact recovery of ``v``
    (``q_v = 1``)
    is a fixed point once ``alpha > 1`` (with ``q_v = 1 - eps`` the value channel gives
    ``qhat_v ~ alpha / eps``, so ``eps -> eps / alpha``), but from the random start the state
    evolution
    only reaches it above an algorithmic threshold (between 1.2 and 1.25 at 16384 draws). At
    ``alpha = 1.1`` the two starts end at different fixed points, the informed one at ``q_v = 1``
    (the cap)
    with a lower error; at ``alpha = 2`` they agree. Margins: ``q_v`` of the random start 0.66, far
    from
    both 1 and the Monte Carlo error (0.005); ``1e-6`` is the cap's distance to 1 up to rounding."""
    config = SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0)
    hard = {
        init: bayes_replica_point(config, alpha=1.1, init=init, mc_samples=4096, seed=0)
        for init in ("random", "informed")
    }
    assert all(point.converged for point in hard.values())
    assert hard["random"].overlaps["q_v"] < 0.9 and hard["informed"].overlaps["q_v"] > 1 - 1e-6
    assert hard["informed"].test_error < hard["random"].test_error - 0.1
    easy = {
        init: bayes_replica_point(config, alpha=2.0, init=init, mc_samples=4096, seed=0)
        for init in ("random", "informed")
    }
    assert abs(easy["random"].test_error - easy["informed"].test_error) < 1e-6
    assert easy["random"].overlaps["q_v"] > 1 - 1e-6


def test_erm_small_alpha_gives_error_one_linearly():
    """Ridge ERM with lam > 0: every hat variable is O(alpha), so 1 - E = O(alpha) -> 0.

    Halving alpha must halve ``1 - E`` (ratio 2 up to O(alpha) corrections: within 10%).
    """
    gaps = {
        a: 1.0
        - erm_replica_point(
            SPIKED, "softmax", alpha=a, lam=1.0, mc_samples=512, replicates=4
        ).test_error
        for a in (1e-3, 5e-4)
    }
    assert 0 < gaps[5e-4] < gaps[1e-3] < 0.05
    assert gaps[1e-3] / gaps[5e-4] == pytest.approx(2.0, rel=0.1)


@pytest.mark.slow
def test_erm_softmax_tends_to_population_optimum(full_size):
    """alpha -> inf at small lam: ERM tends to the activation's population optimum (docs/model.md
    section 4).

    For spiked SLR the softmax optimum is the Bayes error. The excess is O(1/alpha): from
    alpha = 64 to 256 it must shrink by more than half (asymptotically by 4) and stay
    positive (an ERM cannot beat the population optimum, up to the theory's Monte Carlo
    error, about 1/sqrt(mc_samples) relative on the O(1) excess scale of the draws).
    """
    mc = 4096 if full_size else 1024
    optimum = optimal_population_error("softmax", SPIKED).error
    excess = {
        a: erm_replica_point(
            SPIKED, "softmax", alpha=a, lam=0.01, mc_samples=mc, replicates=4
        ).test_error
        - optimum
        for a in (64.0, 256.0)
    }
    assert 0 < excess[256.0] < 0.5 * excess[64.0]


def test_erm_erf_offset_stays_at_the_erm_point_from_both_starts():
    """erf, spiked nu = 2, L = 3, alpha = 4, lam = 1: both starts reach one RS point, not the
    silenced estimator (``c -> -inf``, every weight 0) that a plain Newton step on ``c`` fell into.

    The zero predictor's training objective is ``E[y^2]/2 = 1/2`` (``Delta = 0``, no ridge at
    ``k = v = 0``), and the minimum must be below it. The two starts iterate the same equations
    on the same draws, so their offsets agree to the iteration's accuracy: it stops at a step
    of ``1e-7``, and its distance to the fixed point is that over one minus the contraction
    rate per step (about 0.8 in the traces): 1e-5 with a margin. Simulations end at ``c`` of -0.1
    to -0.4 (docs/dynamics.md); the bound ``|c| < 1`` is the activation's unit scale.
    """
    points = {
        init: erm_replica_point(
            SPIKED, "erf", alpha=4.0, lam=1.0, init=init, mc_samples=512, replicates=4
        )
        for init in ("random", "informed")
    }
    for point in points.values():
        assert point.converged and point.diagnostics.rs_stable
        assert point.diagnostics.train_objective < 0.5
        assert abs(point.overlaps["c"]) < 1.0
    offsets = [point.overlaps["c"] for point in points.values()]
    assert offsets[0] == pytest.approx(offsets[1], abs=1e-5)


@pytest.mark.parametrize(
    "activation", ["softmax", pytest.param("erf", marks=pytest.mark.full_size_only)]
)
def test_erm_point_does_not_depend_on_the_channel_chunk(monkeypatch, activation):
    """The proximal solves taken 48 draws at a time (a chunk that divides neither the 512 pooled
    points nor a replicate's 128: the remainder path too) give the point of the solves taken all
    at once. The pooled numbers (overlaps, test error, replicon) agree to relative 1e-9: the
    chunks change only the rounding of each Newton solve (measured: 2e-8 on one draw's ``f_out``
    at the uninformed start, where 12 Newton steps leave it not quite stationary), averaged over
    512 draws and contracted by the fixed point. The standard errors are spreads over 4
    replicates, each a step from the point on 128 draws: they agree to relative 1e-4 (measured:
    3e-5). A chunking that dropped or repeated a draw moves either by about 1/128 of itself."""
    import jax

    from bayes_slr.formulas import replica_erm

    def solve(chunk: int):
        monkeypatch.setattr(replica_erm, "channel_chunk", lambda L: chunk)
        jax.clear_caches()  # the jitted solvers are traced again with this chunk
        return erm_replica_point(
            SPIKED, activation, alpha=4.0, lam=1.0, mc_samples=512, replicates=4
        )

    whole, chunked = solve(512), solve(48)
    jax.clear_caches()
    assert whole.converged and chunked.converged
    assert whole.diagnostics.iterations == chunked.diagnostics.iterations
    np.testing.assert_allclose(
        [chunked.test_error, chunked.diagnostics.replicon, *chunked.overlaps.values()],
        [whole.test_error, whole.diagnostics.replicon, *whole.overlaps.values()],
        rtol=1e-9,
    )
    errors = [
        [p.stderr, p.diagnostics.replicon_stderr, *p.diagnostics.overlaps_stderr.values()]
        for p in (chunked, whole)
    ]
    np.testing.assert_allclose(*errors, rtol=1e-4)


@pytest.mark.parametrize("activation", ["softmax", "linear"])
def test_erm_reported_stderr_is_the_spread_over_independent_seeds(activation):
    """The reported standard error (the spread of the replicates' fixed points, each to first
    order about the point, over ``sqrt(replicates)``) against an independent route: the spread
    of the point itself over independent seeds (spiked nu = 2, L = 3, Delta = 0.1, alpha = 4,
    lam = 1, 1024 points in 8 scramblings, 16 seeds).

    The seeds' sample standard deviation has 15 degrees of freedom: its ratio to the truth lies in
    [0.48, 1.59] with probability 0.998 (chi^2_15's 0.001 and 0.999 quantiles); the mean of the
    16 reported errors is closer to the truth than that. Bounds [0.4, 1.9]: a reported error four
    times too small (ratio in [1.9, 6.4]) or three times too large fails.
    """
    points = [
        erm_replica_point(
            SPIKED.replace(Delta=0.1), activation, alpha=4.0, lam=1.0, mc_samples=1024, seed=seed
        )
        for seed in range(20, 36)
    ]
    assert all(point.converged for point in points)
    spread = np.std([point.test_error for point in points], ddof=1)
    reported = np.mean([point.stderr for point in points])
    assert 0.4 < spread / reported < 1.9, (spread, reported)


def test_erm_target_stderr_adds_points_of_the_same_scramblings_until_met(monkeypatch):
    """A point with ``target_stderr`` is solved again on more points of its scramblings until its
    standard error is below the target (the first solve is the plain point's, so a target a third
    of its error multiplies the points by 16, the power of two above ``3^2``; the error falls like
    ``n^(-1/2)`` or faster, so by 4 or more); at the most points it may take it stops above the
    target, and ``theory``'s rows warn of it."""
    config, common = SPIKED.replace(Delta=0.1), dict(alpha=4.0, lam=1.0, replicates=8, seed=3)
    plain = erm_replica_point(config, "softmax", mc_samples=256, **common)
    target = plain.stderr / 3
    met = erm_replica_point(
        config, "softmax", mc_samples=256, target_stderr=target, max_samples=4096, **common
    )
    assert met.converged and met.stderr <= target, (met.stderr, target)
    assert met.diagnostics.mc_samples == 4096 and met.diagnostics.target_stderr == target
    monkeypatch.setattr("bayes_slr.formulas.result.REPLICA_MAX_DRAWS", 512)
    settings = TheorySettings(1.0, 256, None, 2, 8, target_stderr=target / 100)
    capped = theory_row(config, "theory", 4.0, "softmax", "random", settings, seed=3)
    assert capped.diagnostics.mc_samples == 512 and capped.stderr > target / 100
    assert any("above its target" in line for line in curve_warnings([capped]))


@pytest.mark.slow
@pytest.mark.parametrize(
    "activation, lam",
    [("softmax", 0.1), ("linear", 1.0), pytest.param("erf", 1.0, marks=pytest.mark.full_size_only)],
)
def test_erm_theory_matches_simulation(full_size, activation, lam):
    """ERM, spiked nu = 2, L = 3, alpha = 4: RS theory vs L-BFGS at finite D, where RS is stable.

    Tolerance: 4 standard errors of the simulated mean (spread over seeds, which contains
    the finite-D fluctuation, floored by the test-set Monte Carlo error) plus 4 standard
    errors of the theory (its spread over independent scramblings of the channel).
    Exact teachers (``|k*|^2 = |v*|^2 = D``), as the theory assumes. The finite-D bias is
    not bounded separately; it showed up below two standard errors at D = 125-2000
    (docs/theory.md). The key overlap must agree within 4 seed spreads
    plus 0.1 (its finite-D fluctuation at these sizes).
    """
    D, seeds, mc = (400, 8, 8192) if full_size else (150, 4, 4096)
    config = SPIKED.replace(D=D)
    theory = erm_replica_point(config, activation, alpha=4.0, lam=lam, mc_samples=mc)
    simulation = erm_study(
        config, activation, alpha=4.0, lam=lam, seeds=seeds, N_test=10_000, exact_teacher=True
    )
    assert theory.converged and theory.diagnostics.rs_stable
    assert all(r.converged for r in simulation.per_seed)
    tolerance = 4 * simulation.stderr + 4 * theory.stderr
    assert abs(theory.test_error - simulation.test_error) < tolerance
    mean_m_k = np.mean([r.overlaps.m_k for r in simulation.per_seed])
    assert (
        abs(theory.overlaps["m_k"] - mean_m_k)
        < 4 * np.std([r.overlaps.m_k for r in simulation.per_seed]) + 0.1
    )


def test_erm_linear_rs_breaks_at_small_ridge_and_holds_at_large():
    """Linear ERM, spiked nu = 2, L = 3, alpha = 4: replica symmetry breaks at lam = 0.1, holds at
    lam = 1.

    At lam = 0.1 the RS equations converge to a point that violates the de Almeida-Thouless
    condition (replicon > 1); which point depends on the channel draws (errors from 1.3 to
    38 across draw seeds, docs/theory.md), while L-BFGS finds a rugged landscape. At lam = 1
    the replicon is about 0.5 and the point agrees with simulation
    (:func:`test_erm_theory_matches_simulation`). Tolerance: 4 standard errors of the replicon
    (over independent scramblings of the channel: the fixed point's movement included).
    """
    broken = erm_replica_point(SPIKED, "linear", alpha=4.0, lam=0.1, mc_samples=512, replicates=4)
    assert broken.converged
    assert broken.diagnostics.replicon - 1.0 > 4 * broken.diagnostics.replicon_stderr
    assert not broken.diagnostics.rs_stable
    stable = erm_replica_point(SPIKED, "linear", alpha=4.0, lam=1.0, mc_samples=512, replicates=4)
    assert stable.converged
    assert 1.0 - stable.diagnostics.replicon > 4 * stable.diagnostics.replicon_stderr


@pytest.mark.parametrize(
    "kwargs",
    [
        dict(alpha=0.0, lam=0.1),
        dict(alpha=1.0, lam=-1.0),
        dict(alpha=1.0, lam=0.1, activation="relu"),
    ],
)
def test_bad_input_is_a_config_error(kwargs):
    kwargs = {"activation": "softmax", **kwargs}
    with pytest.raises(ConfigError):
        erm_replica_point(SPIKED, kwargs.pop("activation"), **kwargs)


def test_cli_json_and_resume(tmp_path, capsys):
    """--json prints config and rows; a second run with --out reads the finished points back."""
    argv = [
        "theory",
        "--nu",
        "2",
        "--L",
        "3",
        "--activation",
        "linear",
        "--alpha",
        "4",
        "--bayes",
        "--mc-samples",
        "256",
        "--json",
        "--out",
        str(tmp_path / "run"),
    ]
    assert main(argv) == 0
    first = json.loads(capsys.readouterr().out)
    theory = [r for r in first["rows"] if r["source"] == "theory"]
    assert [r["estimator"] for r in theory] == ["linear", "bayes", "amp"]
    assert all(r["alpha"] == 4.0 for r in theory)
    assert main(argv) == 0
    second = json.loads(capsys.readouterr().out)
    assert second["rows"] == first["rows"]
    # linear, bayes, amp, and the population values of linear and bayes
    assert len((tmp_path / "run" / "theory.jsonl").read_text().splitlines()) == 5


def test_cli_simulate_adds_lbfgs_rows_at_fixed_size(tmp_path, capsys):
    """--simulate SIZE pairs every ERM theory point with an L-BFGS row at D = SIZE / sqrt(alpha);
    --plot draws both.
    """
    argv = [
        "theory",
        "--nu",
        "2",
        "--L",
        "3",
        "--activation",
        "softmax",
        "--alpha",
        "4",
        "--lam",
        "1",
        "--mc-samples",
        "64",
        "--simulate",
        "30",
        "--seeds",
        "2",
        "--json",
        "--plot",
        str(tmp_path / "p.png"),
    ]
    assert main(argv) == 0
    assert (tmp_path / "p.png").read_bytes().startswith(b"\x89PNG")
    rows = json.loads(capsys.readouterr().out)["rows"]
    assert [r["source"] for r in rows if r["source"] != "population"] == ["theory", "simulation"]
    simulation = next(r for r in rows if r["source"] == "simulation")
    simulated = simulation["diagnostics"]
    assert (simulated["D"], simulated["N"], len(simulated["per_seed_test_error"])) == (15, 60, 2)
    assert simulation["test_error"] == pytest.approx(np.mean(simulated["per_seed_test_error"]))


@pytest.mark.parametrize(
    "bad",
    [
        ["--alpha", "0"],
        ["--lam", "-0.5"],
        ["--activation", "relu"],
        ["--simulate", "100", "--seeds", "1"],
    ],
)
def test_cli_bad_input_exits_2_without_output(tmp_path, capsys, bad):
    out = tmp_path / "run"
    assert main(["theory", "--out", str(out), "--plot", str(tmp_path / "p.png"), *bad]) == 2
    assert "bayes-slr theory: error:" in capsys.readouterr().err
    assert not out.exists() and not (tmp_path / "p.png").exists()
