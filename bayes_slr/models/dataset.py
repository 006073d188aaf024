"""Bring-your-own data: read and validate a data set in the format ``bayes-slr simulate`` writes.

A data set is a ``.npz`` file with

============  ==========  =========  ==========================================================
array         shape       dtype      meaning
============  ==========  =========  ==========================================================
``X``         (N, Lbar, D) float     tokens, zero beyond each sequence's length (required)
``y``         (N,)        float      outputs (required)
``lengths``   (N,)        integer    lengths in ``1..Lbar`` (optional: every sequence has ``Lbar``)
``k_star``    (D,)        float      teacher key direction (optional)
``v_star``    (D,)        float      teacher value direction (optional, with ``k_star``)
``config``    ()          str        JSON provenance written by ``simulate`` (optional)
============  ==========  =========  ==========================================================

``simulate`` also writes ``eps``, ``chi_star`` and ``z_star``; they are ignored here. Without a
teacher the oracle and the overlaps cannot be computed, and errors are measured on a
held-out split (:func:`split_holdout`).
"""

from __future__ import annotations

import json
import os
import zipfile
from pathlib import Path
from typing import Any, NamedTuple

import numpy as np

from bayes_slr.errors import ConfigError, check_real
from bayes_slr.models.simulate import Teacher


class Dataset(NamedTuple):
    """A validated data set.

    Attributes
    ----------
    X : (N, Lbar, D) tokens, padded tokens set to zero.
    lengths : (N,) int lengths.
    y : (N,) outputs.
    teacher : the directions that generated the data, if the file has them.
    provenance : the ``config`` record of the file (``{}`` when absent).
    """

    X: np.ndarray
    lengths: np.ndarray
    y: np.ndarray
    teacher: Teacher | None
    provenance: dict[str, Any]

    @property
    def D(self) -> int:
        """Token dimension."""
        return int(self.X.shape[2])

    @property
    def Lbar(self) -> int:
        """Padded length."""
        return int(self.X.shape[1])


def _finite(name: str, array: np.ndarray) -> np.ndarray:
    if not np.issubdtype(array.dtype, np.number) or np.issubdtype(array.dtype, np.complexfloating):
        raise ConfigError(f"--data: array {name} must be real numbers, got dtype {array.dtype}")
    if not np.all(np.isfinite(array)):
        raise ConfigError(f"--data: array {name} has NaN or inf entries")
    return array


def load_dataset(path: str | os.PathLike) -> Dataset:
    """Read and validate a data set (module docstring); ``ConfigError`` naming the array on any problem."""
    path = Path(path)
    if not path.is_file():
        raise ConfigError(f"--data: {path} does not exist or is not a file")
    try:
        with np.load(path, allow_pickle=False) as archive:
            arrays = {name: archive[name] for name in archive.files}
    except (OSError, ValueError, zipfile.BadZipFile, EOFError) as exc:
        raise ConfigError(f"--data: {path} is not a readable .npz file ({exc})") from exc
    for name in ("X", "y"):
        if name not in arrays:
            raise ConfigError(f"--data: {path} has no array {name} (expected X (N, Lbar, D) and y (N,))")
    X = _finite("X", arrays["X"]).astype(np.float64)
    if X.ndim != 3 or min(X.shape) < 1:
        raise ConfigError(f"--data: array X must have shape (N, Lbar, D) with every size >= 1, got {X.shape}")
    N, Lbar, D = X.shape
    y = _finite("y", arrays["y"]).astype(np.float64)
    if y.shape != (N,):
        raise ConfigError(f"--data: array y must have shape (N,) = ({N},) to match X, got {y.shape}")
    lengths = arrays.get("lengths", np.full(N, Lbar))
    if lengths.shape != (N,) or not np.issubdtype(lengths.dtype, np.integer):
        raise ConfigError(f"--data: array lengths must be integers of shape ({N},), got {lengths.dtype} {lengths.shape}")
    if lengths.min() < 1 or lengths.max() > Lbar:
        raise ConfigError(f"--data: array lengths must lie in 1..Lbar = 1..{Lbar}, got {lengths.min()}..{lengths.max()}")
    X = np.where(np.arange(Lbar)[None, :, None] < lengths[:, None, None], X, 0.0)
    teacher = None
    if "k_star" in arrays or "v_star" in arrays:
        for name in ("k_star", "v_star"):
            if name not in arrays:
                raise ConfigError(f"--data: array {name} is missing (give both k_star and v_star, or neither)")
            if arrays[name].shape != (D,):
                raise ConfigError(f"--data: array {name} must have shape (D,) = ({D},), got {arrays[name].shape}")
            _finite(name, arrays[name])
        teacher = Teacher(arrays["k_star"].astype(np.float64), arrays["v_star"].astype(np.float64))
    provenance: dict[str, Any] = {}
    if "config" in arrays:
        try:
            provenance = json.loads(str(arrays["config"]))
        except json.JSONDecodeError as exc:
            raise ConfigError(f"--data: array config is not JSON ({exc})") from exc
    return Dataset(X, lengths.astype(np.int32), y, teacher, provenance)


def split_holdout(data: Dataset, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """A random split into ``(training, held out)`` with ``round(fraction N)`` held-out sequences (at least 1 each)."""
    fraction = check_real("holdout", fraction, minimum=0.0, strict=True)
    N = data.y.shape[0]
    n_out = round(fraction * N)
    if fraction >= 1 or n_out < 1 or n_out >= N:
        raise ConfigError(f"holdout must leave at least one sequence on each side (N = {N}), got {fraction:g}")
    order = np.random.default_rng(seed).permutation(N)

    def take(rows: np.ndarray) -> Dataset:
        return Dataset(data.X[rows], data.lengths[rows], data.y[rows], data.teacher, data.provenance)

    return take(order[n_out:]), take(order[:n_out])
