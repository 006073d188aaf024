"""A claims file (TOML) read into typed :class:`~bayes_slr.studies.claims_records.Claim` records,
every claim checked before any is evaluated. Imports without JAX.

The format (docs/claims.md)::

    level = 0.05                       # family-wise error rate of the verdicts (Holm)

    [[claim]]
    name = "softmax reaches the Bayes error"
    left = "population softmax"        # "ESTIMATOR [ACTIVATION]", or a number
    relation = "equal"                 # below, above, equal (then tolerance = ...)
    right = "bayes"
    tolerance = 1e-4
    variant = "spiked"                 # the task: variant, nu, L, variable_length, heads,
    L = [3, 10, 100]                   #   presence, Delta; alpha, D, lam,
                                       #   teacher ("exact" or "prior") for finite data
                                       # a list makes one claim per value

A bad file is refused with one line naming the claim and the field.
"""

from __future__ import annotations

import dataclasses
import itertools
import math
import tomllib
from importlib import resources
from pathlib import Path
from typing import Any

from bayes_slr.attention.erm_settings import lam_accepted
from bayes_slr.errors import (
    Accepts,
    ConfigError,
    Integer,
    Number,
    OneOf,
    OrNone,
    validate_fields,
)
from bayes_slr.numerics.decision import RELATIONS
from bayes_slr.studies.claims_records import ESTIMATORS, Claim, ClaimTask, Quantity

TASK_KEYS = tuple(field.name for field in dataclasses.fields(ClaimTask))
EXPANDING_KEYS = ("nu", "L", "presence", "alpha", "D")
"""Task keys whose list value makes one claim per value."""
CLAIM_KEYS = ("name", "left", "right", "relation", "tolerance", "teachers", "max_teachers")
DEFAULT_LEVEL = 0.05
TEACHERS = ("exact", "prior")
LEVEL = Number(0.0, strict=True, below=1.0)
"""The accepted range of a file's ``level``."""
TASK_ACCEPTS: dict[str, Accepts] = {
    "L": Integer(1),
    "D": Integer(1),
    "heads": Integer(1),
    "alpha": OrNone(Number(0.0, strict=True)),
    "lam": lam_accepted,
    "teacher": OneOf(TEACHERS),
}
"""The accepted range of the task fields of a claim that the task itself does not check (the
variant, ``nu``, ``Delta``, ``presence``: :func:`~bayes_slr.models.spec.task_config`)."""
TOLERANCE = Number(0.0, strict=True)
"""The accepted range of the ``tolerance`` of a claim of relation ``equal``."""
CLAIM_ACCEPTS: dict[str, Accepts] = {
    "teachers": Integer(1),
    "max_teachers": Integer(1),
}
"""The accepted range of the verdict fields of a claim."""


@dataclasses.dataclass(frozen=True)
class ClaimsFile:
    """The claims of a file, expanded and checked, and the family-wise ``level`` of their
    verdicts."""

    claims: tuple[Claim, ...]
    level: float


def default_claims_path() -> Path:
    """The shipped claims file: the seed paper's claims (docs/claims.md)."""
    return Path(str(resources.files("bayes_slr.claims").joinpath("seed_paper.toml")))


def read_claims(path: Path) -> ClaimsFile:
    """The claims of the TOML file ``path``, each checked; ``ConfigError`` naming the claim and
    the field of the first bad one (nothing is evaluated before every claim passes)."""
    try:
        document = tomllib.loads(Path(path).read_text())
    except OSError as exc:
        raise ConfigError(f"claims: cannot read {path}: {exc.strerror or exc}") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ConfigError(f"claims: {path} is not a TOML file: {exc}") from exc
    unknown = set(document) - {"level", "claim"}
    if unknown:
        raise ConfigError(
            f"claims: {path}: unknown top-level key(s) {', '.join(sorted(unknown))}; "
            "accepted: level, [[claim]]"
        )
    try:
        level = LEVEL("level", document.get("level", DEFAULT_LEVEL))
    except ConfigError as exc:
        raise ConfigError(f"claims: {exc}") from exc
    entries = document.get("claim")
    if not isinstance(entries, list) or not entries:
        raise ConfigError(f"claims: {path} holds no [[claim]] table")
    claims: list[Claim] = []
    for number, entry in enumerate(entries, start=1):
        label = f"claim {number} ({entry.get('name', 'unnamed')!r})"
        try:
            claims.extend(_expanded(entry))
        except ConfigError as exc:
            raise ConfigError(f"claims: {path}, {label}: {exc}") from exc
    return ClaimsFile(tuple(claims), level)


