"""How ERM is run (docs/erm.md): the settings record and its defaults, checked without JAX.

:class:`ERMSettings` holds every choice of an ERM run besides the task, the data and the root
seed (activation, samples per dimension, ridge, starts, optimiser, seeds, test sequences, the
validation of ``lam="auto"``); it is validated when built, so an experiment's options can refuse a
bad value before any computation.
:func:`bayes_slr.studies.erm.erm_study` runs it.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import numpy as np

from bayes_slr.attention.activations import activation_accepted
from bayes_slr.attention.optimizers import optimizer_accepted
from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Each,
    Integer,
    Number,
    OneOf,
    OrNone,
    validate_fields,
)
from bayes_slr.models.spec import INITS

LAM_AUTO = "auto"
DEFAULT_LAM_GRID = tuple(float(x) for x in np.logspace(-3, 2, 11))
"""Ridge values tried by ``lam="auto"``: ``1e-3 .. 100``, two per decade (the ridge of the sum
objective of docs/model.md section 5, so the same ``lam`` means the same prior at any ``N``). The
top reaches 100 because with ``1e-3 .. 10`` linear attention at spiked ``nu = 2``, ``L = 5``,
``D = 100``, ``alpha = 16`` chose the edge 10 for two of four seeds; large values cost few
iterations (the path starts there)."""
VALIDATION_FRACTION = 0.2
"""Share of the training set held out to choose ``lam`` (the last samples; they are i.i.d.)."""
VALIDATION_PATIENCE = 1
"""``lam="auto"`` with L-BFGS stops descending the grid once the validation error has been
above its best for this many consecutive values: 1 stops at the first value where every seed's
error has turned up. The values below are the slowest to fit (the ridge conditions the flat
directions), so a second one cost about 40% of the path (docs/performance.md)."""
DEFAULT_STARTS = 4
"""Random starts per training set (plus the informed start, a reference only)."""
DEFAULT_N_TEST = 20_000
"""Fresh test sequences per seed when the teacher is known."""


def lam_accepted(name: str, lam: object) -> float | str:
    """``"auto"`` or a number ``>= 0``; else ``ConfigError`` (the accepted range of ``lam``)."""
    if isinstance(lam, str):
        if lam == LAM_AUTO:
            return lam
        raise ConfigError(f"{name} must be a number >= 0 or 'auto', got {lam!r}")
    return Number(0.0)(name, lam)


ERM_ACCEPTS: dict[str, Accepts] = {
    "activation": activation_accepted,
    "alpha": OrNone(Number(0.0, strict=True)),
    "lam": lam_accepted,
    "init": OneOf(INITS),
    "optimizer": optimizer_accepted,
    "tol": Number(0.0, strict=True),
    "max_iter": Integer(1),
    "student_heads": Integer(1),
    "seeds": Integer(1),
    "starts": Integer(1),
    "patience": Integer(1),
    "N_test": Integer(2),
    "lam_grid": Each(Number(0.0)),
    "validation_fraction": Number(0.0, strict=True, below=1.0),
}
"""The accepted range of each field of :class:`ERMSettings`."""


@dataclasses.dataclass(frozen=True)
class ERMSettings:
    """Every choice of an ERM run besides the task, the data and the root seed; checked when built.

    Attributes
    ----------
    activation : the student's activation, a registered one (``softmax``, ``linear``, ``erf``,
        ``softplus``, ...).
    alpha : samples per dimension ``> 0``: ``N = round(alpha D) >= 1``
        (:func:`~bayes_slr.models.spec.training_size`). ``None`` only with given data (it is then
        the given set's ``N / D``); given with data, it must match.
    lam : ridge ``>= 0``, or ``"auto"``: chosen per seed by validation on a held-out
        ``validation_fraction`` of the training set over ``lam_grid`` (docs/erm.md).
    seeds : independent teachers and training sets (1 for given data).
    init : which start is the estimator: the lowest-training-loss random start, or the
        informed start at the teacher (a reference, not an estimator).
    starts : random starts per training set.
    optimizer : a registered optimiser (:mod:`bayes_slr.attention.optimizers`): ``lbfgs`` (to
        ``|grad| <= tol`` or ``max_iter`` iterations) or one pass of ``sgd``.
    N_test : fresh test sequences per seed (when the teacher is known), ``>= 2``.
    tol, max_iter : stopping rule of L-BFGS.
    lam_grid, validation_fraction, patience : the validation of ``lam="auto"``
        (:data:`VALIDATION_PATIENCE`; ``len(lam_grid)`` walks the whole grid).
    exact_teacher : teachers at the population limit ``|k*|^2 = |v*|^2 = D``, ``k* . v* = 0``
        instead of drawn from the prior (removes the teacher-norm part of the fluctuation).
    predict_population : also evaluate, per seed, the population error docs/model.md section 4
        predicts from the fit's overlaps (quadrature; slow for softmax on max-SLR at
        ``nu = inf`` and large key norms; one head only).
    student_heads : the student's heads ``H_s >= 1`` (docs/multihead.md section 7): ``1`` is the
        one-head estimator; more sum ``H_s`` heads, each started at ``N(0, I_D)``
        (:data:`~bayes_slr.attention.estimators.HEADS_INIT_SCALE`), with no informed start.
    """

    activation: str = "softmax"
    alpha: float | None = None
    lam: float | str = LAM_AUTO
    seeds: int = 1
    init: str = "random"
    starts: int = DEFAULT_STARTS
    optimizer: str = "lbfgs"
    N_test: int = DEFAULT_N_TEST
    tol: float = 1e-6
    max_iter: int = 2000
    lam_grid: tuple[float, ...] = DEFAULT_LAM_GRID
    validation_fraction: float = VALIDATION_FRACTION
    patience: int = VALIDATION_PATIENCE
    exact_teacher: bool = False
    predict_population: bool = True
    student_heads: int = 1

    def __post_init__(self) -> None:
        validate_fields(self, ERM_ACCEPTS)
        if self.student_heads > 1 and self.init != "random":
            raise ConfigError(
                f"init: {self.init!r} is one-head only; with student_heads > 1 ERM reports the "
                "lowest-objective random start"
            )

    @property
    def lam_auto(self) -> bool:
        """Whether the ridge is chosen by validation."""
        return self.lam == LAM_AUTO

    def replace(self, **changes: Any) -> ERMSettings:
        """A copy with some settings changed (checked again)."""
        return dataclasses.replace(self, **changes) if changes else self
