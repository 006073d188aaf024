"""Process-wide JAX settings, applied when :mod:`bayes_slr` is imported.

Float64 (the exact integrals and the log-densities need it; one precision everywhere keeps a
seed's output the same in the command line, notebooks and tests) and JAX's persistent
compilation cache (warm starts skip most JIT time), in ``$BAYES_SLR_CACHE`` or
``~/.cache/bayes-slr/jax``. When JAX is not imported yet they are set through its environment
variables, so importing the package does not import JAX.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MIN_COMPILE_SECONDS = 0.5
"""Compilations shorter than this are not cached (not worth the disk)."""


def cache_folder() -> Path:
    """``$BAYES_SLR_CACHE``, or ``~/.cache/bayes-slr/jax``."""
    return Path(os.environ.get("BAYES_SLR_CACHE", Path.home() / ".cache" / "bayes-slr" / "jax"))


def configure_jax() -> None:
    """Turn on float64 and the persistent compilation cache, without importing JAX."""
    settings = {
        "jax_enable_x64": True,
        "jax_compilation_cache_dir": str(cache_folder()),
        "jax_persistent_cache_min_compile_time_secs": MIN_COMPILE_SECONDS,
    }
    if "jax" in sys.modules:
        for name, value in settings.items():
            sys.modules["jax"].config.update(name, value)
    else:
        for name, value in settings.items():
            os.environ[name.upper()] = str(value)


def enable_compilation_cache(folder: str | os.PathLike | None = None) -> Path:
    """Point JAX's persistent compilation cache at ``folder`` (default :func:`cache_folder`)."""
    import jax

    path = Path(folder) if folder is not None else cache_folder()
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", MIN_COMPILE_SECONDS)
    return path
