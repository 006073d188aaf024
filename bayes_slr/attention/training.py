"""Empirical risk minimisation of an attention estimator (docs/model.md section 5).

Objective, per sample (the minimiser is that of docs/model.md's sum):
``(1/N) [ sum_mu (y_mu - f(X_mu))^2 / 2 + lam/2 (|k|^2 + |v|^2 + c^2) ]``
(``c`` stays 0 for the activations other than erf). The optimisers are registered objects
(:mod:`bayes_slr.attention.optimizers`: ``lbfgs``, one-pass ``sgd``). The default initial SGD
step is 0.5 for the normalised activations and ``0.5 / E[L]`` for linear and erf, whose weights
sum to ``O(L)`` (a larger step diverges).

The core, :func:`train`, is a pure JAX function of arrays; :func:`train_problems` is the one
path of many problems (every start, ridge and seed of
:func:`bayes_slr.studies.erm.erm_study`), run as the optimiser says (vectorised or one after
another). :func:`padded_to_bucket` pads a batch's sequences to one of a few lengths
(:data:`LENGTH_BUCKETS`) so that one compiled trainer serves several ``L``.
"""

from __future__ import annotations

import functools
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import optax

from bayes_slr.attention import projection
from bayes_slr.attention.activations import get_activation
from bayes_slr.attention.estimators import AttentionParams, informed_params, predict, random_params
from bayes_slr.attention.optimizers import Problem, Profile, StoppingRule, get_optimizer
from bayes_slr.errors import ConfigError
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig

SGD_LEARNING_RATE = 0.5
RANDOM_INIT_SCALE = 0.1
"""Standard deviation of the coordinates of ``k`` and ``v`` at a random start (``q_k = q_v ~
0.01``).

Why small and not the prior's 1: at ``q_v ~ 0.01`` the estimator's output is ``O(0.1)``, so
the first steps follow the data's correlation with the target instead of first shrinking a
random output of variance ``~L``; at ``q_k ~ 0.01`` softmax and softplus start near uniform
weights and erf in its linear regime (``c + chi ~ N(0, 0.01)``). From ``N(0, I_D)`` the erf
fit first drives its offset ``c`` to about -13 (one scalar, the cheapest way to silence a
random output), where the activation saturates and ``k`` gets a gradient from a few outlier
tokens only: measured (spiked ``nu = 2``, ``L = 5``, ``D = 100``, ``alpha = 16``,
``lam = 1e-3``) two of four teachers ended there with test errors 1.6-3.9, against 0.73-0.89
from the informed start; from scale 0.1 every random start reached the informed start's
basin. Softmax and linear reach the same minima from either scale. ``k = v = 0`` is a saddle
point (no gradient on ``k`` when ``v = 0``), so the start is small but not zero.
"""


DRAFT_MIN_TOKENS = 30
"""L-BFGS first runs a float32 copy of the objective (float32 tokens, labels, ridge and
parameters) and then finishes in float64 from where it stopped, its memory kept
(:meth:`~bayes_slr.attention.optimizers.LBFGS._draft`), where the padded length is at least
this. The float32 iterations follow the float64 ones until float32 can no longer resolve a
decrease of the objective (80-95% of them on gap's points); the float64 iterations then take
the gradient to the stopping rule, so the minimum and every reported figure are float64's. A
float32 evaluation of the profiled objective cost 0.2-0.6 times a float64 one at ``L = 30``
and 100 (``D = 100``, ``N = 1600``), and the max-SLR ``L = 30`` linear point of ``gap`` took
1.42 times less warm; at ``L = 3`` the evaluations are cheap and the second loop's compilation
is not repaid (docs/performance.md)."""


LENGTH_BUCKETS = (3, 5, 10, 30, 100)
"""Token counts a training set is padded to (:func:`padded_to_bucket`): a sequence of ``Lbar``
tokens gets the smallest bucket ``>= Lbar`` (``Lbar`` itself beyond the last). Every shape is a
compilation of the trainer, so ``L = 2`` and ``3`` share one; the other lengths of ``gap``'s
default sweep keep their own, because an evaluation costs about its tokens: padded from 5 to
10, a warm point took as long as at 10 (about 2.5 times its own time) to save one compilation
of about 10 s (docs/performance.md)."""


