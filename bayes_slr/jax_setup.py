"""Process-wide JAX settings shared by the CLI, tests and notebooks."""

from __future__ import annotations

import os
from pathlib import Path

import jax


def enable_compilation_cache(folder: str | os.PathLike | None = None) -> Path:
    """Turn on JAX's persistent compilation cache (warm starts skip most JIT time).

    The folder defaults to ``$BAYES_SLR_CACHE`` or ``~/.cache/bayes-slr/jax``.
    """
    path = Path(
        folder or os.environ.get("BAYES_SLR_CACHE", Path.home() / ".cache" / "bayes-slr" / "jax")
    )
    path.mkdir(parents=True, exist_ok=True)
    jax.config.update("jax_compilation_cache_dir", str(path))
    jax.config.update("jax_persistent_cache_min_compile_time_secs", 0.5)
    return path
