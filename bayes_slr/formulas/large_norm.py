"""Population terms of a normalised activation in the limit ``|k| -> inf`` along ``k*`` on an argmax
location law.

When the location is the argmax of the teacher scores (max-SLR, ``nu = inf``), a
normalised activation can keep improving as the key grows along ``k*``; its optimum is
then a supremum, reported as this limit. The activation record names its limit kernel:

* ``"argmax"`` (softmax): the weights concentrate on the argmax token, the Bayes
  estimator: ``A = B = 1``, error 0;
* ``"relu"`` (softplus): ``softplus(m x) / m -> relu(x)``, so the weights tend to
  ``relu(chi*_l) / sum_j relu(chi*_j)``; when every score is negative the kernel is
  ``exp(m x)`` and the weight goes to the argmax token.

The ReLU limit, for i.i.d. standard scores with the location at the maximum ``x``:
with ``1/S = int_0^inf exp(-t S) dt`` and ``1/S^2 = int_0^inf t exp(-t S) dt``,

``A = P(all < 0) + int_0^inf L phi(x) x int_0^inf e^(-t x) M0^(L-1) dt dx``,
``B = P(all < 0) + int_0^inf L phi(x) int_0^inf t e^(-t x) [x^2 M0^(L-1) + (L-1) M2 M0^(L-2)] dt
dx``,

``M0 = E[e^(-t relu(X)) 1{X < x}]``, ``M2 = E[relu(X)^2 e^(-t relu(X)) 1{X < x}]``, ``P(all < 0) =
2^-L``.
Gauss-Legendre panels in ``x`` and ``relu`` values (geometric near 0), a trapezoid rule in
``log t`` (the integrand decays doubly exponentially at large ``t``); the error bound is
the difference with a rule of half the resolution. Checked against Monte Carlo in the tests.
"""

from __future__ import annotations

import functools
import math
from typing import NamedTuple

import numpy as np
from numpy.polynomial import legendre

from bayes_slr.formulas.population import Terms, length_support
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.integrals import BOUND_FLOOR

X_RANGE = 10.0
"""The maximum's value is integrated on ``[0, 10]``: ``P(max > 10) < 1e-22 L``."""
LOG_T_RANGE = (-14.0, 9.0)
"""``log t`` range: the integrands are below ``e^-14`` relative outside it."""


def _panels(edges: np.ndarray, order: int) -> tuple[np.ndarray, np.ndarray]:
    nodes, weights = legendre.leggauss(order)
    lo, hi = edges[:-1, None], edges[1:, None]
    return ((lo + hi) / 2 + (hi - lo) / 2 * nodes).ravel(), ((hi - lo) / 2 * weights).ravel()


X_CHUNK = 32
"""Values of the maximum per block of :func:`_relu_moments`: a block's integrand is ``32 x 920 x
384`` numbers (90 MB) where the whole grid at once was 1.8 GB, and allocating it cost more
system time than the arithmetic (a max-SLR softplus point of ``gap`` took 7 s, 5 of them in
the kernel)."""


class _Moments(NamedTuple):
    """The rule of :func:`_relu_moments` and its inner expectations on it (any length)."""

    x: np.ndarray
    wx: np.ndarray
    t: np.ndarray
    wt: np.ndarray
    m0: np.ndarray
    m2: np.ndarray


@functools.lru_cache(maxsize=2)
def _relu_moments(resolution: int) -> _Moments:
    """``M0`` and ``M2`` of the module docstring on the ``(x, t)`` rule of one resolution (1:
    fine, 2: half as fine): they do not depend on the length, so every length of a sweep shares
    them (:func:`_relu_terms`)."""
    x, wx = _panels(np.linspace(0.0, X_RANGE, 80 // resolution + 1), 8)
    step = 0.025 * resolution
    t = np.exp(np.arange(*LOG_T_RANGE, step))
    v, wv = _panels(np.concatenate([[0.0], np.geomspace(1e-7, 1.0, 48 // resolution)]), 8)
    m0, m2 = np.empty((x.size, t.size)), np.empty((x.size, t.size))
    for start in range(0, x.size, X_CHUNK):
        block = slice(start, start + X_CHUNK)
        shape = x[block, None, None] * v  # relu(X) = x v for 0 < X < x
        base = np.exp(-0.5 * shape**2 - t[None, :, None] * shape) / math.sqrt(2.0 * math.pi)
        m0[block] = 0.5 + x[block, None] * (base @ wv)
        m2[block] = x[block, None] ** 3 * (base @ (wv * v**2))
    return _Moments(x, wx, t, step * t, m0, m2)


@functools.lru_cache(maxsize=64)
def _relu_terms(
    length_probs: tuple[float, ...], lengths: tuple[int, ...], resolution: int
) -> tuple[float, float]:
    """``(A, B)`` of the ReLU limit at one resolution (1: fine, 2: half as fine)."""
    x, wx, t, wt, m0, m2 = _relu_moments(resolution)
    density = np.exp(-0.5 * x**2) / math.sqrt(2.0 * math.pi)
    outer = wx[:, None] * wt[None, :] * density[:, None] * np.exp(-t[None, :] * x[:, None])
    a_value = b_value = 0.0
    for p, L in zip(length_probs, lengths):
        if p == 0.0:
            continue
        power = m0 ** (L - 1)
        second = x[:, None] ** 2 * power + ((L - 1) * m2 * m0 ** (L - 2) if L > 1 else 0.0)
        a_value += p * (np.sum(outer * L * x[:, None] * power) + 2.0**-L)
        b_value += p * (np.sum(outer * L * t[None, :] * second) + 2.0**-L)
    return float(a_value), float(b_value)


def limit_terms(kernel: str, config: SLRConfig) -> Terms:
    """``A`` and ``B`` (with bounds) of the large-norm limit ``kernel`` (``"argmax"`` or ``"relu"``)
    on ``config``.

    ``config`` must have an argmax location law; the length law is averaged as everywhere.
    """
    if kernel == "argmax":
        return Terms(1.0, 1.0, 0.0, 0.0)
    probs, lengths = length_support(config)
    key = (tuple(float(p) for p in probs), tuple(int(L) for L in lengths))
    fine, coarse = _relu_terms(*key, 1), _relu_terms(*key, 2)
    return Terms(
        fine[0],
        fine[1],
        abs(fine[0] - coarse[0]) + BOUND_FLOOR,
        abs(fine[1] - coarse[1]) + BOUND_FLOOR,
    )