def bucket_length(Lbar: int, buckets: tuple[int, ...] = LENGTH_BUCKETS) -> int:
    """The smallest of ``buckets`` that holds ``Lbar`` tokens, or ``Lbar`` beyond them."""
    return min((b for b in buckets if b >= Lbar), default=Lbar)


def padded_to_bucket(batch: SLRBatch, buckets: tuple[int, ...] = LENGTH_BUCKETS) -> SLRBatch:
    """``batch`` with its token axis padded with zero tokens to :func:`bucket_length`.

    The lengths are unchanged, so the padded tokens are masked: every activation gives them
    weight 0 (normalised ones a logit of ``-inf``, element-wise ones a zero weight, and their
    value ``z = 0``), and the objective, its gradient and the predictions are those of the
    unpadded batch up to the order of summation (float rounding).

    Parameters
    ----------
    batch : leaves ``X`` ``(..., N, Lbar, D)``, ``chi_star`` and ``z_star`` ``(..., N, Lbar)``.
    buckets : the token counts to pad to (:data:`LENGTH_BUCKETS`).
    """
    Lbar = batch.X.shape[-2]
    extra = bucket_length(Lbar, buckets) - Lbar
    if extra == 0:
        return batch

    def pad(leaf: jax.Array, axis: int) -> jax.Array:
        widths = [(0, 0)] * leaf.ndim
        widths[axis] = (0, extra)
        return jnp.pad(leaf, widths)

    return batch._replace(
        X=pad(batch.X, -2), chi_star=pad(batch.chi_star, -1), z_star=pad(batch.z_star, -1)
    )


class ERMFit(NamedTuple):
    """Result of :func:`fit_erm`.

    Attributes
    ----------
    params : the trained ``AttentionParams``.
    train_loss : the per-sample objective at ``params`` (module docstring).
    grad_norm : Euclidean norm of its gradient at ``params``.
    iterations : L-BFGS iterations, or SGD steps (``N``).
    converged : whether ``grad_norm <= tol`` (one SGD pass rarely reaches it).
    """

    params: AttentionParams
    train_loss: float
    grad_norm: float
    iterations: int
    converged: bool


def objective(
    params: AttentionParams,
    X: jax.Array,
    lengths: jax.Array,
    y: jax.Array,
    activation: str,
    lam: float,
) -> jax.Array:
    """Per-sample training objective ``(1/N)[sum (y - f)^2/2 + lam/2 (|k|^2 + |v|^2 + c^2)]``."""
    residual = y - predict(params, X, lengths, activation)
    penalty = sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(params))
    return (0.5 * jnp.sum(residual**2) + 0.5 * lam * penalty) / y.shape[0]


def train(
    params: AttentionParams,
    X: jax.Array,
    lengths: jax.Array,
    y: jax.Array,
    *,
    activation: str,
    optimizer: str,
    lam: float,
    tol: float,
    max_iter: int,
    learning_rate: float = SGD_LEARNING_RATE,
    projected: bool | None = None,
    draft: bool | None = None,
    low: tuple[jax.Array, jax.Array] | None = None,
) -> tuple[AttentionParams, jax.Array, jax.Array, jax.Array]:
    """Pure-JAX training from ``params``: ``(params, objective, grad_norm, iterations)``.

    Arguments are not validated (use :func:`fit_erm`); ``activation``, ``optimizer`` (a
    registered name, :mod:`~bayes_slr.attention.optimizers`) and ``projected`` must be static
    under ``jit``; ``vmap`` over ``params, X, lengths, y`` runs seeds at once. The erf offset
    ``c`` is trained for ``erf`` only (its gradient is zero otherwise). ``projected``: the
    problem carries its variable projection (:mod:`~bayes_slr.attention.projection`: ``v`` in
    closed form, the start's ``v`` unused), which L-BFGS runs over ``k, c`` alone; else, or for
    an optimiser that does not use it, over every parameter. By default where it pays off
    (:func:`~bayes_slr.attention.projection.pays_off`: ``Lbar >= 0.1 H D`` and ``N > H D``).
    ``draft`` (static): the problem also carries its objective in float32, which L-BFGS runs
    first; the solve ends in float64, which sets the minimum and every figure returned. By
    default where the padded length is at least :data:`DRAFT_MIN_TOKENS`. ``low``: the draft's
    float32 ``(X, y)`` (:func:`float32_samples`), cast here when not given: the problems of one
    training set share one copy instead of each casting its tokens (about 18 ms a call at
    ``L = 30``, ``N = 1600``, ``D = 100``, a third of a call that does no iteration).
    """
    N = y.shape[0]
    if projected is None:
        projected = projection.pays_off(X.shape[-2], params.v.size, N)
    if draft is None:
        draft = uses_draft(X)
    low = (*(float32_samples(X, y) if low is None else low), jnp.asarray(lam, jnp.float32))

    def value_fn(p: AttentionParams) -> jax.Array:
        return objective(p, X, lengths, y, activation, lam)

    def sample_loss(p, x, length, target):
        residual = target - predict(p, x[None], length[None], activation)[0]
        penalty = sum(jnp.sum(leaf**2) for leaf in jax.tree_util.tree_leaves(p))
        return 0.5 * residual**2 + 0.5 * lam * penalty / N

    def draft_value(p: AttentionParams) -> jax.Array:
        return objective(p, low[0], lengths, low[1], activation, low[2])

    def draft_profiled(keys: projection.Keys) -> jax.Array:
        return projection.profiled_objective(keys, low[0], lengths, low[1], activation, low[2])

    profile = (
        Profile(
            projection.keys_of,
            lambda keys: projection.profiled_objective(keys, X, lengths, y, activation, lam),
            lambda keys: projection.with_values(keys, X, lengths, y, activation, lam),
            draft_profiled if draft else None,
        )
        if projected
        else None
    )
    return get_optimizer(optimizer).minimise(
        params,
        Problem(value_fn, sample_loss, (X, lengths, y), profile, draft_value if draft else None),
        StoppingRule(tol, max_iter, learning_rate),
    )


