"""A new ERM optimiser is one object in one place: shown by a toy defined in this file alone.

``adam-toy``: full-batch Adam (``optax.adam``) for ``max_iter`` steps. From the informed start it
must end at the minimum L-BFGS finds from the same start: the objective gap is at most the
gradient norm times the distance between the two ends (the first-order bound at a minimum of a
locally convex objective), and ``fit_erm``, ``ERMSettings`` and the choices of ``gap``'s
``--optimizer`` take it by name from the registry.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest
from jax.flatten_util import ravel_pytree

from bayes_slr.attention.erm_settings import ERMSettings
from bayes_slr.attention.optimizers import (
    Optimizer,
    optimizer_names,
    register_optimizer,
    unregister_optimizer,
)
from bayes_slr.attention.training import fit_erm
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.gap_records import GapOptions
from bayes_slr.models.simulate import draw_teacher, simulate
from bayes_slr.models.spec import LengthLaw, SLRConfig


class FullBatchAdam(Optimizer):
    """Adam on the whole objective, ``max_iter`` steps of size ``learning_rate``."""

    def transformation(self, rule, D):
        return optax.adam(rule.learning_rate)

    def minimise(self, params, problem, rule):
        solver = self.transformation(rule, problem.samples[0].shape[-1])

        def step(_, carry):
            p, state = carry
            updates, state = solver.update(jax.grad(problem.value_fn)(p), state, p)
            return optax.apply_updates(p, updates), state

        params, _ = jax.lax.fori_loop(0, rule.max_iter, step, (params, solver.init(params)))
        value, grad = jax.value_and_grad(problem.value_fn)(params)
        count = jnp.asarray(rule.max_iter, jnp.int32)
        return params, value, optax.tree_utils.tree_norm(grad), count


@pytest.fixture
def toy():
    register_optimizer(
        FullBatchAdam("adam-toy", "full-batch Adam", vectorised=True, warm_path=False)
    )
    yield "adam-toy"
    unregister_optimizer("adam-toy")


def test_a_registered_optimizer_reaches_the_lbfgs_minimum(toy):
    config = SLRConfig("spiked", 12, LengthLaw.fixed(3), 2.0, 0.1)
    teacher = draw_teacher(jax.random.PRNGKey(0), config.D)
    batch = simulate(jax.random.PRNGKey(1), config, teacher, 240)
    common = dict(lam=0.1, init="informed", teacher=teacher)
    reference = fit_erm(jax.random.PRNGKey(2), batch, config, "softmax", **common)
    fit = fit_erm(
        jax.random.PRNGKey(2),
        batch,
        config,
        "softmax",
        optimizer=toy,
        max_iter=4000,
        learning_rate=1e-2,
        **common,
    )
    assert reference.converged and fit.iterations == 4000
    distance = float(
        np.linalg.norm(ravel_pytree(fit.params)[0] - ravel_pytree(reference.params)[0])
    )
    gap = fit.train_loss - reference.train_loss
    bound = (fit.grad_norm + reference.grad_norm) * distance
    assert -bound - 1e-12 <= gap <= bound + 1e-12
    assert distance < 0.05 * float(np.linalg.norm(ravel_pytree(reference.params)[0]))


def test_the_registry_names_the_choices(toy):
    assert toy in optimizer_names()
    assert ERMSettings(optimizer=toy).optimizer == toy
    assert GapOptions(optimizer=toy).optimizer == toy
    with pytest.raises(ConfigError, match="optimizer must be one of lbfgs, sgd, adam-toy"):
        ERMSettings(optimizer="nope")
