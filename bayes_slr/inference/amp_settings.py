"""The settings of a GAMP run and their checks, importable without JAX (options are validated
before JAX is imported)."""

from __future__ import annotations

import numpy as np

from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Integer,
    Number,
    OneOf,
    OrNone,
)
from bayes_slr.models.spec import INITS

DTYPES = ("float64", "float32")
VARIANCES = ("hessian", "nishimori")
SE_DRAWS_MIN = 16
"""The fewest state-evolution channel draws: the Bayes state evolution cuts them into 8 batches
(``formulas.result.REPLICA_REPLICATES``) of two draws or more for its standard error."""
DEFAULT_DAMPING = 0.7
"""Plain GAMP (damping 1) follows the state evolution for a few steps and then diverges for spiked
SLR (a finite-size mode grows by about 1.7 per step, docs/theory.md part C); 0.7 converges."""


def damping_accepted(name: str, value: object) -> float:
    """A weight of the new iterate in ``(0, 1]``; else ``ConfigError``."""
    damping = Number(0.0, strict=True)(name, value)
    if damping > 1:
        raise ConfigError(
            f"{name} must be a number in (0, 1] (weight of the new iterate), got {damping!r}"
        )
    return damping


def dtype_accepted(name: str, value: object) -> str:
    """One of :data:`DTYPES`, given as its name or a NumPy dtype; else ``ConfigError``."""
    return OneOf(DTYPES)(name, str(np.dtype(value)) if _is_dtype(value) else value)


AMP_ACCEPTS: dict[str, Accepts] = {
    "init": OneOf(INITS),
    "damping": damping_accepted,
    "tol": Number(0.0, strict=True),
    "max_iter": Integer(1),
    "dtype": dtype_accepted,
    "variance": OneOf(VARIANCES),
    "N_test": Integer(2),
    "mc_samples": Integer(SE_DRAWS_MIN),
    "memory_limit": OrNone(Integer(1)),
}
"""The accepted range of each setting of a GAMP run (``AMPSettings``), checked when it is
built."""


def _is_dtype(value: object) -> bool:
    try:
        np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True
