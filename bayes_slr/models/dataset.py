"""Bring-your-own data: read and validate a data set in the format ``bayes-slr simulate`` writes.

A data set is a ``.npz`` file (``numpy.savez``) with

============  ============  ==========  =======================================================
array         shape         dtype       meaning
============  ============  ==========  =======================================================
``X``         (N, Lbar, D)  real        tokens; entries beyond a sequence's length are ignored
``y``         (N,)          real        outputs
``lengths``   (N,)          integer     lengths in ``1..Lbar`` (optional: all ``Lbar``)
``eps``       (N,)          integer     true locations, 0-based, ``< lengths`` (optional)
``k_star``    (D,)          real        teacher key direction (optional, with ``v_star``)
``v_star``    (D,)          real        teacher value direction (optional, with ``k_star``)
``config``    ()            str         JSON record written by ``simulate`` (optional)
============  ============  ==========  =======================================================

A multi-head data set (``simulate --heads``/``--presence``, docs/multihead.md) has a ``config``
record with ``heads`` ``H`` and ``presence``; its ``eps`` is ``(N, H)``, ``k_star`` and
``v_star`` are ``(H, D)``, and ``present`` ``(N, H)`` (booleans, optional) says which heads are in
each sequence. It is read where the caller asks for it (``load_dataset(path, heads=True)``: the
commands whose estimators take heads), else refused with one line.

Every real array must be finite. ``simulate`` also writes ``chi_star`` and ``z_star``; they
are recomputed from the teacher and not read. The model settings (variant, ``nu``,
``Delta``, the length law) come from the ``config`` record when there is one, else from the
caller (:func:`data_config`); ``D``, ``N`` and ``Lbar`` always come from the arrays. Without a
teacher the oracle error and the overlaps cannot be computed, and errors are measured on a
held-out part of the sequences (:func:`split_holdout`).
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import zipfile
from numbers import Real
from pathlib import Path
from typing import NamedTuple

import numpy as np

from bayes_slr.errors import ConfigError, Number
from bayes_slr.models.batch import MultiHeadBatch, SLRBatch, Teacher
from bayes_slr.models.spec import SLRConfig, describe_nu
from bayes_slr.numerics.record import JsonObject, Record
from bayes_slr.records import read_json

DEFAULT_HOLDOUT = 0.2
"""Share of the sequences held out as the test set when the data have no teacher."""
NPY_MAGIC = b"\x93NUMPY"
"""The first bytes of a single-array ``.npy`` file."""
UNKNOWN_LOCATION = -1
"""``eps`` of a sequence whose true location the file does not give."""


class Dataset(NamedTuple):
    """A validated data set (module docstring).

    Attributes
    ----------
    X : (N, Lbar, D) float64 tokens, zero beyond each length.
    lengths : (N,) int32 lengths in ``1..Lbar``.
    y : (N,) float64 outputs.
    eps : (N,) int32 true locations, :data:`UNKNOWN_LOCATION` where the file has none;
        ``(N, H)`` for multi-head data.
    teacher : the directions that generated the data, if the file has them (``(H, D)`` each for
        multi-head data).
    provenance : the file's ``config`` record (``{}`` when absent).
    present : ``(N, H)`` booleans, which heads are in each sequence (``None`` for one-head data).
    """

    X: np.ndarray
    lengths: np.ndarray
    y: np.ndarray
    eps: np.ndarray
    teacher: Teacher | None
    provenance: JsonObject
    present: np.ndarray | None = None

    @property
    def N(self) -> int:
        """Number of sequences."""
        return int(self.X.shape[0])

    @property
    def Lbar(self) -> int:
        """Padded length."""
        return int(self.X.shape[1])

    @property
    def D(self) -> int:
        """Token dimension."""
        return int(self.X.shape[2])

    def take(self, rows: np.ndarray) -> Dataset:
        """The sequences ``rows`` (same teacher and record)."""
        present = None if self.present is None else self.present[rows]
        return self._replace(
            X=self.X[rows],
            lengths=self.lengths[rows],
            y=self.y[rows],
            eps=self.eps[rows],
            present=present,
        )

    def as_batch(self) -> SLRBatch | MultiHeadBatch:
        """The sequences as an :class:`SLRBatch` (what samplers and ERM train on; a
        :class:`MultiHeadBatch` for multi-head data).

        The teacher projections ``chi_star``, ``z_star`` are computed from the teacher; without
        one they are unknown (NaN) and nothing reads them.
        """
        import jax.numpy as jnp

        X = jnp.asarray(self.X)
        if self.teacher is None:
            heads = () if self.present is None else (self.present.shape[1],)
            chi_star = z_star = jnp.full((self.N, *heads, self.Lbar), jnp.nan)
        else:
            chi_star, z_star = (
                jnp.einsum("nld,...d->n...l", X, jnp.asarray(direction)) / math.sqrt(self.D)
                for direction in self.teacher
            )
        if self.present is not None:
            return MultiHeadBatch(
                X,
                jnp.asarray(self.lengths),
                jnp.asarray(self.y),
                jnp.asarray(self.eps),
                jnp.asarray(self.present),
                chi_star,
                z_star,
            )
        return SLRBatch(
            X,
            jnp.asarray(self.lengths),
            jnp.asarray(self.y),
            jnp.asarray(self.eps),
            chi_star,
            z_star,
        )


def _read_arrays(path: Path) -> dict[str, np.ndarray]:
    """Every array of the ``.npz`` file, or ``ConfigError`` naming the file or the array that cannot
    be read.
    """
    if not path.is_file():
        raise ConfigError(f"`data`: {path} does not exist or is not a file")
    with open(path, "rb") as handle:
        start = handle.read(len(NPY_MAGIC))
    if start == NPY_MAGIC:
        raise ConfigError(
            f"`data`: {path} is a single .npy array, not a .npz archive of named arrays (X, y, ...)"
        )
    if not zipfile.is_zipfile(path):
        raise ConfigError(
            f"`data`: {path} is not a .npz archive (the zip of named arrays X, y, ... that "
            "numpy.savez and bayes-slr simulate write)"
        )
    try:
        archive = np.load(path, allow_pickle=False)
    except (OSError, ValueError, EOFError, zipfile.BadZipFile) as exc:
        raise ConfigError(f"`data`: {path} is not a readable .npz archive ({exc})") from exc
    arrays = {}
    with archive:
        for name in archive.files:
            try:
                arrays[name] = archive[name]
            except Exception as exc:  # zipfile, zlib and numpy raise many types on damaged members
                raise ConfigError(
                    f"`data`: array {name} of {path} cannot be read ({type(exc).__name__}: {exc})"
                ) from exc
    return arrays


def _real(name: str, array: np.ndarray, shape: tuple[int, ...], meaning: str) -> np.ndarray:
    """``array`` as float64 after checking its dtype (real numbers), shape and finiteness."""
    if (
        array.dtype == bool
        or not np.issubdtype(array.dtype, np.number)
        or np.issubdtype(array.dtype, np.complexfloating)
    ):
        raise ConfigError(f"`data`: array {name} must hold real numbers, got dtype {array.dtype}")
    if array.shape != shape:
        raise ConfigError(f"`data`: array {name} must have shape {meaning}, got {array.shape}")
    if not np.all(np.isfinite(array)):
        raise ConfigError(
            f"`data`: array {name} has NaN or inf entries ({int(np.sum(~np.isfinite(array)))} "
            f"of them)"
        )
    return array.astype(np.float64)


def _integers(
    name: str,
    array: np.ndarray,
    N: int,
    low: int | np.ndarray,
    high: int | np.ndarray,
    bounds: str,
    heads: int | None = None,
) -> np.ndarray:
    """``array`` as int32 after checking its dtype (integers), shape ``(N,)`` (``(N, heads)``
    with ``heads``) and range ``low <= a <= high`` (per sequence)."""
    if array.dtype == bool or not np.issubdtype(array.dtype, np.integer):
        raise ConfigError(f"`data`: array {name} must hold integers, got dtype {array.dtype}")
    shape, text = ((N,), f"(N,) = ({N},)") if heads is None else _head_shape(N, heads)
    if array.shape != shape:
        raise ConfigError(
            f"`data`: array {name} must have shape {text} to match X, got {array.shape}"
        )
    per_sequence = array.reshape(N, -1)
    outside = (per_sequence < np.reshape(low, (-1, 1))) | (per_sequence > np.reshape(high, (-1, 1)))
    if np.any(outside):
        first = int(np.argmax(np.any(outside, axis=1)))
        raise ConfigError(
            f"`data`: array {name} must lie in {bounds}, got "
            f"{per_sequence[first][outside[first]][0]} at sequence {first}"
        )
    return array.astype(np.int32)


def _head_shape(N: int, heads: int) -> tuple[tuple[int, int], str]:
    """The shape ``(N, H)`` of a per-head array and its text."""
    return (N, heads), f"(N, H) = ({N}, {heads})"


def _teacher(arrays: dict[str, np.ndarray], D: int, heads: int | None = None) -> Teacher | None:
    """The teacher when the file has ``k_star`` and ``v_star`` (both or neither; ``(heads, D)``
    each with ``heads``)."""
    given = [name for name in ("k_star", "v_star") if name in arrays]
    if not given:
        return None
    if len(given) == 1:
        missing = "v_star" if given == ["k_star"] else "k_star"
        raise ConfigError(
            f"`data`: array {missing} is missing (give both k_star and v_star, or neither)"
        )
    shape = (D,) if heads is None else (heads, D)
    text = f"(D,) = ({D},)" if heads is None else f"(H, D) = {shape}"
    k, v = (_real(name, arrays[name], shape, text) for name in ("k_star", "v_star"))
    return Teacher(k, v)


def _record(arrays: dict[str, np.ndarray]) -> JsonObject:
    """The ``config`` record as a dict (``{}`` without one)."""
    if "config" not in arrays:
        return {}
    text = arrays["config"]
    if text.shape != () or text.dtype.kind != "U":
        raise ConfigError(
            f"`data`: array config must be one JSON string, got dtype {text.dtype} shape "
            f"{text.shape}"
        )
    try:
        record = read_json(str(text))
    except json.JSONDecodeError as exc:
        raise ConfigError(f"`data`: array config is not JSON ({exc})") from exc
    if not isinstance(record, dict):
        raise ConfigError(
            f"`data`: array config must be a JSON object, got {type(record).__name__}"
        )
    return record


def _recorded_heads(path: Path, record: JsonObject, allowed: bool) -> int | None:
    """The heads ``H`` of multi-head data (``None`` for one-head data, read as before): a record
    with ``heads > 1`` or ``presence < 1`` (docs/multihead.md); ``ConfigError`` unless
    ``allowed`` (the caller's estimators take heads)."""
    settings = record.get("config", record)
    if not isinstance(settings, dict):
        return None
    heads, presence = settings.get("heads", 1), settings.get("presence", 1.0)
    if heads == 1 and presence == 1.0:
        return None
    if not allowed:
        raise ConfigError(
            f"`data`: {path} holds multi-head data (heads = {heads}, presence = {presence}): "
            "this command reads one-head data only (gap reads multi-head data files)"
        )
    return heads if isinstance(heads, int) and heads >= 1 else 1


def load_dataset(path: str | os.PathLike, heads: bool = False) -> Dataset:
    """Read and validate a data set (module docstring); ``heads``: multi-head data are read
    (else refused).

    Raises
    ------
    ConfigError
        One line naming the file or the array and what is accepted: an unreadable or non-zip
        file, a missing ``X`` or ``y``, a wrong dtype or shape, NaN or inf entries, lengths
        outside ``1..Lbar``, locations outside ``0..length-1``, only one of ``k_star`` and
        ``v_star``, a ``config`` that is not a JSON object.
    """
    path = Path(path)
    arrays = _read_arrays(path)
    record = _record(arrays)
    H = _recorded_heads(path, record, heads)
    for name in ("X", "y"):
        if name not in arrays:
            raise ConfigError(
                f"`data`: {path} has no array {name} (needed: X of shape (N, Lbar, D) and y of "
                f"shape (N,))"
            )
    X = arrays["X"]
    if X.ndim != 3 or min(X.shape) < 1:
        raise ConfigError(
            f"`data`: array X must have shape (N, Lbar, D) with every size >= 1, got {X.shape}"
        )
    N, Lbar, D = X.shape
    X = _real("X", X, X.shape, "(N, Lbar, D)")
    y = _real("y", arrays["y"], (N,), f"(N,) = ({N},) to match X")
    lengths = (
        _integers("lengths", arrays["lengths"], N, 1, Lbar, f"1..Lbar = 1..{Lbar}")
        if "lengths" in arrays
        else np.full(N, Lbar, np.int32)
    )
    eps = (
        _integers("eps", arrays["eps"], N, 0, lengths - 1, "0..length-1 (0-based locations)", H)
        if "eps" in arrays
        else np.full((N,) if H is None else (N, H), UNKNOWN_LOCATION, np.int32)
    )
    X = np.where(np.arange(Lbar)[None, :, None] < lengths[:, None, None], X, 0.0)
    return Dataset(X, lengths, y, eps, _teacher(arrays, D, H), record, _present(arrays, N, H))


def _present(arrays: dict[str, np.ndarray], N: int, heads: int | None) -> np.ndarray | None:
    """Which heads are in each sequence of multi-head data (``present``, ``(N, H)`` booleans; all
    when the file has none); ``None`` for one-head data."""
    if heads is None:
        return None
    if "present" not in arrays:
        return np.ones((N, heads), bool)
    present = arrays["present"]
    shape, text = _head_shape(N, heads)
    if present.dtype != bool or present.shape != shape:
        raise ConfigError(
            f"`data`: array present must hold booleans of shape {text}, got dtype "
            f"{present.dtype} shape {present.shape}"
        )
    return present


def holdout_accepted(name: str, fraction: object) -> float:
    """``fraction`` as a float, or ``ConfigError`` unless it is in ``(0, 1)`` (checked whether or
    not the data hold a teacher: a value out of range is bad input even where it is not used)."""
    share = Number()(name, fraction) if isinstance(fraction, Real) else math.nan
    if not 0 < share < 1:
        raise ConfigError(f"{name} must be in (0, 1), got {fraction!r}")
    return share


def held_out_count(fraction: float, N: int) -> int:
    """``round(fraction N)``, or ``ConfigError`` unless it leaves at least two sequences held out
    and one for training.
    """
    n_out = round(fraction * N) if math.isfinite(fraction) else 0
    if n_out < 2 or n_out >= N:
        raise ConfigError(
            f"holdout must be in (0, 1) and hold out 2..N-1 sequences (N = {N}), "
            f"got {fraction:g} ({n_out} held out)"
        )
    return n_out


def split_holdout(data: Dataset, fraction: float, seed: int) -> tuple[Dataset, Dataset]:
    """A random split ``(training, held out)`` with ``round(fraction N)`` held-out sequences.

    The permutation comes from ``seed``; each side keeps at least one sequence.
    """
    n_out = held_out_count(fraction, data.N)
    order = np.random.default_rng(seed).permutation(data.N)
    return data.take(np.sort(order[n_out:])), data.take(np.sort(order[:n_out]))


def training_and_test(data: Dataset, holdout: float, seed: int) -> tuple[Dataset, Dataset | None]:
    """What to train on and what to test on: with a teacher, all sequences and ``None`` (the teacher
    draws
    fresh test sequences); without one, :func:`split_holdout`."""
    if data.teacher is not None:
        return data, None
    return split_holdout(data, holdout, seed)


@dataclasses.dataclass(frozen=True)
class DataSource(Record):
    """A data file a run reads, and where each of the run's settings came from.

    Attributes
    ----------
    path : the file.
    digest : its SHA-256 (a changed file is a new point of a resumable log).
    N, D, Lbar : from the arrays.
    teacher : whether the file holds the teacher ``k_star``, ``v_star``.
    sources : setting -> where its value came from (an array, the record, given, default).
    """

    path: str
    digest: str
    N: int
    D: int
    Lbar: int
    teacher: bool
    sources: dict[str, str]

    def load(self, heads: bool = False) -> Dataset:
        """The data set (read and checked again; ``heads``: multi-head data are read, as
        :func:`load_dataset`)."""
        return load_dataset(self.path, heads)

    def describe(self, config: SLRConfig) -> str:
        """One line: each setting and where it came from."""
        values = {
            "variant": config.variant,
            "nu": describe_nu(config.nu),
            "Delta": f"{config.Delta:g}",
            "length": config.length.describe(),
            "D": self.D,
            "N": self.N,
            "Lbar": self.Lbar,
        }
        settings = ", ".join(f"{name} {values[name]} ({self.sources[name]})" for name in values)
        return f"data {self.path}: {settings}"
