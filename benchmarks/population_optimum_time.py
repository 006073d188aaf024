"""Wall time of the population engine: the default ``bayes-slr gap`` population sweep and the argmax
routes.

Run: ``.venv/bin/python benchmarks/population_optimum_time.py``. Prints
* the time of the default sweep (max-SLR nu=inf and spiked nu=2, L in 2..100,
  four activations and the Bayes error) in this process, compilation included
  (set ``BAYES_SLR_CACHE=$(mktemp -d)`` for a cold JAX cache);
* the ratio of the two quadratures of softmax's ``A`` on max-SLR with ``nu = inf``
  at a key norm of 8: the cumulative panel route (grids growing like ``|m|^2``, the
  baseline) over the shifted route (grids independent of ``|m|``), both warm.
"""

from __future__ import annotations

import math
import time

import bayes_slr
from bayes_slr.formulas.population import terms_with_bounds
from bayes_slr.jax_setup import enable_compilation_cache
from bayes_slr.models.spec import LengthLaw, SLRConfig


def seconds(call, repeats: int = 3) -> float:
    """Best wall time of ``call()`` over ``repeats`` runs, after one warm-up run."""
    call()
    best = math.inf
    for _ in range(repeats):
        start = time.perf_counter()
        call()
        best = min(best, time.perf_counter() - start)
    return best


def main() -> None:
    enable_compilation_cache()
    start = time.perf_counter()
    bayes_slr.gap(progress=False)
    print(f"default gap sweep (population only): {time.perf_counter() - start:.1f} s")
    cfg = SLRConfig("max", 1, LengthLaw.fixed(10), math.inf)
    shifted = seconds(lambda: terms_with_bounds("softmax", cfg, 8.0, 0.0, 0.0))
    cumulative = seconds(lambda: terms_with_bounds("softmax", cfg, 8.0, 1e-9, 0.0))
    print(
        f"softmax A at |k| = 8, L = 10: shifted {shifted * 1e3:.0f} ms, cumulative "
        f"{cumulative * 1e3:.0f} ms, ratio {cumulative / shifted:.0f}x"
    )


if __name__ == "__main__":
    main()
