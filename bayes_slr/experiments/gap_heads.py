"""``gap`` on multi-head SLR (docs/multihead.md): what a row of several heads adds to the
one-head table (the scope of each optimum marked, ERM with ``H_s`` heads and the heads it
found), its tidy fields and its notes. The points are computed by
:func:`bayes_slr.studies.multihead_gap.heads_point`; the checks of the task and settings and
the row's part are :mod:`bayes_slr.studies.multihead_gap_records`. It imports without JAX.
"""

from __future__ import annotations

from collections.abc import Sequence

from bayes_slr.attention.activations import OPTIONAL_ACTIVATIONS
from bayes_slr.experiments.tables import cell, plus_minus
from bayes_slr.studies.multihead_gap_records import (
    HeadsERMSettings,
    HeadsGap,
    matched_cosines,
    overlap_summary,
    takes_presence,
    tilted_location,
)
from bayes_slr.studies.multihead_population_records import UPPER_BOUND

UPPER_BOUND_MARK = " ^"
"""Appended to an optimum of aligned heads that is an upper bound on the optimum over all
overlaps."""


def left_out_notes(
    variant: str | None,
    presence: float,
    activations_given: bool,
    settings: Sequence[tuple[str, float]],
    default_variants: Sequence[str],
) -> list[str]:
    """What a multi-head ``gap`` left out of its defaults: a default setting whose heads are
    always present (max, when ``presence < 1``), and softmax-1 and Bayes-softmax beside a
    setting with a tilted location law."""
    notes = []
    skipped = [name for name in default_variants if not takes_presence(name, presence)]
    if variant is None and skipped:
        notes.append(
            f"{', '.join(skipped)} left out: its heads are always present (presence 1 only)"
        )
    if not activations_given and any(tilted_location(v, nu) for v, nu in settings):
        notes.append(
            f"{', '.join(OPTIONAL_ACTIVATIONS)} left out: no population terms on the max law's "
            "location (give --variant spiked)"
        )
    return notes


def population_cell(value: float, heads: HeadsGap | None, activation: str) -> float | str:
    """An optimum's cell: the value, marked when it is an upper bound."""
    if heads is None or heads.scopes.get(activation) != UPPER_BOUND:
        return value
    return cell(value) + UPPER_BOUND_MARK


def erm_cell(heads: HeadsGap, activation: str) -> str | None:
    """``error+-stderr`` of ERM with ``H_s`` heads (``None`` for a failed point)."""
    erm = (heads.erm or {}).get(activation)
    return None if erm is None else plus_minus(erm.test_error, erm.stderr)


def heads_lines(heads: HeadsGap | None, prefix: str) -> list[str]:
    """Below the table: per activation, ERM's gap to the Bayes error and the heads it found."""
    if heads is None or not heads.erm:
        return []
    return [
        f"{prefix}: ERM {a}: gap to pop bayes {(heads.erm_gap or {}).get(a, float('nan')):+.4f} "
        f"+- {erm.stderr:.4f}; {overlap_summary(erm)}"
        for a, erm in heads.erm.items()
    ]


def heads_notes(
    heads: int, presence: float, student_heads: int, bounded: bool, runs_erm: bool
) -> list[str]:
    """What the columns of a multi-head table are."""
    notes = [
        f"H = {heads} teacher heads, presence rho = {presence:g}, H_s = {student_heads} student "
        "heads (docs/multihead.md): bayes is the Bayes error with known directions, <activation> "
        "the population optimum of H_s heads aligned one to one with the teacher's (extra heads "
        "silenced)"
    ]
    if bounded:
        notes.append(
            "^: an upper bound on the optimum over all overlaps (heads that mix teacher heads may "
            "do better); unmarked optima are over all overlaps"
        )
    if runs_erm:
        notes.append("oracle: not computed with several heads or presence < 1")
    return notes


def heads_erm_column(settings: HeadsERMSettings, alpha: float, D: int) -> str:
    """What the ERM columns of a multi-head task measure."""
    return (
        f"test error of {settings.student_heads}-head attention trained by L-BFGS at "
        f"alpha = {alpha:g}, D = {D}, lam = {settings.lam:g}, from {settings.starts} random "
        "start(s) (k, v ~ N(0, I); the lowest objective is the fit), on "
        f"{settings.N_test} fresh sequences per exact teacher, +- its standard error over "
        f"{settings.seeds} seed(s); below the table, its gap to pop bayes and the heads it found "
        "(student head -> teacher head)"
    )


def heads_entry(heads: HeadsGap | None, activation: str) -> dict[str, object]:
    """A tidy row's multi-head fields of one activation: the heads, the optimum's scope and
    ERM with ``H_s`` heads (``erm_*``, ``erm_gap``, the smallest matched cosines)."""
    if heads is None:
        return {}
    entry: dict[str, object] = {
        "heads": heads.heads,
        "presence": heads.presence,
        "student_heads": heads.student_heads,
        "scope": heads.scopes.get(activation),
    }
    erm = (heads.erm or {}).get(activation)
    if erm is not None:
        key, value = matched_cosines(erm)
        entry |= {
            "erm_test_error": erm.test_error,
            "erm_stderr": erm.stderr,
            "erm_gap": (heads.erm_gap or {}).get(activation),
            "erm_min_cos_k": key,
            "erm_min_cos_v": value,
        }
    return entry
