"""Sampler kernels over ``(k*, v*)`` behind one interface (see :mod:`.base`).

Each kernel module defines ``NAME``, ``FAMILIES`` (the token-law classes it supports) and
``make_kernel(config, warmup) -> Kernel``; register it in :data:`KERNELS`. The order of
:data:`AUTO_ORDER` decides ``sampler="auto"``: the first kernel supporting the variant.
"""

from __future__ import annotations

from types import ModuleType

from bayes_slr.inference.kernels import gibbs, gibbs_hmc, nuts
from bayes_slr.inference.kernels.base import Kernel, PosteriorDraws, SamplerData, run_chains
from bayes_slr.models.variants import TokenLaw

KERNELS: dict[str, ModuleType] = {module.NAME: module for module in (nuts, gibbs, gibbs_hmc)}
AUTO_ORDER = ("gibbs", "gibbs-hmc", "nuts")
"""``sampler="auto"``: exact Gibbs for spiked SLR, Gibbs-HMC for max-SLR (NUTS last)."""


def supports(name: str, law: TokenLaw) -> bool:
    """Whether the kernel called ``name`` samples the posterior of token law ``law``."""
    return isinstance(law, KERNELS[name].FAMILIES)


def auto_sampler(law: TokenLaw) -> str:
    """The kernel ``sampler="auto"`` picks for token law ``law``."""
    return next(name for name in AUTO_ORDER if supports(name, law))


__all__ = [
    "KERNELS",
    "AUTO_ORDER",
    "Kernel",
    "PosteriorDraws",
    "SamplerData",
    "auto_sampler",
    "run_chains",
    "supports",
]