def _expanded(entry: dict[str, Any]) -> list[Claim]:
    """The claims of one ``[[claim]]`` table: one per combination of its list-valued task keys."""
    unknown = set(entry) - set(CLAIM_KEYS) - set(TASK_KEYS)
    if unknown:
        raise ConfigError(
            f"unknown field(s) {', '.join(sorted(unknown))}; accepted: "
            f"{', '.join(CLAIM_KEYS + TASK_KEYS)}"
        )
    for key in ("name", "left", "right", "relation"):
        if key not in entry:
            raise ConfigError(f"field {key!r} is missing")
    axes = {key: entry[key] for key in EXPANDING_KEYS if isinstance(entry.get(key), list)}
    claims = []
    for values in itertools.product(*axes.values()):
        chosen = dict(zip(axes, values, strict=True))
        suffix = ", ".join(f"{key}={value:g}" for key, value in chosen.items())
        name = f"{entry['name']} ({suffix})" if suffix else str(entry["name"])
        claims.append(_claim({**entry, **chosen, "name": name}))
    return claims


def _claim(entry: dict[str, Any]) -> Claim:
    """One claim, checked: its task, both sides, the relation and the teachers."""
    relation = entry["relation"]
    if relation not in RELATIONS:
        raise ConfigError(
            f"field 'relation' must be one of {', '.join(RELATIONS)}; got {relation!r}"
        )
    tolerance = 0.0
    if relation == "equal":
        if "tolerance" not in entry:
            raise ConfigError("field 'tolerance' is missing (relation 'equal' needs it, > 0)")
        tolerance = TOLERANCE("tolerance", entry["tolerance"])
    elif "tolerance" in entry:
        raise ConfigError(f"field 'tolerance' is only read with relation 'equal', not {relation!r}")
    task = _task({key: entry[key] for key in TASK_KEYS if key in entry})
    claim = Claim(
        name=str(entry["name"]),
        task=task,
        left=_quantity("left", entry["left"]),
        right=_quantity("right", entry["right"]),
        relation=relation,
        tolerance=tolerance,
        teachers=entry.get("teachers", 4),
        max_teachers=entry.get("max_teachers", 16),
    )
    validate_fields(claim, CLAIM_ACCEPTS)
    _check_route(claim, given_alpha="alpha" in entry)
    return claim


def _quantity(side: str, value: Any) -> Quantity:
    """A side written ``"ESTIMATOR [ACTIVATION]"`` or as a number."""
    from bayes_slr.attention.activations import activation_accepted

    if isinstance(value, int | float) and not isinstance(value, bool):
        return Quantity("value", value=Number()(side, value))
    if not isinstance(value, str) or not value.split():
        raise ConfigError(f"field {side!r} must be 'ESTIMATOR [ACTIVATION]' or a number")
    words = value.split()
    estimator, rest = words[0], words[1:]
    if estimator not in ESTIMATORS or estimator == "value":
        known = ", ".join(name for name in ESTIMATORS if name != "value")
        raise ConfigError(f"field {side!r}: unknown estimator {estimator!r}; known: {known}")
    spec = ESTIMATORS[estimator]
    if spec.activation != bool(rest) or len(rest) > 1:
        need = "one activation after it" if spec.activation else "no activation"
        raise ConfigError(f"field {side!r}: estimator {estimator!r} takes {need}, got {value!r}")
    activation = activation_accepted("activation", rest[0]) if rest else None
    return Quantity(estimator, activation)


