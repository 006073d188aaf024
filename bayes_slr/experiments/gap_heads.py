"""``gap`` on multi-head SLR (docs/multihead.md): what its options refuse, which settings and
activations it runs, and what a row of several heads adds to the one-head table (the scope of
each optimum, ERM with ``H_s`` heads and the heads it found). The points are computed by
:func:`bayes_slr.studies.multihead_gap.heads_point`.

It imports without JAX, and below :mod:`bayes_slr.experiments.gap_records` (whose options
call its checks).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path

from bayes_slr.attention.activations import (
    OPTIONAL_ACTIVATIONS,
    activation_names,
    theory_terms_of,
)
from bayes_slr.attention.erm_settings import LAM_AUTO
from bayes_slr.errors import ConfigError, check_int, check_real
from bayes_slr.experiments.tables import cell
from bayes_slr.models.spec import SLRConfig
from bayes_slr.models.variants import get_variant
from bayes_slr.studies.multihead_erm_records import MultiHeadERM
from bayes_slr.studies.multihead_gap_records import (
    HeadsERMSettings,
    HeadsGap,
    matched_cosines,
    overlap_summary,
)
from bayes_slr.studies.multihead_population import optimum_scope
from bayes_slr.studies.multihead_population_records import UPPER_BOUND

HEADS_LAM = 1.0
"""The ridge of multi-head ERM when not given (``lam="auto"`` validates one head only): with
the study's ``1e-3`` ERM overfits at small ``alpha`` (docs/multihead.md section 7)."""
UPPER_BOUND_MARK = " ^"
"""Appended to an optimum of aligned heads that is an upper bound on the optimum over all
overlaps."""


def takes_presence(variant: str, presence: float) -> bool:
    """Whether the token law ``variant`` has heads of presence ``presence`` (max: 1 only)."""
    try:
        get_variant(variant).check_presence(presence)
    except ConfigError:
        return False
    return True


def check_heads_options(
    heads: int, D: int, data: Path | None, init: str, optimizer: str, alpha: float | None
) -> None:
    """Refuse what ``gap`` runs for one head only: a data file, the informed start, SGD; and,
    with ERM (``alpha``), a token dimension below ``2 heads`` (ERM draws exact, orthogonal
    teacher directions)."""
    if data is not None:
        raise ConfigError(
            "data: gap reads one-head data files; with several heads or presence < 1 it draws "
            "its teachers (leave out data)"
        )
    if init != "random":
        raise ConfigError(
            f"init: {init!r} is one-head only; with several heads or presence < 1 ERM reports "
            "the lowest-objective random start"
        )
    if optimizer != "lbfgs":
        raise ConfigError(
            f"optimizer: {optimizer!r} is one-head only; with several heads or presence < 1 ERM "
            "trains by lbfgs"
        )
    if alpha is not None:
        check_int("D", D, 2 * heads)


def check_heads_lam(lam: float | str) -> float:
    """The ridge of multi-head ERM: a number ``>= 0`` (``"auto"`` is refused)."""
    if lam == LAM_AUTO:
        raise ConfigError(
            f"lam: 'auto' (validation) chooses the ridge of one head only; with several heads or "
            f"presence < 1 give a number >= 0 (default {HEADS_LAM:g})"
        )
    return check_real("lam", lam, minimum=0.0)


def _tilted(variant: str, nu: float) -> bool:
    """Whether the law's location is tilted by the tokens (max), not uniform (spiked)."""
    return get_variant(variant).population_scores(nu).location_tilt != 0.0


def heads_activations(settings: Sequence[tuple[str, float]]) -> tuple[str, ...]:
    """The activations a multi-head ``gap`` compares when none are given: every registered one,
    and the optional ones with a constant in the denominator (softmax-1, Bayes-softmax) when no
    setting has a tilted location law (where they have no population terms)."""
    optional = () if any(_tilted(v, nu) for v, nu in settings) else tuple(OPTIONAL_ACTIVATIONS)
    return (*activation_names(), *optional)


def check_heads_activations(config: SLRConfig, activations: Sequence[str]) -> None:
    """Refuse an activation with a constant in its denominator on a tilted location law."""
    if not _tilted(config.variant, config.nu):
        return
    for activation in activations:
        if theory_terms_of(activation).log_sink is not None:
            raise ConfigError(
                f"activations: {activation} has population terms only where the location is "
                f"uniform (spiked), not on the {config.variant} variant's location law; leave it "
                "out of activations"
            )


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
    if not activations_given and any(_tilted(v, nu) for v, nu in settings):
        notes.append(
            f"{', '.join(OPTIONAL_ACTIVATIONS)} left out: no population terms on the max law's "
            "location (give --variant spiked)"
        )
    return notes


def heads_part(
    config: SLRConfig,
    student_heads: int,
    bayes: float | None,
    population: Mapping[str, float],
    erm: Mapping[str, MultiHeadERM] | None,
) -> HeadsGap:
    """What a row of the multi-head task ``config`` adds: the scope of each optimum (an upper
    bound unless over all overlaps; none without the Bayes error), ERM and its gap to Bayes."""
    scopes = (
        {}
        if bayes is None
        else {a: optimum_scope(config, e, bayes, student_heads) for a, e in population.items()}
    )
    erm_gap = (
        None
        if erm is None or bayes is None
        else {a: part.test_error - bayes for a, part in erm.items()}
    )
    return HeadsGap(
        config.heads,
        config.presence,
        student_heads,
        scopes,
        None if erm is None else dict(erm),
        erm_gap,
    )


def population_cell(value: float, heads: HeadsGap | None, activation: str) -> float | str:
    """An optimum's cell: the value, marked when it is an upper bound."""
    if heads is None or heads.scopes.get(activation) != UPPER_BOUND:
        return value
    return cell(value) + UPPER_BOUND_MARK


def erm_cell(heads: HeadsGap, activation: str) -> str | None:
    """``error+-stderr`` of ERM with ``H_s`` heads (``None`` for a failed point)."""
    erm = (heads.erm or {}).get(activation)
    return None if erm is None else f"{erm.test_error:.4f}+-{erm.stderr:.4f}"


def heads_lines(heads: HeadsGap | None, prefix: str) -> list[str]:
    """Below the table: per activation, ERM's gap to the Bayes error and the heads it found."""
    if heads is None or not heads.erm:
        return []
    return [
        f"{prefix}: ERM {a}: gap to pop bayes {(heads.erm_gap or {}).get(a, float('nan')):+.4f} "
        f"+- {erm.stderr:.4f}; {overlap_summary(erm)}"
        for a, erm in heads.erm.items()
    ]


def heads_warnings(heads: HeadsGap | None) -> list[str]:
    """ERM fits that did not reach the gradient tolerance."""
    warnings = []
    for activation, erm in ((heads.erm or {}) if heads is not None else {}).items():
        stalled = [seed for seed in erm.per_seed if not seed.converged]
        if stalled:
            warnings.append(
                f"ERM {activation}: seed(s) {', '.join(str(s.seed) for s in stalled)} stopped "
                f"with |grad| up to {max(s.grad_norm for s in stalled):.2g}, above the tolerance"
            )
    return warnings


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
    ERM with ``H_s`` heads (``erm.*``, ``erm_gap``, the smallest matched cosines)."""
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
            "erm.test_error": erm.test_error,
            "erm.stderr": erm.stderr,
            "erm_gap": (heads.erm_gap or {}).get(activation),
            "erm.min_cos_k": key,
            "erm.min_cos_v": value,
        }
    return entry
