"""Finite-alpha Bayes-optimal inference as whole measurements: one posterior point, and a sweep over alpha.

:func:`sample_point` draws a teacher and ``N = round(alpha D)`` training sequences and
samples the posterior of ``(k*, v*)``; :func:`summarise` reports convergence
diagnostics, posterior overlaps, the test error of the posterior predictor, reference
errors and ERM (softmax, linear) on the same data; :func:`posterior_sweep` runs points
over alpha through the resumable sweep runner.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any, Sequence

import jax
import xarray as xr

from bayes_slr.errors import check_int, check_real
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import bayes_estimator
from bayes_slr.inference.predictive import bayes_test_error, excess_test_error, zero_predictor_error
from bayes_slr.inference.samplers import check_sampling_arguments, sample_posterior
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.records import Executor, SweepLog, json_ready, run_sweep
from bayes_slr.theory.bayes import bayes_error_exact

ERM_ACTIVATIONS = ("softmax", "linear")


@dataclasses.dataclass(frozen=True)
class PosteriorOptions:
    """How one posterior point is sampled and evaluated (validated by :meth:`check`)."""

    sampler: str = "nuts"
    chains: int = 4
    warmup: int = 500
    samples: int = 500
    init: str = "random"
    N_test: int = 100_000
    max_draws: int = 1_000
    erm: bool = True
    lam: float = 1e-3
    exact_teacher: bool = False

    def check(self, config: SLRConfig) -> None:
        """Raise ``ConfigError`` on any option out of range for ``config``."""
        check_sampling_arguments(config, sampler=self.sampler, chains=self.chains, warmup=self.warmup,
                                 samples=self.samples, init=self.init)
        self.check_evaluation()
        if self.exact_teacher:
            check_int("D", config.D, 2)

    def check_evaluation(self) -> None:
        """Raise ``ConfigError`` on a bad test-set size, draw count or ERM penalty."""
        check_int("N_test", self.N_test, 2)
        check_int("max_draws", self.max_draws, 1)
        check_real("lam", self.lam, minimum=0.0)


def sample_point(config: SLRConfig, alpha: float, options: PosteriorOptions, seed: int) -> xr.DataTree:
    """Draw the teacher and training set of ``seed``, sample the posterior, return its ArviZ ``DataTree``."""
    N = training_size(alpha, config.D)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(seed), 3)
    teacher = draw_teacher(key_teacher, config.D, exact=options.exact_teacher)
    batch = simulate(key_data, config, teacher, N)
    draws = sample_posterior(key_sampler, config, batch, sampler=options.sampler, chains=options.chains,
                             warmup=options.warmup, samples=options.samples, init=options.init, teacher=teacher)
    settings = {"alpha": alpha, "N": N, **dataclasses.asdict(options)}
    return posterior_io.to_datatree(draws, config, batch, teacher, seed=seed, settings=settings)


def summarise(tree: xr.DataTree, options: PosteriorOptions) -> dict[str, Any]:
    """Diagnostics, overlaps, Bayes test error and (optionally) ERM errors of one posterior.

    The test set comes from the recorded seed, so a re-summarised file gives the same numbers.
    """
    record = posterior_io.record_of(tree)
    config = posterior_io.config_of(tree)
    teacher, batch = posterior_io.teacher_of(tree), posterior_io.batch_of(tree)
    k, v = posterior_io.draws_of(tree)
    key_test, key_erm = jax.random.split(jax.random.fold_in(jax.random.PRNGKey(record["seed"] or 0), 1))
    table = diagnostics.diagnostics_table(tree)
    bayes = bayes_test_error(key_test, config, teacher, k, v, N_test=options.N_test, max_draws=options.max_draws)
    zero = zero_predictor_error(key_test, config, teacher, N_test=options.N_test)
    oracle = excess_test_error(key_test, config, teacher, lambda X, lengths: bayes_estimator(X, lengths, config, teacher),
                               N_test=options.N_test)
    population = bayes_error_exact(config)
    stats = tree.sample_stats
    summary = {
        "config": record["config"],
        "seed": record["seed"],
        "bayes_test_error": bayes.value,
        "stderr": bayes.stderr,
        "n_test": bayes.n_test,
        "oracle_error": {"value": oracle.value, "stderr": oracle.stderr},
        "population_bayes_error": population.value,
        "prior_predictive_error": {"value": zero.value, "stderr": zero.stderr},
        **diagnostics.convergence_summary(table),
        "divergences": int(stats["diverging"].sum()) if "diverging" in stats else None,
        "overlaps": {name: table[name]["mean"] for name in posterior_io.OVERLAPS},
        "diagnostics": table,
        "erm": _erm_errors(key_erm, key_test, config, teacher, batch, options) if options.erm else None,
    }
    return summary


def _erm_errors(key_fit, key_test, config, teacher, batch, options: PosteriorOptions) -> dict[str, dict[str, Any]]:
    from bayes_slr.experiments.erm import fit_erm, test_error

    errors = {}
    for activation in ERM_ACTIVATIONS:
        fit = fit_erm(key_fit, batch, config, activation, lam=options.lam)
        value, stderr = test_error(key_test, fit.params, config, teacher, activation, options.N_test)
        errors[activation] = {"test_error": value, "stderr": stderr, "converged": bool(fit.converged),
                              "lam": options.lam}
    return errors


def posterior_sweep(
    config: SLRConfig,
    alphas: Sequence[float],
    options: PosteriorOptions,
    seed: int,
    *,
    out: Path | None = None,
    log: SweepLog | None = None,
    executor: Executor | None = None,
    progress: bool = True,
) -> list[dict[str, Any]]:
    """One posterior per alpha, skipping points finished in ``log``; netCDF files go to ``out``.

    Returns one row per alpha: ``{"alpha", **summary}`` without the configuration and the full
    diagnostics table.
    """
    options.check(config)
    for alpha in alphas:
        training_size(alpha, config.D)
    points = [{**config.to_dict(), "alpha": alpha, "seed": seed, **dataclasses.asdict(options)} for alpha in alphas]

    def solve(point: dict[str, Any]) -> dict[str, Any]:
        tree = sample_point(config, point["alpha"], options, seed)
        if out is not None:
            posterior_io.save_posterior(tree, out / f"posterior_alpha{point['alpha']:g}.nc", force=True)
        return json_ready({key: value for key, value in summarise(tree, options).items()
                           if key not in ("config", "diagnostics")})

    done = run_sweep(points, solve, log=log, seed_of=lambda point: seed, executor=executor, progress=progress,
                     description="posterior-sweep")
    return [{"alpha": point["alpha"], **result} for point, result in done]
