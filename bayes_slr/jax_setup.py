"""Process-wide JAX settings, applied when :mod:`bayes_slr` is imported.

Float64 (the exact integrals and the log-densities need it; one precision everywhere keeps a
seed's output the same in the command line, notebooks and tests) and JAX's persistent
compilation cache (warm starts skip most JIT time), in ``$BAYES_SLR_CACHE`` or
``~/.cache/bayes-slr/jax``. When JAX is not imported yet they are set through its environment
variables, so importing the package does not import JAX.

A long-lived process (a notebook, a sweep, a test run) also needs its compiled programs released
now and then (:func:`release_compiled_programs`): each program XLA loads for the CPU holds about
six memory maps, and Linux refuses a process more than ``vm.max_map_count`` of them (65530 by
default), at which point loading the next program crashes the process inside XLA (measured: a
test run that loaded about 11 000 programs in one process crashed with 65 272 maps).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

MIN_COMPILE_SECONDS = 0.0
"""Compilations shorter than this are not cached: none, every program is. Most programs are short
(each eager operation on a new shape is one, tens of milliseconds to compile, about 4 kB on
disk), and a process that does not find them in the cache compiles them again, every run:
measured with a warm cache (docs/testing.md), 4 test files asked for 980 programs, 798 of them
under the former 0.5 s threshold; cached too, the files' CPU time fell from 46.0 s to 23.6 s."""

MAP_SHARE = 0.5
"""Share of the kernel's limit on a process's memory maps beyond which
:func:`release_compiled_programs` drops JAX's compiled programs: far above what one sweep point
or one test module adds (a few thousand maps), far below the limit."""


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


def memory_maps() -> tuple[int, int] | None:
    """``(memory maps of this process, the kernel's limit vm.max_map_count)``, or ``None`` where
    ``/proc`` does not say (not Linux)."""
    try:
        with open("/proc/self/maps", "rb") as maps:
            count = sum(1 for _ in maps)
        with open("/proc/sys/vm/max_map_count") as limit:
            return count, int(limit.read())
    except (OSError, ValueError):
        return None


def release_compiled_programs(share: float = MAP_SHARE) -> bool:
    """Drop JAX's in-memory compiled programs and traces (``jax.clear_caches``) once this process
    holds more than ``share`` of the kernel's limit on memory maps (module docstring); the next
    call of a function loads its program again, from the persistent compilation cache when it
    is there. Returns whether it released them.
    """
    counts = memory_maps()
    if counts is None or counts[0] <= share * counts[1] or "jax" not in sys.modules:
        return False
    import gc

    sys.modules["jax"].clear_caches()
    gc.collect()
    return True
