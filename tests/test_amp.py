"""Bayes-optimal GAMP (bayes_slr/inference/amp.py, docs/theory.md part C).

References that do not go through AMP: the state evolution of the Bayes-optimal theory
(``bayes_replica_point``, ``bayes_state_evolution_history``), solved in the test, and the exact
Gibbs sampler on the same data. Tolerances are finite-size fluctuations measured over seeds
(docs/theory.md part C), scaled by ``1/sqrt(D)`` and by the number of seeds averaged.
"""

from __future__ import annotations

import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from bayes_slr.errors import ConfigError
from bayes_slr.experiments.amp import AMPOptions, amp_point, check_point
from bayes_slr.inference import amp
from bayes_slr.inference.diagnostics import overlaps as draw_overlaps
from bayes_slr.inference.predictive import excess_error_given_teacher, posterior_mean_predictor, thin_draws
from bayes_slr.inference.samplers import run_gibbs
from bayes_slr.models.simulate import draw_teacher, simulate, streamed_mean
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.theory.replica_bayes import bayes_state_evolution_history

SPIKED = SLRConfig("spiked", 200, LengthLaw.fixed(3), 2.0, 0.1)


def small_run(config: SLRConfig, alpha: float, seed: int = 0, **options) -> tuple[amp.AMPResult, amp.AMPData]:
    """GAMP on one exact teacher's data; returns the result and the data."""
    key_teacher, key_data, key_start = jax.random.split(jax.random.PRNGKey(seed), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, round(alpha * config.D), dtype=options.pop("dtype", "float64"))
    return amp.run_amp(key_start, data, config, teacher=teacher, **options), data


@pytest.mark.parametrize(
    "make, name",
    [
        (lambda: check_point(SPIKED.replace(D=1), 1.0, AMPOptions()), "D"),
        (lambda: check_point(SPIKED, 0.0, AMPOptions()), "alpha"),
        (lambda: check_point(SPIKED, 1e-4, AMPOptions()), "alpha"),
        (lambda: check_point(SPIKED, -1.0, AMPOptions()), "alpha"),
        (lambda: AMPOptions(dtype="int8"), "dtype"),
        (lambda: AMPOptions(dtype="float16"), "dtype"),
        (lambda: AMPOptions(damping=0.0), "damping"),
        (lambda: AMPOptions(damping=1.5), "damping"),
        (lambda: AMPOptions(damping=float("nan")), "damping"),
        (lambda: AMPOptions(tol=0.0), "tol"),
        (lambda: AMPOptions(max_iter=0), "max_iter"),
        (lambda: AMPOptions(init="uninformed"), "init"),
        (lambda: check_point(SLRConfig("max", 200, LengthLaw.fixed(3), 200.0, 0.1), 1.0, AMPOptions()), "nu"),
        (lambda: check_point(SPIKED, 4.0, AMPOptions(memory_limit=1000)), "GiB"),
    ],
)
def test_bad_input_raises_config_error_naming_the_parameter(make, name):
    """Every option out of range is refused before any work, with a message naming it."""
    with pytest.raises(ConfigError, match=name):
        make()


def test_data_of_the_wrong_shape_is_refused():
    key = jax.random.PRNGKey(0)
    data = amp.AMPData(jnp.zeros((10, 3, 50)), jnp.zeros(10), jnp.ones((10, 3), bool))
    with pytest.raises(ConfigError, match="shape"):
        amp.run_amp(key, data, SPIKED)
    with pytest.raises(ConfigError, match="informed"):
        amp.amp_init(key, data, SPIKED.replace(D=50), "informed")


def test_non_converging_run_reports_converged_false_and_last_residual():
    """Too few iterations: ``converged`` is False and the last residual is reported (above ``tol``)."""
    result, _ = small_run(SPIKED, 1.0, max_iter=3, tol=1e-9)
    assert int(result.state.iteration) == 3
    assert not bool(result.converged)
    residual = float(result.state.residual)
    assert math.isfinite(residual) and residual > 1e-9
    assert float(result.residual_history[3]) == residual
    assert np.all(np.isnan(np.asarray(result.history[4:])))


def test_converged_run_meets_its_tolerance_and_stays_a_fixed_point():
    """A converged run's last residual is below ``tol``; one more step moves ``W`` by about as little."""
    config = SPIKED
    result, data = small_run(config, 2.0, tol=1e-8)
    assert bool(result.converged)
    assert float(result.state.residual) <= 1e-8
    state, info = amp.amp_step(result.state, data, config, amp.DEFAULT_DAMPING)
    assert float(info["residual"]) < 1e-7


def test_padded_tokens_are_inert():
    """Variable length: garbage in the padded token slots changes nothing (mask everywhere)."""
    config = SLRConfig("spiked", 150, LengthLaw.uniform(3), 2.0, 0.1)
    key_teacher, key_data, key_start, key_junk = jax.random.split(jax.random.PRNGKey(3), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    data = amp.amp_data(key_data, config, teacher, 300)
    assert not bool(jnp.all(data.mask))
    junk = jax.random.normal(key_junk, data.X.shape) * 5.0
    dirty = data._replace(X=jnp.where(data.mask[..., None], data.X, junk))
    clean_result = amp.run_amp(key_start, data, config, teacher=teacher, max_iter=40)
    dirty_result = amp.run_amp(key_start, dirty, config, teacher=teacher, max_iter=40)
    np.testing.assert_allclose(dirty_result.state.W, clean_result.state.W, rtol=0, atol=1e-10)
    np.testing.assert_allclose(dirty_result.state.C, clean_result.state.C, rtol=0, atol=1e-12)
    predict = amp.amp_predictor(config, clean_result.state)
    lengths = jnp.sum(data.mask, axis=1)
    np.testing.assert_allclose(predict(dirty.X, lengths), predict(data.X, lengths), rtol=0, atol=1e-10)


def test_float32_reaches_the_float64_fixed_point():
    """Same data in float32: the fixed point moves by float32 rounding amplified by the iteration only.

    The overlaps agree to 1e-4 (float32 resolution 1e-7 times the condition of the damped map;
    measured 1e-6 at D = 200).
    """
    r64, data64 = small_run(SPIKED, 2.0, tol=1e-6)
    r32, data32 = small_run(SPIKED, 2.0, tol=1e-5, dtype="float32")
    assert data32.X.dtype == jnp.float32 and r32.state.W.dtype == jnp.float32
    assert bool(r64.converged) and bool(r32.converged)
    o64 = np.asarray(r64.history[int(r64.state.iteration)])
    o32 = np.asarray(r32.history[int(r32.state.iteration)])
    np.testing.assert_allclose(o32, o64, atol=1e-4)
