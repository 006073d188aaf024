"""Refuse, before anything is allocated, a computation that would not fit in memory.

An experiment estimates the bytes of its largest arrays from its sizes (``N``, ``L``, ``D``,
draws, chains) and calls :func:`check_fits`, which compares the estimate with
:data:`MEMORY_FRACTION` of the memory available (:func:`available_memory`) and raises one
``ConfigError`` line with both, instead of letting the allocation fail inside XLA.
"""

from __future__ import annotations

import os
import sys

from bayes_slr.errors import ConfigError

MEMORY_FRACTION = 0.8
"""A computation whose estimated peak memory exceeds this fraction of the available memory is
refused."""


def host_memory() -> int:
    """Bytes of host memory available now (``MemAvailable``; the physical memory elsewhere)."""
    try:
        with open("/proc/meminfo", encoding="ascii") as handle:
            for line in handle:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))


def available_memory(ask_device: bool = True) -> int:
    """Bytes available to one run: the accelerator's limit, else the host's available memory.

    With ``ask_device=False`` JAX is asked only when it is already imported (a refusal then
    costs no JAX import: the host's memory is the limit of the CPU backend).
    """
    if ask_device or "jax" in sys.modules:
        import jax

        device = jax.devices()[0]
        if device.platform != "cpu":
            stats = device.memory_stats() or {}
            if "bytes_limit" in stats:
                return int(stats["bytes_limit"])
    return host_memory()


def check_fits(
    where: str, needed: float, what: str, hint: str, limit: int | None = None, ask_device=True
) -> None:
    """Raise ``ConfigError`` when ``needed`` bytes exceed ``limit`` (default:
    :data:`MEMORY_FRACTION` of :func:`available_memory`).

    Parameters
    ----------
    where : the sizes that make the estimate (``"N = 1e+09, L = 3, D = 20"``).
    needed : the estimated peak bytes.
    what : what the estimate counts (``"N L D token entries in float64"``).
    hint : what to change (``"use a smaller N, L or D"``).
    limit : bytes allowed, when the caller sets it.
    ask_device : see :func:`available_memory`.
    """
    if limit is None:
        limit = int(MEMORY_FRACTION * available_memory(ask_device))
    if needed > limit:
        raise ConfigError(
            f"{where}: needs about {needed / 2**30:.3g} GiB ({what}) but {limit / 2**30:.3g} "
            f"GiB are allowed; {hint}"
        )
