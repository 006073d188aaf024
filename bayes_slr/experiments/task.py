"""The options every experiment shares, declared once: one name, default and help per concept.

Defaults (docs/defaults.md): spiked SLR, ``nu`` = the variant's own (spiked 2, max inf),
``L = 3``, ``Delta = 0.1``, ``D = 100``, ``seed = 0``. An experiment whose method needs another
value says so in its option's help (AMP runs at ``D = 2000``: it is a large-``D`` algorithm).
"""

from __future__ import annotations

import math
from typing import Any

from bayes_slr.attention.erm_settings import LAM_AUTO
from bayes_slr.errors import ConfigError
from bayes_slr.experiments.base import option
from bayes_slr.models.spec import LengthLaw, SLRConfig
from bayes_slr.models.variants import get_variant, variant_names

DEFAULT_VARIANT = "spiked"
DEFAULT_L = 3
DEFAULT_DELTA = 0.1
DEFAULT_D = 100
DEFAULT_SEED = 0
NU_DEFAULT_TEXT = "the variant's own: spiked 2, max inf"


def variant_option(
    default: str | None = DEFAULT_VARIANT, help: str = "token law", **spec: Any
) -> Any:
    """``variant``: the name of a registered token law."""
    return option(default, help, choices=variant_names, **spec)


def nu_option(default_text: str = NU_DEFAULT_TEXT) -> Any:
    """``nu``: signal strength; ``None`` means the variant's default."""
    return option(None, "signal strength, >= 0 (inf for max only)", default_text=default_text)


def nus_option() -> Any:
    """``nu`` as a list of signal strengths; ``None`` means the variant's default."""
    return option(
        None, "signal strengths, each >= 0 (inf for max only)", default_text=NU_DEFAULT_TEXT
    )


def L_option(default: int | None = DEFAULT_L, **spec: Any) -> Any:
    """``L``: the sequence length, or ``Lbar`` of the uniform law with ``variable_length``."""
    return option(
        default, "sequence length, >= 1 (Lbar of the uniform law with --variable-length)", **spec
    )


def variable_length_option(default: bool | None = False, **spec: Any) -> Any:
    """``variable_length``: lengths uniform on ``{1..L}``."""
    return option(default, "length uniform on {1..L} instead of fixed", **spec)


def Delta_option(default: float | None = DEFAULT_DELTA, **spec: Any) -> Any:
    """``Delta``: the noise variance of ``y``."""
    return option(default, "noise variance of y, >= 0; errors are the excess over it", **spec)


def heads_option() -> Any:
    """``heads``: the number of teacher heads of multi-head SLR (docs/multihead.md)."""
    return option(1, "teacher heads H, >= 1 (docs/multihead.md; 1: one-head SLR)")


def presence_option() -> Any:
    """``presence``: the probability that a head's token is in a sequence."""
    return option(
        1.0, "probability rho in (0, 1] that a head's token is present (spiked for rho < 1)"
    )


def D_option(default: int | None = DEFAULT_D, help: str = "token dimension, >= 1", **spec) -> Any:
    """``D``: the token dimension of finite-size simulations."""
    return option(default, help, **spec)


def seed_option(
    help: str = "root seed of every random draw", default: int | None = DEFAULT_SEED, **spec: Any
) -> Any:
    """``seed``: the root seed."""
    return option(default, help, **spec)


def parse_lam(text: str) -> float | str:
    """A command-line ``lam``: ``auto`` or a number (any other word is kept, for
    :func:`check_lam` to refuse with its message)."""
    try:
        return float(text)
    except ValueError:
        return text


def lam_option(
    default: float | str | None = LAM_AUTO,
    help: str = "ridge of ERM: >= 0, or auto (chosen by held-out validation)",
    **spec: Any,
) -> Any:
    """``lam``: the ridge of ERM, a number or ``"auto"``."""
    return option(default, help, parse=parse_lam, metavar="LAM|auto", **spec)


def resolved_nu(variant: str, nu: float | None) -> float:
    """``nu``, or the variant's default when ``None``."""
    return get_variant(variant).default_nu if nu is None else nu


def task_config(
    variant: str,
    L: int,
    variable_length: bool,
    nu: float | None,
    Delta: float,
    D: int = 1,
    heads: int = 1,
    presence: float = 1.0,
) -> SLRConfig:
    """The validated task of these settings (``ConfigError`` naming the bad one)."""
    length = LengthLaw.uniform(L) if variable_length else LengthLaw.fixed(L)
    return SLRConfig(variant, D, length, resolved_nu(variant, nu), Delta, heads, presence)


def describe_nu(nu: float) -> str:
    """``nu`` as printed in tables and titles."""
    return "inf" if math.isinf(nu) else f"{nu:g}"


def check_nonempty(name: str, values: tuple) -> None:
    """Refuse an empty list of values."""
    if len(values) == 0:
        raise ConfigError(f"{name}: give at least one value")
