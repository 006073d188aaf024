"""Quadrature machinery for the population integrals (docs/model.md sections 2 and 4).

Every population quantity is a nested integral of smooth, analytic integrands:
Gaussian expectations over one token and an outer integral over ``u = log t`` of
the ``1/S = int exp(-t S) dt`` representation. The rules used here:

* :func:`gaussian_rule`: the trapezoid rule on ``[-ZMAX, ZMAX]`` for a standard
  normal variable, spacing chosen so that the integrand, which varies on a unit
  scale in ``chi = mu + scale * Z``, is resolved (spacing ``STEP / scale``);
* :func:`uniform_rule`: the trapezoid rule on a finite interval of ``u = log t``;
* :func:`panel_rule`: composite Gauss-Legendre with an exact-polynomial cumulative
  integral, for integrals up to a moving upper limit (``nu = inf``).

For analytic integrands that decay at both ends the trapezoid error falls like
``exp(-pi^2 / h)`` in the unit-scale spacing ``h``: the fine rule (``h = 0.25``)
is about 1e-17 accurate and the coarse one (``h = 0.5``, every other node) about
3e-9. The stated error bound of a quantity is ``|fine - coarse|`` plus
:data:`BOUND_FLOOR` (truncation and rounding), a conservative estimate checked in
the tests against a much finer reference.

Node counts are rounded up to powers of two, both resolutions are evaluated in
one jitted call (:func:`fine_and_coarse`), and :func:`evaluate_levels` pads the
rules with zero-weight nodes to every other power of two, so that jitted
functions compile for a few shapes only (one program serves two rungs).
"""

from __future__ import annotations

import functools
import math
from collections.abc import Callable
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from numpy.polynomial import legendre

ZMAX = 9.0
"""Gaussian truncation: ``P(|Z| > 9) = 2.3e-19``."""
STEP = 0.25
"""Fine spacing in units of the integrand's own scale (the coarse rule doubles it)."""
LOG_DECAY = 40.0
"""Where a tail like ``exp(y)`` is cut: ``exp(-40) = 4e-18``."""
LOG_GROWTH = 4.0
"""Where a tail like ``exp(-exp(y))`` is cut: ``exp(-exp(4)) = 2e-24``."""
BOUND_FLOOR = 1e-12
"""Added to every two-resolution difference: the truncation errors above (< 1e-15)
and float64 rounding of sums over up to ~1e5 nodes."""
LOG_FLOOR = -1.0e4
"""``log M`` is clipped here so that ``0 * log 0`` never appears; ``exp(-1e4) = 0``."""
_LENGTH_CHUNK = 16


class Rule(NamedTuple):
    """A quadrature rule: ``sum_i weights[i] f(nodes[i])`` approximates the integral."""

    nodes: jax.Array
    weights: jax.Array


class PanelRule(NamedTuple):
    """Composite Gauss-Legendre rule with the cumulative-integration matrix of one panel.

    ``cumulative[k, j] * weights-scale`` integrates the interpolant of the panel's
    values from the panel's left end to its node ``k``.
    """

    nodes: jax.Array
    weights: jax.Array
    cumulative: jax.Array


def _ladder(n: int) -> int:
    """Smallest power of two ``>= max(n, 16)``: few distinct shapes, hence few compilations."""
    return 1 << max(4, math.ceil(math.log2(max(n, 1))))


_COARSE: dict[tuple[int, int], tuple[Rule, Rule]] = {}


def coarse(rule: Rule) -> Rule:
    """The nested rule with every other node and twice the weights (a point rule stays).

    Memoised by identity: the rule builders below are cached, so a search asks for
    the same few rules again and again (the cache holds the rule, so ids stay unique).
    """
    if rule.nodes.shape[0] == 1:
        return rule
    return _memoised(_COARSE, rule, 0, lambda: Rule(rule.nodes[::2], 2.0 * rule.weights[::2]))


def _memoised(cache: dict, rule: Rule, size: int, build: Callable[[], Rule]) -> Rule:
    """``build()``, memoised in ``cache`` by the identity of ``rule`` (held, so ids stay unique)
    and ``size``."""
    known = cache.get((id(rule), size))
    if known is None or known[0] is not rule:
        if len(cache) > 512:
            cache.clear()
        known = (rule, build())
        cache[(id(rule), size)] = known
    return known[1]


Core = Callable[[tuple, tuple, tuple, tuple], jax.Array]
"""``core(functions, params, rules, laws)``: an integral on given rules (see
:func:`fine_and_coarse`)."""


@functools.partial(jax.jit, static_argnames=("core", "functions"))
def fine_and_coarse(
    core: Core,
    functions: tuple[Callable | None, ...],
    params: tuple,
    fine_rules: tuple,
    coarse_rules: tuple,
    laws: tuple,
) -> jax.Array:
    """``core(functions, params, rules, laws)`` on both resolutions, stacked on a leading axis.

    Parameters
    ----------
    core : the integral, a function of the arrays below (traced).
    functions : the functions the integrand is built from (hashable callables, or None where
        one is absent); static, so the compiled program is keyed by them, as it is by ``core``.
    params : numerical parameters (arrays, traced: one compilation serves every value).
    fine_rules, coarse_rules : the quadrature rules at the two resolutions.
    laws : further arrays (a length law's support).
    """
    return jnp.stack(
        [core(functions, params, fine_rules, laws), core(functions, params, coarse_rules, laws)]
    )


