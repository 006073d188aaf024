"""What a ``dynamics`` point trained on data keeps beside the sweep log (docs/dynamics.md).

With ``--out DIR`` a ``gd`` or ``sgd`` point writes its checkpoint at every logged step
(``DIR/dynamics-checkpoint-<activation>-seed<seed>.npz``, atomically): a rerun with the same
options continues it from there to the trajectory an uninterrupted run gives, bit for bit (the
iterate is the whole state: the SGD stream reads ``fold_in(stream, step)`` and the optimiser is
stateless), and the file is removed once the point is finished. A run that diverges leaves
``DIR/dynamics-diverged-<activation>-seed<seed>.npz`` instead, its last finite iterate. A folder
holding the checkpoint of a point the run does not ask for (other options) is refused, as the
sweep log refuses its finished points.

Both files hold ``k``, ``v``, ``c`` (the iterate), ``step``, ``time``, the overlaps of the last
logged point (``m_k``, ..., ``test_error``, ``loss``), ``points`` (the logged points so far, JSON)
and ``key`` (the point's log key, JSON: the point and every option but the sweep axes); the
diverged file adds ``message``, the one line the command printed.
"""

from __future__ import annotations

import contextlib
import dataclasses
import json
from collections.abc import Callable, Iterable, Iterator
from pathlib import Path
from typing import Any, NamedTuple

from bayes_slr.errors import ConfigError
from bayes_slr.numerics.record import structure
from bayes_slr.progress import progress_bar
from bayes_slr.records import SweepLog, atomic_write, json_text

STEM = "dynamics"
CHECKPOINT = "checkpoint"
DIVERGED = "diverged"
LAST_POINT_FIELDS = (
    "m_k",
    "q_k",
    "m_v",
    "q_v",
    "k_vstar",
    "v_kstar",
    "k_v",
    "test_error",
    "test_stderr",
    "loss",
)
"""The fields of the last logged point a state file holds as arrays of their own (with ``c``,
``step`` and ``time`` taken from the iterate)."""


def state_path(folder: Path, kind: str, activation: str, seed: int) -> Path:
    """``folder/dynamics-<kind>-<activation>-seed<seed>.npz`` (``kind``: checkpoint, diverged)."""
    return folder / f"{STEM}-{kind}-{activation}-seed{seed}.npz"


@dataclasses.dataclass(frozen=True)
class PointState:
    """Where one point of a sweep keeps its checkpoint and a divergence's last iterate.

    Attributes
    ----------
    folder : the sweep's output folder.
    activation, seed : the point.
    key : the point's key in the sweep log; a kept checkpoint must carry the same.
    current : a key written before in today's terms (options renamed since), as the sweep log
        reads it.
    """

    folder: Path
    activation: str
    seed: int
    key: str
    current: Callable[[Any], Any] | None = None

    def path(self, kind: str) -> Path:
        """The file of ``kind`` (:data:`CHECKPOINT` or :data:`DIVERGED`) of this point."""
        return state_path(self.folder, kind, self.activation, self.seed)

    def load(self) -> Any:
        """The kept checkpoint of this point (a
        :class:`~bayes_slr.attention.trajectory.Checkpoint`), ``None`` when there is none;
        ``ConfigError`` when it belongs to other options."""
        path = self.path(CHECKPOINT)
        if not path.exists():
            return None
        state = read_state(path)
        if SweepLog.canonical_key(state.key, self.current) != self.key:
            raise ConfigError(foreign_checkpoint_message(path))
        return _checkpoint_of(state)

    def save(self, checkpoint: Any) -> None:
        """Keep ``checkpoint`` (atomically: an interrupted write leaves the previous one)."""
        write_state(self.path(CHECKPOINT), self.key, checkpoint)

    def finish(self) -> None:
        """The point is finished: its checkpoint is no longer needed."""
        self.path(CHECKPOINT).unlink(missing_ok=True)

    def keep_diverged(self, checkpoint: Any, message: str) -> Path:
        """Write the last finite iterate of a diverged run (and remove the checkpoint); its path."""
        path = self.path(DIVERGED)
        write_state(path, self.key, checkpoint, message=message)
        self.finish()
        return path


def write_state(path: Path, key: str, checkpoint: Any, **extra: str) -> None:
    """Write a checkpoint (module docstring) to ``path`` atomically; ``extra``: more strings."""
    import numpy as np

    last = checkpoint.points[-1]
    arrays = {
        "k": np.asarray(checkpoint.state.k),
        "v": np.asarray(checkpoint.state.v),
        "c": np.asarray(checkpoint.state.c),
        "step": np.asarray(checkpoint.step),
        "time": np.asarray(last.time),
        **{name: np.asarray(getattr(last, name)) for name in LAST_POINT_FIELDS},
        "points": np.asarray(
            json_text([point.to_dict() for point in checkpoint.points], indent=None)
        ),
        "key": np.asarray(key),
        **{name: np.asarray(value) for name, value in extra.items()},
    }
    atomic_write(path, lambda tmp: np.savez(tmp, **arrays))


