"""Inputs that were ignored or refused unhelpfully: a holdout out of range with a teacher's data
file, max-SLR's default ``nu = inf`` for sampling, a flag a command does not take, an unreachable
scheduler."""

from __future__ import annotations

import pytest

import bayes_slr
from bayes_slr.cli.main import main
from bayes_slr.distributed import CONNECT_SECONDS
from bayes_slr.errors import ConfigError


@pytest.fixture(scope="module")
def good(tmp_path_factory):
    path = tmp_path_factory.mktemp("data") / "good.npz"
    bayes_slr.simulate(N=50, D=5, out=path, progress=False)
    return path


@pytest.mark.parametrize("command", ["gap", "posterior"])
@pytest.mark.parametrize("holdout", ["1.5", "0", "-0.2"])
def test_a_holdout_out_of_range_is_refused_even_where_the_file_has_a_teacher(
    capsys, good, command, holdout
):
    assert main([command, "--data", str(good), "--holdout", holdout, "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"bayes-slr {command}: error: holdout must be in (0, 1), got")


def test_max_posterior_on_its_default_nu_says_to_give_nu(capsys):
    assert main(["posterior", "--variant", "max", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "give a finite --nu, e.g. --nu 2" in err
    with pytest.raises(ConfigError, match="give a finite `nu`"):
        bayes_slr.posterior(variant="max")


@pytest.mark.parametrize("command", ["theory", "amp", "phase"])
def test_a_flag_the_command_lacks_is_refused_by_that_command(capsys, command):
    assert main([command, "--heads", "2"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        f"bayes-slr {command}: error: unrecognized arguments: --heads 2 "
        f"(see bayes-slr {command} --help)"
    )


def test_an_unreachable_scheduler_is_refused_after_the_short_connect_timeout(capsys):
    argv = ["bayes-risk", "--scheduler", "tcp://127.0.0.1:9", "--quiet"]  # discard: nothing there
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert "--scheduler: cannot connect to tcp://127.0.0.1:9" in err
    assert f"after {CONNECT_SECONDS} s" in err
