"""Posterior draws as an ArviZ ``xarray.DataTree``: build it, save and load it as netCDF, read it
back.

Groups of the tree written by :func:`to_datatree` (the layout is the one ArviZ 0.23's
``InferenceData`` wrote, so files from before the move to ArviZ 1.x load unchanged):

* ``posterior``: the overlaps ``m_k = k.k*/D``, ``m_v = v.v*/D``, ``q_k = k.k/D``,
  ``q_v = v.v/D`` (``chain, draw``); its attributes hold the task, the sampler, the seed and the
  package versions (``bayes_slr`` key). What ArviZ plots and summarises by default
  (``az.plot_trace(tree)``, ``az.plot_dist``, ``az.summary``): four panels, whatever ``D``.
* ``posterior_vectors`` (:data:`VECTORS_GROUP`): the draws of ``k``, ``v`` (``chain, draw,
  dim``), kept out of ``posterior``, as a plot of every coordinate exceeds ArviZ's
  ``plot.max_subplots`` (40) from ``D = 19``; ``az.plot_trace(tree,
  group="posterior_vectors", coords={"dim": [0, 1]})`` draws some. Files written before, with
  ``k`` and ``v`` in ``posterior``, are read into this layout (:func:`load_posterior`).
* ``sample_stats``: ``lp`` (joint log-density, location summed out) and the sampler's
  statistics (NUTS: ``diverging``, ``acceptance_rate``, ``n_steps``).
* ``observed_data``: ``y`` (``sequence``); ``constant_data``: ``X``, ``lengths``, the
  true locations ``eps_true`` and the teacher ``k_star``, ``v_star``.
* ``location_posterior``: ``probs`` (``chain, sequence, token``), each chain's
  Rao-Blackwellised ``P(eps_mu = l | data)`` of the training sequences.

A multi-head task (``SLRConfig.multihead``, docs/multihead.md section 8) has the same groups with a
``head`` axis: ``k``, ``v`` (``chain, draw, head, dim``), ``k_star``, ``v_star`` (``head, dim``),
``eps_true`` and the heads' presences ``present`` (``sequence, head``); ``posterior`` holds the
label-free matched overlaps (:func:`~bayes_slr.inference.predictive.matched_overlaps`: the
posterior is symmetric under a permutation of the heads) and, in place of
``location_posterior``, the group ``head_states`` (:data:`HEAD_STATES_GROUP`) holds ``probs``
(``chain, sequence, head, state``): each chain's Rao-Blackwellised posterior of every head's
state (``state < L``: present at that token; ``state = L``: absent).
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING

import numpy as np
import xarray as xr

from bayes_slr.errors import ConfigError
from bayes_slr.models.batch import MultiHeadBatch, SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig
from bayes_slr.numerics.record import JsonObject
from bayes_slr.records import atomic_write, check_output_file, json_text, provenance, read_json

if TYPE_CHECKING:
    from bayes_slr.inference.samplers import PosteriorDraws

OVERLAPS = ("m_k", "m_v", "q_k", "q_v")
VECTORS_GROUP = "posterior_vectors"
"""The group of the draws of ``k`` and ``v`` (module docstring)."""
_ATTRIBUTE = "bayes_slr"
_LOCATION_GROUP = "location_posterior"
HEAD_STATES_GROUP = "head_states"
"""The training sequences' state posterior of a multi-head tree (module docstring)."""
_REQUIRED = {
    "posterior": ("q_k", "q_v"),
    VECTORS_GROUP: ("k", "v"),
    "constant_data": ("X", "lengths", "eps_true", "k_star", "v_star"),
    "observed_data": ("y",),
}


