"""Posterior draws as ArviZ ``InferenceData``: build, save/load as netCDF, summarise, plot.

Groups of the ``InferenceData`` written by :func:`to_inference_data`:

* ``posterior``: ``k``, ``v`` (``chain, draw, dim``) and the overlaps ``m_k = k.k*/D``,
  ``m_v = v.v*/D``, ``q_k = k.k/D``, ``q_v = v.v/D`` (``chain, draw``); its attributes
  hold the task, the sampler, the seed and the package versions (``bayes_slr`` key).
* ``sample_stats``: ``lp`` (joint log-density, location summed out) and the sampler's
  statistics (NUTS: ``diverging``, ``acceptance_rate``, ``n_steps``).
* ``observed_data``: ``y`` (``sequence``); ``constant_data``: ``X``, ``lengths``, the
  true locations ``eps_true`` and the teacher ``k_star``, ``v_star``.
* ``location_posterior``: ``probs`` (``chain, sequence, token``), each chain's
  Rao-Blackwellised ``P(eps_mu = l | data)`` of the training sequences.
"""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import arviz as az
import jax.numpy as jnp
import numpy as np
import xarray as xr

from bayes_slr.errors import ConfigError
from bayes_slr.inference.predictive import training_location_posterior
from bayes_slr.inference.samplers import PosteriorDraws
from bayes_slr.models.simulate import SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig
from bayes_slr.records import atomic_write, check_writable_output, json_ready, provenance

OVERLAPS = ("m_k", "m_v", "q_k", "q_v")
COORDINATES_SUMMARISED = 3  # k[0..2] and v[0..2] are summarised next to the overlaps
_ATTRIBUTE = "bayes_slr"
_LOCATION_GROUP = "location_posterior"


def overlaps(k: np.ndarray, v: np.ndarray, teacher: Teacher) -> dict[str, np.ndarray]:
    """``m_k, m_v, q_k, q_v`` of draws ``(..., D)`` against the teacher."""
    D = k.shape[-1]
    k_star, v_star = np.asarray(teacher.k_star), np.asarray(teacher.v_star)
    return {
        "m_k": k @ k_star / D,
        "m_v": v @ v_star / D,
        "q_k": np.sum(k**2, axis=-1) / D,
        "q_v": np.sum(v**2, axis=-1) / D,
    }


def to_inference_data(
    draws: PosteriorDraws,
    config: SLRConfig,
    batch: SLRBatch,
    teacher: Teacher,
    *,
    seed: int | None,
    settings: dict[str, Any] | None = None,
) -> az.InferenceData:
    """Collect draws, data, teacher and training location posteriors in one ``InferenceData``.

    Parameters
    ----------
    draws : PosteriorDraws
    config : SLRConfig
    batch : SLRBatch
        The training set the draws condition on.
    teacher : Teacher
        The teacher that generated ``batch`` (for the overlaps).
    seed : int or None
        Recorded with the full configuration and package versions.
    settings : dict, optional
        Further options to record (alpha, chains, warm-up, init, ...).
    """
    dims = {"k": ["dim"], "v": ["dim"]}
    posterior = {"k": draws.k, "v": draws.v, **overlaps(draws.k, draws.v, teacher)}
    record = provenance({**config.to_dict(), "sampler": draws.sampler, **(settings or {})}, seed)
    probs = training_location_posterior(config, batch, jnp.asarray(draws.k), jnp.asarray(draws.v))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # arviz warns on the non-standard group
        idata = az.from_dict(
            posterior=posterior,
            sample_stats={"lp": draws.log_density, **draws.sample_stats},
            observed_data={"y": np.asarray(batch.y)},
            constant_data={
                "X": np.asarray(batch.X),
                "lengths": np.asarray(batch.lengths),
                "eps_true": np.asarray(batch.eps),
                "k_star": np.asarray(teacher.k_star),
                "v_star": np.asarray(teacher.v_star),
            },
            dims={**dims, "y": ["sequence"], "X": ["sequence", "token", "dim"], "lengths": ["sequence"],
                  "eps_true": ["sequence"], "k_star": ["dim"], "v_star": ["dim"]},
        )
        idata.posterior.attrs[_ATTRIBUTE] = json.dumps(json_ready(record))
        idata.add_groups({_LOCATION_GROUP: xr.Dataset(
            {"probs": (("chain", "sequence", "token"), np.asarray(probs))},
            coords={"chain": np.arange(probs.shape[0])},
        )})
    return idata


def record_of(idata: az.InferenceData) -> dict[str, Any]:
    """The provenance record (config, seed, versions, settings) stored in ``idata``."""
    return json.loads(idata.posterior.attrs[_ATTRIBUTE])


def config_of(idata: az.InferenceData) -> SLRConfig:
    """The :class:`SLRConfig` stored in ``idata``."""
    return SLRConfig.from_dict(record_of(idata)["config"])


