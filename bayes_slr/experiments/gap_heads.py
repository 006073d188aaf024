"""``gap`` on multi-head SLR (docs/multihead.md): what a row of several heads adds to the
one-head table (the scope of each optimum marked, ERM with ``H_s`` heads and the heads it
found), its tidy fields and its notes. The points are one-head ``gap``'s with heads an axis
(:mod:`bayes_slr.studies.gap`); the checks of the task and settings and the row's part are
:mod:`bayes_slr.studies.multihead_gap_records`. It imports without JAX.
"""

from __future__ import annotations

from collections.abc import Sequence

from bayes_slr.attention.activations import OPTIONAL_ACTIVATIONS
from bayes_slr.experiments.tables import cell
from bayes_slr.studies.gap_records import ERMError
from bayes_slr.studies.gap_rows import GapRow
from bayes_slr.studies.multihead_gap_records import (
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


def heads_lines(row: GapRow, prefix: str) -> list[str]:
    """Below the table: per activation, ERM's gap to the Bayes error and the heads it found."""
    heads = row.heads
    if heads is None or not row.erm:
        return []
    return [
        f"{prefix}: ERM {a}: gap to pop bayes {(heads.erm_gap or {}).get(a, float('nan')):+.4f} "
        f"+- {erm.stderr:.4f}; {overlap_summary(erm.heads)}"
        for a, erm in row.erm.items()
        if erm.heads is not None
    ]


def heads_notes(heads: int, presence: float, student_heads: int, bounded: bool) -> list[str]:
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
    return notes


def heads_entry(heads: HeadsGap | None, activation: str, erm: ERMError | None) -> dict[str, object]:
    """A tidy row's multi-head fields of one activation: the heads, the optimum's scope and
    ERM's gap to Bayes and the smallest matched cosines of the heads it found (``erm_gap``,
    ``erm_min_cos_*``; its error is the one-head ``erm_*`` fields)."""
    if heads is None:
        return {}
    entry: dict[str, object] = {
        "heads": heads.heads,
        "presence": heads.presence,
        "student_heads": heads.student_heads,
        "scope": heads.scopes.get(activation),
    }
    if erm is not None and erm.heads is not None:
        key, value = matched_cosines(erm.heads)
        entry |= {
            "erm_gap": (heads.erm_gap or {}).get(activation),
            "erm_min_cos_k": key,
            "erm_min_cos_v": value,
        }
    return entry
