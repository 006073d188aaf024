"""A new posterior sampler is one record in one place: shown by a toy defined in this file alone.

``toy``: random-walk Metropolis on ``log p(k, v | data)`` with the locations summed out (the
NumPyro model's log-density), one move for ``k`` then one for ``v``, Gaussian proposals scaled by
the prior-plus-likelihood precision of each block. It supports the laws whose ``k`` is Gaussian
given the locations (the question is asked of the variant object), so the exact Gibbs sampler is
an independent route on the same posterior: their overlaps must agree within 4 combined Monte
Carlo standard errors (ArviZ ``mcse_mean``, as in test_kernels.py). It is run by name through
``bayes-slr posterior --sampler toy`` (hence ``sample_posterior``), whose choices and help come
from the registry when the parser is built.
"""

from __future__ import annotations

import contextlib
import functools
import io
import json
import math
from collections.abc import Callable
from typing import NamedTuple

import jax
import jax.numpy as jnp
import pytest

import bayes_slr
from bayes_slr import ConfigError, LengthLaw, SLRConfig
from bayes_slr.cli.main import main
from bayes_slr.inference import posterior_io
from bayes_slr.inference.kernels import Kernel, SamplerData
from bayes_slr.inference.sampler_registry import (
    Sampler,
    register_sampler,
    sampler_choices,
    unregister_sampler,
)
from bayes_slr.models.numpyro_models import marginal_log_density

# The task of tests/cli/test_cli_posterior.py (spiked, D = 10, L = 3, nu = 4, Delta = 0.1).
SPIKED = SLRConfig("spiked", 10, LengthLaw.fixed(3), 4.0, 0.1)


class ToyState(NamedTuple):
    k: jax.Array
    v: jax.Array
    data: SamplerData


def metropolis(
    key: jax.Array, x: jax.Array, log_target: Callable[[jax.Array], jax.Array], scale: float
) -> tuple[jax.Array, jax.Array]:
    """One random-walk Metropolis transition with proposal ``N(x, scale^2 I)``."""
    key_step, key_accept = jax.random.split(key)
    proposal = x + scale * jax.random.normal(key_step, x.shape)
    accept = jnp.log(jax.random.uniform(key_accept)) < log_target(proposal) - log_target(x)
    return jnp.where(accept, proposal, x), accept


@functools.lru_cache(maxsize=8)
def make_toy_kernel(config: SLRConfig, warmup: int) -> Kernel:
    """Random-walk Metropolis, ``k`` then ``v``; no adaptation (``warmup`` is unused)."""

    def log_density(k: jax.Array, v: jax.Array, data: SamplerData) -> jax.Array:
        return marginal_log_density({"k": k, "v": v}, config, data.X, data.lengths, data.y)

    def step(key: jax.Array, state: ToyState) -> tuple[ToyState, dict[str, jax.Array]]:
        data, N = state.data, state.data.y.shape[0]
        # 2.38 / sqrt(D) posterior standard deviations per block (Gaussian-conditional precisions)
        k_precision = 1.0 + N * config.law.key_normaliser_precision(config.nu) / config.D
        v_precision = 1.0 + N / (config.Delta * config.D)
        key_k, key_v = jax.random.split(key)
        k, accept_k = metropolis(
            key_k,
            state.k,
            lambda k: log_density(k, state.v, data),
            2.38 / math.sqrt(config.D * k_precision),
        )
        v, accept_v = metropolis(
            key_v,
            state.v,
            lambda v: log_density(k, v, data),
            2.38 / math.sqrt(config.D * v_precision),
        )
        return ToyState(k, v, data), {"acceptance_rate": (accept_k + accept_v) / 2.0}

    return Kernel(
        "toy",
        lambda key, data, start: ToyState(start[0], start[1], data),
        step,
        lambda state: (state.k, state.v),
    )


@pytest.fixture(scope="module", autouse=True)
def toy_sampler():
    register_sampler(
        Sampler(
            "toy",
            "random-walk Metropolis (a test's toy); variants whose k is Gaussian given the "
            "locations",
            lambda law: law.gaussian_key_given_locations,
            make_toy_kernel,
        )
    )
    yield
    unregister_sampler("toy")


TASK = [
    f"--{name}={value}"
    for name, value in (("variant", "spiked"), ("D", 10), ("L", 3), ("nu", 4), ("Delta", 0.1))
] + ["--alpha=8"]
CHEAP = [
    "--no-erm",
    "--no-check-start",
    "--init",
    "informed",
    "--N-test",
    "500",
    "--max-draws",
    "40",
]


def _posterior_json(sampler: str, samples: int) -> dict:
    """``bayes-slr posterior --json`` on :data:`TASK` (seed 0: the same data for every sampler)."""
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(
            ["posterior", *TASK, *CHEAP, "--sampler", sampler, "--chains", "4", "--warmup", "300"]
            + ["--samples", str(samples), "--json"]
        )
    assert code == 0
    (row,) = json.loads(stdout.getvalue())["rows"]
    return row


def test_command_line_runs_the_toy_sampler_and_it_agrees_with_exact_gibbs():
    """``--sampler toy`` runs end to end; the same posterior by two independent routes (the toy's
    Metropolis moves, Gibbs's exact conditionals): overlaps within 4 combined MCSE.
    """
    toy, gibbs = _posterior_json("toy", 8000), _posterior_json("gibbs", 500)
    assert toy["sampler"] == "toy" and gibbs["sampler"] == "gibbs"
    assert toy["rhat_max"] < 1.05 and math.isfinite(toy["bayes_error"]["value"])
    for name in posterior_io.OVERLAPS:
        a, b = toy["diagnostics"][name], gibbs["diagnostics"][name]
        assert abs(a["mean"] - b["mean"]) < 4 * math.hypot(a["mcse_mean"], b["mcse_mean"]), name


def test_the_registry_sets_the_choices_and_the_refusals(capsys):
    """The help lists the toy; an unknown name is refused with the registered names; the toy is
    refused, by name, for a variant it does not support (before any sampling).
    """
    assert "toy" in sampler_choices()
    with pytest.raises(SystemExit) as exit_help:
        main(["posterior", "--help"])
    assert exit_help.value.code == 0
    assert "toy: random-walk Metropolis" in " ".join(capsys.readouterr().out.split())
    assert main(["posterior", *TASK, "--sampler", "no-such-sampler"]) == 2
    assert "toy" in capsys.readouterr().err
    assert main(["posterior", *TASK, "--variant", "max", "--sampler", "toy"]) == 2
    assert "sampler toy does not support the max variant" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="sampler toy does not support the max variant"):
        bayes_slr.posterior(variant="max", nu=2.0, sampler="toy", progress=False)


def test_auto_is_not_a_sampler_name():
    with pytest.raises(ConfigError, match="other than 'auto'"):
        Sampler("auto", "", lambda law: True, make_toy_kernel)