def overlaps(
    k: np.ndarray, v: np.ndarray, teacher: Teacher | None, multihead: bool = False
) -> dict[str, np.ndarray]:
    """``m_k, m_v, q_k, q_v`` of draws ``(..., D)`` against the teacher
    (:func:`direction_overlaps`); of multi-head draws ``(..., H, D)`` (``multihead``) the matched
    overlaps (:func:`~bayes_slr.inference.predictive.matched_overlaps`).

    Without a teacher (bring-your-own data) only the norms ``q_k``, ``q_v`` (mean over heads).
    """
    from bayes_slr.inference.predictive import matched_overlaps
    from bayes_slr.models.scoring import direction_overlaps

    if teacher is None:
        D = k.shape[-1]
        q_k, q_v = np.sum(k * k, axis=-1) / D, np.sum(v * v, axis=-1) / D
        if multihead:
            q_k, q_v = q_k.mean(-1), q_v.mean(-1)
        return {"q_k": q_k, "q_v": q_v}
    if multihead:
        return matched_overlaps(k, v, teacher)
    every = direction_overlaps(k, v, teacher)
    return {name: every[name] for name in OVERLAPS}


def to_datatree(
    draws: PosteriorDraws,
    config: SLRConfig,
    batch: SLRBatch,
    teacher: Teacher | None,
    *,
    seed: int | None,
    settings: JsonObject | None = None,
    max_draws: int | None = None,
) -> xr.DataTree:
    """Collect draws, data, teacher and training location posteriors in one ArviZ ``DataTree``
    (one head or several: the module docstring).

    Parameters
    ----------
    draws : PosteriorDraws
    config : SLRConfig
    batch : SLRBatch
        The training set the draws condition on.
    teacher : Teacher or None
        The teacher that generated ``batch`` (for the overlaps), or ``None`` for data without
        one: the posterior group then has ``q_k``, ``q_v`` only and ``constant_data`` no
        ``k_star``, ``v_star`` (such a tree is summarised in memory; :func:`load_posterior`
        reads only trees with a teacher).
    seed : int or None
        Recorded with the full configuration and package versions.
    settings : dict, optional
        Further options to record (alpha, chains, warm-up, init, ...).
    max_draws : int, optional
        A multi-head task's state posterior is averaged over at most this many draws (evenly
        thinned within each chain; all draws when not given); one head: all draws.
    """
    import jax.numpy as jnp

    from bayes_slr.inference.predictive import (
        training_head_state_posterior,
        training_location_posterior,
    )

    k, v = jnp.asarray(draws.k), jnp.asarray(draws.v)
    draw_overlaps = overlaps(draws.k, draws.v, teacher, config.multihead)
    if not config.multihead:
        probs = training_location_posterior(config, batch, k, v)
        tree = draws_tree(draws, config, batch, teacher, draw_overlaps, seed, settings)
        tree[_LOCATION_GROUP] = xr.Dataset(
            {"probs": (("chain", "sequence", "token"), np.asarray(probs))},
            coords={"chain": tree.posterior["chain"].values},
        )
        return tree
    probs = training_head_state_posterior(config, batch, k, v, max_draws or k.shape[0] * k.shape[1])
    tree = draws_tree(
        draws,
        config,
        batch,
        teacher,
        draw_overlaps,
        seed,
        settings,
        head_axis=True,
        constant={"present": (np.asarray(batch.present), ["sequence", "head"])},
    )
    tree[HEAD_STATES_GROUP] = xr.Dataset(
        {"probs": (("chain", "sequence", "head", "state"), probs)},
        coords={"chain": tree.posterior["chain"].values},
        attrs={"state": f"0..{config.Lbar - 1}: present at that token; {config.Lbar}: absent"},
    )
    return tree


