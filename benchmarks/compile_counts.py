"""A pytest plugin: per test, its CPU and wall seconds and JAX's compilations (how many programs
it asked for, how many the persistent cache held, the seconds of tracing, lowering and compiling).

Run: ``PYTHONPATH=benchmarks COMPILE_COUNTS_OUT=folder .venv/bin/python -m pytest -p
compile_counts tests/...`` (one process; under ``-n`` each worker writes its own file). Each
process writes ``folder/tests-<worker>-<pid>.json``, ``{test id: {measure: value}}``: ``cpu_s``
(the process's CPU time, all threads: far less noisy than wall time on a shared machine),
``wall_s``, and JAX's monitoring events, ``compile_requests_use_cache`` (programs asked for),
``cache_hits``, ``cache_misses`` (compiled and written to the cache), ``*_duration_s`` (seconds
of tracing, lowering, compiling or loading) and ``compile_time_saved_sec_s`` (the compile time
the cache's hits saved: what a cold cache would have added), and ``backend_compile_s[NAME]``
per program family (the jitted function's name: XLA's compilation with a cold cache, the
loading from the cache with a warm one). ``COMPILE_COUNTS_MIN_SECONDS``
overrides the cache's threshold (``jax_persistent_cache_min_compile_time_secs``) for a
comparison. docs/testing.md gives the measured numbers.
"""

from __future__ import annotations

import collections
import json
import os
import time
from pathlib import Path

import pytest

STATS: dict[str, collections.Counter] = collections.defaultdict(collections.Counter)
CURRENT = ["<collect>"]


def _duration(event: str, seconds: float, fun_name: str | None = None, **_: object) -> None:
    name = event.rsplit("/", 1)[-1]
    STATS[CURRENT[0]][name + "_n"] += 1
    STATS[CURRENT[0]][name + "_s"] += seconds
    if name == "backend_compile_duration" and fun_name is not None:
        STATS[CURRENT[0]][f"backend_compile_s[{fun_name}]"] += seconds


def _event(event: str, **_: object) -> None:
    STATS[CURRENT[0]][event.rsplit("/", 1)[-1]] += 1


def pytest_configure(config: pytest.Config) -> None:
    from jax import monitoring

    monitoring.register_event_duration_secs_listener(_duration)
    monitoring.register_event_listener(_event)


def pytest_sessionstart(session: pytest.Session) -> None:
    threshold = os.environ.get("COMPILE_COUNTS_MIN_SECONDS")
    if threshold is not None:  # after tests/conftest.py has set the package's own
        import jax

        jax.config.update("jax_persistent_cache_min_compile_time_secs", float(threshold))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None):
    CURRENT[0] = item.nodeid
    wall, cpu = time.perf_counter(), time.process_time()
    yield
    STATS[item.nodeid]["wall_s"] += time.perf_counter() - wall
    STATS[item.nodeid]["cpu_s"] += time.process_time() - cpu
    CURRENT[0] = "<between tests>"


def pytest_unconfigure(config: pytest.Config) -> None:
    folder = Path(os.environ.get("COMPILE_COUNTS_OUT", "compile_counts"))
    folder.mkdir(parents=True, exist_ok=True)
    worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = folder / f"tests-{worker}-{os.getpid()}.json"
    path.write_text(json.dumps({test: dict(stats) for test, stats in STATS.items()}, indent=0))