def teacher_of(idata: az.InferenceData) -> Teacher:
    """The teacher stored in ``idata``."""
    return Teacher(jnp.asarray(idata.constant_data["k_star"].values), jnp.asarray(idata.constant_data["v_star"].values))


def batch_of(idata: az.InferenceData) -> SLRBatch:
    """The training set stored in ``idata`` (teacher projections recomputed)."""
    data = idata.constant_data
    X = jnp.asarray(data["X"].values)
    teacher = teacher_of(idata)
    D = X.shape[-1]
    return SLRBatch(
        X, jnp.asarray(data["lengths"].values), jnp.asarray(idata.observed_data["y"].values),
        jnp.asarray(data["eps_true"].values), X @ teacher.k_star / np.sqrt(D), X @ teacher.v_star / np.sqrt(D),
    )


def draws_of(idata: az.InferenceData) -> tuple[np.ndarray, np.ndarray]:
    """Draws ``(chains, draws, D)`` of ``k`` and ``v``."""
    return idata.posterior["k"].values, idata.posterior["v"].values


def save_inference_data(idata: az.InferenceData, path: str | os.PathLike, *, force: bool = False) -> Path:
    """Write ``idata`` as netCDF atomically (no partial file on failure)."""
    path = check_writable_output(path, force=force)
    return atomic_write(path, lambda tmp: idata.to_netcdf(str(tmp), engine="h5netcdf"))


def load_inference_data(path: str | os.PathLike) -> az.InferenceData:
    """Read a netCDF written by :func:`save_inference_data`.

    Raises
    ------
    ConfigError
        The file is missing, not netCDF, or not a bayes-slr posterior (missing groups,
        variables or the provenance record).
    """
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"posterior file {path} does not exist")
    required = {"posterior": ("k", "v", *OVERLAPS), "constant_data": ("X", "lengths", "k_star", "v_star"),
                "observed_data": ("y",), _LOCATION_GROUP: ("probs",)}
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", UserWarning)
            idata = az.from_netcdf(str(path), engine="h5netcdf")
        idata.load()
        missing = [f"{group}/{name}" for group, names in required.items() for name in names
                   if group not in idata.groups() or name not in idata[group]]
        if missing:
            raise ConfigError(f"{path} is not a bayes-slr posterior file (missing {', '.join(missing)})")
        config_of(idata)
    except ConfigError:
        raise
    except Exception as exc:  # h5py/netCDF/json raise many types on foreign or corrupt files
        raise ConfigError(
            f"{path} is not a readable bayes-slr posterior netCDF file ({type(exc).__name__}: {exc})"
        ) from exc
    return idata


def diagnostics_table(idata: az.InferenceData) -> dict[str, dict[str, float]]:
    """``mean, sd, r_hat, ess_bulk, ess_tail, mcse_mean`` of the overlaps and a few coordinates.

    Keys: ``m_k, m_v, q_k, q_v, k[0], ..., v[0], ...``. With one chain ``r_hat`` is nan.
    """
    D = idata.posterior.sizes["dim"]
    selected = idata.posterior[list(OVERLAPS)].assign(
        {f"{name}[{i}]": idata.posterior[name].isel(dim=i, drop=True)
         for name in ("k", "v") for i in range(min(COORDINATES_SUMMARISED, D))}
    )
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # r_hat of a single chain
        table = az.summary(selected, kind="all", round_to="none")
    columns = ("mean", "sd", "r_hat", "ess_bulk", "ess_tail", "mcse_mean")
    return {name: {c: float(table.loc[name, c]) for c in columns} for name in table.index}


def convergence_summary(table: dict[str, dict[str, float]]) -> dict[str, float]:
    """Worst ``r_hat`` and smallest bulk and tail ESS over the rows of :func:`diagnostics_table`."""
    rows = list(table.values())
    finite_rhat = [row["r_hat"] for row in rows if np.isfinite(row["r_hat"])]
    return {
        "rhat_max": max(finite_rhat) if finite_rhat else float("nan"),
        "ess_bulk_min": min(row["ess_bulk"] for row in rows),
        "ess_tail_min": min(row["ess_tail"] for row in rows),
    }


def plot_diagnostics(idata: az.InferenceData, path: str | os.PathLike | None = None):
    """Trace and rank plots of the overlaps; saved to ``path`` when given. Returns the figure."""
    import matplotlib.pyplot as plt

    figure, axes = plt.subplots(len(OVERLAPS), 3, figsize=(12, 2.4 * len(OVERLAPS)), squeeze=False)
    az.plot_trace(idata, var_names=list(OVERLAPS), axes=axes[:, :2], compact=True)
    for row, name in enumerate(OVERLAPS):
        az.plot_rank(idata, var_names=[name], ax=axes[row, 2])
    figure.tight_layout()
    if path is not None:
        atomic_write(Path(path), lambda tmp: figure.savefig(tmp, format=Path(path).suffix.lstrip(".") or "png"))
    return figure
