"""Convergence diagnostics of posterior draws with ArviZ 1.x: summary table and plots.

Works on the ``DataTree`` of :func:`bayes_slr.inference.posterior_io.to_datatree`
(building, saving and loading it live there). Only ``mean``, ``sd``, ``r_hat``,
``ess_bulk``, ``ess_tail`` and ``mcse_mean`` are read from ArviZ's summary: its
interval columns change names between versions.
"""

from __future__ import annotations

import os
from pathlib import Path

import arviz_plots
import arviz_stats
import numpy as np
import xarray as xr

from bayes_slr.inference.posterior_io import OVERLAPS, VECTORS_GROUP
from bayes_slr.records import atomic_write

COORDINATES_SUMMARISED = 3  # k[0..2] and v[0..2] are summarised next to the overlaps
SUMMARY_COLUMNS = ("mean", "sd", "r_hat", "ess_bulk", "ess_tail", "mcse_mean")


def diagnostics_table(tree: xr.DataTree) -> dict[str, dict[str, float]]:
    """``mean, sd, r_hat, ess_bulk, ess_tail, mcse_mean`` of the overlaps and a few coordinates.

    Keys: ``m_k, m_v, q_k, q_v, k[0], ..., v[0], ...`` (without a teacher no ``m_k, m_v``; with
    heads the matched overlaps only).
    With one chain ``r_hat`` is nan.
    """
    posterior = tree.posterior.to_dataset()
    vectors = tree[VECTORS_GROUP].to_dataset()
    # a multi-head posterior is symmetric under a permutation of the heads: its coordinates
    # switch labels between modes, so only the label-free overlaps are summarised
    D = 0 if "head" in vectors.dims else vectors.sizes["dim"]
    selected = posterior[present_overlaps(tree)].assign(
        {
            f"{name}[{i}]": vectors[name].isel(dim=i, drop=True)
            for name in ("k", "v")
            for i in range(min(COORDINATES_SUMMARISED, D))
        }
    )
    return summary_table(selected)


def summary_table(quantities: xr.Dataset) -> dict[str, dict[str, float]]:
    """``mean, sd, r_hat, ess_bulk, ess_tail, mcse_mean`` of each ``(chain, draw)`` variable of
    ``quantities``, by name."""
    table = arviz_stats.summary(quantities, kind="all", round_to="none")
    return {
        str(name): {c: float(table.loc[name, c]) for c in SUMMARY_COLUMNS} for name in table.index
    }


def present_overlaps(tree: xr.DataTree) -> list[str]:
    """The overlaps stored in ``tree``: all of ``OVERLAPS`` with a teacher, the norms ``q_k, q_v``
    without.
    """
    return [name for name in OVERLAPS if name in tree.posterior]


def convergence_summary(table: dict[str, dict[str, float]]) -> dict[str, float]:
    """Worst ``r_hat`` and smallest bulk and tail ESS over the rows of :func:`diagnostics_table`."""
    rows = list(table.values())
    finite_rhat = [row["r_hat"] for row in rows if np.isfinite(row["r_hat"])]
    return {
        "rhat_max": max(finite_rhat) if finite_rhat else float("nan"),
        "ess_bulk_min": min(row["ess_bulk"] for row in rows),
        "ess_tail_min": min(row["ess_tail"] for row in rows),
    }


def plot_diagnostics(tree: xr.DataTree, path: str | os.PathLike | None = None):
    """Trace, marginal density and rank plots of the overlaps, one row each; saved to ``path`` when
    given.

    Returns the Matplotlib figure.
    """
    collection = arviz_plots.combine_plots(
        tree,
        [(arviz_plots.plot_trace, {}), (arviz_plots.plot_dist, {}), (arviz_plots.plot_rank, {})],
        var_names=present_overlaps(tree),
        plot_names=["trace", "density", "rank"],
        backend="matplotlib",
        figure_kwargs={"figsize": (12, 2.8 * len(present_overlaps(tree)))},
    )
    figure = collection.viz["figure"].item()
    figure.subplots_adjust(left=0.07, right=0.98, top=0.95, bottom=0.07, hspace=0.6, wspace=0.2)
    if path is not None:
        atomic_write(
            Path(path),
            lambda tmp: figure.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png"),
        )
    return figure


def plot_overlap_traces(tree: xr.DataTree, ax):
    """The overlaps' traces on one Matplotlib axes: one colour per overlap, one line per chain
    (thin), labelled once per overlap. Returns ``ax``."""
    posterior = tree.posterior
    for index, name in enumerate(present_overlaps(tree)):
        values = np.asarray(posterior[name].values)  # (chain, draw)
        for chain, trace in enumerate(values):
            ax.plot(trace, lw=0.6, alpha=0.7, color=f"C{index}", label=name if chain == 0 else None)
    ax.set(xlabel="draw", ylabel="overlap", title="overlap traces, one line per chain")
    ax.legend(fontsize=8)
    return ax
