"""Finite-alpha Bayes-optimal inference as whole measurements: one posterior point, and a sweep over
alpha.

:func:`sample_point` draws a teacher and ``N = round(alpha D)`` training sequences and
samples the posterior of ``(k*, v*)``; :func:`summarise` reports convergence
diagnostics, posterior overlaps, the test error of the posterior predictor, reference
errors and ERM (softmax, linear) on the same data; :func:`posterior_sweep` runs points
over alpha through the resumable sweep runner; :func:`posterior_on_data` does one point on a
user's data set (with its teacher, or scored on held-out sequences without one).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import jax
import numpy as np
import xarray as xr

from bayes_slr.attention.estimators import attention_predictor
from bayes_slr.errors import ConfigError, check_int
from bayes_slr.experiments.erm import check_lam, erm_experiment
from bayes_slr.inference import diagnostics, posterior_io
from bayes_slr.inference.location import known_directions_predictor
from bayes_slr.inference.predictive import (
    IMPORTANCE_ESS_WARNING,
    posterior_errors,
    scored_posterior_errors,
)
from bayes_slr.inference.samplers import PosteriorDraws, check_sampling_arguments, sample_posterior
from bayes_slr.models.dataset import DEFAULT_HOLDOUT, Dataset, training_and_test
from bayes_slr.models.scoring import (
    Predictor,
    Scorer,
    difference_name,
    fresh_sample_scorer,
    held_out_scorer,
    zero_predictor,
)
from bayes_slr.models.simulate import SLRBatch, Teacher, draw_teacher, simulate
from bayes_slr.models.spec import SLRConfig, training_size
from bayes_slr.records import Executor, SweepLog, json_ready, run_sweep
from bayes_slr.theory.bayes import bayes_error_exact

ERM_ACTIVATIONS = ("softmax", "linear")
PAIRED_DIFFERENCES = (
    ("bayes", "erm_softmax"),
    ("bayes", "erm_linear"),
    ("erm_softmax", "erm_linear"),
    ("bayes", "zero"),
)
"""Differences reported on held-out sequences (bring-your-own data without a teacher), paired on the
same
sequences; the ERM ones only with the ERM comparison. ``bayes`` is the Bayes-optimal predictor,
``erm_<a>`` ERM."""


@dataclasses.dataclass(frozen=True)
class PosteriorOptions:
    """How one posterior point is sampled and evaluated (validated by :meth:`check`)."""

    sampler: str = "auto"
    chains: int = 4
    warmup: int = 500
    samples: int = 500
    init: str = "random"
    N_test: int = 100_000
    max_draws: int = 1_000
    erm: bool = True
    lam: float | str = "auto"
    exact_teacher: bool = False
    check_start: bool = False

    def check(self, config: SLRConfig) -> None:
        """Raise ``ConfigError`` on any option out of range for ``config``."""
        chains, _, _ = check_sampling_arguments(
            config,
            sampler=self.sampler,
            chains=self.chains,
            warmup=self.warmup,
            samples=self.samples,
            init=self.init,
        )
        if self.check_start and chains < 2:
            raise ConfigError(
                f"chains must be >= 2 with check-start (r_hat needs two chains per start), "
                f"got {self.chains}"
            )
        self.check_evaluation()
        if self.exact_teacher:
            check_int("D", config.D, 2)

    def check_evaluation(self) -> None:
        """Raise ``ConfigError`` on a bad test-set size, draw count or ERM penalty."""
        check_int("N_test", self.N_test, 2)
        check_int("max_draws", self.max_draws, 1)
        check_lam(self.lam)


CHECK_GROUP = "check_start_posterior"
"""DataTree group holding the draws of the check-start chains (other start, same data)."""
RHAT_WARNING = 1.01
ESS_WARNING = 400.0
START_AGREEMENT_WARNING = 3.0
"""Starts disagree when their errors differ by more than this many combined standard errors."""


def _other_init(init: str) -> str:
    return "informed" if init == "random" else "random"


def sample_point(
    config: SLRConfig,
    alpha: float,
    options: PosteriorOptions,
    seed: int,
    *,
    data: tuple[Teacher | None, SLRBatch] | None = None,
    about_data: dict[str, Any] | None = None,
) -> xr.DataTree:
    """Draw the teacher and training set of ``seed``, sample the posterior, return its ArviZ
    ``DataTree``.

    ``data``: a given ``(teacher, training set)`` of ``N = round(alpha D)`` sequences instead
    (:func:`posterior_on_data`); the chains use the same key as for drawn data, so the same
    sequences give the same draws. The teacher may be ``None`` (then ``init`` must be random and
    there is no start check); ``about_data`` is recorded with the settings.

    With ``options.check_start`` a second set of chains from the other start (informed when
    the main chains start at random, with the teacher known) samples the same posterior;
    its draws are stored in the group ``check_start_posterior``.
    """
    N = training_size(alpha, config.D)
    key_teacher, key_data, key_sampler = jax.random.split(jax.random.PRNGKey(seed), 3)
    if data is None:
        teacher = draw_teacher(key_teacher, config.D, exact=options.exact_teacher)
        batch = simulate(key_data, config, teacher, N)
    else:
        teacher, batch = data
        if batch.y.shape[0] != N:
            raise ConfigError(
                f"data: the training set has {batch.y.shape[0]} sequences, alpha D = {N}"
            )
    if teacher is None and options.init != "random":
        raise ConfigError(
            "init must be random for data without a teacher (the informed start is the teacher)"
        )
    sampling = {
        "sampler": options.sampler,
        "chains": options.chains,
        "warmup": options.warmup,
        "samples": options.samples,
        "teacher": teacher,
    }
    draws = sample_posterior(key_sampler, config, batch, init=options.init, **sampling)
    settings = {
        "alpha": alpha,
        "N": N,
        **dataclasses.asdict(options),
        "sampler": draws.sampler,
        "sampler_option": options.sampler,
        "data": about_data,
    }
    tree = posterior_io.to_datatree(draws, config, batch, teacher, seed=seed, settings=settings)
    if options.check_start and teacher is not None:
        other = sample_posterior(
            jax.random.fold_in(key_sampler, 1),
            config,
            batch,
            init=_other_init(options.init),
            **sampling,
        )
        tree[CHECK_GROUP] = xr.DataTree(
            xr.Dataset(
                {
                    "k": (("chain", "draw", "dim"), other.k),
                    "v": (("chain", "draw", "dim"), other.v),
                },
                attrs={"init": _other_init(options.init)},
            )
        )
    return tree


def _check_start_table(
    tree: xr.DataTree, config: SLRConfig, teacher, batch
) -> dict[str, dict[str, float]]:
    """Diagnostics table of the check-start chains (same format as the main table)."""
    group = tree[CHECK_GROUP]
    k, v = group["k"].values, group["v"].values
    draws = PosteriorDraws(k, v, np.zeros(k.shape[:2]), {}, "check")
    return diagnostics.diagnostics_table(
        posterior_io.to_datatree(draws, config, batch, teacher, seed=None)
    )


def summarise(
    tree: xr.DataTree, options: PosteriorOptions, held_out: Dataset | None = None
) -> dict[str, Any]:
    """Diagnostics, overlaps, the two posterior predictors' test errors, warnings, start check, ERM.

    The test set comes from the recorded seed, so a re-summarised file gives the same numbers.
    ``bayes_test_error`` (with ``stderr``) is the Bayes-optimal predictor (draws weighted by
    ``p(X | k)``), ``posterior_mean_f_error`` the plain posterior mean of ``f``; both are
    unbiased for the error of the exact posterior predictor (disjoint draw groups), with
    standard errors covering the test set and the draws.

    A tree without a teacher (bring-your-own data) is scored on ``held_out`` (required then)
    by :func:`~bayes_slr.models.scoring.held_out_error`: every error is the held-out mean of
    ``(y - f)^2`` minus ``Delta``, ERM is trained on the tree's training set, and the oracle
    error, the overlaps ``m_k, m_v`` and the start check are absent (``notes`` says so).
    ``paired_differences`` (``None`` with a teacher) then holds :data:`PAIRED_DIFFERENCES`:
    every predictor is scored in one pass over the held-out sequences, and each difference is the
    mean over them of the per-sequence difference of the two errors, with its standard error
    (over sequences, combined with the posterior predictor's draw jackknife), far smaller than
    the two errors' own when the predictors err on the same sequences.
    """
    record = posterior_io.record_of(tree)
    config = posterior_io.config_of(tree)
    teacher, batch = posterior_io.teacher_of(tree), posterior_io.batch_of(tree)
    k, v = posterior_io.draws_of(tree)
    key_test, key_erm = jax.random.split(
        jax.random.fold_in(jax.random.PRNGKey(record["seed"] or 0), 1)
    )
    score = _scorer(key_test, config, teacher, held_out, options)
    table = diagnostics.diagnostics_table(tree)
    erm, erm_predictors = (
        _erm_errors(key_erm, key_test, config, teacher, batch, options, held_out)
        if options.erm
        else (None, {})
    )
    others = {
        "zero": zero_predictor,
        **({f"erm_{a}": f for a, f in erm_predictors.items()} if teacher is None else {}),
    }
    paired = (
        [pair for pair in PAIRED_DIFFERENCES if set(pair) <= {"bayes", *others}]
        if teacher is None
        else []
    )
    errors = scored_posterior_errors(
        score, config, k, v, max_draws=options.max_draws, others=others, pairs=paired
    )
    zero = errors.others["zero"]
    stats = tree.sample_stats
    convergence = diagnostics.convergence_summary(table)
    divergences = int(stats["diverging"].sum()) if "diverging" in stats else None
    summary = {
        "config": record["config"],
        "seed": record["seed"],
        "sampler": record["config"].get("sampler"),
        "data": record["config"].get("data"),
        "bayes_test_error": errors.bayes.value,
        "stderr": errors.bayes.stderr,
        "bayes_error": errors.bayes.as_dict(),
        "posterior_mean_f_error": errors.plain.as_dict(),
        "importance_ess": errors.importance_ess,
        "n_test": errors.bayes.n_test,
        "test_set": "fresh sequences from the teacher"
        if held_out is None
        else "held-out sequences of the data",
        "population_bayes_error": bayes_error_exact(config).value,
        "prior_predictive_error": {"value": zero.value, "stderr": zero.stderr},
        "paired_differences": (
            {
                difference_name(a, b): errors.others[difference_name(a, b)].as_dict()
                for a, b in paired
            }
            if teacher is None
            else None
        ),
        **convergence,
        "divergences": divergences,
        "diagnostics": table,
        "start_check": None,
        "start_agreement": None,
        "multimodal": None,
        "notes": [],
    }
    if teacher is None:
        summary["notes"] = _teacherless_notes(errors.bayes.n_test, options)
    else:
        oracle = score(known_directions_predictor(config, teacher))
        summary["oracle_error"] = {"value": oracle.value, "stderr": oracle.stderr}
        summary["overlaps"] = {name: table[name]["mean"] for name in posterior_io.OVERLAPS}
    if CHECK_GROUP in tree.children:
        summary.update(
            _start_check(tree, options, config, teacher, batch, key_test, table, errors.bayes)
        )
    summary["warnings"] = warnings_of(summary)
    summary["erm"] = erm
    return summary


def _scorer(
    key_test: jax.Array,
    config: SLRConfig,
    teacher: Teacher | None,
    held_out: Dataset | None,
    options: PosteriorOptions,
) -> Scorer:
    """The test set: ``N_test`` fresh sequences of the teacher, or the held-out sequences when there
    is none.
    """
    if teacher is not None:
        return fresh_sample_scorer(key_test, config, teacher, options.N_test)
    if held_out is None:
        raise ConfigError(
            "a posterior without a teacher needs held-out sequences to measure the test error on"
        )
    return held_out_scorer(config, held_out.as_batch())


def _teacherless_notes(n_held_out: int, options: PosteriorOptions) -> list[str]:
    """What a reader must know about errors measured without a teacher."""
    notes = [
        f"no teacher in the data: errors are mean (y - f)^2 - Delta on {n_held_out} held-out "
        f"sequences "
        "(not used for sampling or training); the oracle error and the overlaps m_k, m_v are "
        "omitted"
    ]
    if options.check_start:
        notes.append(
            "no start check: its other start is the teacher (informed), which the data do not have"
        )
    return notes


def _start_check(tree, options, config, teacher, batch, key_test, table, error) -> dict[str, Any]:
    """Errors and overlaps of the other start's chains against the main ones.

    ``start_agreement`` = (main error - check error) / combined standard error.
    ``multimodal`` is true when the two errors differ by more than
    ``START_AGREEMENT_WARNING`` standard errors, or an overlap's means differ by more than
    4 combined Monte Carlo standard errors: the two sets of chains then did not find the
    same posterior (the check chains' own ``r_hat`` is reported beside).
    """
    group = tree[CHECK_GROUP]
    other = posterior_errors(
        key_test,
        config,
        teacher,
        group["k"].values,
        group["v"].values,
        N_test=options.N_test,
        max_draws=options.max_draws,
    )
    check_table = _check_start_table(tree, config, teacher, batch)
    agreement = (error.value - other.bayes.value) / float(
        np.hypot(error.stderr, other.bayes.stderr)
    )
    overlap_z = {
        name: (table[name]["mean"] - check_table[name]["mean"])
        / float(np.hypot(table[name]["mcse_mean"], check_table[name]["mcse_mean"]))
        for name in posterior_io.OVERLAPS
    }
    check_rhat = diagnostics.convergence_summary(check_table)["rhat_max"]
    multimodal = bool(
        abs(agreement) > START_AGREEMENT_WARNING or max(abs(z) for z in overlap_z.values()) > 4
    )
    return {
        "start_check": {
            "init": group.attrs.get("init"),
            "bayes_test_error": other.bayes.as_dict(),
            "posterior_mean_f_error": other.plain.as_dict(),
            "overlaps": {name: check_table[name]["mean"] for name in posterior_io.OVERLAPS},
            "overlap_difference_in_mcse": overlap_z,
            "rhat_max": check_rhat,
        },
        "start_agreement": agreement,
        "multimodal": multimodal,
    }


def warnings_of(summary: dict[str, Any]) -> list[str]:
    """One line per reason not to read the numbers of ``summary`` (empty when none)."""
    out = []
    if not np.isfinite(summary["rhat_max"]) or summary["rhat_max"] > RHAT_WARNING:
        out.append(
            f"r_hat max {summary['rhat_max']:.3f} > {RHAT_WARNING}: chains have not converged "
            "(or one chain only); the errors are not trustworthy"
        )
    if summary["ess_bulk_min"] < ESS_WARNING:
        out.append(
            f"ESS bulk min {summary['ess_bulk_min']:.0f} < {ESS_WARNING:.0f}: too few "
            f"effective draws"
        )
    if summary["divergences"]:
        out.append(
            f"{summary['divergences']} divergent transitions: the sampler missed part of the "
            f"posterior"
        )
    ess = summary["importance_ess"]
    if ess["q05"] < IMPORTANCE_ESS_WARNING:
        out.append(
            f"importance ESS 5% quantile {ess['q05']:.0f} < {IMPORTANCE_ESS_WARNING:.0f} "
            f"draws: the "
            "Bayes-optimal predictor rests on few draws for some test sequences"
        )
    if summary["multimodal"]:
        worst = max(
            summary["start_check"]["overlap_difference_in_mcse"].items(),
            key=lambda item: abs(item[1]),
        )
        out.append(
            f"starts disagree (errors differ by {summary['start_agreement']:+.1f} SE, "
            f"{worst[0]} by "
            f"{worst[1]:+.1f} MCSE): multimodal posterior or chains stuck; the errors are not "
            f"trustworthy"
        )
    return out


def _erm_errors(
    key_fit,
    key_test,
    config,
    teacher,
    batch,
    options: PosteriorOptions,
    held_out: Dataset | None = None,
) -> tuple[dict[str, dict[str, Any]], dict[str, Predictor]]:
    """ERM on the posterior's own training set, as ``gap`` runs it: several starts, the ridge by
    validation;
    scored on the posterior's test set (fresh sequences of the teacher, or ``held_out``).

    Returns the errors per activation and the fitted predictors (to score again beside the
    posterior's).
    """
    errors, predictors = {}, {}
    alpha = batch.y.shape[0] / config.D
    test = None if teacher is not None or held_out is None else held_out.as_batch()
    for activation in ERM_ACTIVATIONS:
        summary = erm_experiment(
            config,
            activation,
            alpha=alpha,
            lam=options.lam,
            seeds=1,
            seed=int(jax.random.randint(key_fit, (), 0, 2**31 - 1)),
            N_test=options.N_test,
            predict_population=False,
            data=(teacher, batch),
            test_set=test,
        )
        seed_row = summary.per_seed[0]
        errors[activation] = {
            "test_error": summary.test_error,
            "stderr": summary.stderr,
            "converged": bool(seed_row["converged"]),
            "lam": seed_row["lam"],
            "restarts_agree": summary.restarts_agree,
            "notes": list(summary.notes),
        }
        fit = jax.tree_util.tree_map(lambda leaf: leaf[0], summary.params)
        predictors[activation] = attention_predictor(fit, activation)
    return errors, predictors


def posterior_on_data(
    config: SLRConfig,
    data: Dataset,
    options: PosteriorOptions,
    seed: int,
    *,
    holdout: float = DEFAULT_HOLDOUT,
    about: dict[str, Any] | None = None,
) -> tuple[xr.DataTree, dict[str, Any]]:
    """The posterior of a given data set and its summary (bring-your-own data).

    With a teacher in ``data`` every sequence is a training sequence and the summary is
    :func:`summarise`'s as for drawn data (test errors on fresh sequences of the teacher).
    Without one, ``round(holdout N)`` sequences chosen by ``seed`` are held out
    (:func:`~bayes_slr.models.dataset.split_holdout`), the posterior is sampled on the rest,
    and every error (Bayes-optimal and plain posterior predictors, zero predictor, ERM softmax
    and linear trained on the same rest) is measured on them. ``about`` (file, where each
    setting came from) is recorded in the tree and returned as ``summary["data"]``.

    Returns
    -------
    (tree, summary)
    """
    options.check(config)
    train, test = training_and_test(data, holdout, seed)
    about = {
        **(about or {}),
        "N": data.N,
        "n_train": train.N,
        "n_held_out": 0 if test is None else test.N,
        "holdout": None if test is None else holdout,
        "teacher": data.teacher is not None,
    }
    tree = sample_point(
        config,
        train.N / config.D,
        options,
        seed,
        data=(train.teacher, train.as_batch()),
        about_data=about,
    )
    return tree, summarise(tree, options, held_out=test)


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
    failures: list[tuple[dict[str, Any], str]] | None = None,
) -> list[dict[str, Any]]:
    """One posterior per alpha, skipping points finished in ``log``; netCDF files go to ``out``.

    ``failures`` collects the points that raised (the sweep goes on); None: the first failure
    raises.

    Returns one row per alpha: ``{"alpha", **summary}`` without the configuration and the full
    diagnostics table.
    """
    options.check(config)
    for alpha in alphas:
        training_size(alpha, config.D)
    points = [
        {**config.to_dict(), "alpha": alpha, "seed": seed, **dataclasses.asdict(options)}
        for alpha in alphas
    ]

    def solve(point: dict[str, Any]) -> dict[str, Any]:
        tree = sample_point(config, point["alpha"], options, seed)
        if out is not None:
            posterior_io.save_posterior(
                tree, out / f"posterior_alpha{point['alpha']:g}.nc", force=True
            )
        return json_ready(
            {
                key: value
                for key, value in summarise(tree, options).items()
                if key not in ("config", "diagnostics")
            }
        )

    done, failed = run_sweep(
        points,
        solve,
        log=log,
        seed_of=lambda point: seed,
        executor=executor,
        progress=progress,
        description="posterior-sweep",
    )
    if failures is not None:
        failures.extend(failed)
    return [{"alpha": point["alpha"], **result} for point, result in done]


def exact_teacher_errors(
    config: SLRConfig,
    alpha: float,
    seed: int,
    *,
    chains: int = 4,
    warmup: int = 300,
    samples: int = 300,
    N_test: int = 10_000,
    max_draws: int = 200,
) -> dict[str, float]:
    """One exact teacher (``|k*|^2 = |v*|^2 = D``, ``k* ⟂ v*``) and its posterior
    (``sampler="auto"``,
    random starts): unbiased errors of the Bayes-optimal and plain predictors."""
    key_teacher, key_data, key_sampler, key_test = jax.random.split(jax.random.PRNGKey(seed), 4)
    teacher = draw_teacher(key_teacher, config.D, exact=True)
    batch = simulate(key_data, config, teacher, training_size(alpha, config.D))
    draws = sample_posterior(
        key_sampler, config, batch, chains=chains, warmup=warmup, samples=samples
    )
    errors = posterior_errors(
        key_test, config, teacher, draws.k, draws.v, N_test=N_test, max_draws=max_draws
    )
    return {"bayes": errors.bayes.value, "plain": errors.plain.value}


def fit_against_inverse_D(
    sizes: Sequence[int], gaps: Sequence[float], stderrs: Sequence[float]
) -> dict[str, float]:
    """Weighted least squares ``gap = a + b / D``; ``a`` is the residual at ``D -> inf``.

    Returns ``a``, ``b`` and their standard errors (from the stated standard errors of the
    gaps; with two sizes the fit is exact and the errors are propagated the same way).
    """
    D = np.asarray(sizes, float)
    design = np.stack([np.ones_like(D), 1.0 / D], axis=1)
    weights = 1.0 / np.asarray(stderrs, float) ** 2
    covariance = np.linalg.inv(design.T @ (weights[:, None] * design))
    a, b = covariance @ design.T @ (weights * np.asarray(gaps, float))
    return {
        "intercept": float(a),
        "intercept_stderr": float(np.sqrt(covariance[0, 0])),
        "slope": float(b),
        "slope_stderr": float(np.sqrt(covariance[1, 1])),
    }


def state_evolution_gap(
    config: SLRConfig,
    alpha: float,
    sizes: Sequence[int],
    teachers: int,
    *,
    theory_samples: int = 16384,
    theory_seeds: int = 4,
    seed: int = 1000,
    **sampling: Any,
) -> dict[str, Any]:
    """Sampler errors minus the state evolution's, averaged over exact teachers, at each ``D``,
    fitted against ``1/D``.

    ``bayes`` (weighted predictor) is compared with the theory's ``test_error``, ``plain`` with
    its ``posterior_mean_f_error``. Standard errors: over teachers, combined with the theory's
    seed-to-seed spread (``theory_seeds`` sets of ``theory_samples`` draws).
    """
    from bayes_slr.theory.replica_bayes import bayes_replica_point

    check_int("teachers", teachers, 2)
    theory = {"bayes": [], "plain": []}
    for theory_seed in range(theory_seeds):
        point = bayes_replica_point(
            config, alpha=alpha, mc_samples=theory_samples, seed=theory_seed
        )
        theory["bayes"].append(point.test_error)
        theory["plain"].append(point.diagnostics["posterior_mean_f_error"])
    theory_mean = {name: float(np.mean(values)) for name, values in theory.items()}
    theory_se = {
        name: float(np.std(values, ddof=1) / np.sqrt(len(values))) if len(values) > 1 else 0.0
        for name, values in theory.items()
    }
    rows = []
    for D in sizes:
        measured = [
            exact_teacher_errors(config.replace(D=D), alpha, seed + i, **sampling)
            for i in range(teachers)
        ]
        row = {"D": D, "teachers": teachers}
        for name in ("bayes", "plain"):
            values = np.array([m[name] for m in measured])
            se = float(np.hypot(values.std(ddof=1) / np.sqrt(values.size), theory_se[name]))
            row[name] = {
                "measured": float(values.mean()),
                "theory": theory_mean[name],
                "gap": float(values.mean()) - theory_mean[name],
                "stderr": se,
            }
        rows.append(row)
    fits = {
        name: fit_against_inverse_D(
            [r["D"] for r in rows],
            [r[name]["gap"] for r in rows],
            [r[name]["stderr"] for r in rows],
        )
        for name in ("bayes", "plain")
    }
    return {"config": config.to_dict(), "alpha": alpha, "rows": rows, "fit": fits}
