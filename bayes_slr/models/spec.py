"""The immutable description of an SLR task (docs/model.md section 1)."""

from __future__ import annotations

import dataclasses
import math
from typing import Any

import numpy as np

from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Integer,
    Number,
    check_int,
    check_real,
    validate_fields,
)
from bayes_slr.models.variants import TokenLaw, get_variant, probability_accepted
from bayes_slr.numerics.record import JsonObject, converter

DEFAULT_VARIANT = "spiked"
DEFAULT_L = 3
DEFAULT_DELTA = 0.1
DEFAULT_D = 100
"""The toolkit's default task: every command's, and a claim's."""
INITS = ("random", "informed")
"""Starts of every iterative method (ERM, samplers, state evolution, AMP): uninformed (random) or at
the teacher.
"""


MAX_LENGTH = 10**7
"""The longest sequence length: a length law holds one probability per length, and every
computation at least ``L`` numbers per sequence."""


def check_length(name: str, value: object) -> int:
    """``value`` as a sequence length in ``1..MAX_LENGTH``; ``ConfigError`` naming ``name``."""
    length = check_int(name, value, 1)
    if length > MAX_LENGTH:
        raise ConfigError(
            f"{name} must be an integer in 1..{MAX_LENGTH:.0e} (got {length:.3g}): a length law "
            "holds one probability per length"
        )
    return length


TASK_ACCEPTS: dict[str, Accepts] = {
    "L": check_length,
    "D": Integer(1),
    "Delta": Number(0.0),
    "heads": Integer(1),
    "presence": probability_accepted,  # a variant may accept less
}
"""The accepted range of each task setting with one range for every variant (``nu``'s and a
variant's own ``presence`` are its law's, :class:`SLRConfig` checks them): what
:class:`SLRConfig` and the commands' task options check."""


@dataclasses.dataclass(frozen=True)
class LengthLaw:
    """Law of the sequence length on ``{1, ..., Lbar}``.

    Parameters
    ----------
    probs : tuple of float
        ``probs[i]`` is ``P(L = i + 1)``; sums to one. A fixed length ``L`` is the
        one-hot law on ``L``.
    """

    probs: tuple[float, ...]

    def __post_init__(self) -> None:
        p = np.asarray(self.probs, dtype=float)
        if p.ndim != 1 or p.size < 1:
            raise ConfigError(
                "length probabilities must be a non-empty list, one per length 1..Lbar"
            )
        if not np.all(np.isfinite(p)) or np.any(p < 0):
            raise ConfigError("length probabilities must be finite and >= 0")
        if abs(p.sum() - 1.0) > 1e-9:
            raise ConfigError(f"length probabilities must sum to 1, got sum {p.sum():.12g}")
        if p[-1] == 0:
            raise ConfigError("length probabilities: the last entry (P(L = Lbar)) must be > 0")
        object.__setattr__(self, "probs", tuple(float(x) for x in p))

    @classmethod
    def fixed(cls, L: int) -> LengthLaw:
        """Every sequence has length ``L`` (``L >= 1``)."""
        L = check_length("L", L)
        return cls(tuple(1.0 if i == L - 1 else 0.0 for i in range(L)))

    @classmethod
    def uniform(cls, Lbar: int) -> LengthLaw:
        """Length uniform on ``{1, ..., Lbar}`` (``Lbar >= 1``)."""
        Lbar = check_length("Lbar", Lbar)
        return cls(tuple(1.0 / Lbar for _ in range(Lbar)))

    @property
    def Lbar(self) -> int:
        """Largest length: the padded length of a batch."""
        return len(self.probs)

    @property
    def is_fixed(self) -> bool:
        """Whether all mass sits on ``Lbar``."""
        return self.probs[-1] == 1.0

    def support(self) -> tuple[tuple[int, float], ...]:
        """The pairs ``(L, P(L))`` with positive probability."""
        return tuple((i + 1, p) for i, p in enumerate(self.probs) if p > 0)

    def mean(self) -> float:
        """``E[L]``."""
        return float(sum(L * p for L, p in self.support()))

    def describe(self) -> str:
        """Short human-readable form: ``L=5`` or ``L~U{1..5}`` or ``L~custom(Lbar=5)``."""
        if self.is_fixed:
            return f"L={self.Lbar}"
        if all(abs(p - 1.0 / self.Lbar) < 1e-12 for p in self.probs):
            return f"L~U{{1..{self.Lbar}}}"
        return f"L~custom(Lbar={self.Lbar})"


