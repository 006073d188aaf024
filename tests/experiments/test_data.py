"""A user's data file reconciled with the settings given beside it (``models/data_task.py``): the
task from the file's record or from the settings, where each came from, and one-line refusals of
settings that contradict the file."""

from __future__ import annotations

import json

import jax
import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.task import DEFAULT_DELTA
from bayes_slr.models.data_task import RECORD, GivenTask
from bayes_slr.models.data_task import data_task as task_of_file
from bayes_slr.models.simulate import draw_teacher, simulate

CONFIG = SLRConfig("spiked", 6, LengthLaw.uniform(4), 2.0, 0.1)
N = 50
NOT_GIVEN = dict.fromkeys(("variant", "nu", "Delta", "L", "variable_length", "D"))


def data_task(path, given):
    """The task of the file ``path`` with the settings ``given`` (a dict), as a command reads it."""
    return task_of_file(path, GivenTask(**given), DEFAULT_DELTA)


@pytest.fixture(scope="module")
def drawn():
    """A teacher and a batch of CONFIG, as ``simulate`` draws them."""
    teacher = draw_teacher(jax.random.PRNGKey(0), CONFIG.D)
    return teacher, simulate(jax.random.PRNGKey(1), CONFIG, teacher, N)


def _with_record(drawn, tmp_path, **record_changes):
    teacher, batch = drawn
    config = {**CONFIG.to_dict(), "N": N, "exact_teacher": False, **record_changes}
    arrays = {name: np.asarray(value) for name, value in batch._asdict().items()}
    path = tmp_path / "data.npz"
    np.savez(
        path,
        **arrays,
        k_star=np.asarray(teacher.k_star),
        v_star=np.asarray(teacher.v_star),
        config=np.asarray(json.dumps({"config": config, "seed": 0})),
    )
    return path


def _plain(drawn, tmp_path):
    _, batch = drawn
    path = tmp_path / "plain.npz"
    arrays = {name: np.asarray(getattr(batch, name)) for name in ("X", "y", "lengths")}
    np.savez(path, **arrays)
    return path


def test_task_from_the_record_and_where_each_setting_came_from(drawn, tmp_path):
    path = _with_record(drawn, tmp_path)
    config, source = data_task(path, NOT_GIVEN)
    assert config == CONFIG
    assert source.sources["nu"] == RECORD and source.sources["D"] == "array X"
    assert (source.N, source.D, source.Lbar, source.teacher) == (N, 6, 4, True)
    agreeing = {**NOT_GIVEN, "nu": 2.0, "D": 6, "variable_length": True}
    assert data_task(path, agreeing)[0] == CONFIG


def test_task_from_the_settings_without_a_record(drawn, tmp_path):
    given = {**NOT_GIVEN, "variant": "max", "nu": 1.0, "variable_length": True}
    config, source = data_task(_plain(drawn, tmp_path), given)
    assert config == SLRConfig("max", 6, LengthLaw.uniform(4), 1.0, 0.1)
    assert source.sources["nu"] == "given" and source.sources["Delta"] == "default"
    assert source.teacher is False


CONFLICTS = {
    "D": (True, {"D": 7}, "D = 7 (given) conflicts with D = 6 from array X's last axis"),
    "L": (True, {"L": 3}, "L = 3 (given) conflicts with L = 4 from array X's token axis"),
    "nu vs record": (True, {"nu": 1.0}, "nu = 1.0 (given) conflicts with nu = 2.0 from " + RECORD),
    "variant vs record": (True, {"variant": "max"}, "variant = max (given) conflicts"),
    "fixed law": (
        False,
        {"variant": "spiked"},
        "array lengths has values 1..4 but the length law is fixed at Lbar = 4",
    ),
    "no variant": (False, {"variable_length": True}, "`variant` (and `nu`) must be given"),
}


@pytest.mark.parametrize("record, given, message", CONFLICTS.values(), ids=CONFLICTS.keys())
def test_conflicting_settings_are_refused_naming_both(drawn, tmp_path, record, given, message):
    path = _with_record(drawn, tmp_path) if record else _plain(drawn, tmp_path)
    with pytest.raises(ConfigError) as info:
        data_task(path, {**NOT_GIVEN, **given})
    assert message in str(info.value) and "\n" not in str(info.value)


def test_record_that_contradicts_the_arrays(drawn, tmp_path):
    path = _with_record(drawn, tmp_path, N=49)
    with pytest.raises(ConfigError, match="array config records N = 49 but the arrays have N = 50"):
        data_task(path, NOT_GIVEN)