train_jit = jax.jit(train, static_argnames=("activation", "optimizer", "projected", "draft"))


def uses_draft(X: jax.Array) -> bool:
    """Whether :func:`train` runs the float32 draft by default on tokens ``X`` (``(..., N, Lbar,
    D)``): a padded length of at least :data:`DRAFT_MIN_TOKENS`."""
    return X.shape[-2] >= DRAFT_MIN_TOKENS


@jax.jit
def float32_samples(X: jax.Array, y: jax.Array) -> tuple[jax.Array, jax.Array]:
    """The float32 tokens and labels of the draft (:func:`train`'s ``low``)."""
    return X.astype(jnp.float32), y.astype(jnp.float32)


@functools.partial(jax.jit, static_argnames=("draft",))
def _seed_samples(batches: SLRBatch, seed: jax.Array, *, draft: bool):
    """Seed ``seed``'s ``(X, lengths, y)`` of ``batches`` (leaves with leading axis ``seeds``)
    and, with ``draft``, their float32 copy (:func:`float32_samples`), else ``None``: one
    program for what was one array operation each."""
    X, lengths, y = batches.X[seed], batches.lengths[seed], batches.y[seed]
    return (X, lengths, y), float32_samples(X, y) if draft else None


@functools.partial(jax.jit, static_argnames=("activation", "optimizer"))
def _vectorised(
    starts, X, lengths, y, lams, learning_rate, tol, max_iter, *, activation, optimizer
):
    """Every problem of :func:`train_problems` as one vectorised computation: the ``G x S``
    problems of a seed share its data, so their projections ``X @ [k, v]`` are one matrix
    product (the tokens are read once per step)."""

    def one(params, X_s, lengths_s, y_s, lam):
        return train(
            params,
            X_s,
            lengths_s,
            y_s,
            activation=activation,
            optimizer=optimizer,
            lam=lam,
            tol=tol,
            max_iter=max_iter,
            learning_rate=learning_rate,
        )

    over_starts = jax.vmap(one, in_axes=(0, None, None, None, None))
    over_grid = jax.vmap(over_starts, in_axes=(0, None, None, None, 0))
    return jax.vmap(over_grid)(starts, X, lengths, y, lams)


class SeedSamples(NamedTuple):
    """Training sets as :func:`train_problems` reads them one problem after another: the
    ``batches`` (leaves with leading axis ``seeds``), each seed's ``samples`` ``(X, lengths, y)``
    and the draft's float32 copy of them (``low``: ``None`` each without the draft), made once
    (:func:`seed_samples`) for the calls that train on the same sets (the values of a
    validation path): slicing a seed's tokens out of the stacked sets and casting them is a
    copy of them, about 20-50 ms a seed at ``L = 30`` (``D = 100``, ``N = 1600``), which each
    call made again."""

    batches: SLRBatch
    samples: tuple[tuple[jax.Array, jax.Array, jax.Array], ...]
    low: tuple[tuple[jax.Array, jax.Array] | None, ...]


