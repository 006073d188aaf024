"""The sampler-kernel interface and the one driver that runs every kernel.

A kernel (BlackJAX style) is a :class:`Kernel` record of pure functions:

* ``init(key, data, start) -> state``: the state of one chain at ``start = (k, v)``;
* ``step(key, state) -> (state, info)``: one transition (warm-up adaptation, if any,
  happens inside ``step`` while the state's step counter is below the warm-up length
  the kernel was built with); ``info`` is a dict of scalars;
* ``position(state) -> (k, v)``.

:func:`run_chains` drives any kernel with ONE ``lax.scan`` over ``warmup + samples``
steps, ``vmap``-ed over chains, inside one ``jit``, the chains split over the devices
(:func:`scan_chains`); :func:`~bayes_slr.inference.samplers.sample_posterior` turns its
output into one :class:`PosteriorDraws` (kept draws, plus the warm-up trajectory). A new
inference algorithm is one module with a ``make_kernel(config, warmup) -> Kernel`` function and
a :class:`~bayes_slr.inference.sampler_registry.Sampler` record registered under its name.
"""

from __future__ import annotations

import contextlib
import functools
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from bayes_slr.models.simulate import SLRBatch
from bayes_slr.numerics.devices import AXIS, device_count, device_mesh
from bayes_slr.progress import progress_bar


class SamplerData(NamedTuple):
    """What every kernel conditions on: the training set (tokens, lengths, outputs)."""

    X: jax.Array
    lengths: jax.Array
    y: jax.Array

    @classmethod
    def of(cls, batch: SLRBatch) -> SamplerData:
        return cls(jnp.asarray(batch.X), jnp.asarray(batch.lengths), jnp.asarray(batch.y))


class Kernel(NamedTuple):
    """A sampler kernel: pure ``init``/``step``/``position`` functions and its name."""

    name: str
    init: Callable[[jax.Array, SamplerData, tuple[jax.Array, jax.Array]], Any]
    step: Callable[[jax.Array, Any], tuple[Any, dict[str, jax.Array]]]
    position: Callable[[Any], tuple[jax.Array, jax.Array]]


class PosteriorDraws(NamedTuple):
    """Posterior draws of the directions, grouped by chain.

    Attributes
    ----------
    k, v : (chains, draws, D) kept draws of ``k*`` and ``v*`` (``(chains, draws, H, D)`` for a
        multi-head task).
    log_density : (chains, draws) joint log-density ``log p(k, v, X, y)`` (location summed out).
    sample_stats : dict of (chains, draws) sampler statistics of the kept draws (NUTS:
        ``diverging``, ``acceptance_rate``, ``n_steps``; Gibbs-HMC: ``acceptance_rate``,
        ``step_size``; Gibbs: none).
    sampler : name of the registered sampler that drew them
        (:mod:`bayes_slr.inference.sampler_registry`).
    warmup : dict with the warm-up trajectory ``k``, ``v`` (chains, warmup, D), or None.
    """

    k: np.ndarray
    v: np.ndarray
    log_density: np.ndarray
    sample_stats: dict[str, np.ndarray]
    sampler: str
    warmup: dict[str, np.ndarray] | None = None


_STEP_REPORT: list[Callable[[int], None]] = []
"""The progress report of the chains running now (at most one): called from the compiled loop."""


def _report_step(step: jax.Array) -> None:
    """Host side of the chains' progress: hand the step reached to the current report."""
    for report in _STEP_REPORT:
        report(int(step))


