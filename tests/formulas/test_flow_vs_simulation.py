"""Online SGD at finite ``D`` against its ODE (docs/dynamics.md, "The high-dimensional limit").

CI runs small dimensions; ``BAYES_SLR_FULL=1`` runs ``D = 500, 2000`` (and the notebook
``notebooks/training_dynamics.py`` runs 500, 2000, 8000). Tolerances are the fluctuations the limit
allows: an overlap of a run at dimension ``D`` is its ODE value plus ``O(1/sqrt(D))``; ``4/sqrt(D)``
bounds every seed in the runs measured (deviations at most ``1.6/sqrt(D)`` at ``D = 500, 2000,
8000``, docs/dynamics.md).
The bound has power: the flow without the variance term misses the same runs by far more.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np
import pytest

from bayes_slr import LengthLaw, SLRConfig
from bayes_slr.attention.activations import (
    register_activation,
    sphere_erf,
    unregister_activation,
)
from bayes_slr.attention.dynamics import TOKEN_DRAWS, TrainingRun, train_dynamics
from bayes_slr.attention.trajectory import first_crossing
from bayes_slr.formulas.flow import escape_rate, matching_flow, solve_flow

SPIKED = SLRConfig("spiked", 100, LengthLaw.fixed(3), 2.0)
OVERLAPS = ("m_k", "q_k", "m_v", "q_v")


@pytest.mark.slow
@pytest.mark.parametrize("token_draws", TOKEN_DRAWS)
def test_online_sgd_follows_its_ode(token_draws: str, full_size: bool) -> None:
    """Softmax from the small random start (no saddle: it leaves at once), ``eta = 1``, one
    sequence per step: after ``t = 1`` every overlap of every seed is within ``4/sqrt(D)`` of the
    SGD ODE started at the seed's own start, and the time ``m_k`` reaches 0.5 is the ODE's within
    the same tolerance divided by the ODE's slope there (it does not grow with ``D``); with the
    fresh tokens drawn either way (:data:`TOKEN_DRAWS`)."""
    sizes, seeds, t_max = ((500, 2000), 4, 12.0) if full_size else ((400,), 1, 12.0)
    for D in sizes:
        config = SPIKED.replace(D=D)
        tolerance = 4.0 / math.sqrt(D)
        for seed in range(seeds):
            run = TrainingRun(
                config,
                "softmax",
                "sgd",
                eta=0.5,
                steps=round(t_max * D / 0.5),
                seed=seed,
                log_points=40,
                N_test=2000,
                token_draws=token_draws,
            )
            simulated = train_dynamics(run)
            ode = solve_flow(matching_flow(simulated, mc_samples=2**13))
            later = simulated.column("time") >= 1.0
            times = simulated.column("time")[later]
            for name in OVERLAPS:
                gap = simulated.column(name)[later] - ode.interpolate(name, times)
                assert np.max(np.abs(gap)) <= tolerance, (D, seed, name, gap)
            escape = ode.crossing_time("m_k", 0.5)
            slope = np.gradient(ode.column("m_k"), ode.column("time"))[
                np.searchsorted(ode.column("time"), escape)
            ]
            assert abs(simulated.crossing_time("m_k", 0.5) - escape) <= tolerance / slope
            flow = solve_flow(
                dataclasses.replace(
                    matching_flow(simulated, mc_samples=2**13), method="flow", eta=None
                )
            )
            assert abs(flow.last.q_k - simulated.last.q_k) > tolerance


@pytest.fixture(scope="module")
def erf_sphere():
    name = register_activation(sphere_erf(0.5)).name
    yield name
    unregister_activation(name)


@pytest.mark.slow
def test_escape_from_the_saddle(erf_sphere, full_size: bool) -> None:
    """The predecessor's odd ``erf`` on the sphere (``lambda = 0.5``, spiked ``nu = 2``, projected
    SGD, ``eta = 0.25``): ``m = 0`` is a saddle with escape rate ``mu`` on the manifold.

    Near it the unstable combination ``a`` of ``(m_k, m_v)`` grows like ``e^(mu t)`` from an
    effective start ``a_eff = c Z / sqrt(D)`` (the random start plus the SGD noise of the plateau,
    both of order ``1/sqrt(D)``), so the escape time is ``log(D)/(2 mu) - log|Z|/mu + const``:
    its median grows by ``log(D2/D1)/(2 mu)``, with the standard error of a median of
    ``-log|Z|/mu`` over ``n`` seeds, ``1.166/(mu sqrt(n))`` (density ``0.4287 mu`` at the median).
    The saddle is unstable along the cross overlaps ``(k.v*, v.k*)`` too (docs/dynamics.md): a run
    escapes when the larger of ``|m_k|`` and ``|k.v*|`` reaches 0.4 (the measured escape times of
    the two ways have one law). After an escape along the manifold a run follows the ODE restarted
    where it escaped, within ``4/sqrt(D)``. CI checks one dimension (escapes and the restarted
    ODE); full size the growth between ``D = 500`` and ``2000``.
    """
    sizes, seeds = ((500, 2000), 12) if full_size else ((400,), 2)
    medians = []
    for D in sizes:
        escapes = []
        for seed in range(seeds):
            run = TrainingRun(
                SPIKED.replace(D=D),
                erf_sphere,
                "sgd",
                eta=0.25,
                steps=round(22 * D / 0.25),
                seed=seed,
                start="sphere",
                sphere=True,
                log_points=100,
                N_test=1000,
            )
            simulated = train_dynamics(run)
            distance = np.maximum(
                np.abs(simulated.column("m_k")), np.abs(simulated.column("k_vstar"))
            )
            escapes.append(first_crossing(simulated.column("time"), distance, 0.4))
            escaped = np.abs(simulated.column("m_k")) >= 0.4
            if escaped.any() and seed < 2:
                restart = int(np.argmax(escaped))
                ode = solve_flow(matching_flow(simulated, start=restart, mc_samples=2**13))
                times = simulated.column("time")[restart:]
                for name in OVERLAPS:
                    gap = simulated.column(name)[restart:] - ode.interpolate(name, times - times[0])
                    assert np.max(np.abs(gap)) <= 4.0 / math.sqrt(D), (D, name, gap)
        # a run still at the saddle at the end counts as later than every escaped one
        assert np.sum(np.isfinite(escapes)) > seeds / 2, (D, escapes)
        medians.append(np.median(np.where(np.isnan(escapes), np.inf, escapes)))
    if len(sizes) > 1:
        rate = escape_rate(matching_flow(simulated, mc_samples=2**13))
        growth = math.log(sizes[1] / sizes[0]) / (2.0 * rate)
        error = math.sqrt(2.0) * 1.166 / (rate * math.sqrt(seeds))
        assert abs(medians[1] - medians[0] - growth) <= 4.0 * error, (medians, growth, error)
