"""Compiled programs are released before a process reaches the kernel's limit on memory maps."""

from __future__ import annotations

import jax
import jax.numpy as jnp
import pytest

from bayes_slr.jax_setup import memory_maps, release_compiled_programs

pytestmark = pytest.mark.skipif(memory_maps() is None, reason="no /proc (not Linux)")


def load_programs(count: int) -> list:
    """``count`` distinct compiled programs, kept alive."""
    x = jnp.ones(8)
    functions = [jax.jit(lambda x, i=i: jnp.sin(x * i) + jnp.cumsum(x) * i) for i in range(count)]
    for f in functions:
        f(x).block_until_ready()
    return functions


def test_programs_are_released_beyond_the_share_and_kept_below_it() -> None:
    functions = load_programs(60)
    before, limit = memory_maps()
    assert release_compiled_programs(share=before / limit + 0.01) is False  # below: kept
    assert memory_maps()[0] >= before - 10
    assert release_compiled_programs(share=0.0) is True  # beyond: released
    after = memory_maps()[0]
    assert after < before - 3 * 60  # each program held about six maps
    # a function called again loads its program again: sin(x) + cumsum(x) at x = 1
    assert float(functions[1](jnp.ones(8))[0]) == pytest.approx(float(jnp.sin(1.0)) + 1.0)