def draws_tree(
    draws: PosteriorDraws,
    config: SLRConfig,
    batch: SLRBatch,
    teacher: Teacher | None,
    draw_overlaps: dict[str, np.ndarray],
    seed: int | None,
    settings: JsonObject | None = None,
    *,
    head_axis: bool = False,
    constant: dict[str, tuple[np.ndarray, list[str]]] | None = None,
) -> xr.DataTree:
    """The ArviZ ``DataTree`` every posterior shares: the draws of ``k``, ``v`` with
    ``draw_overlaps`` (posterior), the log-density and the kernel's statistics (sample_stats), the
    labels (observed_data), the tokens, lengths, true locations and the teacher (constant_data;
    no teacher for data without one) and the record (:func:`record_attrs`).

    ``head_axis``: the vectors and the true locations have a ``head`` axis (several heads);
    ``constant``: further constant data, ``name -> (array, dims)``.
    """
    import arviz_base

    heads = ["head"] if head_axis else []
    extra = constant or {}
    teacher_data = (
        {}
        if teacher is None
        else {"k_star": np.asarray(teacher.k_star), "v_star": np.asarray(teacher.v_star)}
    )
    return arviz_base.from_dict(
        {
            "posterior": draw_overlaps,
            VECTORS_GROUP: {"k": draws.k, "v": draws.v},
            "sample_stats": {"lp": draws.log_density, **draws.sample_stats},
            "observed_data": {"y": np.asarray(batch.y)},
            "constant_data": {
                "X": np.asarray(batch.X),
                "lengths": np.asarray(batch.lengths),
                "eps_true": np.asarray(batch.eps),
                **{name: array for name, (array, _) in extra.items()},
                **teacher_data,
            },
        },
        dims={
            **{name: [*heads, "dim"] for name in ("k", "v", "k_star", "v_star")},
            "y": ["sequence"],
            "X": ["sequence", "token", "dim"],
            "lengths": ["sequence"],
            "eps_true": ["sequence", *heads],
            **{name: dims for name, (_, dims) in extra.items()},
        },
        attrs={"posterior": record_attrs(config, draws.sampler, seed, settings)},
    )


def record_attrs(
    config: SLRConfig, sampler: str, seed: int | None, settings: JsonObject | None = None
) -> dict[str, str]:
    """The attributes of a posterior group that record the task, the sampler, the seed, the
    package versions and ``settings`` (read back by :func:`record_of`)."""
    record = provenance({**config.to_dict(), "sampler": sampler, **(settings or {})}, seed)
    return {_ATTRIBUTE: json_text(record, indent=None)}


def record_of(tree: xr.DataTree) -> JsonObject:
    """The provenance record (config, seed, versions, settings) stored in ``tree``."""
    return read_json(tree.posterior.attrs[_ATTRIBUTE])


def config_of(tree: xr.DataTree) -> SLRConfig:
    """The :class:`SLRConfig` stored in ``tree``."""
    return SLRConfig.from_dict(record_of(tree)["config"])


def teacher_of(tree: xr.DataTree) -> Teacher | None:
    """The teacher stored in ``tree`` (``None`` for data without one)."""
    import jax.numpy as jnp

    data = tree.constant_data
    if "k_star" not in data:
        return None
    return Teacher(jnp.asarray(data["k_star"].values), jnp.asarray(data["v_star"].values))


def batch_of(tree: xr.DataTree) -> SLRBatch | MultiHeadBatch:
    """The training set stored in ``tree`` (teacher projections recomputed; NaN without
    a teacher); a :class:`MultiHeadBatch` for a multi-head tree (``present`` in its constant
    data).
    """
    import jax.numpy as jnp

    data = tree.constant_data
    X = jnp.asarray(data["X"].values)
    teacher = teacher_of(tree)
    D = X.shape[-1]
    heads = "present" in data
    projections = "nld,hd->nhl" if heads else "nld,d->nl"
    chi_star, z_star = (
        (jnp.full(X.shape[:2] if not heads else data["present"].shape + X.shape[1:2], jnp.nan),) * 2
        if teacher is None
        else (
            jnp.einsum(projections, X, teacher.k_star) / np.sqrt(D),
            jnp.einsum(projections, X, teacher.v_star) / np.sqrt(D),
        )
    )
    lengths, y = jnp.asarray(data["lengths"].values), jnp.asarray(tree.observed_data["y"].values)
    eps = jnp.asarray(data["eps_true"].values)
    if heads:
        present = jnp.asarray(data["present"].values)
        return MultiHeadBatch(X, lengths, y, eps, present, chi_star, z_star)
    return SLRBatch(X, lengths, y, eps, chi_star, z_star)


