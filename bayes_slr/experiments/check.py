"""``check``: a verdict on every claim of a claims file.

Each claim (:mod:`bayes_slr.studies.claims_file`: two quantities at a task and a relation) is a
point: its sides are measured by the route that fits them (:mod:`bayes_slr.studies.claims`),
teachers added in batches until its difference is decided; the verdicts (``holds``, ``fails``,
``undecided`` with what would decide it) are computed over the whole family at its level, Holm's
step-down (:mod:`bayes_slr.studies.claims_verdict`). With ``--out`` every finished claim is
logged and every finished batch of teachers kept, so a run resumes without recomputing either.
"""

from __future__ import annotations

import dataclasses
import functools
import hashlib
from collections.abc import Sequence
from pathlib import Path
from typing import ClassVar

from bayes_slr.errors import Number
from bayes_slr.experiments.base import (
    Experiment,
    Options,
    Provenance,
    Record,
    Result,
    option,
    register_experiment,
)
from bayes_slr.experiments.tables import format_table
from bayes_slr.experiments.task import seed_option
from bayes_slr.records import atomic_write, json_text, read_json
from bayes_slr.studies.claims_file import ClaimsFile, default_claims_path, read_claims
from bayes_slr.studies.claims_records import Claim, ClaimEvidence, TeacherValues
from bayes_slr.studies.claims_verdict import ClaimVerdict, evidence_text, verdicts


@dataclasses.dataclass(frozen=True)
class CheckOptions(Options):
    """Settings of ``check``: the claims file and how its verdicts are reached."""

    claims: Path | None = option(
        None,
        "a claims file (TOML, docs/claims.md): two quantities at a task and a relation per "
        "[[claim]]",
        default_text="the seed paper's claims shipped with the toolkit",
    )
    level: float | None = option(
        None,
        "family-wise error rate of the verdicts, in (0, 1) (Holm over the file's claims)",
        default_text="the file's level, else 0.05",
        accepts=Number(0.0, strict=True, below=1.0),
    )
    target_stderr: float | None = option(
        None,
        "stop adding teachers to a claim once its difference's standard error is below this, > 0",
        default_text="only a decision or the claim's max_teachers stops",
        accepts=Number(0.0, strict=True),
    )
    seed: int = seed_option("root seed of every claim's teachers and Monte Carlo draws")

    def validate(self) -> None:
        """Refuse a bad level, target or seed, and a claims file with any bad claim (naming it
        and its field) before any work."""
        self.family()

    def family(self) -> ClaimsFile:
        """The claims of the file (the shipped one by default) at the chosen level."""
        family = _read(self.claims or default_claims_path())
        return dataclasses.replace(family, level=self.level or family.level)


@functools.lru_cache(maxsize=8)
def _read(path: Path) -> ClaimsFile:
    return read_claims(path)


@dataclasses.dataclass(frozen=True)
class CheckPoint(Record):
    """One claim: its place in the file, its name, and a digest of the claim as read (a changed
    claim is a new point: its logged evidence is not reused)."""

    index: int
    name: str
    digest: str


def _digest(claim: Claim) -> str:
    return hashlib.sha256(json_text(claim.to_dict(), sort_keys=True).encode()).hexdigest()[:16]


@dataclasses.dataclass(frozen=True, repr=False)
class CheckResult(Result[CheckOptions, ClaimVerdict]):
    """The verdicts of ``check``."""

    def rows_table(self) -> str:
        """One line per claim: the claim, its verdict, the evidence ``left - right`` +- its
        standard error, what it states, its task, and what would decide an undecided one (the
        decision first: a narrow screen shows it)."""
        header = ["claim", "verdict", "evidence (left - right)", "states", "task", "to decide"]
        rows = [
            [r.name, r.verdict, evidence_text(r), r.statement, r.task, r.to_decide]
            for r in self.rows
        ]
        return format_table(header, rows)

    def tidy_rows(self) -> list[dict[str, object]]:
        """One flat row per claim, without the per-teacher batches."""
        keep = ("name", "task", "statement", "left", "right", "difference", "stderr", "bound")
        keep += ("teachers", "p_value", "verdict", "to_decide", "seconds")
        return [{key: getattr(row, key) for key in keep} for row in self.rows]


