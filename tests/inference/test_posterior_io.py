"""Posterior files from the previous stack (ArviZ 0.23 ``InferenceData``) load, or are refused by
version.

``tests/inference/data/posterior_arviz023.nc`` was written by bayes-slr 0.1.0 on Python 3.11 with
jax 0.10.2 and ArviZ 0.23.4, and ``posterior_arviz023.json`` is what that version printed::

    bayes-slr posterior --variant spiked --D 4 --L 3 --nu 4 --Delta 0.1 --seed 3 --sampler gibbs \\
        --chains 2 --warmup 20 --samples 25 --alpha 2 --no-erm --N-test 100 --max-draws 20 \\
        --out posterior_arviz023.nc --json
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import xarray as xr

from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.inference import posterior_io
from bayes_slr.models.spec import LengthLaw, SLRConfig

DATA = Path(__file__).parent / "data"
LEGACY = DATA / "posterior_arviz023.nc"
LEGACY_SUMMARY = json.loads((DATA / "posterior_arviz023.json").read_text())


def test_arviz023_file_loads():
    """The old file reads as a DataTree with every group; its record names the versions that wrote
    it.
    """
    tree = posterior_io.load_posterior(LEGACY)
    assert posterior_io.config_of(tree) == SLRConfig("spiked", 4, LengthLaw.fixed(3), 4.0, 0.1)
    assert posterior_io.record_of(tree)["versions"]["arviz"] == "0.23.4"
    k, v = posterior_io.draws_of(tree)
    assert k.shape == v.shape == (2, 25, 4)
    assert tree.location_posterior["probs"].shape == (2, 8, 3)


def test_arviz023_file_resummarised(capsys):
    """``posterior --from`` on the old file gives the old reference errors and posterior means.

    The reference errors (oracle, prior predictive, population) agree to rounding (same seed,
    same test set on jax 0.10 and 0.12). The posterior predictors' errors are not compared:
    the old file's ``bayes_test_error`` was the plain posterior mean of ``f`` scored by squaring
    a finite-draw mean; today ``bayes_test_error`` is the predictor weighted by ``p(X | k)``
    and both errors come from the unbiased split-draw estimator (docs/posterior.md). Of the
    diagnostics only ``mean``, ``sd``, ``mcse_mean`` and ``ess_bulk`` are compared:
    ArviZ 1.x computes the tail ESS differently (here 12.3 -> 16.3 on 2 chains of 25
    draws) and the r_hat of ``az.summary`` 0.23 differed from its own ``az.rhat`` on one
    row (v[1]: 1.093 in the summary, 1.079 from ``az.rhat``, which 1.x reproduces).
    """
    assert (
        main(
            [
                "posterior",
                "--from",
                str(LEGACY),
                "--N-test",
                "100",
                "--max-draws",
                "20",
                "--no-erm",
                "--json",
            ]
        )
        == 0
    )
    output = json.loads(capsys.readouterr().out)
    (new,) = output["rows"]
    old = LEGACY_SUMMARY
    # the options it ran with are the file's (the config line reports them)
    used, recorded = output["config"], old["config"]
    for name in (
        *("variant", "D", "nu", "Delta", "alpha", "chains", "warmup", "samples", "init"),
        *("N_test", "max_draws", "exact_teacher"),
    ):
        assert used[name] == recorded[name], name
    assert used["L"] == 3 and used["check_start"] is False and used["erm"] is False
    assert output["seed"] == used["seed"] == old["seed"]
    assert (new["alpha"], new["N"], new["sampler"]) == (2.0, 8, "gibbs")
    # The summary was written by another process (another machine and library build), from the
    # draws stored in the file and a test set drawn from the recorded seed: the same arithmetic
    # with no iteration to amplify rounding, so only the summation order can differ (sums of a few
    # thousand terms: 1e-13 relative at most); 1e-12 covers it.
    for key in ("oracle_error", "prior_predictive_error"):
        assert new[key]["value"] == pytest.approx(old[key]["value"], rel=1e-12)
    # a quadrature: within the two runs' bounds (bayes_error_exact: below 1e-7 each)
    assert new["population_bayes_error"] == pytest.approx(old["population_bayes_error"], abs=2e-7)
    assert set(new["diagnostics"]) == set(old["diagnostics"])
    # ArviZ's summary of the stored draws: FFT autocorrelations carry 1e-13 relative rounding, the
    # ESS a ratio of such sums; 1e-9 is far above it and far below any change of the estimator
    for name, row in old["diagnostics"].items():
        for column in ("mean", "sd", "mcse_mean", "ess_bulk"):
            assert new["diagnostics"][name][column] == pytest.approx(row[column], rel=1e-9), (
                name,
                column,
            )


def test_unreadable_old_layout_names_its_version(tmp_path):
    """A file in a layout this version cannot use is refused, naming the versions that wrote it."""
    with xr.open_datatree(LEGACY, engine="h5netcdf") as opened:
        tree = opened.load().copy()
    del tree["location_posterior"]
    damaged = tmp_path / "old_without_locations.nc"
    tree.to_netcdf(damaged, engine="h5netcdf")
    with pytest.raises(
        ConfigError, match=r"bayes-slr 0\.1\.0 with ArviZ 0\.23\.4.*location_posterior/probs"
    ):
        posterior_io.load_posterior(damaged)

    tree.posterior.attrs.pop("bayes_slr")
    without_record = tmp_path / "old_without_record.nc"
    tree.to_netcdf(without_record, engine="h5netcdf")
    with pytest.raises(ConfigError, match=r"written by ArviZ 0\.23\.4"):
        posterior_io.load_posterior(without_record)
