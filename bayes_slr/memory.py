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


RUNTIME_BYTES = 750 * 2**20
"""What a process holds besides a computation's arrays: Python, JAX's runtime and compiled
programs (the intercept of peak resident memory against the tokens of ``gap`` ERM: 0.64 GB,
:data:`ERM_TOKEN_COPIES`)."""

ERM_TOKEN_COPIES = 4
"""Float64 copies of every seed's training tokens ERM holds at its peak (drawn, padded to the
length bucket, the trainer's intermediates). Measured: the peak resident memory of ``gap
--variant spiked --L 3 --alpha 1 --activations linear --starts 1 --seeds 4 --N-test 2000`` (two
processes on two busy cores, ``/usr/bin/time``) was 0.955 GB at ``D = 1000`` and 1.889 GB at
``D = 2000``: 3.24 bytes of peak per byte of training tokens (``8 seeds N L D``) above 0.64 GB;
at ``alpha = 2``, ``seeds = 2``, ``D = 2000`` (the same tokens) 2.00 GB. The estimate of
:func:`check_erm_memory` (4 copies, a test chunk and :data:`RUNTIME_BYTES`) is 1.35, 2.53 and
2.53 GB: above each by 0.4-0.5 GB."""

CHUNK_COPIES = 3
"""Float64 copies of one simulation chunk a scorer holds (drawn, scored, summed); a chunk has at
most ``max(2**23, L D)`` token entries (:func:`~bayes_slr.models.simulate.chunk_sequences`: a
64 MiB budget, at least one sequence)."""


def check_float64(where: str, entries: float, what: str, hint: str) -> None:
    """Refuse (:func:`check_fits`, host memory, no JAX import) a computation holding ``entries``
    float64 numbers at its peak besides :data:`RUNTIME_BYTES`.

    Parameters
    ----------
    where : the sizes that make the estimate.
    entries : float64 numbers held at the peak.
    what : what they are (the message states it with the count).
    hint : what to change.
    """
    check_fits(
        where,
        8 * entries + RUNTIME_BYTES,
        f"{what}: {entries:.3g} float64 numbers, and the runtime",
        hint,
        ask_device=False,
    )


def chunk_entries(L: int, D: int) -> int:
    """Float64 numbers held by scoring on fresh sequences drawn in chunks (:data:`CHUNK_COPIES`)."""
    return CHUNK_COPIES * max(2**23, L * D)


def check_erm_memory(where: str, N: int, L: int, D: int, seeds: int, hint: str) -> None:
    """Refuse ERM on ``seeds`` training sets of ``N`` sequences of ``L`` tokens in dimension ``D``
    (all seeds held at once, :data:`ERM_TOKEN_COPIES`) scored on fresh chunks, that would not fit
    in memory."""
    tokens = seeds * N * L * D
    check_float64(
        where,
        ERM_TOKEN_COPIES * tokens + chunk_entries(L, D),
        f"{ERM_TOKEN_COPIES} copies of seeds N L D = {tokens:.3g} training token entries and a "
        "test chunk",
        hint,
    )


CHANNEL_ENTRIES = 16
"""Float64 numbers per Monte Carlo channel draw and token that the replica equations hold
(:func:`~bayes_slr.formulas.channel.draw_channel`'s teacher fields, noise, mask and label, the
student fields and the terms computed from them, two components each): an upper-ish count, as
the draws are all held at once; a task whose channel is computed by quadrature holds none."""

CHANNEL_CHUNK_ENTRIES = 2**22
"""Hessian entries the ERM replica channel holds per copy: it solves its proximal problems
:func:`channel_chunk` draws at a time."""