@dataclasses.dataclass(frozen=True)
class SLRConfig:
    """One SLR task.

    Parameters
    ----------
    variant : str
        Name of a registered token law (:mod:`bayes_slr.models.variants`): ``spiked`` (a
        spike ``sqrt(nu) k*/sqrt(D)`` at the location) or ``max`` (the location drawn from
        ``softmax(nu chi*)`` over i.i.d. tokens).
    D : int
        Token dimension, ``>= 1``.
    length : LengthLaw
        Law of the sequence length.
    nu : float
        Signal strength, ``>= 0``; ``inf`` only where the variant allows it (max: location =
        argmax).
    Delta : float
        Noise variance of ``y``, ``>= 0``.
    heads : int
        Number of teacher heads ``H >= 1`` (docs/multihead.md): head ``h`` has its own key and
        value, location and presence.
    presence : float
        Probability ``rho`` in ``(0, 1]`` that a head's token is in a sequence (spiked law for
        any ``rho``; the max law only at 1). ``heads = 1``, ``presence = 1`` is one-head SLR.
    """

    variant: str
    D: int
    length: LengthLaw
    nu: float
    Delta: float = 0.0
    heads: int = 1
    presence: float = 1.0

    def __post_init__(self) -> None:
        law = get_variant(self.variant)
        if not isinstance(self.length, LengthLaw):
            raise ConfigError(f"length must be a LengthLaw, got {type(self.length).__name__}")
        object.__setattr__(self, "nu", law.check_nu(self.nu))
        validate_fields(self, {name: TASK_ACCEPTS[name] for name in ("D", "Delta", "heads")})
        object.__setattr__(self, "presence", law.check_presence(self.presence))

    @property
    def multihead(self) -> bool:
        """Whether the task has several heads or heads that may be absent (arrays then carry a
        head axis, docs/multihead.md); ``False`` for one-head SLR."""
        return self.heads > 1 or self.presence < 1.0

    @property
    def Lbar(self) -> int:
        """Padded length."""
        return self.length.Lbar

    @property
    def law(self) -> TokenLaw:
        """The token-law object of the variant: every variant-dependent computation asks it."""
        return get_variant(self.variant)

    @property
    def c_nu(self) -> float:
        """Inverse temperature of the location posterior: ``sqrt(nu)`` (spiked) or ``nu`` (max)."""
        return float(self.law.c_nu(self.nu))

    def replace(self, **changes: Any) -> SLRConfig:
        """A copy with some fields changed (validated again)."""
        return dataclasses.replace(self, **changes)

    def to_dict(self) -> JsonObject:
        """JSON-ready form (``nu = inf`` a float, which JSON text writes as ``1e999``; records
        written before hold the string ``"inf"``, which :meth:`from_dict` reads too); ``heads``
        and ``presence`` only for a multi-head task (a one-head record is unchanged)."""
        record = {
            "variant": self.variant,
            "D": self.D,
            "length_probs": list(self.length.probs),
            "length": self.length.describe(),
            "nu": self.nu,
            "Delta": self.Delta,
        }
        if self.multihead:
            record.update(heads=self.heads, presence=self.presence)
        return record

    @classmethod
    def from_dict(cls, data: JsonObject) -> SLRConfig:
        """Inverse of :meth:`to_dict`."""
        try:
            return cls(
                variant=data["variant"],
                D=data["D"],
                length=LengthLaw(tuple(data["length_probs"])),
                nu=float(data["nu"]),
                Delta=data["Delta"],
                heads=data.get("heads", 1),
                presence=data.get("presence", 1.0),
            )
        except (KeyError, TypeError) as exc:
            raise ConfigError(f"config record is incomplete or malformed: {exc}") from exc


converter.register_unstructure_hook(SLRConfig, SLRConfig.to_dict)
converter.register_structure_hook(SLRConfig, lambda data, _: SLRConfig.from_dict(data))
"""A record holding a task (a training run's settings) writes it as :meth:`SLRConfig.to_dict`."""


def training_size(alpha: object, D: int) -> int:
    """Training-set size ``N = round(alpha D)`` of the finite-data setting (docs/model.md section
    5).

    Raises ``ConfigError`` unless ``alpha > 0`` and ``N >= 1``.
    """
    alpha = check_real("alpha", alpha, minimum=0.0, strict=True)
    N = round(alpha * D)
    if N < 1:
        raise ConfigError(
            f"alpha must give N = round(alpha * D) >= 1 (D = {D}), got alpha = {alpha:g}"
        )
    return N


def describe_nu(nu: float) -> str:
    """``nu`` as printed in tables and titles."""
    return "inf" if math.isinf(nu) else f"{nu:g}"


def resolved_nu(variant: str, nu: float | None) -> float:
    """``nu``, or the variant's default when ``None``."""
    return get_variant(variant).default_nu if nu is None else nu


def task_config(
    variant: str,
    L: int,
    variable_length: bool,
    nu: float | None = None,
    Delta: float = 0.0,
    D: int = 1,
    heads: int = 1,
    presence: float = 1.0,
) -> SLRConfig:
    """The validated task of these settings (``ConfigError`` naming the bad one): the one
    function that resolves the task fields into ``SLRConfig``."""
    length = LengthLaw.uniform(L) if variable_length else LengthLaw.fixed(L)
    return SLRConfig(variant, D, length, resolved_nu(variant, nu), Delta, heads, presence)