class Check(Experiment[CheckOptions, CheckPoint, ClaimEvidence, CheckResult]):
    """Verdicts on the claims of a file."""

    name: ClassVar[str] = "check"
    summary: ClassVar[str] = "a verdict (holds, fails, undecided) on every claim of a claims file"
    description: ClassVar[str] = (
        "Each claim compares two quantities (the Bayes error, an activation's population "
        "optimum, ERM at alpha, the oracle, the zero predictor, the replica prediction, the "
        "state evolution, the posterior, a number) at a task by a relation (below, above, equal "
        "within a tolerance); the difference is measured with its standard error, paired on "
        "the same teachers where both sides have them, teachers added in batches until it is "
        "decided, and the verdicts are adjusted over the file (Holm). Without a file: the seed "
        "paper's claims (docs/claims.md)."
    )
    options_type = CheckOptions
    point_type = CheckPoint
    solved_type = ClaimEvidence
    result_type = CheckResult
    output_help: ClassVar[str] = "and each claim's finished batches of teachers (claims/)"
    progress_label: ClassVar[str] = "claims"

    def points(self, options: CheckOptions) -> list[CheckPoint]:
        """Every claim, in the file's order."""
        claims = options.family().claims
        return [CheckPoint(i, c.name, _digest(c)) for i, c in enumerate(claims)]

    def solve(self, options: CheckOptions, point: CheckPoint) -> ClaimEvidence:
        """The evidence of one claim."""
        return self.solve_in(options, point, None)

    def solve_in(
        self, options: CheckOptions, point: CheckPoint, folder: Path | None
    ) -> ClaimEvidence:
        """The evidence of one claim, its finished batches kept in ``folder`` (and read back)."""
        from bayes_slr.studies.claims import claim_evidence

        family = options.family()
        claim = family.claims[point.index]
        batches = None if folder is None else folder / "claims" / f"{point.index}-{point.digest}"
        return claim_evidence(
            claim,
            options.seed,
            family.level / len(family.claims),
            options.target_stderr,
            stored=lambda batch: _stored(batches, batch),
            store=lambda values: _store(batches, values),
        )

    def collect(
        self,
        options: CheckOptions,
        solved: Sequence[tuple[CheckPoint, ClaimEvidence]],
        provenance: Provenance,
    ) -> CheckResult:
        """The verdicts of the claims solved, adjusted over the whole file."""
        family = options.family()
        claims = tuple(family.claims[point.index] for point, _ in solved)
        rows = verdicts(claims, tuple(e for _, e in solved), family.level, len(family.claims))
        notes = (
            f"verdicts at family-wise level {family.level:g} over {len(family.claims)} claims "
            "(Holm); evidence: left - right +- its standard error, paired on the same teachers "
            "where both sides have them (docs/claims.md)",
        )
        if len(claims) < len(family.claims):
            notes += (f"{len(family.claims) - len(claims)} claims failed: no verdict",)
        return CheckResult(options, rows, provenance, notes=notes)


def _stored(folder: Path | None, batch: int) -> TeacherValues | None:
    """Batch ``batch`` kept in ``folder`` before, if any."""
    path = None if folder is None else folder / f"batch-{batch}.json"
    if path is None or not path.exists():
        return None
    return TeacherValues.from_dict(read_json(path.read_text()))


def _store(folder: Path | None, values: TeacherValues) -> None:
    """Keep a finished batch in ``folder`` (atomically; nothing without a folder)."""
    if folder is None:
        return
    folder.mkdir(parents=True, exist_ok=True)
    text = json_text(values.to_dict())
    atomic_write(folder / f"batch-{values.batch}.json", lambda path: path.write_text(text))


CHECK = register_experiment(Check())
