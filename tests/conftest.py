"""Shared test set-up: float64 (via the package import), JAX compilation cache, size switch."""

from __future__ import annotations

import os

import jax
import pytest

import bayes_slr  # noqa: F401  (turns on float64)
from bayes_slr.jax_setup import enable_compilation_cache, release_compiled_programs

enable_compilation_cache()

FULL_SIZE = os.environ.get("BAYES_SLR_FULL", "") == "1"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Cases marked ``full_size_only`` are skipped unless ``BAYES_SLR_FULL=1``: a parametrized
    test whose cases each compile their own programs runs a representative few in CI (what the
    compilation of the rest would cost a cold cache is most of their time)."""
    if FULL_SIZE:
        return
    skip = pytest.mark.skip(reason="a further case, run at full size (BAYES_SLR_FULL=1)")
    for item in items:
        if item.get_closest_marker("full_size_only") is not None:
            item.add_marker(skip)


@pytest.fixture(scope="session")
def full_size() -> bool:
    """True when ``BAYES_SLR_FULL=1``: slow tests run at their full size instead of the CI size."""
    return FULL_SIZE


@pytest.fixture(scope="module", autouse=True)
def compiled_programs_released():
    """After each test module, JAX's compiled programs are dropped once they hold half the
    kernel's limit on memory maps: a test process loads thousands of programs, and at the limit
    the next one crashes it inside XLA (bayes_slr.jax_setup)."""
    yield
    release_compiled_programs()


@pytest.fixture
def key() -> jax.Array:
    """A fixed PRNG key."""
    return jax.random.PRNGKey(20251130)