def as_arrays(*values: Any) -> tuple[np.ndarray, ...]:
    """Python numbers and arrays as float64 NumPy arrays: jit arguments of one fixed type, cheap to
    build.
    """
    return tuple(np.asarray(value, dtype=float) for value in values)


def evaluate_levels(
    core: Core,
    functions: tuple[Callable | None, ...],
    params: tuple,
    rules: tuple,
    laws: tuple = (),
    coarse_rules: tuple | None = None,
) -> np.ndarray:
    """:func:`fine_and_coarse` from Python numbers; ``coarse_rules`` default to :func:`coarse` of
    ``rules``.
    """
    if coarse_rules is None:
        coarse_rules = tuple(coarse(rule) for rule in rules)
    padded = tuple(zip(*(_pad_pair(fine, rough) for fine, rough in zip(rules, coarse_rules))))
    return np.asarray(
        fine_and_coarse(core, functions, as_arrays(*params), *padded, as_arrays(*laws))
    )


def _bucket(count: int) -> int:
    """Smallest ``2^e + 1 >= count`` with ``e`` odd: every other size of the rules' ladder."""
    exponent = max(1, math.ceil(math.log2(max(count - 1, 1))))
    return (1 << (exponent + 1 - exponent % 2)) + 1


def _pad_pair(fine: Any, rough: Any) -> tuple[Any, Any]:
    """A fine rule and its coarse one padded with zero-weight nodes to the sizes of a
    :func:`_bucket`, so that one compiled :func:`fine_and_coarse` serves two rungs of the
    ladder: the sums gain only exact zeros (the padding repeats the last node, where the
    integrand is finite). Point rules and panel rules (their nodes come in panels) stay.
    """
    count = fine.nodes.shape[0]
    if not isinstance(fine, Rule) or count == 1:
        return fine, rough
    size = _bucket(count)
    rough_size = (size - 1) // 2 + 1 if rough.nodes.shape[0] == (count - 1) // 2 + 1 else None
    return _padded(fine, size), _padded(rough, rough_size or rough.nodes.shape[0])


def _padded(rule: Rule, size: int) -> Rule:
    """``rule`` with ``size - len(rule)`` copies of its last node at weight 0 (memoised)."""
    extra = size - rule.nodes.shape[0]
    if extra == 0:
        return rule

    def build() -> Rule:
        nodes, weights = np.asarray(rule.nodes), np.asarray(rule.weights)
        nodes = np.concatenate([nodes, np.full(extra, nodes[-1])])
        return Rule(jnp.asarray(nodes), jnp.asarray(np.pad(weights, (0, extra))))

    return _memoised(_PADDED, rule, size, build)


_PADDED: dict[tuple[int, int], tuple[Rule, Rule]] = {}


@functools.lru_cache(maxsize=256)
def uniform_rule(lo: float, hi: float, step: float = STEP) -> Rule:
    """Trapezoid rule on ``[lo, hi]`` with an odd node count and spacing ``<= step``.

    The end weights are not halved: the integrands vanish at both ends (see the
    cut-offs above), and equal weights keep :func:`coarse` exact.
    """
    half = _ladder(math.ceil((hi - lo) / (2.0 * step)))
    nodes = np.linspace(lo, hi, 2 * half + 1)
    return Rule(jnp.asarray(nodes), jnp.full(nodes.shape, nodes[1] - nodes[0]))


def gaussian_rule(scale: float, *, point_if_zero: bool = False, step: float = STEP) -> Rule:
    """Rule for ``E[f(mu + scale Z)]``, ``Z ~ N(0, 1)``, with ``f`` varying on a unit scale.

    The spacing is at most ``step / max(scale, 1)``. With ``point_if_zero`` and
    ``scale == 0`` the rule is the single node 0.
    """
    if point_if_zero and scale == 0.0:
        return _point_rule()
    return _gaussian_nodes(_ladder(math.ceil(ZMAX * max(scale, 1.0) / step)))


@functools.cache
def _point_rule() -> Rule:
    """The one-node rule at 0 (a degenerate Gaussian)."""
    return Rule(jnp.zeros(1), jnp.ones(1))


@functools.cache
def _gaussian_nodes(half: int) -> Rule:
    """Normalised Gaussian weights on ``2 half + 1`` equispaced nodes of ``[-ZMAX, ZMAX]``."""
    nodes = np.linspace(-ZMAX, ZMAX, 2 * half + 1)
    weights = np.exp(-0.5 * nodes**2)
    return Rule(jnp.asarray(nodes), jnp.asarray(weights / weights.sum()))


def panel_rule(lo: float, hi: float, width: float, order: int) -> PanelRule:
    """Composite Gauss-Legendre rule of ``order`` nodes per panel of width ``<= width``."""
    return _panels(lo, hi, _ladder(math.ceil((hi - lo) / width)), order)