class StateFile(NamedTuple):
    """What a resume reads of a state file (module docstring): the iterate ``k``, ``v``, ``c``,
    its ``step``, the logged ``points`` (JSON text) and the point's ``key`` (JSON text)."""

    k: Any
    v: Any
    c: Any
    step: int
    points: str
    key: str


def read_state(path: Path) -> StateFile:
    """The iterate, step, points and key of a state file; ``ConfigError`` when it is not one."""
    import numpy as np

    try:
        with np.load(path, allow_pickle=False) as data:
            return StateFile(
                data["k"],
                data["v"],
                data["c"],
                int(data["step"]),
                str(data["points"]),
                str(data["key"]),
            )
    except (OSError, ValueError, KeyError) as exc:
        raise ConfigError(
            f"`out`: {path} is not a bayes-slr dynamics checkpoint ({exc}); move it away or give "
            "another `out`"
        ) from None


def _checkpoint_of(state: StateFile) -> Any:
    """The :class:`~bayes_slr.attention.trajectory.Checkpoint` of a state file."""
    import jax.numpy as jnp

    from bayes_slr.attention.estimators import AttentionParams
    from bayes_slr.attention.trajectory import Checkpoint, TrajectoryPoint

    params = AttentionParams(jnp.asarray(state.k), jnp.asarray(state.v), jnp.asarray(state.c))
    points = structure(json.loads(state.points), tuple[TrajectoryPoint, ...])
    return Checkpoint(state.step, params, points)


def foreign_checkpoint_message(path: Path) -> str:
    """Why a checkpoint of other options is refused, and what to do."""
    return (
        f"`out`: {path} is the checkpoint of a point this run does not ask for (other options); "
        "to resume it give the same options, or remove it, or give another `out`"
    )


def refuse_foreign_checkpoints(folder: Path, keys: Iterable[str]) -> None:
    """``ConfigError`` when ``folder`` holds a checkpoint whose key is not among ``keys`` (before
    any work, like the sweep log's finished points)."""
    keys = set(keys)
    for path in sorted(folder.glob(f"{STEM}-{CHECKPOINT}-*.npz")):
        if read_state(path).key not in keys:
            raise ConfigError(foreign_checkpoint_message(path))


def train_kept(run: Any, state: PointState | None, progress: bool, label: str) -> Any:
    """:func:`~bayes_slr.attention.dynamics.train_dynamics` of ``run``, resumed from the point's
    checkpoint and checkpointed at every logged step when ``state`` is given, with a transient
    progress bar of the steps (``progress``); a divergence raises the core's
    :class:`~bayes_slr.attention.trajectory.DivergenceError` saying where its last finite iterate
    went (``state``'s diverged file, or nowhere)."""
    from bayes_slr.attention.dynamics import train_dynamics

    resume = None if state is None else state.load()
    initial = 0 if resume is None else resume.step
    with step_progress(run.steps, initial, progress, label) as show, divergence_kept(state, label):

        def on_log(checkpoint: Any) -> None:
            if state is not None:
                state.save(checkpoint)
            show(checkpoint.step)

        trajectory = train_dynamics(run, on_log=on_log, resume=resume)
    if state is not None:
        state.finish()
    return trajectory


@contextlib.contextmanager
def divergence_kept(
    state: PointState | None, label: str, unkept: str = "not kept (give `out` a folder to keep it)"
) -> Iterator[None]:
    """Turn a :class:`~bayes_slr.attention.trajectory.DivergenceError` raised inside into
    :func:`kept_divergence`'s (``unkept``: what its message says without ``state``)."""
    from bayes_slr.attention.trajectory import DivergenceError

    try:
        yield
    except DivergenceError as error:
        raise kept_divergence(error, state, label, unkept) from None


def kept_divergence(error: Any, state: PointState | None, label: str, unkept: str) -> Any:
    """``error`` (a :class:`~bayes_slr.attention.trajectory.DivergenceError`) once its last finite
    iterate is written to ``state``'s diverged file, its message naming the run (``label``) and
    the file (or ``unkept``, without ``state``)."""
    if state is None or error.checkpoint is None:
        return error.kept_as(unkept, label)
    path = state.path(DIVERGED)
    stopped = error.kept_as(f"kept in {path}", label)
    state.keep_diverged(error.checkpoint, str(stopped))
    return stopped


@contextlib.contextmanager
def step_progress(
    total: int, initial: int, progress: bool, label: str
) -> Iterator[Callable[[int], None]]:
    """A transient progress bar of a point's steps on stderr (shown with ``progress``); yields
    the function that moves it to a step."""
    with progress_bar(
        total=total, initial=initial, desc=label, unit="step", leave=False, show=progress
    ) as bar:

        def show(step: int) -> None:
            bar.update(step - bar.n)

        yield show