def seed_samples(batches: SLRBatch | SeedSamples) -> SeedSamples:
    """Every seed's samples and their float32 copy (:class:`SeedSamples`; given ones as they
    are)."""
    if isinstance(batches, SeedSamples):
        return batches
    draft = uses_draft(batches.X)
    split = [_seed_samples(batches, s, draft=draft) for s in range(batches.y.shape[0])]
    return SeedSamples(batches, tuple(part[0] for part in split), tuple(part[1] for part in split))


def _one_by_one(starts, batches: SeedSamples, lams, active: np.ndarray, **training: Any):
    """Every ``active`` problem of :func:`train_problems`, one after another, by the compiled
    single-problem trainer (:data:`train_jit`), each until its own stopping rule: a vectorised
    ``while_loop`` runs every member as long as its slowest one, and L-BFGS's batched line search
    and memory cost about ten times one problem's iteration per member
    (``benchmarks/erm_speed.py``). One program serves every start, ridge value and seed. The
    problems of a seed share its samples and their float32 copy for the draft
    (:class:`SeedSamples`), and the results are gathered on the host (numpy leaves): no
    per-problem array programs besides the trainer."""
    leaves, treedef = jax.tree_util.tree_flatten(starts)
    leaves = [np.asarray(leaf) for leaf in leaves]
    lams = np.asarray(lams)
    seeds, grid, count = leaves[0].shape[:3]
    results = []
    for s in range(seeds):
        samples, low = batches.samples[s], batches.low[s]
        for g, k in np.ndindex(grid, count):
            params = jax.tree_util.tree_unflatten(treedef, [leaf[s, g, k] for leaf in leaves])
            results.append(
                train_jit(params, *samples, lam=float(lams[s, g]), low=low, **training)
                if active[s, g, k]
                else _untrained(params)
            )
    return jax.tree_util.tree_map(
        lambda *members: np.stack([np.asarray(m) for m in members]).reshape(
            (seeds, grid, count) + np.shape(members[0])
        ),
        *results,
    )


def _untrained(params: AttentionParams) -> tuple[AttentionParams, Any, Any, Any]:
    """An inactive problem's result: its start, objective and gradient norm ``inf``, no
    iterations."""
    return params, np.inf, np.inf, np.zeros((), np.int32)


def train_problems(
    starts: AttentionParams,
    batches: SLRBatch | SeedSamples,
    lams: Any,
    *,
    activation: str,
    optimizer: str,
    tol: float,
    max_iter: int,
    learning_rate: float = SGD_LEARNING_RATE,
    vectorised: bool | None = None,
    active: np.ndarray | None = None,
) -> tuple[AttentionParams, jax.Array, jax.Array, jax.Array]:
    """Train every start of every ridge of every seed: the one path of many problems.

    Parameters
    ----------
    starts : leaves with leading axes ``(seeds, G, S)``: ``S`` starts at each of ``G`` ridges.
    batches : the training sets, leaves with leading axis ``seeds``; or those sets with every
        seed's samples split out (:func:`seed_samples`), for several calls on the same sets.
    lams : ridges, shape ``(seeds, G)``.
    activation, optimizer, tol, max_iter, learning_rate : as :func:`train`.
    vectorised : one vectorised computation (``True``) or one problem after another (``False``);
        by default as the optimiser says (its ``vectorised``).
    active : boolean ``(seeds, G, S)``, the problems to train (default all); an inactive one
        comes back as its start with objective and gradient norm ``inf`` and no iterations
        (one after another it is skipped; vectorised it is trained and its result replaced).

    Returns
    -------
    ``(params, objective, grad_norm, iterations)``, leading axes ``(seeds, G, S)`` (numpy arrays
    one after another, JAX arrays vectorised).
    """
    training = dict(
        activation=activation,
        optimizer=optimizer,
        tol=tol,
        max_iter=max_iter,
        learning_rate=learning_rate,
    )
    if vectorised is None:
        vectorised = get_optimizer(optimizer).vectorised
    if active is None:
        active = np.ones(jax.tree_util.tree_leaves(starts)[0].shape[:3], bool)
    if not vectorised:
        return _one_by_one(starts, seed_samples(batches), lams, np.asarray(active), **training)
    if isinstance(batches, SeedSamples):
        batches = batches.batches
    params, values, grad_norms, counts = _vectorised(
        starts, batches.X, batches.lengths, batches.y, jnp.asarray(lams), **training
    )
    mask = jnp.asarray(active)
    params = jax.tree_util.tree_map(
        lambda new, old: jnp.where(mask.reshape(mask.shape + (1,) * (new.ndim - 3)), new, old),
        params,
        starts,
    )
    return (
        params,
        jnp.where(mask, values, jnp.inf),
        jnp.where(mask, grad_norms, jnp.inf),
        jnp.where(mask, counts, 0),
    )


