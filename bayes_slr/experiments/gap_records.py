"""The options and point of ``gap`` (:mod:`bayes_slr.experiments.gap`): its settings, resolved
into the task as it runs (:class:`~bayes_slr.studies.gap_rows.GapTask`; the solved points and
rows are the records of :mod:`bayes_slr.studies.gap_rows`), below the modules that draw
(:mod:`bayes_slr.experiments.gap_figure`) and assemble them, so that neither imports the other's
importer. It imports without JAX.
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
from pathlib import Path

from bayes_slr.attention.activations import activation_accepted, activation_names, check_registered
from bayes_slr.attention.erm_settings import (
    DEFAULT_LAM_GRID,
    DEFAULT_N_TEST,
    DEFAULT_STARTS,
    LAM_AUTO,
    VALIDATION_FRACTION,
    ERMSettings,
)
from bayes_slr.attention.optimizers import optimizer_names
from bayes_slr.errors import (
    ConfigError,
    Each,
    Integer,
    Number,
    validate_fields,
)
from bayes_slr.experiments.base import (
    Options,
    Record,
    option,
)
from bayes_slr.experiments.task import (
    DEFAULT_D,
    DEFAULT_DELTA,
    GIVEN,
    GIVEN_MANY,
    lam_option,
    resolved_nu,
    seed_option,
    student_heads_option,
    task_config,
    task_option,
)
from bayes_slr.memory import check_erm_memory
from bayes_slr.models.data_task import GivenTask
from bayes_slr.models.dataset import DEFAULT_HOLDOUT, DataSource, holdout_accepted
from bayes_slr.models.spec import INITS, training_size
from bayes_slr.studies.gap_rows import (
    GAP_TASK,
    GapTask,
    check_heads_activations,
    check_heads_options,
    heads_activations,
    variant_settings,
)

DEFAULT_LENGTHS = (2, 3, 5, 10, 30, 100)
DEFAULT_SEEDS = 4
KINDS = ("bayes", "population", "erm")


@dataclasses.dataclass(frozen=True)
class GapOptions(Options):
    """Settings of ``gap``: the tasks, the activations, and the finite-data (ERM) settings.

    With ``data`` the task (variant, ``nu``, ``Delta``, the length law, ``L``, ``D``) comes from
    the file (:func:`~bayes_slr.models.data_task.data_task`); a setting given beside it that
    contradicts the file is refused. The options are kept as given; :meth:`resolved` (what runs,
    and what ``result.options`` states) holds every setting the run uses (the defaults, or the
    file's), ``source`` describes the data file and ``n_train`` is the number of training
    sequences taken from it.
    """

    variant: str | None = task_option(
        "variant",
        default=None,
        default_text="both default settings, spiked nu=2 and max nu=inf; with --data the "
        "file's, else spiked",
    )
    nu: float | None = task_option("nu", default_note="needs --variant")
    L: tuple[int, ...] | None = task_option(
        "L", GIVEN_MANY, default=DEFAULT_LENGTHS, default_note="with --data the file's Lbar"
    )
    variable_length: bool | None = task_option(
        "variable_length", GIVEN, default_note="with --data the file's law"
    )
    heads: int = task_option("heads")
    presence: float = task_option("presence")
    activations: tuple[str, ...] | None = option(
        None,
        "the activations compared",
        default_text="every registered activation: softmax linear erf softplus; with several "
        "heads or presence < 1 also softmax1 bayes_softmax (spiked only)",
    )
    student_heads: int | None = student_heads_option(
        "of the population optima and ERM, docs/multihead.md; 1 with one teacher head always "
        "present: the one-head gap"
    )
    alpha: float | None = option(
        None,
        "sample ratio N/D, > 0: adds the ERM test error of each activation and the teachers' "
        "oracle error",
        default_text="none, population values only",
        accepts=Number(0.0, strict=True),
    )
    lam: float | str = lam_option(
        LAM_AUTO,
        help="ridge of ERM: a number >= 0, or 'auto': chosen per seed by validation on a held-out "
        f"{VALIDATION_FRACTION:g} of the training set over {min(DEFAULT_LAM_GRID):g}.."
        f"{max(DEFAULT_LAM_GRID):g} ({len(DEFAULT_LAM_GRID)} log-spaced values)",
    )
    D: int | None = task_option(
        "D", GIVEN, help="token dimension of ERM, >= 1", default_note="with --data the file's"
    )
    Delta: float | None = task_option("Delta", GIVEN, default_note="with --data the file's")
    seeds: int | None = option(
        None,
        "ERM teachers and training sets, >= 1; with --data only 1 (one data set)",
        default_text=f"{DEFAULT_SEEDS}; 1 with --data",
        signature_default=DEFAULT_SEEDS,
        accepts=Integer(1),
    )
    starts: int = option(
        DEFAULT_STARTS, "random starts per ERM training set, >= 1", accepts=Integer(1)
    )
    init: str = option(
        "random",
        "which ERM start is reported: the lowest-training-loss random start, or the informed "
        "start at the teacher (a reference, not an estimator)",
        choices=INITS,
    )
    optimizer: str = option(
        "lbfgs", "L-BFGS to |grad| <= 1e-6, or one pass of SGD", choices=optimizer_names
    )
    N_test: int = option(
        DEFAULT_N_TEST,
        "fresh test sequences per ERM seed (when the teacher is known), >= 2",
        accepts=Integer(2),
    )
    seed: int = seed_option(
        "root seed of the ERM teachers, data, starts and test sequences, and of the --data split"
    )
    data: Path | None = option(
        None,
        "run ERM on this .npz data set (X, y; optional lengths, eps, k_star and v_star, config: "
        "the format simulate writes, docs/data.md) instead of simulated data; D, N and Lbar "
        "come from the arrays, variant, nu, Delta and the length law from its config record if "
        "it has one",
        metavar="FILE.npz",
        default_text="none: teachers and training sets are drawn",
    )
    holdout: float = option(
        DEFAULT_HOLDOUT,
        "with --data without a teacher (k_star, v_star): share of the sequences held out as the "
        "test set, chosen by --seed, in (0, 1)",
        accepts=holdout_accepted,
    )
    lam_grid: tuple[float, ...] = option(
        DEFAULT_LAM_GRID, "ridge values tried by lam='auto'", cli=False, accepts=Number(0.0)
    )
    source: DataSource | None = None
    """The data file and where each setting came from (set by validation; ``None`` without
    ``data``)."""
    n_train: int | None = None
    """Training sequences of the data file (set by validation): all with a teacher, else those
    not held out."""

    def validate(self) -> None:
        """Refuse any bad value (one line naming the option and the accepted range), a setting
        given beside ``data`` that contradicts the file, and any task that is not valid."""
        if self.activations is not None:  # the registered ones; any, trained, with heads
            accepted = activation_accepted if self.multihead else check_registered
            validate_fields(self, {"activations": Each(accepted)}, keep=False)
        if self.multihead:  # before a data file is read
            D = DEFAULT_D if self.D is None else self.D
            check_heads_options(self.heads, D, self.init, self.alpha)
        task = self._task
        self.erm_settings()
        activations = self.filled()["activations"]
        pairs = variant_settings(task.variant, task.nu, self.presence)
        for (variant, nu), L in itertools.product(pairs, task.L):
            config = task_config(
                variant, L, task.variable_length, nu, task.Delta, 1, self.heads, self.presence
            )
            if self.multihead:
                check_heads_activations(config, activations)
        self._check_memory(task)

    def _check_memory(self, task: GapTask) -> None:
        """Refuse simulated ERM whose training sets would not fit in memory (before drawing)."""
        if self.alpha is None or self.data is not None:
            return
        N = training_size(self.alpha, task.D)
        seeds = task.seeds
        check_erm_memory(
            f"alpha = {self.alpha:g}, D = {task.D}, L = {max(task.L)}, seeds = {seeds}",
            N,
            max(task.L),
            task.D,
            seeds,
            "use a smaller alpha, D, L or seeds",
        )

    def filled(self) -> dict[str, object]:
        """The settings as they run: the activations, the ridge and the student heads (given or
        the defaults of the task's heads), the data file's task or the settings given and the
        defaults (and the variant's ``nu``); ``source`` and ``n_train`` of a data file."""
        task = self._task
        filled: dict[str, object] = {name: getattr(task, name) for name in GAP_TASK}
        filled["activations"] = self.activations
        if self.activations is None:
            filled["activations"] = (
                heads_activations(self.settings()) if self.multihead else tuple(activation_names())
            )
        if self.multihead and self.student_heads is None:
            filled["student_heads"] = task.heads
        return filled

    @functools.cached_property
    def _task(self) -> GapTask:
        """The task settings as they run (worked out once per options object)."""
        return self._data_settings() if self.data is not None else self._defaults()

    def _defaults(self) -> GapTask:
        """Without a data file: the variant's ``nu`` and the defaults of the settings not
        given."""
        if self.nu is not None and self.variant is None:
            raise ConfigError(
                "`nu` needs `variant` (without `variant` the two default settings run: "
                "spiked nu=2 and max nu=inf)"
            )
        return GapTask(
            variant=self.variant,
            nu=None if self.variant is None else resolved_nu(self.variant, self.nu),
            L=DEFAULT_LENGTHS if self.L is None else tuple(int(L) for L in self.L),
            variable_length=False if self.variable_length is None else self.variable_length,
            D=DEFAULT_D if self.D is None else self.D,
            Delta=DEFAULT_DELTA if self.Delta is None else self.Delta,
            seeds=DEFAULT_SEEDS if self.seeds is None else self.seeds,
            heads=self.heads,
            presence=self.presence,
        )

    def _data_settings(self) -> GapTask:
        """The task of the data file, reconciled with the settings given beside it."""
        if self.alpha is not None:
            raise ConfigError(
                "`alpha` does not apply with `data` (the data set fixes it: training sequences / D)"
            )
        if self.seeds not in (None, 1):
            raise ConfigError(
                f"`seeds` must be 1 with `data` (one data set: `seed` chooses the held-out "
                f"split and the random starts), got {self.seeds}"
            )
        given = GivenTask(
            variant=self.variant,
            nu=self.nu,
            Delta=self.Delta,
            L=None if self.L is None else (self.L[0] if len(self.L) == 1 else self.L),
            variable_length=self.variable_length,
            D=self.D,
            heads=None if self.heads == 1 else self.heads,
            presence=None if self.presence == 1.0 else self.presence,
        )
        return GapTask.of_file(self.data, given, DEFAULT_DELTA, self.holdout, self.source)

    def settings(self) -> tuple[tuple[str, float], ...]:
        """The ``(variant, nu)`` pairs to run: both default settings without ``variant`` (those
        that take the presence)."""
        return variant_settings(self.variant, self.nu, self.presence)

    @property
    def multihead(self) -> bool:
        """Whether the task has several heads or heads that may be absent, or the student
        several heads (docs/multihead.md); ``False``: one-head ``gap``."""
        task = self._task if self.data is not None else self  # a data file's heads are its own
        return task.heads > 1 or task.presence < 1.0 or self.student_heads not in (None, 1)

    @property
    def runs_erm(self) -> bool:
        """Whether ERM columns are computed (with ``alpha`` or ``data``)."""
        return self.alpha is not None or self.data is not None

    def training_ratio(self) -> float | None:
        """``alpha`` of ERM: given, or the data file's training sequences over ``D``."""
        return self.alpha if self.data is None else self.n_train / self.D

    @property
    def heads_of_student(self) -> int:
        """The student's heads ``H_s``: given, else the teacher's (1 for one-head ``gap``)."""
        return self.heads if self.student_heads is None else self.student_heads

    def erm_settings(self) -> ERMSettings:
        """How each ERM point trains and scores (checked: a bad value is refused here); with
        heads, the student's ``H_s`` heads on exact teachers (the population values' own)."""
        return ERMSettings(
            lam=self.lam,
            seeds=self.seeds or 1,
            init=self.init,
            starts=self.starts,
            optimizer=self.optimizer,
            N_test=self.N_test,
            lam_grid=self.lam_grid,
            predict_population=False,
            exact_teacher=self.multihead,
            student_heads=self.heads_of_student,
        )


@dataclasses.dataclass(frozen=True)
class GapPoint(Record):
    """One unit of work: the Bayes error of a task, or an activation's population optimum or ERM
    error (``kind``)."""

    variant: str
    nu: float
    L: int
    kind: str
    activation: str | None = None