def draws_of(tree: xr.DataTree) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``(chains, draws, D)`` of ``k`` and ``v`` (``(chains, draws, H, D)`` with heads)."""
    return tree[VECTORS_GROUP]["k"].values, tree[VECTORS_GROUP]["v"].values


def save_posterior(tree: xr.DataTree, path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write ``tree`` as netCDF (one group per ArviZ group) atomically: no partial file
    on failure.
    """
    path = check_output_file(path, force=force)
    return atomic_write(path, lambda tmp: tree.to_netcdf(tmp, engine="h5netcdf"))


def _writer(tree: xr.DataTree) -> str:
    """Which versions wrote ``tree``, as far as its attributes tell: for error messages."""
    posterior = tree["posterior"].attrs if "posterior" in tree.children else {}
    try:
        versions = json.loads(posterior[_ATTRIBUTE])["versions"]
        return f"bayes-slr {versions.get('bayes-slr', '?')} with ArviZ {versions.get('arviz', '?')}"
    except (KeyError, TypeError, ValueError):
        pass
    # ArviZ 0.x stamps each group with arviz_version, ArviZ 1.x with creation_library_version
    arviz_versions = sorted(
        {
            str(node.attrs[key])
            for node in tree.subtree
            for key in ("arviz_version", "creation_library_version")
            if key in node.attrs
        }
    )
    return f"ArviZ {', '.join(arviz_versions)}" if arviz_versions else "an unknown program"


def load_posterior(path: str | os.PathLike) -> xr.DataTree:
    """Read a netCDF written by :func:`save_posterior`, or by the ArviZ 0.23 ``InferenceData``
    version.

    Files from before the move to ArviZ 1.x have the same groups and variables and are
    read as they are (their provenance record names the versions that wrote them).

    Raises
    ------
    ConfigError
        The file is missing, not netCDF, or not a bayes-slr posterior (missing groups,
        variables or the provenance record); the message names the versions that wrote
        it when the file records them.
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"posterior file {path} does not exist")
    try:
        with xr.open_datatree(path, engine="h5netcdf") as opened:
            tree = opened.load().copy()
    except Exception as exc:  # h5py/netCDF raise many types on foreign or corrupt files
        raise ConfigError(
            f"{path} is not a readable bayes-slr posterior netCDF file ({type(exc).__name__}: "
            f"{exc})"
        ) from exc
    tree = _vectors_in_their_group(tree)
    states = HEAD_STATES_GROUP if HEAD_STATES_GROUP in tree.children else _LOCATION_GROUP
    missing = [
        f"{group}/{name}"
        for group, names in {**_REQUIRED, states: ("probs",)}.items()
        for name in names
        if group not in tree.children or name not in tree[group].data_vars
    ]
    try:
        if missing:
            raise ValueError(f"missing {', '.join(missing)}")
        config_of(tree)
    except Exception as exc:  # json/KeyError/ConfigError from a foreign or damaged record
        raise ConfigError(
            f"{path} is not a bayes-slr posterior file this version can read (written by "
            f"{_writer(tree)}: {exc})"
        ) from exc
    return tree


def _vectors_in_their_group(tree: xr.DataTree) -> xr.DataTree:
    """``tree`` in this version's layout: ``k`` and ``v`` of a file written with them in
    ``posterior`` moved to :data:`VECTORS_GROUP` (the other variables and attributes kept)."""
    if VECTORS_GROUP in tree.children or "posterior" not in tree.children:
        return tree
    posterior = tree["posterior"].to_dataset()
    vectors = [name for name in ("k", "v") if name in posterior]
    if not vectors:
        return tree
    tree = tree.copy()
    tree[VECTORS_GROUP] = xr.DataTree(posterior[vectors])
    tree["posterior"] = xr.DataTree(posterior.drop_vars(vectors))
    return tree
