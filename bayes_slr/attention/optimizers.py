"""The ERM optimisers: one registered object per algorithm (docs/erm.md).

An :class:`Optimizer` minimises the per-sample objective of
:func:`~bayes_slr.attention.training.objective` from a start, through an optax
``GradientTransformation``, and says how many problems are best run together (``vectorised``)
and whether ``lam="auto"`` walks its grid as a warm-started path (``warm_path``). Two are
registered:

- ``lbfgs``: ``optax.lbfgs`` (zoom line search, :data:`LBFGS_MEMORY` past steps) in a jitted
  ``lax.while_loop`` until the gradient norm of the objective is below ``tol`` or ``max_iter``
  iterations;
- ``sgd``: one pass over the samples in order, one sample per step, ``optax.sgd`` with
  the decaying step ``learning_rate / sqrt(1 + t / D)``; the regulariser is spread evenly
  over the ``N`` steps so that their sum is the objective.

The registry imports without JAX (the options check a name before any computation); adding an
optimiser is one :class:`Optimizer` subclass and a :func:`register_optimizer` call.
:func:`~bayes_slr.attention.training.train` runs the registered one of a name.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from typing import Any, NamedTuple

from bayes_slr.lazy import lazy_module
from bayes_slr.registry import Registry

# Imported on first use (bayes_slr.lazy): the registry imports without JAX.
jax = lazy_module("jax")
jnp = lazy_module("jax.numpy")
optax = lazy_module("optax")


LBFGS_MEMORY = 100
"""Past steps L-BFGS keeps to approximate the inverse Hessian (optax's default is 10).

The objective has ``2 D (+ 1)`` parameters and is ill-conditioned at small ridges, most of all
for linear attention at large ``L`` (its values scale with ``L``): along the validation path of
max-SLR ``L = 30`` linear, 10 steps took 266 iterations at ``lam = 1`` and 445 at ``0.316``, 100
steps 102 and 123, to the same objective (``benchmarks/lbfgs_memory.py``; at ``L = 3`` the same
counts). The memory's work per iteration, ``O(m D)``, is far below one evaluation of the
objective, ``O(N L D)`` (docs/performance.md)."""


class StoppingRule(NamedTuple):
    """How long an optimiser runs and how far it steps.

    Attributes
    ----------
    tol : stop once the gradient norm of the objective is at most this (``lbfgs``).
    max_iter : largest number of iterations (``lbfgs``).
    learning_rate : initial step (``sgd``).
    """

    tol: float
    max_iter: int
    learning_rate: float


class Profile(NamedTuple):
    """The objective minimised in closed form over some parameters (variable projection,
    :mod:`bayes_slr.attention.projection`): an optimiser may run over the rest alone.

    Attributes
    ----------
    reduce : params -> the parameters left to the optimiser.
    value_fn : the objective of those, minimised over the others (same minima).
    expand : those -> the full parameters, the others at their minimiser.
    draft : ``value_fn`` in float32 (float32 data), or ``None`` (:attr:`Problem.draft`).
    """

    reduce: Callable[[Any], Any]
    value_fn: Callable[[Any], Any]
    expand: Callable[[Any], Any]
    draft: Callable[[Any], Any] | None = None


@dataclasses.dataclass(frozen=True)
class Problem:
    """One ERM problem as an optimiser sees it.

    Attributes
    ----------
    value_fn : the per-sample objective of the parameters.
    sample_loss : ``(params, x, length, target) -> loss`` of one sample, the regulariser spread
        evenly over the samples (the SGD pass sums these).
    samples : ``(X, lengths, y)``, the training set.
    profile : the objective with some parameters in closed form (:class:`Profile`), if it
        has one; an optimiser may use it or not.
    draft : ``value_fn`` evaluated in float32 on float32 data, or ``None``: an optimiser may
        run it first and finish on ``value_fn`` (float64), which then sets the minimum and the
        figures reported (:class:`LBFGS`).
    """

    value_fn: Callable[[Any], Any]
    sample_loss: Callable[..., Any]
    samples: tuple[Any, Any, Any]
    profile: Profile | None = None
    draft: Callable[[Any], Any] | None = None


@dataclasses.dataclass(frozen=True)
class Optimizer:
    """An ERM optimiser (module docstring); subclasses define :meth:`transformation` and
    :meth:`minimise`.

    Attributes
    ----------
    name : what ``optimizer=`` and ``--optimizer`` call it.
    description : one line for help texts.
    vectorised : many problems run as one ``jax.vmap`` computation (cheap fixed-length loops);
        else one after another by one compiled trainer, each to its own stopping rule.
    warm_path : ``lam="auto"`` walks the ridge grid from the largest value down, each value warm
        started at the previous one's solution; else every value is trained from the starts.
    """

    name: str
    description: str
    vectorised: bool
    warm_path: bool

    def transformation(self, rule: StoppingRule, D: int) -> Any:
        """The optax ``GradientTransformation`` of the steps (``D``: the token dimension)."""
        raise NotImplementedError

    def minimise(
        self, params: Any, problem: Problem, rule: StoppingRule
    ) -> tuple[Any, Any, Any, Any]:
        """Pure JAX from ``params``: ``(params, objective, grad_norm, iterations)``."""
        raise NotImplementedError


class LBFGS(Optimizer):
    """L-BFGS with a zoom line search to ``|grad| <= tol`` or ``max_iter`` iterations."""

    def transformation(self, rule: StoppingRule, D: int) -> Any:
        """``optax.lbfgs(memory_size=LBFGS_MEMORY)``."""
        return optax.lbfgs(memory_size=LBFGS_MEMORY)

    def minimise(
        self, params: Any, problem: Problem, rule: StoppingRule
    ) -> tuple[Any, Any, Any, Any]:
        """Iterate in a ``lax.while_loop`` until the stopping rule or a non-finite objective;
        over the reduced parameters of ``problem.profile`` where it has one, the objective and
        gradient norm reported being the profiled objective's at the last reduced parameters
        (those of the expanded parameters: the profiled objective is the objective there, and
        its gradient the objective's, whose part in the parameters set in closed form is zero,
        :mod:`~bayes_slr.attention.projection`). With a ``draft`` (float32) objective, first on
        it (:meth:`_draft`), then on to the stopping rule in float64 from there, the memory
        kept."""
        profile = problem.profile
        if profile is None:
            return self._loop(params, problem.value_fn, rule, problem.draft)
        reduced, value, grad_norm, count = self._loop(
            profile.reduce(params), profile.value_fn, rule, profile.draft
        )
        return profile.expand(reduced), value, grad_norm, count

    def _loop(
        self,
        params: Any,
        value_fn: Callable[[Any], Any],
        rule: StoppingRule,
        draft: Callable[[Any], Any] | None = None,
    ):
        """L-BFGS on ``value_fn`` from ``params`` (after the ``draft`` objective's iterations,
        their memory carried over in float64): ``(params, objective, grad_norm, count)``."""
        solver = self.transformation(rule, jax.tree_util.tree_leaves(params)[0].shape[-1])
        state, count = solver.init(params), jnp.zeros((), jnp.int32)
        if draft is not None:
            dtype = jax.tree_util.tree_leaves(params)[0].dtype
            params, state, count = _cast(self._draft(params, draft, solver, rule), dtype)
        value, grad = jax.value_and_grad(value_fn)(params)
        state = optax.tree_utils.tree_set(state, value=value, grad=grad)
        value_and_grad = optax.value_and_grad_from_state(value_fn)

        def step(carry):
            p, state, _, _, count = carry
            value, grad = value_and_grad(p, state=state)
            updates, state = solver.update(
                grad, state, p, value=value, grad=grad, value_fn=value_fn
            )
            p = optax.apply_updates(p, updates)
            value = optax.tree_utils.tree_get(state, "value")
            grad_norm = optax.tree_utils.tree_norm(optax.tree_utils.tree_get(state, "grad"))
            return p, state, value, grad_norm, count + 1

        def keep_going(carry):
            _, _, value, grad_norm, count = carry
            return (count < rule.max_iter) & (grad_norm > rule.tol) & jnp.isfinite(value)

        start = (params, state, value, optax.tree_utils.tree_norm(grad), count)
        params, _, value, grad_norm, count = jax.lax.while_loop(keep_going, step, start)
        return params, value, grad_norm, count

    def _draft(self, params: Any, draft: Callable[[Any], Any], solver: Any, rule: StoppingRule):
        """L-BFGS on the float32 ``draft`` from ``params`` cast to float32, while each step
        lowers its objective (a step that does not, or gives a non-finite one, is undone and
        ends the draft: float32's resolution reached, or a float32 solve that failed) and
        within the stopping rule: ``(params, state, count)``, float32, ``count`` counting
        the undone step."""
        params = _cast(params, jnp.float32)
        state = solver.init(params)
        value, grad = jax.value_and_grad(draft)(params)
        state = optax.tree_utils.tree_set(state, value=value, grad=grad)
        value_and_grad = optax.value_and_grad_from_state(draft)

        def step(carry):
            p, state, value, grad_norm, count, _ = carry
            v, g = value_and_grad(p, state=state)
            updates, new_state = solver.update(g, state, p, value=v, grad=g, value_fn=draft)
            new_value = optax.tree_utils.tree_get(new_state, "value")
            lower = jnp.isfinite(new_value) & (new_value < value)
            new_norm = optax.tree_utils.tree_norm(optax.tree_utils.tree_get(new_state, "grad"))
            new = (optax.apply_updates(p, updates), new_state, new_value, new_norm)
            kept = jax.tree_util.tree_map(
                lambda a, b: jnp.where(lower, a, b), new, (p, state, value, grad_norm)
            )
            return (*kept, count + 1, ~lower)

        def keep_going(carry):
            _, _, value, grad_norm, count, stalled = carry
            return (count < rule.max_iter) & (grad_norm > rule.tol) & jnp.isfinite(value) & ~stalled

        start = (
            params,
            state,
            value,
            optax.tree_utils.tree_norm(grad),
            jnp.zeros((), jnp.int32),
            jnp.zeros((), bool),
        )
        params, state, _, _, count, _ = jax.lax.while_loop(keep_going, step, start)
        return params, state, count


def _cast(tree: Any, dtype: Any) -> Any:
    """``tree`` with its floating-point leaves cast to ``dtype`` (the others as they are)."""
    return jax.tree_util.tree_map(
        lambda leaf: leaf.astype(dtype) if jnp.issubdtype(leaf.dtype, jnp.floating) else leaf,
        tree,
    )


class OnePassSGD(Optimizer):
    """One pass of SGD over the samples in order, step ``learning_rate / sqrt(1 + t / D)``."""

    def transformation(self, rule: StoppingRule, D: int) -> Any:
        """``optax.sgd`` with the decaying step."""
        return optax.sgd(lambda t: rule.learning_rate / jnp.sqrt(1.0 + t / D))

    def minimise(
        self, params: Any, problem: Problem, rule: StoppingRule
    ) -> tuple[Any, Any, Any, Any]:
        """One ``lax.scan`` over the samples; the objective and its gradient at the end."""
        X, lengths, y = problem.samples
        solver = self.transformation(rule, X.shape[-1])

        def step(carry, sample):
            p, state = carry
            grad = jax.grad(problem.sample_loss)(p, *sample)
            updates, state = solver.update(grad, state, p)
            return (optax.apply_updates(p, updates), state), None

        (params, _), _ = jax.lax.scan(step, (params, solver.init(params)), (X, lengths, y))
        value, grad = jax.value_and_grad(problem.value_fn)(params)
        return params, value, optax.tree_utils.tree_norm(grad), jnp.asarray(y.shape[0], jnp.int32)


_REGISTRY: Registry[Optimizer] = Registry("optimizer", Optimizer)
register_optimizer = _REGISTRY.register
unregister_optimizer = _REGISTRY.unregister
get_optimizer = _REGISTRY.get
optimizer_names = _REGISTRY.names


def optimizer_accepted(parameter: str, name: object) -> str:
    """``name`` if it is a registered optimiser; else ``ConfigError`` listing them (the accepted
    range of an optimiser option)."""
    return get_optimizer(name).name


register_optimizer(LBFGS("lbfgs", "L-BFGS to |grad| <= tol", vectorised=False, warm_path=True))
register_optimizer(OnePassSGD("sgd", "one pass of SGD", vectorised=True, warm_path=False))