PROX_COPIES = 4
"""``(2 L + 1)^2``-sized arrays the ERM replica channel holds per draw of a chunk (the Hessians
of the Newton steps and of the solution, their factorisations, inverse and Jacobian, and the
intermediates of ``jax.hessian``). Measured with all 32768 draws in one chunk (the code before
:func:`channel_chunk`; ``theory --alpha 4 --activations softmax``, ``/usr/bin/time``): peak
resident memory 0.50 GB at ``L = 3``, 0.84 GB at ``L = 10``, 3.6 GB at ``L = 30``, about 3
copies of ``32768 (2 L + 1)^2`` float64 numbers above the runtime's 0.5 GB; 4 leaves a margin
(docs/performance.md, "Memory of the ERM replica channel")."""


def channel_chunk(L: int) -> int:
    """Draws the ERM replica channel solves at once: the largest power of two whose
    ``(2 L + 1)^2`` Hessians hold at most :data:`CHANNEL_CHUNK_ENTRIES` numbers, at least one
    (all the default draws at ``L <= 3``; 1024 at ``L = 30``)."""
    return 2 ** max(0, (CHANNEL_CHUNK_ENTRIES // (2 * L + 1) ** 2).bit_length() - 1)


def check_channel_memory(draws: int, L: int, hint: str, prox: bool = False) -> None:
    """Refuse ``draws`` Monte Carlo channel draws of ``L`` tokens that would not fit in memory
    (``prox``: and the ERM channel's proximal solves, :data:`PROX_COPIES` Hessians per draw of
    a chunk of :func:`channel_chunk` draws)."""
    chunk = min(draws, channel_chunk(L)) if prox else 0
    what = f"{CHANNEL_ENTRIES} numbers per draw and token"
    if prox:
        what += f", {PROX_COPIES} (2 L + 1)^2 Hessians per draw of a chunk of {chunk}"
    check_float64(
        f"channel draws = {draws}, L = {L}",
        CHANNEL_ENTRIES * draws * L + PROX_COPIES * chunk * (2 * L + 1) ** 2,
        what,
        hint,
    )


VECTOR_COPIES = 96
"""``D``-vectors a training run of one head holds at its peak besides any tokens (teacher, start,
iterate, gradients, the optimiser's state, the span basis, two Gaussian vectors of online SGD's
projected step, checkpoints). Measured: the peak resident memory of ``dynamics --t-max 0.01``
(online SGD, one head) was 0.585 GB at ``D = 1e5`` and 0.990 GB at ``D = 1e6`` (stopped after
300 s): about 56 float64 numbers per coordinate; 96 leaves a margin. One-head online SGD draws
its steps through the span of four vectors, so at ``D = 1e7`` it fits in about 8 GB: what makes
it impractical there is its ``t_max D / eta`` steps of ``O(D)`` work, not its memory."""


def check_dynamics_memory(where: str, D: int, heads: int, tokens: int, hint: str) -> None:
    """Refuse a training run of ``heads`` heads in dimension ``D`` holding ``tokens`` token
    entries (a multi-head run's batches and test set; none for one-head online
    SGD, whose steps draw through the span) that would not fit in memory."""
    check_float64(
        where,
        VECTOR_COPIES * heads * D + tokens,
        f"{VECTOR_COPIES} D-vectors per head and {tokens:.3g} token entries",
        hint,
    )


MC_SEQUENCES_PER_BATCH = 20_000
"""Sequences a population Monte Carlo check draws per compiled step
(:mod:`bayes_slr.formulas.population_mc`): its memory is that of one batch, whatever the number
of sequences."""

MC_ENTRIES = 16
"""Float64 numbers per sequence, token and head of a Monte Carlo batch (scores, values, the
student's fields, weights and their products): an upper-ish count."""


def check_mc_memory(sequences: int, L: int, heads: int, hint: str) -> None:
    """Refuse a population Monte Carlo check of ``sequences`` sequences of ``L`` tokens and
    ``heads`` heads whose batch would not fit in memory."""
    batch = min(sequences, MC_SEQUENCES_PER_BATCH)
    check_float64(
        f"L = {L}, heads = {heads}",
        MC_ENTRIES * batch * L * heads,
        f"{MC_ENTRIES} numbers per sequence, token and head of a batch of {batch} sequences",
        hint,
    )
