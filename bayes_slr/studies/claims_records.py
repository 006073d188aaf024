"""The typed records of a claim (:mod:`bayes_slr.studies.claims`): what is compared, at which
task, by which relation, and the evidence gathered for it. They import without JAX.

A claim compares two quantities at one task: ``left`` and ``right``, each an estimator's error
(an :class:`Quantity`), through their difference ``left - right``: ``below`` (``< 0``),
``above`` (``> 0``) or ``equal`` within ``tolerance``. The estimators are listed in
:data:`ESTIMATORS`, each with what it needs and how it is computed (docs/claims.md).
"""

from __future__ import annotations

import dataclasses

from bayes_slr.models.spec import DEFAULT_D, DEFAULT_DELTA, DEFAULT_L, DEFAULT_VARIANT
from bayes_slr.numerics.record import Record


@dataclasses.dataclass(frozen=True)
class EstimatorSpec:
    """What an estimator of a claim needs and how its values come.

    Attributes
    ----------
    name : its name in a claims file.
    summary : one line for the documentation and error messages.
    activation : whether it needs an ``activation``.
    finite_data : whether it needs ``alpha`` (samples per dimension).
    per_teacher : ``None`` for one value (with a standard error or a bound), else the family of
        teachers it is measured on (``"erm"``: the ERM study's teachers, with the oracle and the
        zero predictor on the same test sequences; ``"posterior"``: the posterior's teachers).
    multihead : whether it is computed for a multi-head task (``heads > 1`` or ``presence < 1``).
    """

    name: str
    summary: str
    activation: bool = False
    finite_data: bool = False
    per_teacher: str | None = None
    multihead: bool = False


ESTIMATORS: dict[str, EstimatorSpec] = {
    spec.name: spec
    for spec in (
        EstimatorSpec(
            "bayes",
            "the population Bayes error with known directions (quadrature, with its bound)",
            multihead=True,
        ),
        EstimatorSpec(
            "population",
            "an activation's population-optimal error (D, alpha -> inf); for a multi-head task "
            "over all overlaps: the optimum of heads aligned one to one where it is the optimum "
            "(one head, or the Bayes error), else searched and scored by Monte Carlo, with its "
            "standard error",
            activation=True,
            multihead=True,
        ),
        EstimatorSpec(
            "erm",
            "ERM's test error at alpha (L-BFGS from several starts, the ridge lam or 'auto'), "
            "per teacher",
            activation=True,
            finite_data=True,
            per_teacher="erm",
        ),
        EstimatorSpec(
            "oracle",
            "each ERM teacher's own Bayes predictor (known directions), on ERM's test sequences",
            finite_data=True,
            per_teacher="erm",
        ),
        EstimatorSpec(
            "zero",
            "the zero predictor, on ERM's test sequences of each teacher",
            finite_data=True,
            per_teacher="erm",
        ),
        EstimatorSpec(
            "replica",
            "the replica-symmetric prediction of ERM's error at alpha and a numeric lam "
            "(N, D -> inf), with its Monte Carlo error",
            activation=True,
            finite_data=True,
        ),
        EstimatorSpec(
            "state_evolution",
            "the Bayes-optimal error at alpha from the state evolution (N, D -> inf), "
            "the fixed point of largest free entropy",
            finite_data=True,
        ),
        EstimatorSpec(
            "posterior",
            "the Bayes-optimal posterior predictor's error at finite D, each teacher's luck "
            "removed (its error minus its oracle's plus the population Bayes error), per teacher",
            finite_data=True,
            per_teacher="posterior",
        ),
        EstimatorSpec(
            "sgd",
            "online SGD's test error at the end of its run (the dynamics command's defaults: "
            "fresh sequences every step, from a random start), per teacher",
            activation=True,
            per_teacher="sgd",
        ),
        EstimatorSpec("value", "a number given in the file (value = ...)"),
    )
}
"""Every estimator a claim can name, by name."""


@dataclasses.dataclass(frozen=True)
class Quantity(Record):
    """One side of a claim: an estimator (a key of :data:`ESTIMATORS`), its activation where it
    needs one, and the number of a ``value``."""

    estimator: str
    activation: str | None = None
    value: float | None = None

    def describe(self) -> str:
        """``ERM softmax``, ``bayes``, ``0.35``: the side as a table shows it."""
        if self.estimator == "value":
            return f"{self.value:g}"
        return self.estimator + ("" if self.activation is None else f" {self.activation}")


