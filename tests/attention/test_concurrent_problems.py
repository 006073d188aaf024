"""ERM problems run one after another on host threads give what one thread gives, in order."""

from __future__ import annotations

import os

import jax
import numpy as np
import pytest

from bayes_slr.attention import training
from bayes_slr.attention.estimators import random_params
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.numerics.devices import concurrent_programs


def _problems(seeds: int = 2, grid: int = 2, count: int = 3):
    """Tiny training sets (``L = 3``, ``D = 8``) and random starts, leading axes ``(seeds, G,
    S)``, and their ridges."""
    config = SLRConfig("spiked", 8, LengthLaw.fixed(3), 2.0, 0.1)
    keys = jax.random.split(jax.random.PRNGKey(7), seeds)
    batches = [simulate(k, config, draw_teacher(jax.random.fold_in(k, 1), 8), 64) for k in keys]
    batches = jax.tree_util.tree_map(lambda *leaves: np.stack(leaves), *batches)
    start_keys = jax.random.split(jax.random.PRNGKey(8), seeds * grid * count)
    starts = jax.vmap(lambda k: random_params(k, 8, 0.1))(start_keys)
    starts = jax.tree_util.tree_map(lambda a: a.reshape((seeds, grid, count) + a.shape[1:]), starts)
    lams = np.tile(np.array([1.0, 0.1]), (seeds, 1))
    return starts, batches, lams


def _solved(monkeypatch, threads: int, active: np.ndarray):
    monkeypatch.setattr(training, "concurrent_programs", lambda: threads)
    starts, batches, lams = _problems()
    return training.train_problems(
        starts,
        batches,
        lams,
        activation="softmax",
        optimizer="lbfgs",
        tol=1e-8,
        max_iter=500,
        vectorised=False,
        active=active,
    )


@pytest.mark.parametrize("first_inactive", [False, True])
def test_threads_give_the_one_thread_results_bit_for_bit(monkeypatch, first_inactive):
    """Every problem's fit, objective, gradient norm and iteration count, with 3 threads and
    with 1 (some problems inactive, the first one too in the second case: the problem that runs
    alone is then the first active one)."""
    active = np.ones((2, 2, 3), bool)
    active[1, 0, 2] = active[0, 1, 1] = False
    active[0, 0, 0] = not first_inactive
    alone = _solved(monkeypatch, 1, active)
    threaded = _solved(monkeypatch, 3, active)
    for one, many in zip(jax.tree_util.tree_leaves(alone), jax.tree_util.tree_leaves(threaded)):
        np.testing.assert_array_equal(one, many)
    values, counts = alone[1], alone[3]
    assert np.all(np.isinf(values[~active])) and np.all(counts[~active] == 0)
    assert np.all(np.isfinite(values[active])) and np.all(counts[active] > 0)
    # The problems differ (their starts and ridges): a mix-up of the order would show.
    assert np.unique(values[active]).size == active.sum()


def test_concurrent_programs_are_the_cores_this_process_may_use():
    assert concurrent_programs() == len(os.sched_getaffinity(0))
