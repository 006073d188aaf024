"""Sampler kernels over ``(k*, v*)`` behind one interface (see :mod:`.base`).

Each kernel module defines ``make_kernel(config, warmup) -> Kernel``; its
:class:`~bayes_slr.inference.sampler_registry.Sampler` record (name, description, the variants it
supports) is registered in :mod:`bayes_slr.inference.sampler_registry`, which also decides
``sampler="auto"``.
"""

from __future__ import annotations

from bayes_slr.inference.kernels.base import Kernel, PosteriorDraws, SamplerData, run_chains

__all__ = ["Kernel", "PosteriorDraws", "SamplerData", "run_chains"]