def default_learning_rate(config: SLRConfig, activation: str) -> float:
    """Initial SGD step: ``0.5`` (softmax, softplus) or ``0.5 / E[L]`` (linear, erf)."""
    return (
        SGD_LEARNING_RATE
        if get_activation(activation).normalised
        else SGD_LEARNING_RATE / config.length.mean()
    )


def initial_params(
    key: jax.Array,
    config: SLRConfig,
    init: str,
    teacher: Teacher | None,
    scale: float = RANDOM_INIT_SCALE,
) -> AttentionParams:
    """The start of training: ``random`` (``k, v ~ N(0, scale^2 I_D)``, :data:`RANDOM_INIT_SCALE`)
    or ``informed`` (the teacher)."""
    if init == "random":
        return random_params(key, config.D, scale)
    if teacher is None:
        raise ConfigError("init='informed' needs the teacher: pass teacher=Teacher(k_star, v_star)")
    return informed_params(config, teacher)


def fit_erm(
    key: jax.Array,
    batch: SLRBatch,
    config: SLRConfig,
    activation: str,
    *,
    lam: float,
    optimizer: str = "lbfgs",
    init: str = "random",
    teacher: Teacher | None = None,
    tol: float = 1e-6,
    max_iter: int = 2000,
    learning_rate: float | None = None,
) -> ERMFit:
    """Fit ``k, v`` (and ``c`` for erf) by ridge-regularised square-loss ERM on ``batch``.

    Parameters
    ----------
    key : PRNG key of the random start.
    batch : SLRBatch
        Training samples (``X``, ``lengths``, ``y`` are used).
    config : SLRConfig
        The task (``D`` and ``c_nu`` of the informed start).
    activation : str
        ``softmax``, ``linear``, ``erf`` or ``softplus``.
    lam : float
        Ridge strength, ``>= 0``.
    optimizer : {"lbfgs", "sgd"}
        L-BFGS to ``tol`` or one-pass SGD (module docstring).
    init : {"random", "informed"}
        Random start (``k, v ~ N(0, 0.01 I_D)``, :data:`RANDOM_INIT_SCALE`) or the teacher (``k =
        c_nu k*``, ``v = v*``; needs ``teacher``).
    teacher : Teacher, optional
        Needed for ``init="informed"``.
    tol : float
        L-BFGS stops when the gradient norm of the per-sample objective is ``<= tol``.
    max_iter : int
        Largest number of L-BFGS iterations.
    learning_rate : float, optional
        Initial SGD step (``sgd`` only); default :func:`default_learning_rate`.

    Returns
    -------
    ERMFit
    """
    if learning_rate is None:
        learning_rate = default_learning_rate(config, activation)
    if batch.X.shape[-1] != config.D:
        raise ConfigError(
            f"batch has D = {batch.X.shape[-1]} but config.D = {config.D}; they must match"
        )
    start = initial_params(key, config, init, teacher)
    params, value, grad_norm, count = train_jit(
        start,
        batch.X,
        batch.lengths,
        batch.y,
        activation=activation,
        optimizer=optimizer,
        lam=lam,
        tol=tol,
        max_iter=max_iter,
        learning_rate=learning_rate,
    )
    return ERMFit(params, float(value), float(grad_norm), int(count), bool(grad_norm <= tol))


@functools.partial(jax.jit, static_argnames=("activation",))
def objective_and_grad_norm(
    params: AttentionParams, batch: SLRBatch, activation: str, lam: float
) -> tuple[jax.Array, jax.Array]:
    """Per-sample objective of ``params`` on ``batch`` and the norm of its gradient."""
    value, grad = jax.value_and_grad(objective)(
        params, batch.X, batch.lengths, batch.y, activation, lam
    )
    return value, optax.tree_utils.tree_norm(grad)
