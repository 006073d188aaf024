"""Reading the specialisation of student heads (docs/multihead.md, "Dynamics"): crossing times,
matching, plateau and stalls on trajectories whose answers are known, and the study end to end
at a small size."""

from __future__ import annotations

import math

import numpy as np
import pytest

from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.attention.trajectory import HeadsPoint, HeadsTrajectory, as_matrix
from bayes_slr.numerics.record import structure
from bayes_slr.records import json_text, read_json
from bayes_slr.studies.dynamics import read_specialisation, specialisation_study
from bayes_slr.studies.dynamics_records import SpecialisationSettings, SpecialisationStudy

TIMES = np.array([0.0, 1.0, 2.0, 4.0, 8.0])


def trajectory(cosines_k: np.ndarray) -> HeadsTrajectory:
    """Unit-norm student heads with these key cosines ``(T, H_s, H)`` (values equal to keys)."""
    points = []
    for time, cosines in zip(TIMES, cosines_k, strict=True):
        gram = as_matrix(np.eye(cosines.shape[0]))
        points.append(
            HeadsPoint(
                None,
                time,
                as_matrix(cosines),
                gram,
                as_matrix(cosines),
                gram,
                (0.0,) * 2,
                0.5,
                0.01,
                as_matrix(0.0 * cosines),
                as_matrix(0.0 * cosines),
                as_matrix(0.0 * np.eye(2)),
            )
        )
    return HeadsTrajectory(tuple(points))


def test_a_run_that_specialises_in_stages() -> None:
    """Both heads turn to the sum of the teacher keys (cosines 0.6 at ``t = 1``), then head 0 to
    teacher 1 and head 1 to teacher 0: crossing times, the matching, each head's time (linear
    between logged points) and the plateau are read exactly."""
    cosines = np.array(
        [
            [[0.0, 0.0], [0.0, 0.0]],
            [[0.6, 0.6], [0.6, 0.6]],
            [[0.7, 0.7], [0.7, 0.7]],
            [[0.4, 0.9], [0.9, 0.6]],
            [[0.0, 1.0], [1.0, 0.0]],
        ]
    )
    run = read_specialisation(trajectory(cosines))
    assert run.permutation == (1, 0)
    np.testing.assert_allclose(run.crossing_times, [[5 / 6, 5 / 6], [5 / 6, 5 / 6]])
    assert run.escape_time == pytest.approx(5 / 6)
    # head 0's gap: 0, 0, 0, 0.5 at t = 4 -> 4; head 1's: 0, 0, 0, 0.3, 1.0 -> 4 + 4 * 0.2 / 0.7
    assert run.head_times == pytest.approx((4.0, 4.0 + 4.0 * 0.2 / 0.7))
    assert run.specialised and run.specialisation_time == pytest.approx(4.0 + 0.8 / 0.7)
    assert run.plateau == pytest.approx(run.specialisation_time - 5 / 6)


def test_a_run_that_stalls_with_mixing_heads() -> None:
    """Both heads stay on the sum of the teacher keys: they left the start, no head specialised,
    the run has stalled (``nan`` times and plateau)."""
    cosines = np.array([[[0.1, 0.0], [0.0, 0.1]]] + [[[0.7, 0.7], [0.7, 0.7]]] * 4)
    run = read_specialisation(trajectory(cosines))
    assert run.escape_time < 1.0 and not run.specialised
    assert all(math.isnan(t) for t in run.head_times) and math.isnan(run.plateau)


def test_the_study_end_to_end() -> None:
    """Two softmax heads on two teacher heads at ``D = 12``, one seed: one summary per size that
    counts its runs, every time read in order (leaving the start before specialising), the
    record's JSON read back; bad settings refused."""
    config = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0, Delta=0.0, heads=2)
    settings = SpecialisationSettings(sizes=(12,), seeds=1, t_max=20.0, log_points=24, N_test=200)
    study = specialisation_study(config, settings, seed=0)
    (summary,) = study.summaries
    read = [run.specialisation for run in study.runs]
    assert summary.seeds == 1 and summary.specialised == sum(r.specialised for r in read)
    for run in study.runs:
        assert (run.method, run.D, run.student_heads) == ("sgd", 12, 2)
        assert len(run.trajectory.points) > 20 and run.trajectory.last.time == pytest.approx(20.0)
        assert run.final_error == run.trajectory.last.test_error
        if run.specialisation.specialised:
            assert run.specialisation.escape_time < run.specialisation.specialisation_time <= 20.0
    again = structure(read_json(json_text(study.to_dict())), SpecialisationStudy)
    assert json_text(again.to_dict()) == json_text(study.to_dict())  # nan != nan: compare texts
    with pytest.raises(ConfigError, match="level"):
        specialisation_study(config, SpecialisationSettings(level=1.0), seed=0)
    with pytest.raises(ConfigError, match="D"):
        specialisation_study(config, SpecialisationSettings(sizes=(3,)), seed=0)
