"""A new ``dynamics`` method is one module: shown by a toy defined in this file alone.

``tiny-noise``: the SGD ODE at a noise ``eta / B = 1e-9`` (a subclass of the flow's method
object that hands the core a step and batch of its own, taking no option). Run by name through
``bayes-slr dynamics --method tiny-noise`` (choices and help read from the registry), it must
follow the population flow from the teacher: its variance term is ``1e-9`` times an ``O(1)``
rate, far below the ODE solver's tolerances, so both end at the same overlaps and error to
``1e-6``. Giving it a step is refused by the methods that take one.
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json

import pytest

from bayes_slr.cli.main import main
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.dynamics import DynamicsOptions
from bayes_slr.studies.dynamics_methods import (
    register_dynamics_method,
    unregister_dynamics_method,
)
from bayes_slr.studies.dynamics_ode_methods import PopulationFlow
from bayes_slr.studies.dynamics_records import DynamicsRow

FROM_TEACHER = [
    "--start",
    "teacher",
    "--t-max",
    "1",
    "--ode-draws",
    "2048",
    "--log-points",
    "4",
    "--quiet",
    "--json",
]


class TinyNoise(PopulationFlow):
    """The SGD ODE at ``eta / B = 1e-9``."""

    def flow_run(self, config, activation, seed, settings):
        run = super().flow_run(config, activation, seed, settings)
        return dataclasses.replace(run, method="sgd", eta=1e-9, batch=1)


@pytest.fixture
def toy():
    register_dynamics_method(
        TinyNoise("tiny-noise", "the SGD ODE at eta/B = 1e-9", None, data=False, takes=())
    )
    yield "tiny-noise"
    unregister_dynamics_method("tiny-noise")


def rows(argv: list[str]) -> list[DynamicsRow]:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer):
        assert main(["dynamics", *argv]) == 0
    return [DynamicsRow.from_dict(row) for row in json.loads(buffer.getvalue())["rows"]]


def test_a_registered_method_runs_by_name_and_follows_its_limit(toy):
    (row,) = rows(["--method", toy, *FROM_TEACHER])
    (flow,) = rows(["--method", "flow", *FROM_TEACHER])
    assert row.method == toy and row.steps is None
    assert row.trajectory.time == flow.trajectory.time
    for name in ("m_k", "q_k", "m_v", "q_v", "test_error"):
        assert getattr(row.trajectory, name) == pytest.approx(
            getattr(flow.trajectory, name), abs=1e-6
        )


def test_the_registry_gives_the_choices_help_and_refusals(toy, capsys):
    with pytest.raises(SystemExit):
        main(["dynamics", "--help"])
    assert "tiny-noise: the SGD ODE at eta/B = 1e-9" in capsys.readouterr().out
    assert DynamicsOptions(method=toy).settings().method == toy
    with pytest.raises(ConfigError, match="eta applies to methods gd, sgd and sgd-ode"):
        DynamicsOptions(method=toy, eta=1.0)
