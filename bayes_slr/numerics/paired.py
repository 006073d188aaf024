"""The mean over teachers of per-teacher Monte Carlo estimates, and the paired difference of two
estimators seen on the same teachers, each with its standard error.

A claim compares two estimators ("softmax reaches a lower error than linear"). When both were
measured on the same teachers (and training sets), the difference is taken teacher by teacher:
the luck of a teacher (an easy draw, a norm above its mean) is shared by both sides and cancels,
so its standard error is that of the per-teacher difference, not the two errors' combined. Each
per-teacher value is itself a Monte Carlo estimate over test sequences with its own standard
error; the spread over teachers contains that error, and is floored by it (a few teachers that
agree by chance cannot report less than the Monte Carlo noise). It imports without JAX.
"""

from __future__ import annotations

import dataclasses
import math
from collections.abc import Sequence

import numpy as np

from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import Record

DECISION_LEVEL = 0.95
"""The two-sided level at which a difference's sign is called decided."""


@dataclasses.dataclass(frozen=True)
class PairedDifference(Record):
    """A difference ``a - b`` of two estimators, mean over ``n`` teachers of the per-teacher
    difference, and its standard error.

    Attributes
    ----------
    value, stderr : the mean difference and its standard error (:func:`paired_difference`).
    n : the teachers (``None`` for a difference on one data set read before it was stored).
    unpaired_stderr : the combined standard error of the two means taken apart,
        ``sqrt(se_a^2 + se_b^2)`` (what the difference's error would be without pairing; ``None``
        where not computed).
    """

    value: float
    stderr: float
    n: int | None = None
    unpaired_stderr: float | None = None

    def critical_value(self, level: float = DECISION_LEVEL) -> float:
        """How many standard errors a two-sided test at ``level`` needs: Student's t quantile
        with ``n - 1`` degrees of freedom over ``n >= 2`` teachers (the standard error is their
        spread), the normal quantile for one (its Monte Carlo error over many sequences)."""
        from scipy import stats

        quantile = 0.5 + level / 2
        if self.n is None or self.n < 2:
            return float(stats.norm.ppf(quantile))
        return float(stats.t.ppf(quantile, self.n - 1))

    def sign(self, level: float = DECISION_LEVEL) -> int:
        """``+1`` or ``-1`` where the difference is further from zero than
        :meth:`critical_value` standard errors (its sign decided at ``level``), else ``0``
        (undecided)."""
        if not abs(self.value) > self.critical_value(level) * self.stderr:
            return 0
        return 1 if self.value > 0 else -1


def difference_name(a: str, b: str) -> str:
    """The name of the difference ``a - b`` (a key of a scored dict, of a row's differences)."""
    return f"{a} - {b}"


def teacher_mean(values: Sequence[float], stderrs: Sequence[float]) -> tuple[float, float]:
    """Mean of per-teacher estimates ``values`` (Monte Carlo standard errors ``stderrs``) and its
    standard error.

    With several teachers the spread over them (which contains each one's Monte Carlo error)
    gives the standard error, floored by the pooled Monte Carlo error
    ``sqrt(mean(stderrs^2) / n)``; with one teacher its Monte Carlo standard error.
    """
    values, stderrs = _checked(values, stderrs)
    n = values.size
    if n == 1:
        return float(values[0]), float(stderrs[0])
    pooled = float(np.mean(stderrs**2) / n)
    return float(values.mean()), float(np.sqrt(max(values.var(ddof=1) / n, pooled)))


def paired_difference(
    a: Sequence[float],
    b: Sequence[float],
    stderr_a: Sequence[float],
    stderr_b: Sequence[float],
    stderr_difference: Sequence[float] | None = None,
) -> PairedDifference:
    """The paired difference ``a - b`` of two estimators measured on the same teachers.

    Parameters
    ----------
    a, b : the per-teacher estimates of the two sides, teacher ``i`` of one paired with teacher
        ``i`` of the other.
    stderr_a, stderr_b : their per-teacher Monte Carlo standard errors.
    stderr_difference : the per-teacher Monte Carlo standard error of ``a_i - b_i`` when both
        were measured on the same test sequences (the standard error over sequences of the
        per-sequence difference); ``None`` when the test sequences of the two are independent:
        then ``sqrt(se_a^2 + se_b^2)``.

    Returns
    -------
    PairedDifference
        ``value``: the mean of ``d_i = a_i - b_i``; ``stderr``: :func:`teacher_mean` of the
        ``d_i`` (the spread over teachers, floored by their pooled Monte Carlo error; one teacher:
        its Monte Carlo error); ``unpaired_stderr``: ``sqrt(SE_a^2 + SE_b^2)`` of the two
        :func:`teacher_mean` taken apart.

    Raises
    ------
    ConfigError
        Lengths that differ, no teacher, or a negative standard error.
    """
    a, stderr_a = _checked(a, stderr_a)
    b, stderr_b = _checked(b, stderr_b)
    if a.size != b.size:
        raise ConfigError(
            f"paired difference: {a.size} teachers on one side, {b.size} on the other"
        )
    if stderr_difference is None:
        stderr_d = np.hypot(stderr_a, stderr_b)
    else:
        _, stderr_d = _checked(a - b, stderr_difference)
    value, stderr = teacher_mean(a - b, stderr_d)
    unpaired = math.hypot(teacher_mean(a, stderr_a)[1], teacher_mean(b, stderr_b)[1])
    return PairedDifference(value, stderr, int(a.size), unpaired)


def _checked(values: Sequence[float], stderrs: Sequence[float]) -> tuple[np.ndarray, np.ndarray]:
    """``values`` and ``stderrs`` as float arrays of the same length ``>= 1``."""
    values = np.asarray(values, dtype=float).reshape(-1)
    stderrs = np.asarray(stderrs, dtype=float).reshape(-1)
    if values.size == 0 or values.size != stderrs.size:
        raise ConfigError(
            f"teacher estimates: {values.size} values and {stderrs.size} standard errors; "
            "one of each per teacher, at least one teacher"
        )
    if np.any(stderrs < 0):
        raise ConfigError("teacher estimates: standard errors must be >= 0")
    return values, stderrs