@functools.partial(
    jax.jit, static_argnames=("kernel", "warmup", "samples", "n_devices", "report_every")
)
def scan_chains(
    kernel: Kernel,
    keys: jax.Array,
    data: SamplerData,
    k0: jax.Array,
    v0: jax.Array,
    *,
    warmup: int,
    samples: int,
    n_devices: int = 1,
    report_every: int = 0,
):
    """Every chain's ``warmup + samples`` steps: one ``lax.scan``, ``vmap``-ed over the chains of
    each device.

    The chain axis (``keys``, ``k0``, ``v0``, all with ``chains`` rows, a multiple of
    ``n_devices``) is split into equal blocks over the first ``n_devices`` devices
    (:func:`~bayes_slr.numerics.devices.device_mesh`, ``jax.shard_map``); the data are
    replicated. The outputs ``((k, v), infos)``, chain axis first, stay laid out that way.
    With ``report_every > 0`` the loop reports every ``report_every``-th step to the host
    (:func:`_report_step`, for a progress bar); the draws do not depend on it.
    A chain's numbers depend only on its key and start, not on where it runs (up to
    rounding: XLA may round the vmapped program at another batch size differently in the
    last bit, which long HMC/NUTS trajectories amplify; ``docs/performance.md``).
    """

    def chain(key, k_start, v_start):
        key_init, key_run = jax.random.split(key)
        state = kernel.init(key_init, data, (k_start, v_start))

        def body(state, step_and_key):
            step, key_step = step_and_key
            if report_every:
                jax.lax.cond(
                    step % report_every == 0,
                    lambda: jax.debug.callback(_report_step, step),
                    lambda: None,
                )
            state, info = kernel.step(key_step, state)
            return state, (kernel.position(state), info)

        steps = jnp.arange(warmup + samples)
        _, (positions, infos) = jax.lax.scan(
            body, state, (steps, jax.random.split(key_run, warmup + samples))
        )
        return positions, infos

    return jax.shard_map(
        jax.vmap(chain),
        mesh=device_mesh(n_devices),
        in_specs=P(AXIS),
        out_specs=P(AXIS),
        check_vma=False,
    )(keys, k0, v0)


def run_chains(
    key: jax.Array,
    kernel: Kernel,
    data: SamplerData,
    starts: tuple[jax.Array, jax.Array],
    *,
    warmup: int,
    samples: int,
    progress: bool = False,
    label: str = "chains",
) -> tuple[dict[str, np.ndarray], dict[str, np.ndarray]]:
    """Run one chain per start with ``kernel``: ``warmup`` then ``samples`` steps, one ``lax.scan``.

    The chains are spread over the devices JAX sees (at most one device per chain): with
    ``n`` devices in use the chain count is padded up to a multiple of ``n`` by repeating
    the last chain, whose copies are dropped. Each chain's draws are the same on any
    number of devices up to rounding (:func:`scan_chains`).

    Parameters
    ----------
    key : PRNG key (split over chains).
    kernel : Kernel
        Built for this ``warmup`` (its adaptation, if any, stops there).
    data : SamplerData
    starts : ``(k0, v0)``, each ``(chains, D)``.
    progress : a transient progress bar of the steps (warm-up, then sampling) of the chains.
    label : the bar's name.

    Returns
    -------
    positions, infos : ``{"k", "v"}`` arrays ``(chains, warmup + samples, D)`` and the
        per-step ``info`` arrays ``(chains, warmup + samples)``.
    """
    k0, v0 = (jnp.asarray(x) for x in starts)
    chains = k0.shape[0]
    keys = jax.random.split(key, chains)
    n_devices = min(device_count(), chains)
    padding = -chains % n_devices
    if padding:  # (not padding by nothing: each eager operation is a program per shape)
        keys, k0, v0 = (
            jnp.concatenate([x, jnp.repeat(x[-1:], padding, axis=0)]) for x in (keys, k0, v0)
        )
    with _step_progress(warmup, samples, progress, f"{label} ({chains})") as report_every:
        (k, v), infos = scan_chains(
            kernel,
            keys,
            data,
            k0,
            v0,
            warmup=warmup,
            samples=samples,
            n_devices=n_devices,
            report_every=report_every,
        )
        jax.block_until_ready((k, v))
        jax.effects_barrier()
    return (
        {"k": np.asarray(k)[:chains], "v": np.asarray(v)[:chains]},
        {name: np.asarray(x)[:chains] for name, x in infos.items()},
    )


@contextlib.contextmanager
def _step_progress(warmup: int, samples: int, show: bool, label: str) -> Iterator[int]:
    """A transient bar of the chains' steps, named by phase (warm-up, sampling) while it runs;
    yields how often the compiled loop reports (0: never, when not shown)."""
    if not show:
        yield 0
        return
    total = warmup + samples
    with progress_bar(
        total=total, desc=f"{label} warm-up", unit="step", show=True, leave=False
    ) as bar:

        def report(step: int) -> None:
            if bar.n < warmup <= step:
                bar.set_description(f"{label} sampling")  # shown at once: phase changed
            bar.update(max(step - bar.n, 0))

        _STEP_REPORT.append(report)
        try:
            yield max(1, total // REPORTS)
        finally:
            _STEP_REPORT.remove(report)
        bar.update(total - bar.n)


REPORTS = 50
"""How many times a shown bar is moved during the chains' steps."""
