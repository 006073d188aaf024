"""Sampler kernels over ``(k*, v*)`` behind one interface (see :mod:`.base`).

Each kernel module defines ``NAME``, ``VARIANTS`` (token laws it supports) and
``make_kernel(config, warmup) -> Kernel``; register it in :data:`KERNELS`. The order of
:data:`AUTO_ORDER` decides ``sampler="auto"``: the first kernel supporting the variant.
"""

from __future__ import annotations

from types import ModuleType

from bayes_slr.inference.kernels import gibbs, gibbs_hmc, nuts
from bayes_slr.inference.kernels.base import Kernel, PosteriorDraws, SamplerData, run_chains

KERNELS: dict[str, ModuleType] = {module.NAME: module for module in (nuts, gibbs, gibbs_hmc)}
AUTO_ORDER = ("gibbs", "gibbs-hmc", "nuts")
"""``sampler="auto"``: exact Gibbs for spiked SLR, Gibbs-HMC for max-SLR (NUTS last)."""


def auto_sampler(variant: str) -> str:
    """The kernel ``sampler="auto"`` picks for ``variant``."""
    return next(name for name in AUTO_ORDER if variant in KERNELS[name].VARIANTS)


__all__ = ["KERNELS", "AUTO_ORDER", "Kernel", "PosteriorDraws", "SamplerData", "auto_sampler", "run_chains"]
