"""Each Monte Carlo count is named for what it counts (``mc_sequences``, ``channel_draws``,
``se_draws``, ``ode_draws``); the former ``mc_samples`` of every command still works, with a
``FutureWarning`` in Python and a one-line notice on the command line, and a sweep folder
written under the old name resumes."""

from __future__ import annotations

from pathlib import Path

import pytest

import bayes_slr
import bayes_slr.api
from bayes_slr.cli.flags import given_options
from bayes_slr.cli.main import build_parser
from bayes_slr.experiments import EXPERIMENTS
from bayes_slr.experiments.runner import in_current_terms, open_log, sweep_records, sweep_settings
from bayes_slr.records import SweepLog, read_json

ROOT = Path(__file__).resolve().parents[2]
NEW_NAMES = {
    "bayes-risk": "mc_sequences",
    "theory": "channel_draws",
    "phase": "channel_draws",
    "amp": "se_draws",
    "dynamics": "ode_draws",
}


def _logged_settings(path: Path) -> dict:
    """The settings of the first point logged at ``path``, under the options' names now."""
    line = path.read_text().splitlines()[0]
    logged = read_json(line)["provenance"]["config"]
    options_type = EXPERIMENTS.get(path.stem).options_type
    return options_type.with_current_names(logged.get("settings", {}))


def _option_names(path: Path) -> set[str]:
    experiment = EXPERIMENTS.get(path.stem)
    return {f.name for f in experiment.options_type.option_fields()} - set(experiment.sweep_axes)


SWEEP_LOGS = sorted(
    path
    for path in ROOT.glob("docs/results/**/*.jsonl")
    if path.stem in NEW_NAMES
    and '\\"mc_samples\\"' in path.read_text()
    and set(_logged_settings(path)) == _option_names(path)
)
"""The committed sweep logs written under ``mc_samples`` that a run with today's options
resumes (the others were written before options were added since, and start again anyway)."""


@pytest.mark.parametrize(("command", "name"), sorted(NEW_NAMES.items()))
def test_the_old_python_name_sets_the_new_option_with_a_future_warning(command, name, monkeypatch):
    ran = []
    monkeypatch.setattr(
        bayes_slr.api, "run_experiment", lambda _, options, **how: ran.append(options)
    )
    function = getattr(bayes_slr, command.replace("-", "_"))
    with pytest.warns(FutureWarning, match=f"mc_samples is now {name}"):
        function(mc_samples=256)
    function(**{name: 256})
    assert ran[0] == ran[1] and getattr(ran[0], name) == 256
    with pytest.raises(TypeError, match="got both mc_samples and its new name"):
        function(mc_samples=256, **{name: 256})


@pytest.mark.parametrize(("command", "name"), sorted(NEW_NAMES.items()))
def test_the_old_flag_sets_the_new_option_with_a_notice(command, name, capsys):
    parser, flags = build_parser()
    old = given_options(parser.parse_args([command, "--mc-samples", "256"]), flags[command])
    err = capsys.readouterr().err
    assert f"--mc-samples is now --{name.replace('_', '-')}" in err
    assert len(err.strip().splitlines()) == 1
    new = given_options(
        parser.parse_args([command, f"--{name.replace('_', '-')}", "256"]), flags[command]
    )
    assert old == new == {name: 256} and capsys.readouterr().err == ""


def test_theory_logs_of_the_monte_carlo_channel_are_not_resumed():
    """The finite-alpha notebook's stores were written under ``mc_samples`` by one Monte Carlo
    solve per ERM point; a run now (independent Sobol scramblings, docs/theory.md part A) has a
    ``replicates`` setting they lack, so it recomputes their points instead of mixing the two
    methods."""
    notebook = ROOT / "docs" / "results" / "finite_alpha" / "notebook"
    stores = sorted(notebook.glob("*/theory.jsonl"))
    assert len(stores) >= 4 and not set(stores) & set(SWEEP_LOGS)
    assert all("replicates" not in _logged_settings(path) for path in stores)


@pytest.mark.parametrize("path", SWEEP_LOGS, ids=[str(p.relative_to(ROOT)) for p in SWEEP_LOGS])
def test_a_sweep_log_written_under_the_old_name_resumes(path: Path):
    """Each point logged under ``mc_samples`` is found under the key a run asks for now: its
    settings with the option's name now."""
    experiment = EXPERIMENTS.get(path.stem)
    options_type = experiment.options_type
    log = open_log(experiment, path)
    for record in log:
        logged = record["provenance"]["config"]
        assert "mc_samples" in logged["settings"]
        settings = options_type.with_current_names(logged["settings"])
        asked = sweep_settings(experiment, options_type(**settings))
        assert asked == settings
        assert log.result({"point": logged["point"], "settings": asked}) is record["result"]


def test_a_dynamics_checkpoint_keyed_under_the_old_name_is_this_runs():
    """A checkpoint carries its point's log key; one written under ``mc_samples`` reads as the
    key this run asks for (``PointState.load`` compares them so)."""
    experiment = EXPERIMENTS.get("dynamics")
    options = experiment.options_type(method="sgd", ode_draws=1024)
    (record,) = sweep_records(experiment, options, experiment.points(options)[:1])
    settings = dict(record["settings"])
    settings["mc_samples"] = settings.pop("ode_draws")
    written_before = SweepLog.point_key({**record, "settings": settings})
    key = SweepLog.point_key(record)
    assert written_before != key
    assert SweepLog.canonical_key(written_before, in_current_terms(experiment)) == key
