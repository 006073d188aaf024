"""The settings of a GAMP run and their checks, importable without JAX (options are validated
before JAX is imported)."""

from __future__ import annotations

import numpy as np

from bayes_slr.errors import ConfigError, check_choice, check_int, check_real
from bayes_slr.models.spec import INITS

DTYPES = ("float64", "float32")
VARIANCES = ("hessian", "nishimori")
DEFAULT_DAMPING = 0.7
"""Plain GAMP (damping 1) follows the state evolution for a few steps and then diverges for spiked
SLR (a finite-size mode grows by about 1.7 per step, docs/theory.md part C); 0.7 converges."""


def check_amp_options(
    *,
    init: object = "random",
    damping: object = DEFAULT_DAMPING,
    tol: object = 1e-6,
    max_iter: object = 300,
    dtype: object = "float64",
) -> tuple[str, float, float, int, str]:
    """Validate the AMP options; raise ``ConfigError`` naming the bad one.

    Returns ``(init, damping, tol, max_iter, dtype)``: ``init`` in :data:`INITS`,
    ``0 < damping <= 1``, ``tol > 0``, ``max_iter >= 1``, ``dtype`` in :data:`DTYPES`.
    """
    init = check_choice("init", init, INITS)
    damping = check_real("damping", damping, minimum=0.0, strict=True)
    if damping > 1:
        raise ConfigError(
            f"damping must be a number in (0, 1] (weight of the new iterate), got {damping!r}"
        )
    tol = check_real("tol", tol, minimum=0.0, strict=True)
    max_iter = check_int("max_iter", max_iter, 1)
    dtype = check_choice("dtype", str(np.dtype(dtype)) if _is_dtype(dtype) else dtype, DTYPES)
    return init, damping, tol, max_iter, dtype


def _is_dtype(value: object) -> bool:
    try:
        np.dtype(value)  # type: ignore[call-overload]
    except TypeError:
        return False
    return True
