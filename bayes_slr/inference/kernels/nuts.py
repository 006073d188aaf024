"""NUTS on the posterior with the location summed out (kernel ``"nuts"``), any variant, finite
``nu``.

NumPyro's functional HMC API (``numpyro.infer.hmc.hmc(potential_fn_gen=..., algo="NUTS")``) is
the engine: its ``init_kernel``/``sample_kernel`` pair carries the warm-up adaptation
(step size by dual averaging, diagonal mass matrix by windowed adaptation) in its state
and stops adapting after the ``warmup`` steps it was initialised with. The potential is
``-log p(k, v, X, y)`` of :func:`~bayes_slr.models.numpyro_models.marginal_log_density`.
"""

from __future__ import annotations

import functools
from typing import NamedTuple

import jax
from numpyro.infer.hmc import hmc

from bayes_slr.inference.kernels.base import Kernel, SamplerData
from bayes_slr.models.numpyro_models import marginal_log_density
from bayes_slr.models.spec import SLRConfig

NAME = "nuts"


class NUTSState(NamedTuple):
    hmc_state: object
    data: SamplerData


@functools.lru_cache(maxsize=32)
def make_kernel(config: SLRConfig, warmup: int) -> Kernel:
    """NUTS for ``config`` adapting during the first ``warmup`` steps."""

    def potential_fn_gen(data: SamplerData):
        return lambda params: -marginal_log_density(params, config, data.X, data.lengths, data.y)

    init_kernel, sample_kernel = hmc(potential_fn_gen=potential_fn_gen, algo="NUTS")

    def init(key: jax.Array, data: SamplerData, start: tuple[jax.Array, jax.Array]) -> NUTSState:
        params = {"k": start[0], "v": start[1]}
        state = init_kernel(params, warmup, model_args=(data,), rng_key=key)
        return NUTSState(state, data)

    def step(key: jax.Array, state: NUTSState) -> tuple[NUTSState, dict[str, jax.Array]]:
        # NumPyro keeps its own key in the state; fold ours in so that the step is a function of
        # key.
        hmc_state = state.hmc_state._replace(rng_key=key)
        new = sample_kernel(hmc_state, model_args=(state.data,))
        info = {
            "diverging": new.diverging,
            "acceptance_rate": new.accept_prob,
            "n_steps": new.num_steps,
        }
        return NUTSState(new, state.data), info

    def position(state: NUTSState):
        return state.hmc_state.z["k"], state.hmc_state.z["v"]

    return Kernel(NAME, init, step, position)