@functools.lru_cache(maxsize=256)
def _panels(lo: float, hi: float, panels: int, order: int) -> PanelRule:
    """:func:`panel_rule` with its panel count (cached: a search asks for few distinct rules)."""
    edges = np.linspace(lo, hi, panels + 1)
    half = 0.5 * (edges[1] - edges[0])
    ref_nodes, ref_weights = legendre.leggauss(order)
    inverse_vandermonde = np.linalg.inv(legendre.legvander(ref_nodes, order - 1))
    cumulative = np.stack(
        [
            legendre.legval(ref_nodes, legendre.legint(inverse_vandermonde[:, j], lbnd=-1))
            for j in range(order)
        ],
        axis=1,
    )
    nodes = (edges[:-1, None] + half * (1.0 + ref_nodes[None, :])).ravel()
    weights = np.tile(half * ref_weights, panels)
    return PanelRule(jnp.asarray(nodes), jnp.asarray(weights), jnp.asarray(half * cumulative))


def panel_cumulative(rule: PanelRule, values: jax.Array) -> jax.Array:
    """``int_{lo}^{x_k} f`` at every node ``x_k``, from ``values = f(nodes)`` (leading axis)."""
    order = rule.cumulative.shape[0]
    per_panel = values.reshape((-1, order) + values.shape[1:])
    weights = rule.weights.reshape(-1, order)
    totals = jnp.einsum("pj,pj...->p...", weights, per_panel)
    before = jnp.cumsum(totals, axis=0) - totals
    within = jnp.einsum("kj,pj...->pk...", rule.cumulative, per_panel)
    return (before[:, None] + within).reshape(values.shape)


def expectation(rule: Rule, values: jax.Array, axis: int = -1) -> jax.Array:
    """Apply ``rule``'s weights along ``axis`` of ``values``."""
    return jnp.tensordot(jnp.moveaxis(values, axis, -1), rule.weights, axes=1)


def power_mixture(weights: jax.Array, exponents: jax.Array, log_base: jax.Array) -> jax.Array:
    """``sum_i weights[i] * base ** exponents[i]`` elementwise, from ``log base``.

    Powers are formed as ``exp(e * log base)``, so ``L = 10^5`` costs what ``L = 3``
    costs; the sum runs over chunks of the length law's support so memory stays
    bounded. Exponents are clipped at 0: a negative one only ever comes with a zero
    weight (``(L - 1) M^(L - 2)`` at ``L = 1``).
    """
    log_base = jnp.maximum(log_base, LOG_FLOOR)
    count = weights.shape[0]
    chunk = min(count, _LENGTH_CHUNK)
    pad = (-count) % chunk
    chunks = (
        jnp.pad(weights, (0, pad)).reshape(-1, chunk),
        jnp.maximum(jnp.pad(exponents, (0, pad)), 0.0).reshape(-1, chunk),
    )
    expand = (slice(None),) + (None,) * log_base.ndim

    def chunk_sum(chunk_weights: jax.Array, chunk_exponents: jax.Array) -> jax.Array:
        return jnp.tensordot(
            chunk_weights, jnp.exp(chunk_exponents[expand] * log_base[None]), axes=1
        )

    if chunks[0].shape[0] == 1:
        return chunk_sum(chunks[0][0], chunks[1][0])
    total, _ = jax.lax.scan(
        lambda acc, terms: (acc + chunk_sum(*terms), None), jnp.zeros_like(log_base), chunks
    )
    return total


def log_complement(tail: jax.Array) -> jax.Array:
    """``log(1 - tail)`` with ``tail`` clipped to 1 (rounding can push a probability past 1)."""
    return jnp.log1p(-jnp.minimum(tail, 1.0))


def clip_log_argument(y: jax.Array) -> jax.Array:
    """Clip ``y`` from above where only ``exp(-exp(y)) = 0`` matters (no ``inf`` in kernels)."""
    return jnp.minimum(y, 50.0)


def kernel_tail(y: jax.Array) -> jax.Array:
    """``1 - exp(-e^y)``: one minus the Laplace factor of one token."""
    return -jnp.expm1(-jnp.exp(clip_log_argument(y)))


def kernel_laplace(y: jax.Array) -> jax.Array:
    """``exp(-e^y)``: the Laplace factor ``E[exp(-t phi)]`` integrand, ``y = log(t phi)``."""
    return jnp.exp(-jnp.exp(clip_log_argument(y)))


def kernel_first(y: jax.Array) -> jax.Array:
    """``e^y exp(-e^y)``: the integrand of ``phi / S`` after ``t = e^u``."""
    y = clip_log_argument(y)
    return jnp.exp(y - jnp.exp(y))


def kernel_second(y: jax.Array) -> jax.Array:
    """``e^(2y) exp(-e^y)``: the integrand of ``phi^2 / S^2`` after ``t = e^u``."""
    y = clip_log_argument(y)
    return jnp.exp(2.0 * y - jnp.exp(y))
