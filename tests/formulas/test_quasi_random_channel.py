"""The randomised quasi-Monte Carlo channel of the ERM equations
(:func:`~bayes_slr.formulas.channel.quasi_random_channel`) draws the SLR law: averages over
independent scramblings meet closed forms (spiked location shift, the expected maximum of three
normals, the output's second moment, the mean length) and the plain Monte Carlo channel, within
five standard errors of the spread over scramblings."""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.formulas.channel import draw_channel, quasi_random_channel
from bayes_slr.models.spec import LengthLaw, SLRConfig

SCRAMBLINGS, POINTS = 16, 1024


def located(draws) -> jax.Array:
    """Per draw, the key projection of the token whose value is the output (``Delta = 0``)."""
    index = jnp.argmin(jnp.abs(draws.h_star[..., 1] - draws.y[:, None]), axis=1)
    return jnp.take_along_axis(draws.h_star[..., 0], index[:, None], axis=1)[:, 0]


def over_scramblings(config: SLRConfig, statistic) -> tuple[float, float]:
    """Mean over independent scramblings of the average of ``statistic`` and its standard error."""
    keys = np.random.SeedSequence(7).spawn(SCRAMBLINGS)
    values = [float(jnp.mean(statistic(quasi_random_channel(config, POINTS, k)))) for k in keys]
    return float(np.mean(values)), float(np.std(values, ddof=1) / math.sqrt(SCRAMBLINGS))


@pytest.mark.parametrize(
    "config, truth",
    [
        (SLRConfig("spiked", 1, LengthLaw.fixed(3), 2.0, 0.0), math.sqrt(2.0)),
        (SLRConfig("max", 1, LengthLaw.fixed(3), math.inf, 0.0), 1.5 / math.sqrt(math.pi)),
    ],
)
def test_the_location_key_projection_has_its_exact_mean(config, truth):
    """Spiked: the location's key projection is ``N(sqrt(nu), 1)``; max ``nu = inf``: it is the
    largest of three normals, mean ``3 / (2 sqrt(pi))``."""
    mean, stderr = over_scramblings(config, located)
    assert abs(mean - truth) < 5 * stderr + 1e-12


def test_output_moment_and_lengths_match_the_law():
    """``E[y^2] = 1 + Delta`` and the mean length of ``U{1..4}`` is 2.5."""
    config = SLRConfig("spiked", 1, LengthLaw.uniform(4), 2.0, 0.3)
    mean, stderr = over_scramblings(config, lambda d: d.y**2)
    assert abs(mean - 1.3) < 5 * stderr
    mean, stderr = over_scramblings(config, lambda d: jnp.sum(d.mask, axis=1))
    assert abs(mean - 2.5) < 5 * stderr + 1e-12


def test_finite_tilt_location_matches_the_monte_carlo_channel():
    """Max-SLR ``nu = 2`` (location drawn given the tokens by its inverse distribution function)
    against the simulator's channel, 2^17 plain Monte Carlo draws."""
    config = SLRConfig("max", 1, LengthLaw.fixed(3), 2.0, 0.0)
    mean, stderr = over_scramblings(config, located)
    reference = np.asarray(located(draw_channel(jax.random.PRNGKey(3), config, 2**17)))
    combined = math.hypot(stderr, reference.std() / math.sqrt(reference.size))
    assert abs(mean - reference.mean()) < 5 * combined