def _task(fields: dict[str, Any]) -> ClaimTask:
    """The task fields, checked by the one function that resolves a task."""
    from bayes_slr.models.spec import task_config

    task = ClaimTask(**fields)
    validate_fields(task, TASK_ACCEPTS, keep=False)
    task_config(
        task.variant,
        task.L,
        task.variable_length,
        task.nu,
        task.Delta,
        task.D,
        task.heads,
        task.presence,
    )
    return task


def _check_route(claim: Claim, given_alpha: bool) -> None:
    """Refuse a claim the toolkit has no route for, before any work."""
    sides = (claim.left, claim.right)
    specs = [ESTIMATORS[q.estimator] for q in sides]
    if claim.left == claim.right:
        raise ConfigError("fields 'left' and 'right' name the same quantity")
    if claim.max_teachers < claim.teachers:
        raise ConfigError(
            f"max_teachers ({claim.max_teachers}) must be >= teachers ({claim.teachers})"
        )
    finite = any(spec.finite_data for spec in specs)
    if finite and claim.task.alpha is None:
        raise ConfigError("field 'alpha' is missing (a side is measured at finite data)")
    if given_alpha and not finite:
        raise ConfigError("field 'alpha' is given but no side is measured at finite data")
    families = {spec.per_teacher for spec in specs} - {None}
    if len(families) > 1:
        raise ConfigError(
            f"no route compares sides measured on different teachers "
            f"({' and '.join(sorted(families))}): a difference is paired on one family"
        )
    for side, spec in zip(("left", "right"), specs, strict=True):
        _check_side(claim, side, spec, sides)
        _check_memory(claim, spec)


def _check_memory(claim: Claim, spec: Any) -> None:
    """Refuse a side whose computation would not fit in memory (:mod:`bayes_slr.memory`)."""
    from bayes_slr.formulas.result import REPLICA_DRAWS
    from bayes_slr.memory import check_channel_memory, check_dynamics_memory, check_erm_memory
    from bayes_slr.models.spec import training_size

    task = claim.task
    where = f"D = {task.D}, L = {task.L}"
    hint = "use a smaller D, L, alpha or teachers"
    if spec.per_teacher in ("erm", "posterior"):
        seeds = claim.teachers if spec.per_teacher == "erm" else 1
        N = training_size(task.alpha, task.D)
        where += f", alpha = {task.alpha:g}, teachers = {seeds}"
        check_erm_memory(where, N, task.L, task.D, seeds, hint)
    elif spec.per_teacher == "sgd":
        check_dynamics_memory(where, task.D, 1, 0, hint)
    elif spec.name == "replica":
        check_channel_memory(REPLICA_DRAWS, task.L, "use a smaller L", prox=True)


def _check_side(claim: Claim, side: str, spec: Any, sides: tuple[Quantity, ...]) -> None:
    """Refuse one side without a route at the claim's task."""
    task = claim.task
    if task.multihead and not spec.multihead:
        raise ConfigError(
            f"field {side!r}: no route computes {spec.name} on a multi-head task "
            "(heads > 1 or presence < 1); bayes and population do"
        )
    if spec.name in ("oracle", "zero") and not any(q.estimator == "erm" for q in sides):
        raise ConfigError(
            f"field {side!r}: {spec.name} is measured on ERM's test sequences: the other side "
            "must be 'erm ACTIVATION'"
        )
    if spec.name == "sgd" and (task.alpha is not None):
        raise ConfigError(f"field {side!r}: online SGD sees fresh sequences: it takes no 'alpha'")
    if spec.name == "replica" and task.lam == "auto":
        raise ConfigError(f"field {side!r}: the replica prediction needs a numeric 'lam', not auto")
    if spec.name == "posterior" and math.isinf(_nu(task)):
        raise ConfigError(
            f"field {side!r}: the posterior needs a finite nu (max-SLR's default is inf)"
        )


def _nu(task: ClaimTask) -> float:
    """The task's ``nu`` (the variant's default when not given)."""
    from bayes_slr.models.spec import resolved_nu

    return resolved_nu(task.variant, task.nu)