@dataclasses.dataclass(frozen=True)
class ClaimTask(Record):
    """The task of a claim and the finite-data settings both sides share.

    Attributes
    ----------
    variant, nu, L, variable_length, heads, presence, Delta : the task (docs/model.md; the
        toolkit's defaults).
    alpha : samples per dimension of the finite-data estimators (``None``: none needs it).
    D : their token dimension.
    lam : ERM's ridge (``"auto"``: by validation) and the replica's (a number).
    teacher : ``"exact"``: teachers at the population limit ``|k*|^2 = |v*|^2 = D``,
        ``k* . v* = 0`` (what the high-dimensional theory assumes: no teacher's luck in its norm);
        ``"prior"``: drawn from ``N(0, I_D)`` as ``gap`` draws them.
    """

    variant: str = DEFAULT_VARIANT
    nu: float | None = None
    L: int = DEFAULT_L
    variable_length: bool = False
    heads: int = 1
    presence: float = 1.0
    Delta: float = DEFAULT_DELTA
    alpha: float | None = None
    D: int = DEFAULT_D
    lam: float | str = "auto"
    teacher: str = "exact"

    @property
    def multihead(self) -> bool:
        """Whether the task has several heads or absent ones."""
        return self.heads > 1 or self.presence < 1

    def describe(self, sized: bool = False) -> str:
        """``spiked nu=2 L=3 alpha=16 D=50``: the task as a table shows it (``D`` with ``alpha``,
        or when ``sized``: a side measured at dimension ``D``)."""
        from bayes_slr.models.spec import describe_nu, resolved_nu

        length = f"U1..{self.L}" if self.variable_length else str(self.L)
        text = f"{self.variant} nu={describe_nu(resolved_nu(self.variant, self.nu))} L={length}"
        if self.multihead:
            text += f" H={self.heads} rho={self.presence:g}"
        if self.alpha is not None:
            text += f" alpha={self.alpha:g}"
        if self.alpha is not None or sized:
            text += f" D={self.D}" + ("" if self.teacher == "exact" else " prior teachers")
        return text


@dataclasses.dataclass(frozen=True)
class Claim(Record):
    """One claim: ``left - right`` stands in ``relation`` (within ``tolerance`` for ``equal``).

    Attributes
    ----------
    name : how the table names it.
    task : the task and the finite-data settings.
    left, right : the two quantities.
    relation : ``below``, ``above`` or ``equal``.
    tolerance : the half-width of ``equal`` (0 for the others).
    teachers : teachers added at a time where a side is measured per teacher.
    max_teachers : the most teachers it may take.
    """

    name: str
    task: ClaimTask
    left: Quantity
    right: Quantity
    relation: str
    tolerance: float = 0.0
    teachers: int = 4
    max_teachers: int = 16

    def statement(self) -> str:
        """``ERM softmax < ERM linear``, ``population softmax = bayes +- 1e-06``."""
        sign = {"below": "<", "above": ">", "equal": "="}[self.relation]
        within = f" +- {self.tolerance:g}" if self.relation == "equal" else ""
        return f"{self.left.describe()} {sign} {self.right.describe()}{within}"

    @property
    def per_teacher(self) -> str | None:
        """The family of teachers a side is measured on (``None``: no side is)."""
        families = {ESTIMATORS[q.estimator].per_teacher for q in (self.left, self.right)}
        families.discard(None)
        return next(iter(families), None)

    @property
    def looks(self) -> int:
        """How many times the evidence may be looked at: once per batch of teachers."""
        if self.per_teacher is None:
            return 1
        return -(-self.max_teachers // self.teachers)


@dataclasses.dataclass(frozen=True)
class TeacherValues(Record):
    """The per-teacher values of one batch of teachers: each side's value and Monte Carlo
    standard error per teacher (``None`` for a side measured once)."""

    batch: int
    left: tuple[float, ...] | None
    left_stderr: tuple[float, ...] | None
    right: tuple[float, ...] | None
    right_stderr: tuple[float, ...] | None


@dataclasses.dataclass(frozen=True)
class SideValue(Record):
    """A side measured once: its value, standard error and bound (a quadrature's), and whether
    it is only an upper bound on what it names (an optimum on its search's boundary)."""

    value: float
    stderr: float = 0.0
    bound: float = 0.0
    upper_bound: bool = False


@dataclasses.dataclass(frozen=True)
class ClaimEvidence(Record):
    """What was measured for a claim: the difference ``left - right`` with its standard error.

    Attributes
    ----------
    left, right : each side's mean (over teachers where measured per teacher).
    difference, stderr, bound, dof : the estimate of ``left - right`` (``dof``: degrees of
        freedom of its ``t`` law, ``inf`` for a normal; ``bound``: the quadratures' bounds).
    teachers : teachers measured (0 without a per-teacher side).
    looks : how many times the evidence could be looked at (one per batch allowed).
    stopped : why no more teachers were added (``"decided"``, ``"target stderr"``, ``"cap"``,
        ``""`` without teachers).
    one_sided : ``"left"``, ``"right"`` or ``"left and right"``: the sides that are only upper
        bounds on what they name (an optimum on its search's boundary); ``""`` for none.
    batches : the per-teacher values of every batch.
    seconds : wall time spent on the claim (including batches read back from a folder).
    fixed_stderr : the part of ``stderr`` from the sides measured once (more teachers do not
        shrink it).
    """

    left: float
    right: float
    difference: float
    stderr: float
    bound: float
    dof: float
    teachers: int
    looks: int
    stopped: str
    one_sided: str
    batches: tuple[TeacherValues, ...]
    seconds: float
    fixed_stderr: float = 0.0
